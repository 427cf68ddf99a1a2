//! DiskSeen tests: the paper's own examples (Fig. 3, §3.5's P1/P2) and the
//! §3.3 window rules, driven through the `Policy` hooks.

use super::trail::{extend, Reach, Trails};
use super::*;
use crate::event::{Access, FileId, Outcome, Pid, PrefetchRequest, Target, WindowId};
use crate::policies::build_policy;
use crate::policy::PolicyExt;
use crate::policy::Residency;
use crate::policy::{Eviction, Policy};
use crate::size::ByteSize;
use rustc_hash::FxHashSet;
use std::cell::RefCell;
use table::{BlockTable, BUSY, CACHED, PREFETCHED, RESIDENT};

/// Residency for tests: a set of cached blocks of device 0.
#[derive(Default)]
struct Mem(RefCell<FxHashSet<u64>>);

impl Residency for Mem {
    fn is_cached(&self, _dev: u32, lbn: u64) -> bool {
        self.0.borrow().contains(&lbn)
    }
    fn is_page_cached(&self, f: FileId, page: u64) -> bool {
        match self.block_of(f, page) {
            Some((_, lbn)) => self.0.borrow().contains(&lbn),
            None => false,
        }
    }
    /// File 7 lies contiguously from block 1000; other files are unknown.
    fn block_of(&self, f: FileId, page: u64) -> Option<(u32, u64)> {
        (f == FileId(7)).then_some((0, 1000 + page))
    }
}

/// A policy with a pretend cache: demand reads and prefetches make blocks
/// resident; nothing is evicted unless a test says so.
pub(super) struct Harness {
    pub(super) ds: DiskSeen,
    mem: Mem,
    next_window: u64,
    seq: u64,
    /// Every request issued, with its window.
    log: Vec<PrefetchRequest>,
}

impl Harness {
    pub(super) fn new(p: DiskSeenParams) -> Self {
        Harness {
            ds: DiskSeen::new(p),
            mem: Mem::default(),
            next_window: 0,
            seq: 0,
            log: Vec::new(),
        }
    }

    /// One demand read of `lbn` by `pid`, completed at once. Returns the
    /// prefetch requests as (lbn, blocks).
    pub(super) fn read(&mut self, pid: Pid, lbn: u64) -> Vec<(u64, u32)> {
        self.seq += 1;
        let a = Access {
            seq: self.seq,
            pid,
            lbn,
            page: lbn,
            blocks: 1,
            ..Access::default()
        };
        let mut out = Vec::new();
        {
            let mut sink = Sink::new(&mut out, &mut self.next_window, &self.mem);
            self.ds.on_access(&a, &Outcome::default(), &mut sink);
        }
        self.mem.0.borrow_mut().insert(lbn);
        {
            let mut sink = Sink::new(&mut out, &mut self.next_window, &self.mem);
            self.ds.feed_access_done(&a, &mut sink);
        }
        for r in &out {
            let Target::Block { lbn, .. } = r.target else {
                panic!("diskseen issues block requests")
            };
            for b in lbn..lbn + u64::from(r.blocks) {
                self.mem.0.borrow_mut().insert(b);
            }
        }
        self.log.extend(out.iter().copied());
        out.iter()
            .map(|r| match r.target {
                Target::Block { lbn, .. } => (lbn, r.blocks),
                Target::File { page, .. } => (page, r.blocks),
            })
            .collect()
    }

    /// Evict a block (the driver's report), `used` or not.
    fn evict(&mut self, lbn: u64, used: bool) {
        self.mem.0.borrow_mut().remove(&lbn);
        let window = self
            .log
            .iter()
            .find(|r| match r.target {
                Target::Block { lbn: l, .. } => (l..l + u64::from(r.blocks)).contains(&lbn),
                _ => false,
            })
            .map(|r| r.window);
        self.ds.feed_evict(&Eviction {
            dev: 0,
            lbn,
            prefetched: window.is_some(),
            used,
            window,
        });
    }

    /// A new run: the cache is emptied, history kept.
    fn new_run(&mut self) {
        self.mem.0.borrow_mut().clear();
        self.log.clear();
        self.ds.start_run(2);
    }
}

