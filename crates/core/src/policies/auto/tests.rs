use super::*;
use crate::event::PrefetchRequest;
use crate::policy::NoResidency;
use crate::policy::PolicyExt;
use crate::Params;

fn params(text: &str) -> AutoParams {
    AutoParams::parse(NAME, text).unwrap()
}

fn entry(file: u64, page: u64, pages: u32, lbn: u64) -> Entry {
    Entry {
        file: FileId(file),
        page,
        pages,
        dev: 0,
        lbn,
    }
}

fn read(a: &mut Auto, file: u64, page: u64, blocks: u32) -> Vec<(u64, u64, u32)> {
    access(a, file, page, blocks, Origin::Demand)
}

/// An access of `origin` (`read` for demand reads); returns the requests.
fn access(a: &mut Auto, file: u64, page: u64, blocks: u32, origin: Origin) -> Vec<(u64, u64, u32)> {
    let mut reqs: Vec<PrefetchRequest> = Vec::new();
    let mut w = 0;
    let mut sink = Sink::new(&mut reqs, &mut w, &NoResidency);
    let acc = Access {
        pid: 1,
        file: FileId(file),
        page,
        lbn: page,
        blocks,
        origin,
        ..Access::default()
    };
    a.on_access(&acc, &Outcome::default(), &mut sink);
    pages_of(&reqs)
}

fn tick(a: &mut Auto) -> Vec<(u64, u64, u32)> {
    let mut reqs: Vec<PrefetchRequest> = Vec::new();
    let mut w = 0;
    let mut sink = Sink::new(&mut reqs, &mut w, &NoResidency);
    a.feed_tick(0, &mut sink);
    pages_of(&reqs)
}

fn pages_of(reqs: &[PrefetchRequest]) -> Vec<(u64, u64, u32)> {
    reqs.iter()
        .map(|r| match r.target {
            Target::File { file, page } => (file.0, page, r.blocks),
            _ => panic!("file targets only"),
        })
        .collect()
}

/// The first batch (issued at the first tick) is the list's first 4 pages
/// sorted by physical position: entries at blocks 90, 10, 50, 30 come out
/// 10, 30, 50, 90; the next 4 entries (blocks 5, 70, unknown, 20) come out
/// 5, 20, 70 and the unknown one last.
#[test]
fn a_batch_is_fetched_in_physical_order() {
    let mut a = Auto::new(params(
        "init_batch=16KiB,batch=16KiB,ahead=32KiB,stride=false",
    ));
    a.set_history(vec![
        entry(1, 0, 1, 90),
        entry(2, 0, 1, 10),
        entry(3, 7, 1, 50),
        entry(4, 0, 1, 30),
        entry(5, 0, 1, 5),
        entry(6, 0, 1, 70),
        entry(7, 3, 1, NO_LBN),
        entry(8, 0, 1, 20),
    ]);
    assert_eq!(a.tick_interval_ns(), Some(TICK_NS));
    // ahead = 8 pages: two batches of 4 fit at once.
    let got = tick(&mut a);
    assert_eq!(
        got,
        vec![
            (2, 0, 1),
            (4, 0, 1),
            (3, 7, 1),
            (1, 0, 1),
            (5, 0, 1),
            (8, 0, 1),
            (6, 0, 1),
            (7, 3, 1)
        ]
    );
    assert_eq!(a.stats.batches, 2);
    // A second tick issues nothing more.
    assert!(tick(&mut a).is_empty());
}

/// Contiguous pages of one file in a batch become one request.
#[test]
fn adjacent_entries_merge_into_one_request() {
    let mut a = Auto::new(params("init_batch=64KiB,stride=false"));
    a.set_history(vec![
        entry(1, 4, 2, 104),
        entry(2, 0, 1, 500),
        entry(1, 0, 4, 100),
    ]);
    assert_eq!(tick(&mut a), vec![(1, 0, 6), (2, 0, 1)]);
}

