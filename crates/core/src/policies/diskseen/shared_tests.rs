//! The shared block table (`shared=on`, `history.rs`): one table for
//! every program of a store, merged at each save.

use super::history::SHARED_NAME;
use super::table::TS_BITS;
use super::tests::Harness;
use super::*;
use crate::policies::build_policy;
use crate::policy::{Policy, PolicyExt};

/// A process that loads `stored` (if any) and reads `blocks` in order;
/// the harness after it.
fn process(stored: Option<&[u8]>, blocks: impl Iterator<Item = u64>) -> Harness {
    process_with(DiskSeenParams::default(), stored, blocks)
}

fn process_with(
    p: DiskSeenParams,
    stored: Option<&[u8]>,
    blocks: impl Iterator<Item = u64>,
) -> Harness {
    let mut h = Harness::new(p);
    if let Some(b) = stored {
        h.ds.load_shared_history(b).unwrap();
    }
    h.ds.start_run(1);
    for b in blocks {
        h.read(1, b);
    }
    h
}

#[test]
fn two_processes_that_loaded_one_table_both_leave_their_trails_the_second_after_the_first() {
    // The module's worked example. A table of counter 100 (blocks 0..100
    // read in order), loaded by A and B, who each read 100 blocks of
    // their own backwards (counter 200 each); A saves, then B.
    let t0 = process(None, 0..100)
        .ds
        .merge_shared_history(None)
        .expect("a first table is stored");
    let a = process(Some(&t0), (1000..1100).rev());
    let b = process(Some(&t0), (2000..2100).rev());
    assert_eq!((a.ds.counter(), b.ds.counter()), (200, 200));
    let after_a = a.ds.merge_shared_history(Some(&t0)).unwrap();
    let after_b = b.ds.merge_shared_history(Some(&after_a)).unwrap();

    let mut c = Harness::new(DiskSeenParams::default());
    c.ds.load_shared_history(&after_b).unwrap();
    assert_eq!(c.ds.counter(), 300);
    let t = c.ds.table();
    assert_eq!((t.newest(0, 0), t.newest(0, 99)), (1, 100), "t0's stay");
    assert_eq!((t.newest(0, 1099), t.newest(0, 1000)), (101, 200), "A's");
    assert_eq!((t.newest(0, 2099), t.newest(0, 2000)), (201, 300), "B's");
    // Both trails are followed by a later process (§3.4.3: activation
    // after 4 matched blocks, windows read in ascending LBN order).
    c.ds.start_run(1);
    let mut reqs = vec![];
    for blk in (2000..2100).rev() {
        reqs.extend(c.read(1, blk));
    }
    assert_eq!(&reqs[..2], &[(2088, 8), (2080, 8)]);
    let mut d = Harness::new(DiskSeenParams::default());
    d.ds.load_shared_history(&after_b).unwrap();
    d.ds.start_run(1);
    let mut reqs = vec![];
    for blk in (1000..1100).rev() {
        reqs.extend(d.read(1, blk));
    }
    assert_eq!(&reqs[..2], &[(1088, 8), (1080, 8)]);
}

#[test]
fn a_process_that_stamped_nothing_leaves_the_stored_table_alone() {
    let t0 = process(None, 0..10).ds.merge_shared_history(None).unwrap();
    let idle = process(Some(&t0), std::iter::empty());
    assert_eq!(idle.ds.merge_shared_history(Some(&t0)), None);
    // With nothing stored (forgotten since), its loaded table is not
    // written back either: only its own stamps would be.
    assert_eq!(idle.ds.merge_shared_history(None), None);
}

#[test]
fn each_block_keeps_its_four_newest_stamps_across_processes() {
    let mut stored = process(None, 7..8).ds.merge_shared_history(None).unwrap();
    for _ in 0..5 {
        let p = process(Some(&stored), 7..8);
        stored = p.ds.merge_shared_history(Some(&stored)).unwrap();
    }
    let mut c = Harness::new(DiskSeenParams::default());
    c.ds.load_shared_history(&stored).unwrap();
    // Six stamps 1..=6; the four newest, the oldest shifted to 1.
    assert_eq!(c.ds.counter(), 4);
    assert_eq!(c.ds.table().timestamps(0, 7), [4, 3, 2, 1]);
}