#[test]
fn timestamps_are_recorded_when_the_access_completes() {
    // §3.1: the counter moves when a block reaches the caching area on
    // demand, not when the request is issued; re-hits in the caching area
    // are not stamped.
    let mut h = Harness::new(DiskSeenParams::default());
    let a = Access {
        lbn: 50,
        page: 50,
        blocks: 2,
        ..Access::default()
    };
    let mut out = Vec::new();
    let mut sink = Sink::new(&mut out, &mut h.next_window, &h.mem);
    h.ds.on_access(&a, &Outcome::default(), &mut sink);
    assert_eq!(h.ds.table().newest(0, 50), 0, "not stamped at issue");
    assert_eq!(h.ds.table().status(0, 50), RESIDENT | BUSY);
    h.ds.feed_access_done(&a, &mut sink);
    assert_eq!(h.ds.table().timestamps(0, 50), [1, 0, 0, 0]);
    assert_eq!(h.ds.table().timestamps(0, 51), [2, 0, 0, 0]);
    assert_eq!(h.ds.table().status(0, 51), RESIDENT | CACHED);
    h.read(1, 50);
    assert_eq!(h.ds.counter(), 2, "a caching-area hit is not stamped");
    h.ds.feed_evict(&Eviction {
        dev: 0,
        lbn: 50,
        prefetched: false,
        used: true,
        window: None,
    });
    h.read(1, 50);
    assert_eq!(h.ds.table().timestamps(0, 50), [3, 1, 0, 0]);
}

#[test]
fn sequence_of_k_blocks_opens_two_8_block_windows() {
    // §3.3.1–3.3.2: the 8th contiguous block with decreasing timestamps
    // backwards starts prefetching 8 blocks into the current window and
    // the next 8 into the readahead window.
    let mut h = Harness::new(DiskSeenParams::default());
    for b in 100..107 {
        assert!(h.read(1, b).is_empty(), "block {b}: no sequence yet");
    }
    assert_eq!(h.read(1, 107), vec![(108, 8), (116, 8)]);
    assert_eq!(h.ds.stats().sequence_streams, 1);
}

#[test]
fn a_gap_of_t_or_more_breaks_a_sequence() {
    // §3.3.1: timestamps 1..7 then, after T other accesses, block 107.
    let mut h = Harness::new(DiskSeenParams {
        t: 16,
        ..DiskSeenParams::default()
    });
    for b in 100..107 {
        h.read(1, b);
    }
    for i in 0..15 {
        h.read(1, 10_000 + 3 * i);
    }
    assert!(h.read(1, 107).is_empty(), "gap 16 = T is too large");
    assert!(!h.ds.is_sequence_end(0, 107));
}

#[test]
fn windows_grow_8_16_32_and_stay_capped() {
    // §3.3.2: when the readahead window is first hit, a new one of 2f
    // blocks (f = hits in the current window) opens, capped at 32.
    let mut h = Harness::new(DiskSeenParams::default());
    let mut sizes = vec![];
    for b in 100..400 {
        for (_, n) in h.read(1, b) {
            sizes.push(n);
        }
    }
    assert_eq!(&sizes[..7], &[8, 8, 16, 16, 32, 32, 32]);
    assert!(sizes.iter().all(|&n| n <= 32));
}

#[test]
fn few_hits_in_the_current_window_cancel_the_stream() {
    // §3.3.2: 2f < min cancels. One hit in the current window (f = 1),
    // then the readahead window is hit: 2 < 8.
    let mut h = Harness::new(DiskSeenParams::default());
    for b in 100..108 {
        h.read(1, b);
    }
    assert!(h.read(1, 110).is_empty());
    assert!(h.read(1, 116).is_empty(), "no new readahead window");
    assert_eq!(h.ds.stats().cancelled, 1);
    assert_eq!(h.ds.streams().count(), 0);
}

#[test]
fn windows_shrink_over_resident_blocks() {
    // §3.3.2: resident blocks in the prefetch scope are left out.
    let mut h = Harness::new(DiskSeenParams::default());
    for b in [110, 111, 112, 120, 121, 122, 123] {
        h.mem.0.borrow_mut().insert(b);
    }
    for b in 100..107 {
        h.read(1, b);
    }
    assert_eq!(h.read(1, 107), vec![(108, 2), (113, 3), (116, 4)]);
}