/// Reading the list in order, one page per read, with 8-page batches and
/// a 32-page bound: the pages requested beyond the program's progress
/// never exceed 32, every entry is requested exactly once, and a batch
/// goes out each time 8 pages have been consumed.
#[test]
fn replay_stays_within_the_pacing_bound() {
    let mut a = Auto::new(params(
        "init_batch=32KiB,batch=32KiB,ahead=128KiB,stride=false",
    ));
    let n = 1000u64;
    // File 1, pages in a fixed scrambled order, physical = page.
    let order: Vec<u64> = (0..n).map(|i| (i * 617) % n).collect();
    a.set_history(order.iter().map(|&p| entry(1, p, 1, p)).collect());
    let mut requested = vec![0u32; n as usize];
    for (r, &p) in order.iter().enumerate() {
        for (_, page, blocks) in read(&mut a, 1, p, 1) {
            for q in page..page + u64::from(blocks) {
                requested[q as usize] += 1;
            }
        }
        assert!(
            a.outstanding_pages() <= 32,
            "read {r}: {}",
            a.outstanding_pages()
        );
        if r + 1 < n as usize - 32 {
            // At least 24 pages ahead: a batch refills as soon as 8 are used.
            assert!(a.outstanding_pages() >= 24, "read {r}");
        }
    }
    // Entry 0 was read by the program before any batch: never requested.
    assert_eq!(requested[order[0] as usize], 0);
    assert!(order[1..].iter().all(|&p| requested[p as usize] == 1));
    assert_eq!(a.stats.matched, n);
    assert_eq!(a.stats.resyncs, 0);
}

/// The program jumps from entry 0 to entry 500 (beyond what was issued):
/// the replay moves there; the next batch starts at entry 501.
#[test]
fn a_jump_resynchronises_the_replay() {
    let mut a = Auto::new(params(
        "init_batch=16KiB,batch=16KiB,ahead=16KiB,stride=false,seq_limit=0",
    ));
    a.set_history((0..1000).map(|p| entry(1, p * 10, 1, p * 10)).collect());
    assert_eq!(
        read(&mut a, 1, 0, 1),
        vec![(1, 10, 1), (1, 20, 1), (1, 30, 1), (1, 40, 1)]
    );
    let got = read(&mut a, 1, 5000, 1);
    assert_eq!(a.stats.resyncs, 1);
    assert_eq!(
        got,
        vec![(1, 5010, 1), (1, 5020, 1), (1, 5030, 1), (1, 5040, 1)]
    );
    // A re-read of an early entry changes nothing.
    assert!(read(&mut a, 1, 10, 1).is_empty());
    assert_eq!(a.outstanding_pages(), 4);
}

/// The program leaves its history for another file read backwards: once
/// more than half of the last 8 reads match nothing, replay stops (no
/// further batches although the list is not done) and the stride detector
/// prefetches for the new pattern. Eight rising matches resume replay.
#[test]
fn departure_stops_replay_and_falls_back_to_stride() {
    let mut a = Auto::new(params(
        "init_batch=8KiB,batch=8KiB,ahead=16KiB,window=8,depart=0.5,rejoin=4,seq_limit=0",
    ));
    a.set_history((0..100).map(|p| entry(1, p, 1, p)).collect());
    read(&mut a, 1, 0, 1);
    let batches = a.stats.batches;
    assert!(a.replaying());
    let mut stride_reqs = 0;
    for (i, page) in (0..8u64).map(|i| 1000 - i).enumerate() {
        let got = read(&mut a, 2, page, 1);
        assert!(
            got.iter().all(|r| r.0 == 2),
            "history not replayed: {got:?}"
        );
        stride_reqs += got.len();
        // Window of 8: the first read plus 4 unmatched is not yet > half.
        assert_eq!(a.replaying(), i < 4, "read {i}");
    }
    assert_eq!(a.stats.departures, 1);
    assert_eq!(a.stats.batches, batches);
    assert!(stride_reqs > 0, "stride took over the backward read");
    // Back on the list: 4 rising matches (entries 50..53) resume replay.
    for p in 50..53 {
        assert!(read(&mut a, 1, p, 1).is_empty());
        assert!(!a.replaying());
    }
    let got = read(&mut a, 1, 53, 1);
    assert!(a.replaying());
    assert_eq!(a.stats.rejoins, 1);
    // Two 2-page batches fill the 4-page bound.
    assert_eq!(got, vec![(1, 54, 2), (1, 56, 2)]);
}

/// Without history: exactly the stride detector's requests, no tick.
#[test]
fn without_history_it_is_stride() {
    let mut a = Auto::new(params(""));
    assert_eq!(a.tick_interval_ns(), None);
    let mut s = Stride::new(StrideParams::default());
    for p in (900..1000u64).rev() {
        let got = read(&mut a, 3, p, 1);
        let mut reqs = Vec::new();
        let mut w = 0;
        let mut sink = Sink::new(&mut reqs, &mut w, &NoResidency);
        let acc = Access {
            pid: 1,
            file: FileId(3),
            page: p,
            lbn: p,
            blocks: 1,
            ..Access::default()
        };
        s.on_access(&acc, &Outcome::default(), &mut sink);
        assert_eq!(got, pages_of(&reqs));
    }
}