#[test]
fn the_merged_table_is_purged_to_table_mib_oldest_first() {
    // table_mib = 1 (about 127 leaf pages of 512 blocks): A and B each
    // stamp one block in 100 pages of their own, under the bound alone,
    // over it together. The merge purges the older half of the counter
    // range (§2.2, as a run does): A's stamps but its last go.
    let small = || DiskSeenParams {
        table_mib: 1,
        ..DiskSeenParams::default()
    };
    let a = process_with(small(), None, (0..100).map(|i| i * 512));
    let after_a = a.ds.merge_shared_history(None).unwrap();
    let b = process_with(small(), Some(&after_a), (1000..1100).map(|i| i * 512));
    let merged = b.ds.merge_shared_history(Some(&after_a)).unwrap();
    let mut c = Harness::new(small());
    c.ds.load_shared_history(&merged).unwrap();
    let t = c.ds.table();
    assert!(t.memory_bytes() <= 1 << 20, "{} bytes", t.memory_bytes());
    assert_eq!(t.newest(0, 0), 0, "A's oldest purged");
    assert_eq!(t.newest(0, 1099 * 512), 101, "B's newest kept");
    assert_eq!(t.newest(0, 1000 * 512), 2, "B's first kept");
    assert_eq!(c.ds.counter(), 101);
}

#[test]
fn a_merge_past_seven_eighths_of_31_bits_clears_the_older_half() {
    // §3.1: a stored counter 10 below the 7/8 mark; a process adds 100
    // stamps. The stored block of time 1 is cleared, the one of the last
    // stored time kept, and the blob's counter stays within 31 bits.
    let c0 = ((1u64 << TS_BITS) - 1) / 8 * 7 - 10;
    let mut stored = b"ODSK1".to_vec();
    stored.extend_from_slice(&c0.to_le_bytes());
    for (lbn, ts) in [(5u64, 1u64), (6, c0)] {
        stored.extend_from_slice(&0u32.to_le_bytes());
        stored.extend_from_slice(&lbn.to_le_bytes());
        for t in [ts, 0, 0, 0] {
            stored.extend_from_slice(&t.to_le_bytes());
        }
    }
    let a = process(Some(&stored), 100..200);
    let merged = a.ds.merge_shared_history(Some(&stored)).unwrap();
    let mut c = Harness::new(DiskSeenParams::default());
    c.ds.load_shared_history(&merged).unwrap();
    assert_eq!(
        c.ds.counter(),
        101,
        "shifted: the oldest kept (block 6) is 1"
    );
    let t = c.ds.table();
    assert_eq!((t.newest(0, 5), t.newest(0, 6)), (0, 1));
    assert_eq!((t.newest(0, 100), t.newest(0, 199)), (2, 101));
}

#[test]
fn corrupt_shared_tables_are_refused_with_the_reason_and_change_nothing() {
    let good = process(None, 0..10).ds.merge_shared_history(None).unwrap();
    let mut h = process(None, 50..60);
    for (bad, why) in [
        (&b"SQLite format 3"[..], "bad magic"),
        (&good[..good.len() - 1], "not a whole number"),
        (&good[..7], "truncated"),
        (&b"ODSK1\xff\xff\xff\xff\0\0\0\0"[..], "beyond 31 bits"),
    ] {
        let e = h.ds.load_shared_history(bad).unwrap_err();
        assert!(e.contains(why), "{e}");
        assert_eq!(h.ds.counter(), 10, "the table is as it was");
    }
    // A stored table that does not parse is replaced by this process's.
    let merged = h.ds.merge_shared_history(Some(b"garbage")).unwrap();
    assert_eq!(merged, h.ds.merge_shared_history(None).unwrap());
}

#[test]
fn shared_off_saves_the_table_per_application_as_before() {
    let off = DiskSeenParams {
        shared: false,
        ..DiskSeenParams::default()
    };
    let h = process_with(off.clone(), None, 0..10);
    assert_eq!(h.ds.shared_history_name(), None);
    assert_eq!(h.ds.merge_shared_history(None), None);
    let blob = h.ds.save_history().expect("saved per application");
    let mut fresh = DiskSeen::new(off);
    assert!(fresh.load_shared_history(&blob).is_err());
    fresh.load_history(&blob).unwrap();
    assert_eq!(fresh.counter(), 10);
    // Shared (the default): the table is the store's, not also the
    // application's.
    let on = process(None, 0..10);
    assert_eq!(on.ds.shared_history_name(), Some(SHARED_NAME));
    assert_eq!(on.ds.save_history(), None);
}

#[test]
fn stacks_forward_the_shared_table_to_diskseen() {
    for (spec, name) in [
        ("diskseen", Some(SHARED_NAME)),
        ("readahead+diskseen", Some(SHARED_NAME)),
        ("auto+diskseen:t=64", Some(SHARED_NAME)),
        ("readahead+diskseen:shared=off", None),
        ("readahead", None),
    ] {
        let p = build_policy(spec).unwrap();
        assert_eq!(p.shared_history_name(), name, "{spec}");
    }
    let t0 = process(None, 0..10).ds.merge_shared_history(None).unwrap();
    let mut s = build_policy("readahead+diskseen").unwrap();
    s.load_shared_history(&t0).unwrap();
    let e = s.load_shared_history(b"junk").unwrap_err();
    assert!(e.contains("bad magic"), "DiskSeen's own check: {e}");
    s.start_run(1);
    assert_eq!(s.merge_shared_history(Some(&t0)), None, "nothing new");
}