/// Fig. 3: blocks B1..B7 (LBN 1001..1007) with the figure's timestamps.
/// Trail 1 (current, from 85000): B3, B5, B7, B6. Trail 2 (from 63110):
/// B3, B5, B7, then B1 — broken at B6. Trail 3 (from 43500): B3, B5, B7,
/// B6, then B4, B2, B1 and 1008..1012. A third history trail (from 20000:
/// B3, B4, B2) does not echo trail 1 at all.
fn fig3_table(t: &mut BlockTable) {
    const B: u64 = 1000;
    let mut stamps: Vec<(u64, u64)> = vec![
        (B + 3, 20000),
        (B + 4, 20001),
        (B + 2, 20002),
        (B + 3, 43500),
        (B + 5, 43501),
        (B + 7, 43502),
        (B + 6, 43503),
        (B + 4, 43504),
        (B + 2, 43505),
        (B + 1, 43506),
        (B + 3, 63110),
        (B + 5, 63200),
        (B + 7, 63300),
        (B + 1, 63400),
    ];
    for i in 0..5 {
        stamps.push((B + 8 + i, 43507 + i));
    }
    stamps.sort_by_key(|&(_, ts)| ts);
    for (lbn, ts) in stamps {
        t.stamp(0, lbn, ts);
    }
}

#[test]
fn fig3_trail_2_breaks_at_b6_and_prefetching_follows_trail_3() {
    let mut t = BlockTable::new();
    fig3_table(&mut t);
    let reach = Reach { t: 256, s: 128 };
    let mut trails = Trails::new(8);
    let mut step = |lbn: u64, ts: u64, trails: &mut Trails| {
        t.stamp(0, lbn, ts);
        trails.observe(&t, 0, lbn, ts, reach, 4)
    };
    assert_eq!(step(1003, 85000, &mut trails), None);
    // B3 starts candidates at each older timestamp.
    assert_eq!(trails.latest_cursors(), vec![63110, 43500, 20000]);
    assert_eq!(step(1005, 85001, &mut trails), None);
    // §3.4.2: "Trail 2 (B3 (63110), B5 (63200)) and Trail 3 (B3 (43500),
    // B5 (43501))"; the 20000 trail does not reach B5.
    assert_eq!(trails.latest_cursors(), vec![63200, 43501]);
    assert_eq!(step(1007, 85002, &mut trails), None);
    assert_eq!(trails.latest_cursors(), vec![63300, 43502]);
    let m = step(1006, 85003, &mut trails).expect("4 matched blocks");
    assert_eq!(m.cursors, vec![43503], "only trail 3 matches B6");
    assert_eq!(m.before, 85000);
    // §3.4.3: blocks with a timestamp in (43503, 43503 + 256] around B6,
    // by timestamp: B4, B2, B1, 1008..1012.
    let mut cursors = m.cursors.clone();
    let next = extend(&t, 0, 1006, &mut cursors, reach, 8, m.before);
    assert_eq!(next, vec![1004, 1002, 1001, 1008, 1009, 1010, 1011, 1012]);
    assert_eq!(cursors, vec![43511]);
}

#[test]
fn fig3_through_the_policy_prefetches_trail_3_in_lbn_order() {
    let mut h = Harness::new(DiskSeenParams {
        t: 256,
        ..DiskSeenParams::default()
    });
    fig3_table(&mut h.ds.table);
    h.ds.counter = 84_999;
    assert!(h.read(1, 1003).is_empty());
    assert!(h.read(1, 1005).is_empty());
    assert!(h.read(1, 1007).is_empty());
    // The history window is read in ascending LBN order, resident blocks
    // (B3, B5, B7, B6 were just read) left out.
    assert_eq!(h.read(1, 1006), vec![(1001, 2), (1004, 1), (1008, 5)]);
    assert_eq!(h.ds.stats().history_streams, 1);
}

#[test]
fn intersection_of_matched_trails_is_prefetched() {
    // Two history trails echo the current one; only blocks both visited
    // next are prefetched (§3.4.3).
    let mut t = BlockTable::new();
    for (i, lbn) in [10u64, 11, 12, 13, 14, 15].iter().enumerate() {
        t.stamp(0, *lbn, 100 + i as u64);
    }
    for (i, lbn) in [10u64, 11, 12, 13, 15, 16].iter().enumerate() {
        t.stamp(0, *lbn, 200 + i as u64);
    }
    let mut cursors = vec![103, 203]; // both at block 13
    let next = extend(&t, 0, 13, &mut cursors, Reach { t: 64, s: 128 }, 8, 1000);
    assert_eq!(next, vec![15], "14 and 16 are each on one trail only");
}