/// The recorded list: first-access order, each page once, contiguous pages
/// coalesced (not across a physical discontinuity); it round-trips through
/// the blob, and the next run (`--runs`) replays it.
#[test]
fn the_run_records_its_access_list_for_the_next() {
    let mut a = Auto::new(params("stride=false"));
    read(&mut a, 1, 10, 2); // 10, 11
    read(&mut a, 1, 12, 1); // extends: 10..13
    read(&mut a, 2, 0, 1);
    read(&mut a, 1, 11, 3); // 11, 12 seen; 13 new but file 2 came between
    let want = vec![entry(1, 10, 3, 10), entry(2, 0, 1, 0), entry(1, 13, 1, 13)];
    let blob = a.save_history().unwrap();
    assert_eq!(decode_history(&blob).unwrap(), want);
    let mut b = Auto::new(params("stride=false"));
    b.load_history(&blob).unwrap();
    assert_eq!(b.history(), &want[..]);
    a.start_run(1);
    assert_eq!(a.history(), &want[..]);
    assert!(b.load_history(b"nonsense").is_err());
    assert!(decode_history(&blob[..blob.len() - 1])
        .unwrap_err()
        .contains("not a multiple of 32"));
}

/// Recording stops at its bounds.
#[test]
fn recording_is_bounded() {
    let mut l = AccessList::new(2, 1000);
    for p in 0..10 {
        l.note(FileId(1), p * 2, 1, 0, NO_LBN);
    }
    assert_eq!(l.entries().len(), 2);
    let mut l = AccessList::new(100, 5);
    l.note(FileId(1), 0, 100, 0, NO_LBN);
    assert_eq!(l.entries(), &[entry(1, 0, 5, NO_LBN)][..]);
}

/// Memory safety: a budget that shrinks (the program joined a smaller
/// memory cgroup and the driver dropped what was prefetched ahead) bounds
/// the replay to half of it and replays again from the program's
/// position. 16 one-page entries on blocks 0..16; ahead 8 pages, batches
/// of 4: the first tick issues pages 0..8. Told a budget of 64 pages
/// (ahead 32: no change), nothing is replayed again; once the program
/// read pages 0..4 the next batch is 8..12. Told 8 pages (ahead 4, batch
/// 2), the replay restarts at the program's position (4) with 4 pages in
/// batches of 2.
#[test]
fn a_shrinking_budget_bounds_the_replay_and_rewinds_it() {
    let mut a = Auto::new(params(
        "init_batch=16KiB,batch=16KiB,ahead=32KiB,stride=false,seq_limit=0",
    ));
    a.set_history((0..16).map(|i| entry(1, i, 1, i)).collect());
    let pages = |v: Vec<(u64, u64, u32)>| -> Vec<u64> {
        v.iter().flat_map(|r| r.1..r.1 + u64::from(r.2)).collect()
    };
    assert_eq!(pages(tick(&mut a)), (0..8).collect::<Vec<_>>());
    a.feed_budget(64 * BLOCK_SIZE);
    assert_eq!(tick(&mut a), vec![]);
    for p in 0..3 {
        assert!(read(&mut a, 1, p, 1).is_empty());
    }
    assert_eq!(pages(read(&mut a, 1, 3, 1)), vec![8, 9, 10, 11]);
    a.feed_budget(8 * BLOCK_SIZE);
    assert_eq!(a.stats.rewinds, 1);
    let got = tick(&mut a);
    assert_eq!(got.len(), 2, "two batches of 2: {got:?}");
    assert_eq!(pages(got), vec![4, 5, 6, 7]);
    assert_eq!(a.outstanding_pages(), 4);
    // A larger budget again is a bound, not a rewind.
    a.feed_budget(64 * BLOCK_SIZE);
    assert_eq!(a.stats.rewinds, 1);
}

/// A budget that grows while the program is idle (the driver's start-up
/// cap lifting) lets the next tick replay further, without a read.
#[test]
fn a_growing_budget_replays_further_at_the_next_tick() {
    let mut a = Auto::new(params(
        "init_batch=16KiB,batch=16KiB,ahead=64KiB,stride=false,seq_limit=0",
    ));
    a.set_history((0..32).map(|i| entry(1, i, 1, i)).collect());
    a.feed_budget(8 * BLOCK_SIZE);
    let first = tick(&mut a);
    assert_eq!(a.outstanding_pages(), 4, "half of 8 pages: {first:?}");
    assert_eq!(tick(&mut a), vec![], "held by the bound");
    a.feed_budget(1 << 30);
    let more = tick(&mut a);
    assert!(!more.is_empty());
    let out = a.outstanding_pages();
    assert!(out > 4 && out <= 16, "ahead=64KiB now bounds it: {out}");
}

