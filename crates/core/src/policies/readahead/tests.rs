//! Worked examples from the kernel's arithmetic, replayed through a tiny
//! driver: a page cache that holds every page read or prefetched (no
//! eviction, no timing: a prefetched page counts as a hit).

use super::*;
use crate::event::PrefetchRequest;
use crate::params::Params;
use crate::policy::PolicyExt;
use crate::policy::Residency;
use proptest::prelude::*;
use std::collections::HashSet;

/// Pages in memory, as (file, page); RAW pages are device blocks of dev 0.
#[derive(Default)]
struct Cache(HashSet<(u64, u64)>);

impl Residency for Cache {
    fn is_cached(&self, _dev: u32, lbn: u64) -> bool {
        self.0.contains(&(FileId::RAW.0, lbn))
    }
    fn is_page_cached(&self, file: FileId, page: u64) -> bool {
        self.0.contains(&(file.0, page))
    }
}

struct Driver {
    ra: Readahead,
    cache: Cache,
    next_window: u64,
}

impl Driver {
    fn new(p: ReadaheadParams) -> Self {
        Driver {
            ra: Readahead::new(p),
            cache: Cache::default(),
            next_window: 0,
        }
    }

    fn default() -> Self {
        Self::new(ReadaheadParams::default())
    }

    /// Feed one access; return what the policy asked for. Pages found in
    /// the cache are hits, the rest misses; afterwards the demand pages and
    /// the prefetched pages are in the cache.
    fn access(&mut self, a: Access) -> Vec<PrefetchRequest> {
        let hit = (a.page..a.end_page())
            .filter(|&p| self.cache.0.contains(&(a.file.0, p)))
            .count() as u32;
        let o = Outcome {
            hit_blocks: hit,
            miss_blocks: a.blocks - hit,
            ..Outcome::default()
        };
        let mut out = vec![];
        let mut sink = Sink::new(&mut out, &mut self.next_window, &self.cache);
        self.ra.on_access(&a, &o, &mut sink);
        for p in a.page..a.end_page() {
            self.cache.0.insert((a.file.0, p));
        }
        for r in &out {
            let (f, p) = match r.target {
                Target::File { file, page } => (file.0, page),
                Target::Block { lbn, .. } => (FileId::RAW.0, lbn),
            };
            for q in p..p + u64::from(r.blocks) {
                self.cache.0.insert((f, q));
            }
        }
        out
    }

    /// A demand read of `blocks` pages at `page` of `file`; the prefetches
    /// as (first page, pages).
    fn read(&mut self, file: u64, page: u64, blocks: u32) -> Vec<(u64, u32)> {
        self.access(access(file, page, blocks, Op::Read))
            .iter()
            .map(|r| match r.target {
                Target::File { file: f, page } => {
                    assert_eq!(f, FileId(file), "prefetch in the reader's file");
                    (page, r.blocks)
                }
                Target::Block { lbn, .. } => (lbn, r.blocks),
            })
            .collect()
    }

    fn state(&self, file: u64) -> (u64, u64, u64) {
        let ra = self.ra.file_ra_state(FileId(file), 0).expect("file read");
        (ra.start, ra.size, ra.async_size)
    }

    fn marks(&self, file: u64) -> Vec<u64> {
        self.ra.readahead_marks(FileId(file), 0)
    }
}

fn access(file: u64, page: u64, blocks: u32, op: Op) -> Access {
    Access {
        file: FileId(file),
        page,
        lbn: page,
        blocks,
        op,
        ..Access::default()
    }
}

#[test]
fn first_4k_read_opens_a_four_page_window() {
    // Read of page 0, 1 page: sync readahead, start of file →
    // get_init_ra_size(1, 32): roundup_pow_of_two(1) = 1 ≤ 32/32 → ×4 = 4;
    // async_size = size − req_count = 3; the marker is page
    // start + size − async_size = 1. The kernel reads [0, 4) in one I/O;
    // page 0 is the demand read, pages 1..4 the prefetch.
    let mut d = Driver::default();
    assert_eq!(d.read(1, 0, 1), vec![(1, 3)]);
    assert_eq!(d.state(1), (0, 4, 3));
    assert_eq!(d.marks(1), vec![1]);
}