#[test]
fn reversed_second_run_is_prefetched_from_history() {
    // §4.3 reversed: no sequence on run 1; run 2 follows run 1's trail
    // backwards and reads each window in ascending LBN order.
    let mut h = Harness::new(DiskSeenParams::default());
    for b in (1000..1100).rev() {
        assert!(h.read(1, b).is_empty());
    }
    h.new_run();
    let mut reqs = vec![];
    for b in (1000..1100).rev() {
        reqs.extend(h.read(1, b));
    }
    // Activation after 4 matched blocks (1099..1096): 1095..1088 and
    // 1087..1080, each one ascending request.
    assert_eq!(&reqs[..2], &[(1088, 8), (1080, 8)]);
    assert_eq!(h.ds.stats().history_streams, 1);
    let prefetched: u32 = reqs.iter().map(|r| r.1).sum();
    assert_eq!(prefetched, 96 - 8 + 8, "1095 down to 1000");
}

#[test]
fn history_off_is_sequence_only() {
    let mut h = Harness::new(DiskSeenParams {
        history: false,
        ..DiskSeenParams::default()
    });
    for b in (1000..1100).rev() {
        h.read(1, b);
    }
    h.new_run();
    for b in (1000..1100).rev() {
        assert!(h.read(1, b).is_empty());
    }
}

#[test]
fn p1_p2_mis_prefetching_disables_history_for_p2_only() {
    // §3.5: P1 reads B1..B20 in a small region (every other block, so no
    // sequence forms); P2 reads B1..B4 only. The match on B1..B4 prefetches
    // B5..B20 for P2, which are evicted unused: both windows are
    // mis-prefetched and history prefetching is disabled for P2, not P1.
    let blk = |i: u64| 5000 + 2 * i;
    let (p1, p2) = (1, 2);
    // infill=0: the paper's exact windows, so every block is its own
    // request and the evictions below resolve each window.
    let mut h = Harness::new(DiskSeenParams {
        infill: ByteSize(0),
        ..DiskSeenParams::default()
    });
    for i in 1..=20 {
        assert!(h.read(p1, blk(i)).is_empty());
    }
    h.new_run();
    let mut reqs = vec![];
    for i in 1..=4 {
        reqs.extend(h.read(p2, blk(i)));
    }
    let expect: Vec<(u64, u32)> = (5..=20).map(|i| (blk(i), 1)).collect();
    assert_eq!(reqs, expect, "B5..B20 prefetched for P2");
    for i in 5..=20 {
        h.evict(blk(i), false);
    }
    assert!(!h.ds.quality().history_enabled(p2));
    assert!(h.ds.quality().history_enabled(p1));
    // Repeated: P2's match no longer reads anything.
    h.new_run();
    for i in 1..=4 {
        assert!(h.read(p2, blk(i)).is_empty());
    }
    // P1 repeats its own pattern: P2's trail (B1..B4) also matches at
    // first, so the intersection is empty until it breaks at B5; from B6 on
    // P1's own history is prefetched and every block used.
    h.new_run();
    let mut reqs = vec![];
    for i in 1..=20 {
        reqs.extend(h.read(p1, blk(i)));
    }
    assert!(!reqs.is_empty(), "P1 still prefetches from history");
    assert!(reqs.iter().all(|&(b, _)| b > blk(5)));
    assert!(h.ds.quality().history_enabled(p1));
}

#[test]
fn upper_candidates_are_screened() {
    // §3.2: a block prefetched and evicted unused keeps its mark.
    let mut h = Harness::new(DiskSeenParams::default());
    for b in 100..108 {
        h.read(1, b);
    }
    h.evict(108, false);
    assert_eq!(h.ds.table().status(0, 108) & PREFETCHED, PREFETCHED);
    h.evict(109, true);
    h.read(1, 109);
    assert_eq!(h.ds.table().status(0, 109) & PREFETCHED, 0);
}