/// `infill`: a strided history (every other page of file 1, pages 0, 2,
/// .., 14) in one batch is read as one request through the one-page
/// gaps with the default 8 KiB infill, and as 8 one-page requests with
/// `infill=0`. A gap of 3 pages is not read through.
#[test]
fn infill_reads_through_small_gaps_of_a_batch() {
    let hist: Vec<Entry> = (0..8).map(|i| entry(1, 2 * i, 1, 2 * i)).collect();
    let mut a = Auto::new(params("init_batch=64KiB,stride=false"));
    a.set_history(hist.clone());
    assert_eq!(tick(&mut a), vec![(1, 0, 15)]);
    let mut a = Auto::new(params("init_batch=64KiB,stride=false,infill=0"));
    a.set_history(hist);
    assert_eq!(tick(&mut a).len(), 8);
    let mut a = Auto::new(params("init_batch=64KiB,stride=false"));
    a.set_history(vec![entry(1, 0, 1, 0), entry(1, 4, 1, 4)]);
    assert_eq!(tick(&mut a), vec![(1, 0, 1), (1, 4, 1)]);
}

/// Of a forward-sequential run of a file only the first `seq_limit` is
/// replayed (the kernel's readahead reads the rest): with a 20 KiB
/// (5-page) limit, file 1 read as pages 0..4, 4..8 (continuing a 4-page
/// run, under the limit), file 2 page 9, then file 1 pages 8..10 (the run
/// is 8 pages: skipped) and 20..21 (a new run). `seq_limit=0` replays all.
#[test]
fn forward_sequential_runs_beyond_the_limit_are_left_to_kernel_readahead() {
    let hist = vec![
        entry(1, 0, 4, 0),
        entry(1, 4, 4, 4),
        entry(2, 9, 1, 100),
        entry(1, 8, 2, 8),
        entry(1, 20, 1, 20),
    ];
    let mut a = Auto::new(params(
        "init_batch=1MiB,stride=false,infill=0,seq_limit=20KiB",
    ));
    a.set_history(hist.clone());
    assert_eq!(tick(&mut a), vec![(1, 0, 8), (1, 20, 1), (2, 9, 1)]);
    let mut a = Auto::new(params("init_batch=1MiB,stride=false,infill=0,seq_limit=0"));
    a.set_history(hist);
    assert_eq!(tick(&mut a), vec![(1, 0, 10), (1, 20, 1), (2, 9, 1)]);
}

/// Pages fault-around mapped are recorded for the next run, but during
/// replay they neither move it (a late history entry mapped early does not
/// resynchronise) nor count towards departure, and prompt no stride.
#[test]
fn mapped_pages_are_recorded_but_neither_move_nor_stop_the_replay() {
    let mut a = Auto::new(params(
        "init_batch=4KiB,batch=4KiB,ahead=16KiB,window=8,depart=0.5,seq_limit=0",
    ));
    a.set_history((0..1000).map(|p| entry(1, p * 10, 1, p * 10)).collect());
    read(&mut a, 1, 0, 1);
    let mapped = |a: &mut Auto, file, page, blocks| access(a, file, page, blocks, Origin::Mapped);
    // An entry near the list's end, then 320 pages of a file it never saw,
    // forward in 16-page windows (a stream, were they reads).
    assert!(mapped(&mut a, 1, 9000, 1).is_empty());
    for w in 0..20 {
        assert!(mapped(&mut a, 7, w * 16, 16).is_empty());
    }
    assert_eq!((a.stats.resyncs, a.stats.departures), (0, 0));
    assert_eq!((a.stats.matched, a.stats.unmatched), (1, 0));
    assert!(a.replaying());
    // The replay goes on from where the reads left it.
    assert_eq!(read(&mut a, 1, 10, 1), vec![(1, 50, 1)]);
    // The next run's history holds the mapped pages after the read.
    let saved = decode_history(&a.save_history().unwrap()).unwrap();
    assert_eq!(saved[..2], [entry(1, 0, 1, 0), entry(1, 9000, 1, 9000)]);
    assert_eq!(
        saved[2..],
        [
            entry(7, 0, 256, 0),
            entry(7, 256, 64, 256),
            entry(1, 10, 1, 10)
        ]
    );
}
