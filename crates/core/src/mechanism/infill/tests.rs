use super::*;

fn spans(v: &[(u64, u64)]) -> Vec<Span<u32>> {
    v.iter()
        .map(|&(start, end)| Span { key: 1, start, end })
        .collect()
}

fn merged(pieces: Vec<Span<u32>>, limit: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    merge(
        pieces,
        limit,
        |_, _, _| true,
        |r| out.push((r.start, r.end)),
    );
    out
}

/// libprefetch §3.3: infill "of 32KB maximizes performance improvement".
/// 32 KiB is 8 pages: two pages 8 apart (a 32 KiB hole) are one request
/// reading 10 pages; 9 apart (36 KiB) stay two requests.
#[test]
fn libprefetch_32_kib_reads_through_a_32_kib_hole_and_not_a_36_kib_one() {
    let limit = limit_units(LIBPREFETCH);
    assert_eq!(limit, 8);
    assert_eq!(merged(spans(&[(0, 1), (9, 10)]), limit), vec![(0, 10)]);
    assert_eq!(
        merged(spans(&[(0, 1), (10, 11)]), limit),
        vec![(0, 1), (10, 11)]
    );
}

/// DiskSeen §4.3's *strided* benchmark reads every other block; a window
/// over it read with `infill` 2 blocks (8 KiB) is one aggregate, with 0
/// one request per block.
#[test]
fn diskseen_strided_window_is_one_aggregate_with_two_blocks_of_infill() {
    let every_other: Vec<(u64, u64)> = (0..8).map(|i| (2 * i, 2 * i + 1)).collect();
    let limit = limit_units(ByteSize(8 << 10));
    assert_eq!(limit, 2);
    assert_eq!(merged(spans(&every_other), limit), vec![(0, 15)]);
    assert_eq!(merged(spans(&every_other), 0), every_other);
}

/// Adjacent pieces are one run even with limit 0; duplicates and pieces
/// inside a run (read as infill) are dropped.
#[test]
fn adjacent_pieces_join_and_covered_pieces_are_dropped() {
    assert_eq!(merged(spans(&[(0, 2), (2, 4), (4, 5)]), 0), vec![(0, 5)]);
    assert_eq!(
        merged(spans(&[(0, 1), (3, 4), (3, 4), (2, 3)]), 3),
        vec![(0, 4)]
    );
}

/// Pieces of different keys (files, devices) never join, and a hole that
/// fails the caller's check (DiskSeen: a resident or busy block in it) is
/// not read through.
#[test]
fn keys_and_hole_checks_split_runs() {
    let p = vec![
        Span {
            key: 1,
            start: 0,
            end: 1,
        },
        Span {
            key: 2,
            start: 2,
            end: 3,
        },
        Span {
            key: 2,
            start: 4,
            end: 5,
        },
        Span {
            key: 2,
            start: 7,
            end: 8,
        },
    ];
    let mut out = Vec::new();
    // Block 6 is "resident": the hole 5..7 may not be read through.
    merge(
        p,
        8,
        |_, from, to| !(from..to).contains(&6),
        |r| out.push((r.key, r.start, r.end)),
    );
    assert_eq!(out, vec![(1, 0, 1), (2, 2, 5), (2, 7, 8)]);
}

/// A piece behind the run (a C-LOOK wrap) starts a new run.
#[test]
fn a_backward_step_ends_the_run() {
    assert_eq!(
        merged(spans(&[(10, 11), (12, 13), (0, 1)]), 8),
        vec![(10, 13), (0, 1)]
    );
}

/// flashy's strided ranges in issue order: forward ascending, backward
/// descending; 4-block reads every 10 blocks leave 6-block gaps.
#[test]
fn strided_ranges_merge_in_either_direction() {
    let mut fwd = vec![(100, 4), (110, 4), (120, 4)];
    merge_ranges(&mut fwd, 6, false);
    assert_eq!(fwd, vec![(100, 24)]);
    let mut fwd = vec![(100, 4), (110, 4), (120, 4)];
    merge_ranges(&mut fwd, 5, false);
    assert_eq!(fwd, vec![(100, 4), (110, 4), (120, 4)]);
    let mut bwd = vec![(120, 4), (110, 4), (100, 4), (50, 4)];
    merge_ranges(&mut bwd, 6, true);
    assert_eq!(bwd, vec![(100, 24), (50, 4)]);
}

/// §3.3: infill pays where a seek costs more than reading the same
/// distance.
#[test]
fn from_costs_merges_gaps_cheaper_than_a_request() {
    // Uncharged (the paper's discarded infill): g pages pay while
    // (g + 1) · page < request.
    let f = |r: f64, p: f64, cap: u64| from_costs(r, p, cap, false);
    assert_eq!(f(15_000.0, 4_500.0, 8), 2); // ratio 3.33: g + 1 < 3.33
    assert_eq!(f(10_000.0, 4_500.0, 8), 1); // ratio 2.22
    assert_eq!(f(9_000.0, 4_500.0, 8), 0); // ratio 2: g = 1 only ties
    assert_eq!(f(4_000.0, 4_500.0, 8), 0); // reading costs more
    assert_eq!(f(20_000.0, 4_000.0, 8), 3); // ratio 5: g + 1 < 5
                                            // HDD: 5 ms per request, 41 µs per page → capped at the paper's 32 KiB.
    assert_eq!(f(5.0e6, 40_960.0, limit_units(LIBPREFETCH)), 8);
    assert_eq!(f(5.0e6, 40_960.0, 1000), 121); // ratio 122.07
                                               // Charged (live: infill pages take buffer slots): (g + 1) ≤ ratio / 2.
    let c = |r: f64, p: f64, cap: u64| from_costs(r, p, cap, true);
    assert_eq!(c(15_000.0, 4_500.0, 8), 0); // ratio 3.33
    assert_eq!(c(18_000.0, 4_500.0, 8), 1); // ratio 4: g + 1 ≤ 2
    assert_eq!(c(20_000.0, 4_000.0, 8), 1); // ratio 5
    assert_eq!(c(5.0e6, 40_960.0, limit_units(LIBPREFETCH)), 8);
    assert_eq!(c(5.0e6, 40_960.0, 1000), 60); // ratio / 2 = 61.04
                                              // Unmeasured or broken costs: no infill.
    assert_eq!(f(0.0, 4_500.0, 8), 0);
    assert_eq!(f(f64::NAN, 4_500.0, 8), 0);
    assert_eq!(c(1.0e4, 0.0, 8), 0);
}