#[test]
fn purge_bounds_the_table_and_keeps_recent_history() {
    // table_mib = 1: about 127 leaf pages; touch blocks spread over 400
    // pages. The check runs every PURGE_CHECK_BLOCKS stamps, the last at
    // the last read; the newest history survives it.
    let mut h = Harness::new(DiskSeenParams {
        table_mib: 1,
        ..DiskSeenParams::default()
    });
    for i in 0..(PURGE_CHECK_BLOCKS * 2) {
        let b = (i % 400) * 512 + i / 400 * 7;
        h.read(1, b);
        // Blocks leave memory (resident blocks are never purged).
        h.evict(b, true);
    }
    assert!(h.ds.table().memory_bytes() <= 1 << 20);
    assert!(h.ds.stats().purges > 0);
    let last = (PURGE_CHECK_BLOCKS * 2 - 1) % 400 * 512 + (PURGE_CHECK_BLOCKS * 2 - 1) / 400 * 7;
    assert_eq!(h.ds.table().newest(0, last), PURGE_CHECK_BLOCKS * 2);
}

/// Drive any policy over reads of file 7 (pages → blocks 1000 + page) with
/// the harness's pretend cache; returns every request.
fn drive_file(
    p: &mut dyn Policy,
    mem: &Mem,
    next: &mut u64,
    pages: &[u64],
) -> Vec<PrefetchRequest> {
    let mut all = vec![];
    for (i, &page) in pages.iter().enumerate() {
        let a = Access {
            seq: i as u64 + 1,
            pid: 1,
            file: FileId(7),
            page,
            lbn: 1000 + page,
            blocks: 1,
            ..Access::default()
        };
        let missed = !mem.0.borrow().contains(&a.lbn);
        let o = Outcome {
            miss_blocks: u32::from(missed),
            hit_blocks: u32::from(!missed),
            ..Outcome::default()
        };
        let mut out = vec![];
        {
            let mut sink = Sink::new(&mut out, next, mem);
            p.on_access(&a, &o, &mut sink);
        }
        mem.0.borrow_mut().insert(a.lbn);
        {
            let mut sink = Sink::new(&mut out, next, mem);
            p.feed_access_done(&a, &mut sink);
        }
        for r in &out {
            let (lbn0, n) = match r.target {
                Target::Block { lbn, .. } => (lbn, r.blocks),
                Target::File { page, .. } => (1000 + page, r.blocks),
            };
            for b in lbn0..lbn0 + u64::from(n) {
                mem.0.borrow_mut().insert(b);
            }
        }
        all.extend(out);
    }
    all
}

/// The blocks a list of requests reads (file 7 pages mapped).
fn blocks_of(reqs: &[PrefetchRequest]) -> Vec<u64> {
    let mut v = vec![];
    for r in reqs {
        let l = match r.target {
            Target::Block { lbn, .. } => lbn,
            Target::File { page, .. } => 1000 + page,
        };
        v.extend(l..l + u64::from(r.blocks));
    }
    v
}

fn upper(h: &mut Harness, r: PrefetchRequest) -> Vec<(u64, u32, u64)> {
    let mut out = vec![];
    let mut sink = Sink::new(&mut out, &mut h.next_window, &h.mem);
    h.ds.on_upper_request(&r, &mut sink);
    out.iter()
        .map(|r| match r.target {
            Target::Block { lbn, .. } => (lbn, r.blocks, r.window.0),
            Target::File { page, .. } => (page, r.blocks, r.window.0),
        })
        .collect()
}

#[test]
fn upper_requests_skip_resident_and_busy_blocks_and_drop_wasted_ones() {
    // §3.2: of the candidates pages 0..8 (blocks 1000..1008), 1003 is
    // resident, 1005 busy (a read under way), 1006 was prefetched and
    // evicted unused. The rest are read as block requests in the upper
    // policy's window, and marked prefetched.
    let mut h = Harness::new(DiskSeenParams::default());
    h.read(1, 1003);
    h.ds.table.set_status(0, 1005, BUSY, true);
    h.ds.table.set_status(0, 1006, PREFETCHED, true);
    let r = PrefetchRequest {
        target: Target::File {
            file: FileId(7),
            page: 0,
        },
        blocks: 8,
        window: WindowId(99),
    };
    assert_eq!(
        upper(&mut h, r),
        vec![(1000, 3, 99), (1004, 1, 99), (1007, 1, 99)]
    );
    assert_eq!(h.ds.stats().screened_resident, 2);
    assert_eq!(h.ds.stats().screened_unused, 1);
    assert_eq!(h.ds.table().status(0, 1000), RESIDENT | BUSY | PREFETCHED);
    // Asked again while those reads are under way: nothing is issued twice.
    assert!(upper(&mut h, r).is_empty());
    // Pages the driver cannot place pass through unchanged.
    let other = PrefetchRequest {
        target: Target::File {
            file: FileId(8),
            page: 5,
        },
        blocks: 2,
        window: WindowId(100),
    };
    assert_eq!(upper(&mut h, other), vec![(5, 1, 100), (6, 1, 100)]);
}