#[test]
fn sequential_4k_reads_ramp_4_8_16_32() {
    // Each marker hit runs async readahead with index == expected: the
    // window moves to start + size and grows by get_next_ra_size(·, 32):
    // 4 → 8 (4 ≤ 16: ×2), 8 → 16, 16 → 32, 32 → 32 (> 16: max), with
    // async_size = size, so the marker is the new window's first page.
    //   read 0:  [0,4)   marker 1   (prefetch 1..4)
    //   read 1:  [4,12)  marker 4
    //   read 4:  [12,28) marker 12
    //   read 12: [28,60) marker 28
    //   read 28: [60,92) marker 60
    //   read 60: [92,124) marker 92
    let mut d = Driver::default();
    let mut got = vec![];
    for page in 0..=64 {
        let r = d.read(1, page, 1);
        if !r.is_empty() {
            got.push((page, r, d.state(1), d.marks(1)));
        }
    }
    let expect = vec![
        (0, vec![(1, 3)], (0, 4, 3), vec![1]),
        (1, vec![(4, 8)], (4, 8, 8), vec![4]),
        (4, vec![(12, 16)], (12, 16, 16), vec![12]),
        (12, vec![(28, 32)], (28, 32, 32), vec![28]),
        (28, vec![(60, 32)], (60, 32, 32), vec![60]),
        (60, vec![(92, 32)], (92, 32, 32), vec![92]),
    ];
    assert_eq!(got, expect);
}

#[test]
fn sixteen_page_first_read() {
    // get_init_ra_size(16, 32): 16 > 32/4 → 32 pages; async_size = 32 − 16
    // = 16; the marker is page 16, the first page after the read.
    let mut d = Driver::default();
    assert_eq!(d.read(1, 0, 16), vec![(16, 16)]);
    assert_eq!((d.state(1), d.marks(1)), ((0, 32, 16), vec![16]));
    // Reading 16..32 hits the marker: expected = 0 + 32 − 16 = 16 → next
    // window [32, 64) (get_next_ra_size(32) = max), marker 32.
    assert_eq!(d.read(1, 16, 16), vec![(32, 32)]);
    assert_eq!((d.state(1), d.marks(1)), ((32, 32, 32), vec![32]));
    assert_eq!(d.read(1, 32, 16), vec![(64, 32)]);
    assert_eq!(d.read(1, 48, 16), vec![]);
}

#[test]
fn reads_larger_than_the_window_chain_windows_inside_themselves() {
    // 64-page reads, ra_pages = io_pages = 32: max_pages stays 32, so the
    // sync window is get_init_ra_size(64, 32) = 32 pages [0, 32) with
    // async_size = 32 >> 1 = 16 (size ≤ req_count). Its marker 16 lies
    // inside the read, so the same read runs async readahead at 16
    // (expected = 0 + 32 − 16): window [32, 64), marker 32, also inside;
    // at 32: window [64, 96), marker 64. Only [64, 96) is a prefetch.
    let mut d = Driver::default();
    assert_eq!(d.read(1, 0, 64), vec![(64, 32)]);
    assert_eq!((d.state(1), d.marks(1)), ((64, 32, 32), vec![64]));
    // Next read [64, 128): 64..96 resident, 96..128 missing. The marker at
    // 64 fires first: window [96, 128) (inside, so the miss at 96 is
    // covered, no sync readahead), its marker 96 fires: [128, 160).
    assert_eq!(d.read(1, 64, 64), vec![(128, 32)]);
    assert_eq!((d.state(1), d.marks(1)), ((128, 32, 32), vec![128]));

    // Same reads on a device with io_pages = 64 (max_sectors_kb = 256):
    // ractl_max_pages(64) = min(64, 64) = 64, so the sync window is
    // get_init_ra_size(64, 64) = 64 pages [0, 64), async_size 32, marker
    // 32 inside the read. At 32 the request left is 32 pages, so
    // max_pages = ra_pages = 32: next window get_next_ra_size(64, 32) = 32,
    // [64, 96), marker 64.
    let mut d = Driver::new(ReadaheadParams {
        io_pages: 64,
        ..ReadaheadParams::default()
    });
    assert_eq!(d.read(1, 0, 64), vec![(64, 32)]);
    assert_eq!((d.state(1), d.marks(1)), ((64, 32, 32), vec![64]));
    // Read [64, 128): marker 64 with 64 pages left → max_pages 64 →
    // window [96, 160) (size 32 ≤ 64/2: ×2), prefetch its part beyond the
    // read [128, 160); its marker 96 (32 pages left, max 32) → [160, 192).
    assert_eq!(d.read(1, 64, 64), vec![(128, 32), (160, 32)]);
    assert_eq!((d.state(1), d.marks(1)), ((160, 32, 32), vec![160]));
}