#[test]
fn readahead_plus_diskseen_passes_readahead_windows_as_blocks() {
    // Fresh candidates go through untouched (same windows, blocks mapped);
    // DiskSeen adds its own sequence stream after 8 blocks.
    let pages: Vec<u64> = (0..16).collect();
    let mut next = 0;
    let mem = Mem::default();
    let mut alone = build_policy("readahead").unwrap();
    let ra = drive_file(alone.as_mut(), &mem, &mut next, &pages);
    let mut next = 0;
    let mem = Mem::default();
    let mut stack = build_policy("readahead+diskseen").unwrap();
    assert_eq!(stack.name(), "readahead+diskseen");
    let st = drive_file(stack.as_mut(), &mem, &mut next, &pages);
    assert!(!ra.is_empty());
    // (Window ids differ: DiskSeen's own windows take ids too.)
    let stacked = blocks_of(&st);
    for b in blocks_of(&ra) {
        assert!(stacked.contains(&b), "readahead block {b} went through");
    }
    assert!(st.iter().all(|r| matches!(r.target, Target::Block { .. })));
}

#[test]
fn readahead_plus_diskseen_drops_blocks_readahead_wasted_before() {
    // Run 1: readahead prefetches ahead of a reader that stops at page 4
    // (pages 1..3 of its first window are used, 4.. are not); everything
    // is evicted. Run 2: readahead asks for the same blocks; the used ones
    // are read again, the wasted ones screened out by DiskSeen's
    // prefetched mark (§3.2).
    let pages: Vec<u64> = (0..4).collect();
    let mut stack = build_policy("readahead+diskseen").unwrap();
    let (mem, mut next) = (Mem::default(), 0);
    let first = drive_file(stack.as_mut(), &mem, &mut next, &pages);
    let wasted: Vec<(u64, WindowId)> = first
        .iter()
        .flat_map(|r| {
            let Target::Block { lbn, .. } = r.target else {
                panic!("block requests")
            };
            (lbn..lbn + u64::from(r.blocks)).map(move |b| (b, r.window))
        })
        .collect();
    assert!(!wasted.is_empty(), "readahead read ahead of page 3");
    for &(b, w) in &wasted {
        stack.feed_evict(&Eviction {
            dev: 0,
            lbn: b,
            prefetched: true,
            used: b < 1004,
            window: Some(w),
        });
    }
    stack.start_run(2);
    let mem = Mem::default();
    let second = drive_file(stack.as_mut(), &mem, &mut next, &pages);
    assert!(wasted.iter().any(|&(b, _)| b >= 1004));
    assert_eq!(blocks_of(&second), vec![1001, 1002, 1003]);
}

#[test]
fn infill_reads_strided_history_windows_as_one_request() {
    // Run 1 reads every other block; run 2 follows the history. The paper
    // reads exactly the trail's blocks (one request each); infill=1 reads
    // through the one-block holes, one request per window.
    let strided = |infill_blocks: u64| {
        let mut h = Harness::new(DiskSeenParams {
            infill: ByteSize(infill_blocks * 4096),
            ..DiskSeenParams::default()
        });
        for i in 0..40 {
            h.read(1, 2000 + 2 * i);
        }
        h.new_run();
        let mut reqs = vec![];
        for i in 0..6 {
            reqs.extend(h.read(1, 2000 + 2 * i));
        }
        reqs
    };
    let exact = strided(0);
    assert_eq!(&exact[..3], &[(2008, 1), (2010, 1), (2012, 1)]);
    let filled = strided(1);
    assert_eq!(&filled[..2], &[(2008, 15), (2024, 15)]);
}