#[test]
fn random_reads_read_only_what_was_asked() {
    // Each miss is neither at page 0 nor within one page of where the
    // previous read ended, and page index − 1 is not cached (no context):
    // do_page_cache_ra(req_count, 0), the state stays empty.
    let mut d = Driver::default();
    for page in [1000, 5000, 300, 7000, 20, 4000] {
        assert_eq!(d.read(1, page, 1), vec![], "page {page}");
    }
    assert_eq!(d.state(1), (0, 0, 0));
    assert!(d.marks(1).is_empty());
}

#[test]
fn a_read_one_page_past_the_previous_end_counts_as_sequential() {
    // prev_pos is the end of the previous read: after reading page 1000,
    // prev_index = 1001, and a miss at 1002 has index − prev_index = 1, the
    // kernel's "trivial case": a fresh window get_init_ra_size(1) = 4.
    let mut d = Driver::default();
    assert_eq!(d.read(1, 1000, 1), vec![]);
    assert_eq!(d.read(1, 1002, 1), vec![(1003, 3)]);
    assert_eq!(d.state(1), (1002, 4, 3));
}

#[test]
fn interleaved_streams_in_one_file_both_ramp() {
    // Stream A reads 0, 1, 2, ... and stream B 1000, 1001, ... alternately,
    // sharing one file_ra_state. B's misses are never sequential to
    // prev_pos (A's last read), so B relies on context readahead; A's and
    // B's markers stay in the page cache, and a marker that does not match
    // the state takes the "interleaved" branch of page_cache_async_ra.
    let mut d = Driver::default();
    let steps = [
        // A0: start of file → [0,4), marker 1.
        (0, vec![(1, 3)]),
        // B1000: page 999 not cached → no history → random.
        (1000, vec![]),
        // A1: marker 1 == expected → [4,12), marker 4.
        (1, vec![(4, 8)]),
        // B1001: history is 1000 only: contig_count 1 ≤ req 1 → random.
        (1001, vec![]),
        (2, vec![]),
        // B1002: history 1000..1002, contig_count 2 > 1 → context window
        // [1002, 1002 + min(2 + 1, 32)) = [1002,1005), async_size 1,
        // marker 1004. The state is now B's.
        (1002, vec![(1003, 2)]),
        (3, vec![]),
        (1003, vec![]),
        // A4: marker 4 ≠ expected 1004 → page_cache_next_miss(5) = 12
        // (A's window [4,12) is cached): size = get_next_ra_size(12 − 4 +
        // 1 = 9) = 18 → [12,30), marker 12.
        (4, vec![(12, 18)]),
        // B1004: marker 1004 ≠ expected 12 → next miss 1005: size =
        // get_next_ra_size(1 + 1 = 2) = 4 → [1005,1009), marker 1005.
        (1004, vec![(1005, 4)]),
        (5, vec![]),
        // B1005: marker 1005 == expected (the state is B's) → [1009,1017).
        (1005, vec![(1009, 8)]),
    ];
    for (page, want) in &steps {
        assert_eq!(&d.read(1, *page, 1), want, "read of page {page}");
    }
    assert_eq!(d.marks(1), vec![12, 1009]);

    // Without context readahead B never gets a window.
    let mut d = Driver::new(ReadaheadParams {
        context: false,
        ..ReadaheadParams::default()
    });
    for (page, _) in &steps {
        let got = d.read(1, *page, 1);
        if *page >= 1000 {
            assert_eq!(got, vec![], "read of page {page}");
        }
    }
}

#[test]
fn two_files_keep_separate_state() {
    // Alternating 4 KiB reads of two files: each ramps exactly as alone.
    let mut d = Driver::default();
    let mut alone = Driver::default();
    for page in 0..40 {
        let want = alone.read(1, page, 1);
        assert_eq!(d.read(1, page, 1), want, "file 1 page {page}");
        assert_eq!(d.read(2, page, 1), want, "file 2 page {page}");
    }
    assert_eq!(d.state(1), d.state(2));
}

#[test]
fn writes_are_ignored() {
    let mut d = Driver::default();
    // A write that misses triggers nothing and creates no state.
    assert!(d.access(access(1, 0, 8, Op::Write)).is_empty());
    assert!(d.ra.file_ra_state(FileId(1), 0).is_none());
    // A write over a marker page neither fires nor clears it.
    assert_eq!(d.read(2, 0, 1), vec![(1, 3)]);
    assert!(d.access(access(2, 1, 1, Op::Write)).is_empty());
    assert_eq!(d.marks(2), vec![1]);
    assert_eq!(d.read(2, 1, 1), vec![(4, 8)]);
}

#[test]
fn non_demand_accesses_are_ignored() {
    let mut d = Driver::default();
    let a = Access {
        origin: Origin::FilePrefetch,
        ..access(1, 0, 4, Op::Read)
    };
    assert!(d.access(a).is_empty());
    assert!(d.ra.file_ra_state(FileId(1), 0).is_none());
}

#[test]
fn ra_pages_zero_disables_readahead() {
    let mut d = Driver::new(ReadaheadParams {
        ra_pages: 0,
        ..ReadaheadParams::default()
    });
    for page in 0..64 {
        assert_eq!(d.read(1, page, 1), vec![], "page {page}");
    }
    assert_eq!(d.read(1, 100, 64), vec![]);
}

#[test]
fn a_marker_on_an_already_cached_page_is_not_planted() {
    // The kernel tags only folios it allocates. With page 1 already cached
    // the first window [0,4) gets no marker, so reads 1..4 trigger nothing
    // and the miss at 4 (index − prev_index = 0: sequential) opens a fresh
    // initial window [4,8) instead of ramping.
    let mut d = Driver::default();
    d.cache.0.insert((1, 1));
    assert_eq!(d.read(1, 0, 1), vec![(1, 3)]);
    assert!(d.marks(1).is_empty());
    for page in 1..4 {
        assert_eq!(d.read(1, page, 1), vec![]);
    }
    assert_eq!(d.read(1, 4, 1), vec![(5, 3)]);
}

#[test]
fn a_partly_cached_read_runs_sync_readahead_at_its_first_miss() {
    // After read 0 (window [0,4)), a read of 2..6 finds 2, 3 cached and 4, 5
    // missing: sync readahead at 4 with req_count 2. prev_index is 1 (end of
    // read 0), so 4 is not sequential; context: 3, 2, 1, 0 cached up to the
    // start of the file → contig_count 4 > 2, doubled to 8 →
    // size min(8 + 2, 32) = 10, async_size 1: window [4,14), marker 13.
    let mut d = Driver::default();
    assert_eq!(d.read(1, 0, 1), vec![(1, 3)]);
    assert_eq!(d.read(1, 2, 4), vec![(6, 8)]);
    assert_eq!(d.state(1), (4, 10, 1));
    assert_eq!(d.marks(1), vec![1, 13]);
}

#[test]
fn raw_device_reads_prefetch_device_blocks() {
    let mut d = Driver::default();
    let a = Access {
        dev: 3,
        ..access(FileId::RAW.0, 0, 1, Op::Read)
    };
    let out = d.access(a);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].target, Target::Block { dev: 3, lbn: 1 });
    assert_eq!(out[0].blocks, 3);
    assert!(d.ra.file_ra_state(FileId::RAW, 3).is_some());
    assert!(d.ra.file_ra_state(FileId::RAW, 0).is_none(), "per device");
}