#[test]
fn stream_requests_carry_their_trail_group_unless_coordination_is_off() {
    // §3.7: each stream's requests share a scheduling group; two streams
    // get two groups; `coordinate=off` tags nothing.
    let groups = |coordinate: bool| {
        let mut h = Harness::new(DiskSeenParams {
            coordinate,
            ..DiskSeenParams::default()
        });
        for b in (100..108).chain(5000..5008) {
            h.read(1, b);
        }
        h.log
            .iter()
            .map(|r| h.ds.schedule_group(r.window))
            .collect::<Vec<u32>>()
    };
    assert_eq!(groups(true), vec![1, 1, 2, 2]);
    assert_eq!(groups(false), vec![0, 0, 0, 0]);
}

#[test]
fn t_is_one_64th_of_buffer_memory_unless_set() {
    // §3.3.1: T = 1/64 of the buffer memory in blocks: 2048 for 512 MiB of
    // 4 KiB blocks. Without a report from the driver, the paper's 2048.
    let mut ds = DiskSeen::new(DiskSeenParams::default());
    assert_eq!(ds.gap_threshold(), 2048);
    ds.start_with_cache((512 << 20) / 4096);
    assert_eq!(ds.gap_threshold(), 2048);
    ds.start_with_cache(64 * 100);
    assert_eq!(ds.gap_threshold(), 100);
    // An explicit t wins over the memory size.
    let mut fixed = DiskSeen::new(DiskSeenParams {
        t: 300,
        ..DiskSeenParams::default()
    });
    fixed.start_with_cache(64 * 100);
    assert_eq!(fixed.gap_threshold(), 300);
    // The derived T governs sequence detection: with 16 × 64 blocks of
    // memory T = 16, and a gap of 16 breaks the sequence (as `t=16` does in
    // `a_gap_of_t_or_more_breaks_a_sequence`).
    let mut h = Harness::new(DiskSeenParams::default());
    h.ds.start_with_cache(16 * 64);
    for b in 100..107 {
        h.read(1, b);
    }
    for i in 0..15 {
        h.read(1, 10_000 + 3 * i);
    }
    assert!(h.read(1, 107).is_empty(), "gap 16 = T is too large");
    // Through the stack operator too.
    let mut stack = build_policy("readahead+diskseen").unwrap();
    stack.start_with_cache(16 * 64);
}

#[test]
fn default_windows_are_read_as_aggregates_around_resident_blocks() {
    // §4.3 aggregates (infill=2 by default): a strided history window is
    // one request reading through its one-block holes, but a hole holding
    // a resident block is never read again (§3.2), so the aggregate ends
    // there.
    let mut h = Harness::new(DiskSeenParams::default());
    for i in 0..40 {
        h.read(1, 2000 + 2 * i);
    }
    h.new_run();
    h.mem.0.borrow_mut().insert(2013);
    let mut reqs = vec![];
    for i in 0..4 {
        reqs.extend(h.read(1, 2000 + 2 * i));
    }
    assert_eq!(reqs, vec![(2008, 5), (2014, 9), (2024, 15)]);
}

#[test]
fn interleaved_regions_keep_one_trail_each_and_run_2_follows_history() {
    // §4.3 CVS/diff: one process alternates between two far-apart trees.
    // Consecutive timestamps alternate between the regions, yet each region
    // keeps its own current trail (§3.4.1: a trail is a sequence of nearby
    // blocks whose own consecutive gaps are below T; several are live at
    // once), so run 2 matches both against run 1's history. History
    // windows grow to 64 blocks (§3.4.3) where sequence windows stop at 32
    // (§3.3.2): half the switches between the trees.
    let (a, b) = (1000u64, 1_000_000u64);
    let run = |h: &mut Harness| {
        let mut sizes = (Vec::new(), Vec::new());
        for i in 0..400 {
            for (base, out) in [(a, &mut sizes.0), (b, &mut sizes.1)] {
                for (lbn, n) in h.read(1, base + i) {
                    assert!(lbn.abs_diff(base) < 1000, "each window stays in its tree");
                    out.push(n);
                }
            }
            if i == 2 {
                assert_eq!(h.ds.trails.len(), 2, "one live trail per tree");
            }
        }
        sizes
    };
    let mut h = Harness::new(DiskSeenParams::default());
    let (ra, rb) = run(&mut h);
    assert_eq!(h.ds.stats().sequence_streams, 2);
    assert_eq!(h.ds.stats().history_streams, 0);
    assert_eq!(ra, rb);
    // 400 blocks per tree: K = 8 read, then 392 prefetched.
    assert_eq!(
        ra,
        [8, 8, 16, 16, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32]
    );
    h.new_run();
    let (ha, hb) = run(&mut h);
    assert_eq!(h.ds.stats().sequence_streams, 2, "none more on run 2");
    assert_eq!(h.ds.stats().history_streams, 2);
    assert_eq!(ha, hb);
    // Activation after 4 matched blocks; 396 prefetched in 11 windows
    // instead of 16 (the last one ends where run 1's history ends).
    assert_eq!(ha, [8, 8, 16, 16, 32, 32, 64, 64, 64, 64, 28]);
}