#[test]
fn one_window_id_per_window() {
    let mut d = Driver::default();
    let mut ids = vec![];
    for page in 0..30 {
        ids.extend(
            d.access(access(1, page, 1, Op::Read))
                .iter()
                .map(|r| r.window),
        );
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!((n, ids.len()), (5, 5), "windows at reads 0, 1, 4, 12, 28");
}

#[test]
fn run_start_forgets_every_file() {
    let mut d = Driver::default();
    d.read(1, 0, 1);
    assert!(d.ra.memory_bytes() > 0);
    d.ra.start_run(1);
    assert!(d.ra.file_ra_state(FileId(1), 0).is_none());
    // With an empty cache the same read starts over.
    d.cache.0.clear();
    assert_eq!(d.read(1, 0, 1), vec![(1, 3)]);
}

#[test]
fn help_lists_every_parameter() {
    match crate::build_policy("readahead:help") {
        Err(crate::PolicyError::Help(t)) => {
            for kv in ["ra_pages=32", "io_pages=32", "context=on"] {
                assert!(t.contains(kv), "{kv} missing from:\n{t}");
            }
        }
        _ => panic!("readahead:help must return the help text"),
    }
    let p = ReadaheadParams::parse(NAME, "ra_pages=64,io_pages=320,context=off").unwrap();
    assert_eq!((p.ra_pages, p.io_pages, p.context), (64, 320, false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Windows never exceed max(ra_pages, io_pages), never cover pages of
    /// the access that caused them, stay in its file, and writes ask for
    /// nothing.
    #[test]
    fn windows_are_bounded_and_beyond_the_access(
        ra_pages in 0u64..=64,
        io_pages in 0u64..=160,
        context in any::<bool>(),
        ops in prop::collection::vec(
            (1u64..=3, 0u64..400, 1u32..=80, prop::bool::weighted(0.1)),
            1..80,
        ),
    ) {
        let mut d = Driver::new(ReadaheadParams { ra_pages, io_pages, context });
        let limit = ra_pages.max(io_pages);
        for (file, page, blocks, write) in ops {
            let op = if write { Op::Write } else { Op::Read };
            let a = access(file, page, blocks, op);
            let out = d.access(a);
            if write {
                prop_assert!(out.is_empty());
            }
            for r in &out {
                let Target::File { file: f, page: p } = r.target else {
                    panic!("file reads prefetch file pages");
                };
                prop_assert_eq!(f, FileId(file));
                prop_assert!(u64::from(r.blocks) <= limit, "{:?} over {}", r, limit);
                let end = p + u64::from(r.blocks);
                prop_assert!(end <= a.page || p >= a.end_page(), "{:?} overlaps {:?}", r, a);
            }
            if let Some(ra) = d.ra.file_ra_state(FileId(file), 0) {
                prop_assert!(ra.size <= limit && ra.async_size <= ra.size, "{:?}", ra);
            }
        }
    }
}

/// Throughput smoke run (not a benchmark, asserts nothing): 5 M 4 KiB
/// reads over 64 interleaved sequential files plus 1 in 8 random reads.
/// `cargo test -p outrider-core --release -- --ignored --nocapture throughput`
#[test]
#[ignore]
fn throughput_smoke() {
    const N: u64 = 5_000_000;
    let mut ra = Readahead::new(ReadaheadParams::default());
    let mut cached_to = [0u64; 65];
    let mut next = [0u64; 65];
    let mut out = Vec::with_capacity(16);
    let mut w = 0;
    let mut issued = 0u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let t = std::time::Instant::now();
    for seq in 0..N {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = (x % 64) as usize + 1;
        let page = if x & 7 == 0 {
            (x >> 20) % 1_000_000
        } else {
            next[f] += 1;
            next[f] - 1
        };
        let hit = page < cached_to[f];
        let a = Access {
            seq,
            file: FileId(f as u64),
            page,
            lbn: page,
            blocks: 1,
            ..Access::default()
        };
        let o = Outcome {
            hit_blocks: u32::from(hit),
            miss_blocks: u32::from(!hit),
            ..Outcome::default()
        };
        out.clear();
        let mut sink = Sink::new(&mut out, &mut w, &crate::NoResidency);
        ra.on_access(&a, &o, &mut sink);
        for r in &out {
            if let Target::File { page, .. } = r.target {
                cached_to[f] = cached_to[f].max(page + u64::from(r.blocks));
            }
            issued += 1;
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "readahead: {N} accesses in {s:.3} s = {:.1} M/s ({issued} windows)",
        N as f64 / s / 1e6
    );
}