#[test]
fn saved_history_lets_a_new_process_follow_the_trail() {
    // As `reversed_second_run_is_prefetched_from_history`, but run 2 is a
    // fresh DiskSeen that loaded run 1's saved table (the next process),
    // saved per application (`shared=off`).
    let off = || DiskSeenParams {
        shared: false,
        ..DiskSeenParams::default()
    };
    let mut h = Harness::new(off());
    for b in (1000..1100).rev() {
        assert!(h.read(1, b).is_empty());
    }
    let blob = h.ds.save_history().expect("diskseen learns");
    let mut next = Harness::new(off());
    next.ds.load_history(&blob).unwrap();
    next.ds.start_run(1);
    assert_eq!(next.ds.counter(), 100);
    let mut reqs = vec![];
    for b in (1000..1100).rev() {
        reqs.extend(next.read(1, b));
    }
    assert_eq!(&reqs[..2], &[(1088, 8), (1080, 8)]);
    // A damaged blob is refused and leaves the policy as it was.
    let mut fresh = DiskSeen::new(DiskSeenParams::default());
    for bad in [&blob[..blob.len() - 1], &blob[..3], b"ODSK1\x00".as_slice()] {
        assert!(fresh.load_history(bad).is_err());
        assert_eq!(fresh.counter(), 0);
    }
    let mut flipped = blob.clone();
    flipped[13] ^= 0xff; // first block's device
    flipped[5 + 8 + 12] = 0xff; // its newest timestamp, far past the counter
    assert!(fresh.load_history(&flipped).is_err());
}

/// A demand read of `lbn` by pid 1 that the driver reports missed (the
/// program brought the block in itself); the requests it caused.
fn read_missed(h: &mut Harness, lbn: u64) -> Vec<(u64, u32)> {
    let a = Access {
        seq: 100,
        pid: 1,
        lbn,
        page: lbn,
        blocks: 1,
        ..Access::default()
    };
    let missed = Outcome {
        miss_blocks: 1,
        ..Outcome::default()
    };
    let mut out = Vec::new();
    let mut sink = Sink::new(&mut out, &mut h.next_window, &h.mem);
    h.ds.on_access(&a, &missed, &mut sink);
    out.iter()
        .map(|r| match r.target {
            Target::Block { lbn, .. } => (lbn, r.blocks),
            Target::File { page, .. } => (page, r.blocks),
        })
        .collect()
}

/// A live driver hears of accesses late: a demand read that missed a
/// block our window read means the read came after it. The stream then
/// reads one more window ahead (lead.rs); the simulator never reports
/// such a miss, so its runs are unchanged.
#[test]
fn a_late_window_makes_streams_read_one_more_window_ahead() {
    let mut h = Harness::new(DiskSeenParams::default());
    for b in 0..8 {
        h.read(1, b);
    }
    // K = 8: windows 8..16 (current) and 16..24 (readahead) were read.
    assert_eq!(h.ds.lead_windows(), 1);
    let reqs = read_missed(&mut h, 8);
    assert_eq!(h.ds.lead_windows(), 2);
    assert_eq!(h.ds.stats().late_windows, 1);
    // The extra window follows the readahead window: 24..32.
    assert_eq!(reqs, vec![(24, 8)]);
}

/// A block evicted unused and then missed is not a late read: the lead
/// stays (the simulator's case under memory pressure).
#[test]
fn a_miss_after_an_unused_eviction_is_not_late() {
    let mut h = Harness::new(DiskSeenParams::default());
    for b in 0..8 {
        h.read(1, b);
    }
    h.evict(9, false);
    assert!(read_missed(&mut h, 9).is_empty());
    assert_eq!(h.ds.lead_windows(), 1);
}
