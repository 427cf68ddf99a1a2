//! flashy tests: exact outcomes of §IV-B (patterns, threshold, ranges),
//! §IV-C (quota and cap), §IV-D / Algorithm 1 (feedback).

use super::feedback::{Adjust, IntervalStats, Monitor};
use super::pattern::{ranges, Pattern, Tracker};
use super::*;
use crate::event::{PrefetchDone, PrefetchRequest, WindowId};
use crate::policy::NoResidency;
use crate::policy::PolicyExt;
use crate::DeviceInfo;

const MS: u64 = 1_000_000;

fn tracker(reqs: &[(u64, u32)]) -> Tracker {
    let mut t = Tracker::default();
    for &(lbn, n) in reqs {
        t.observe(lbn, n, true);
    }
    t
}

// ---- §IV-B: the four patterns ----

#[test]
fn sequential_forward_is_recognised_weighted_by_size() {
    // 0+4, 4+4, 8+4, 12+4: the first request has no predecessor, the next
    // three are consecutive: 12 of 16 blocks.
    let t = tracker(&[(0, 4), (4, 4), (8, 4), (12, 4)]);
    assert_eq!(t.counts.total, 16);
    assert_eq!(t.counts.consec, 12);
    assert_eq!(t.pattern(0.60), Some((Pattern::SeqForward, 0.75)));
}

#[test]
fn sequential_backward_is_recognised() {
    // Each request ends where the previous one started.
    let t = tracker(&[(96, 4), (92, 4), (88, 4), (84, 4), (80, 4)]);
    assert_eq!(t.counts.reverse, 16);
    assert_eq!(t.pattern(0.60), Some((Pattern::SeqBackward, 0.8)));
}

#[test]
fn strided_forward_needs_the_same_jump_twice() {
    // 2 blocks read, 6 skipped: starts 0, 8, 16, 24, 32. The jump 0->8 sets
    // the stride; 16, 24, 32 repeat it.
    let t = tracker(&[(0, 2), (8, 2), (16, 2), (24, 2), (32, 2)]);
    assert_eq!(t.counts.strided_fwd, 6);
    assert_eq!(t.counts.total, 10);
    assert_eq!(t.pattern(0.60), Some((Pattern::StridedForward, 0.6)));
}

#[test]
fn strided_backward_is_recognised() {
    let t = tracker(&[(100, 1), (97, 1), (94, 1), (91, 1), (88, 1), (85, 1)]);
    assert_eq!(t.counts.strided_bwd, 4);
    assert_eq!(t.pattern(0.60).map(|p| p.0), Some(Pattern::StridedBackward));
}

#[test]
fn a_changed_jump_is_not_strided() {
    let t = tracker(&[(0, 1), (8, 1), (20, 1), (40, 1)]);
    assert_eq!(t.counts.linear(), 0);
    assert_eq!(t.pattern(0.60), None);
}

#[test]
fn threshold_accepts_sixty_percent_and_rejects_below() {
    // 10 blocks: 1 cold + 5 consecutive + 4 random = 50% -> rejected.
    let below = tracker(&[
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 1),
        (5, 1),
        (900, 1),
        (300, 1),
        (700, 1),
        (50, 1),
    ]);
    assert_eq!(below.counts.consec, 5);
    assert_eq!(below.pattern(0.60), None);
    // 1 cold + 6 consecutive + 3 random = 60% -> accepted (the text's
    // "if 60 percent ... are sequential").
    let at = tracker(&[
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 1),
        (5, 1),
        (6, 1),
        (900, 1),
        (300, 1),
        (700, 1),
    ]);
    assert_eq!(at.pattern(0.60), Some((Pattern::SeqForward, 0.6)));
    // A large sequential request outweighs many small random ones.
    let weighted = tracker(&[(0, 8), (8, 64), (5000, 1), (77, 1), (9000, 1)]);
    assert_eq!(weighted.counts.total, 75);
    assert_eq!(weighted.pattern(0.60).unwrap().0, Pattern::SeqForward);
}

#[test]
fn mixed_forward_and_backward_below_threshold_is_rejected() {
    // Half forward, half backward: neither pattern reaches 60%.
    let t = tracker(&[(0, 4), (4, 4), (8, 4), (500, 4), (496, 4), (492, 4)]);
    assert_eq!((t.counts.consec, t.counts.reverse), (8, 8));
    assert_eq!(t.pattern(0.60), None);
    assert_eq!(t.pattern(0.30), Some((Pattern::SeqForward, 8.0 / 24.0)));
}

// ---- §IV-B / §IV-C: where the prefetch starts and ends ----

#[test]
fn ranges_start_after_the_last_request_and_extrapolate() {
    let mut out = vec![];
    // Forward: last request 100+8 -> [108, 108+50).
    ranges(Pattern::SeqForward, (100, 8), 8, 50, 16, &mut out);
    assert_eq!(out, vec![(108, 50)]);
    // Backward: last request 100+8 -> [50, 100).
    ranges(Pattern::SeqBackward, (100, 8), -8, 50, 16, &mut out);
    assert_eq!(out, vec![(50, 50)]);
    // Backward near block 0 clips there.
    ranges(Pattern::SeqBackward, (20, 4), -4, 50, 16, &mut out);
    assert_eq!(out, vec![(0, 20)]);
    // Strided forward, 2 blocks every 8: one range per stride until the
    // 5-block quota is covered (the last range partial).
    ranges(Pattern::StridedForward, (32, 2), 8, 5, 16, &mut out);
    assert_eq!(out, vec![(40, 2), (48, 2), (56, 1)]);
    // Strided backward, 1 block every 3, stops at block 0.
    ranges(Pattern::StridedBackward, (7, 1), -3, 10, 16, &mut out);
    assert_eq!(out, vec![(4, 1), (1, 1)]);
    // At most max_ranges ranges.
    ranges(Pattern::StridedForward, (0, 1), 2, 100, 3, &mut out);
    assert_eq!(out, vec![(2, 1), (4, 1), (6, 1)]);
}

// ---- the policy: ticks, quota, cap ----

struct Harness {
    f: Flashy,
    out: Vec<PrefetchRequest>,
    next_window: u64,
}

impl Harness {
    /// A flashy with `params`; 8 MiB chunks unless `params` says otherwise,
    /// so that one range is one request.
    fn new(params: &str) -> Self {
        let spec = if params.contains("chunk=") {
            params.to_string()
        } else {
            format!("chunk=8MiB,{params}")
        };
        Harness {
            f: Flashy::new(parse_params(&spec).unwrap()),
            out: vec![],
            next_window: 0,
        }
    }
    fn read(&mut self, pid: u32, lbn: u64, blocks: u32) {
        self.read_at(0, pid, lbn, blocks);
    }
    /// A read at `t_ms` (the stream's birth time when it is the first).
    fn read_at(&mut self, t_ms: u64, pid: u32, lbn: u64, blocks: u32) {
        let a = Access {
            time_ns: t_ms * MS,
            pid,
            lbn,
            page: lbn,
            blocks,
            ..Access::default()
        };
        let mut sink = Sink::new(&mut self.out, &mut self.next_window, &NoResidency);
        self.f.on_access(&a, &Outcome::default(), &mut sink);
    }
    fn seq(&mut self, pid: u32, from: u64, n: u64, len: u32) {
        for i in 0..n {
            self.read(pid, from + i * u64::from(len), len);
        }
    }
    /// Tick at `t_ms`; returns the requests as (lbn, blocks, window).
    fn tick(&mut self, t_ms: u64) -> Vec<(u64, u32, u64)> {
        self.out.clear();
        let mut sink = Sink::new(&mut self.out, &mut self.next_window, &NoResidency);
        self.f.feed_tick(t_ms * MS, &mut sink);
        self.out
            .iter()
            .map(|r| match r.target {
                Target::Block { lbn, .. } => (lbn, r.blocks, r.window.0),
                Target::File { .. } => unreachable!(),
            })
            .collect()
    }
    fn disk(&mut self, origin: Origin, pid: u32, lbn: u64, blocks: u32, window: Option<u64>) {
        self.f.feed_device_request(&DeviceRequest {
            pid,
            lbn,
            blocks,
            origin,
            window: window.map(WindowId),
            ..DeviceRequest::default()
        });
    }
}

#[test]
fn quota_is_scale_times_linear_fraction_times_measured_rate() {
    // 0.5 s interval, 101 one-block reads, 100 consecutive: rate 202
    // blocks/s, fraction 100/101; quota = 1.0 x 100/101 x 202 x 0.5 = 100.
    let mut h = Harness::new("");
    h.seq(1, 0, 101, 1);
    let reqs = h.tick(500);
    assert_eq!(reqs, vec![(101, 100, 1)]);
    // Static scale 2: twice as much.
    let mut h = Harness::new("feedback=off,scale=2");
    h.seq(1, 0, 101, 1);
    assert_eq!(h.tick(500), vec![(101, 200, 1)]);
}

#[test]
fn a_late_tick_uses_the_actual_elapsed_time() {
    // Same 101 reads, but the tick comes at 1.0 s instead of 0.5 s: the
    // measured rate halves (101 blocks/s), the quota for the next 0.5 s
    // interval halves too.
    let mut h = Harness::new("");
    h.seq(1, 0, 101, 1);
    assert_eq!(h.tick(1000), vec![(101, 50, 1)]);
    assert_eq!(h.f.last_tick.elapsed_ns, 1000 * MS);
    // The next tick measures from the late one.
    h.seq(1, 101, 100, 1);
    h.tick(1500);
    assert_eq!(h.f.last_tick.elapsed_ns, 500 * MS);
}

#[test]
fn no_pattern_no_prefetch() {
    let mut h = Harness::new("");
    for b in [5u64, 900, 33, 7000, 12, 450] {
        h.read(1, b, 1);
    }
    assert!(h.tick(500).is_empty());
}

#[test]
fn quota_honours_the_device_throughput_cap() {
    // Device: 1000 blocks/s (4.096 MB/s). App: 1600 blocks in 0.5 s, all
    // consecutive but the first (rate 3200/s, fraction 1599/1600).
    // Uncapped: 1599 blocks; cap: (1000 - 2) blocks/s x 0.5 s = 499 blocks.
    let mut h = Harness::new("");
    h.f.start_with_device(&DeviceInfo {
        dev: None,
        max_read_bytes_per_s: Some(1000 * BLOCK_SIZE),
    });
    h.seq(1, 0, 1600, 1);
    assert_eq!(h.tick(500), vec![(1600, 499, 1)]);
    // The same through max_mb_s overriding the device model.
    let mut h = Harness::new("max_mb_s=4.096");
    h.seq(1, 0, 1600, 1);
    assert_eq!(h.tick(500), vec![(1600, 499, 1)]);
}

#[test]
fn the_cap_subtracts_unpredictable_reads_and_is_shared_per_device() {
    // Device 1000 blocks/s. Stream 1 (pid 1): 400 sequential blocks;
    // stream 2 (pid 2): 200 random blocks (nothing predictable) -> random
    // rate 2 + 400 = 402 blocks/s; stream 1 wants 399 x 2 = 798 blocks/s;
    // shared cap: 1000 - 402 = 598 blocks/s -> 299 blocks in 0.5 s.
    let mut h = Harness::new("");
    h.f.start_with_device(&DeviceInfo {
        dev: None,
        max_read_bytes_per_s: Some(1000 * BLOCK_SIZE),
    });
    h.seq(1, 0, 400, 1);
    for i in 0..200u64 {
        h.read(2, 10_000 + (i * 7919) % 5000 * 3, 1);
    }
    assert_eq!(h.tick(500), vec![(400, 299, 1)]);
    // The paper's per-stream cap ignores stream 2: 1000 - 2 = 998/s, so the
    // uncapped 399 blocks pass.
    let mut h = Harness::new("share_cap=off");
    h.f.start_with_device(&DeviceInfo {
        dev: None,
        max_read_bytes_per_s: Some(1000 * BLOCK_SIZE),
    });
    h.seq(1, 0, 400, 1);
    for i in 0..200u64 {
        h.read(2, 10_000 + (i * 7919) % 5000 * 3, 1);
    }
    assert_eq!(h.tick(500), vec![(400, 399, 1)]);
}

#[test]
fn large_quotas_are_issued_in_chunks() {
    let mut h = Harness::new("chunk=16KiB,feedback=off,scale=2,depth=0");
    h.seq(1, 0, 6, 1); // 5 consecutive of 6: quota 2 x 5/6 x 12 x 0.5 = 10
    assert_eq!(h.tick(500), vec![(6, 4, 1), (10, 4, 1), (14, 2, 1)]);
}

#[test]
fn close_strides_are_merged_into_one_request_unless_infill_is_zero() {
    // Every other block (1 read, 1 skipped) from 0 to 22: 10 of 12 reads
    // strided, quota 1 x 10/12 x 24 x 0.5 = 10 blocks = 10 strides after
    // block 22.
    let mut h = Harness::new("depth=0");
    for i in 0..12u64 {
        h.read(1, i * 2, 1);
    }
    // Gaps of 1 block (4 KiB <= 32 KiB): one range, 24 to 42 inclusive.
    assert_eq!(h.tick(500), vec![(24, 19, 1)]);
    let mut h = Harness::new("depth=0,infill=0");
    for i in 0..12u64 {
        h.read(1, i * 2, 1);
    }
    let expect: Vec<(u64, u32, u64)> = (0..10).map(|i| (24 + 2 * i, 1, 1)).collect();
    assert_eq!(h.tick(500), expect);
    // Backward, merged and issued nearest first.
    let mut h = Harness::new("depth=0,chunk=16KiB");
    for i in 0..12u64 {
        h.read(1, 1000 - i * 2, 1);
    }
    // Strides below 978: 976, 974, ..., 958 merge into [958, 977).
    assert_eq!(
        h.tick(500),
        vec![
            (973, 4, 1),
            (969, 4, 1),
            (965, 4, 1),
            (961, 4, 1),
            (958, 3, 1)
        ]
    );
}

#[test]
fn backward_chunks_are_issued_nearest_the_application_first() {
    // 21 one-block reads down from 1000: quota 20 blocks below 980, in
    // 4-block chunks, all at the tick: 976 first, 960 last.
    let mut h = Harness::new("chunk=16KiB,depth=0");
    for i in 0..21u64 {
        h.read(1, 1000 - i, 1);
    }
    assert_eq!(
        h.tick(500),
        vec![
            (976, 4, 1),
            (972, 4, 1),
            (968, 4, 1),
            (964, 4, 1),
            (960, 4, 1)
        ]
    );
}

#[test]
fn strided_and_backward_streams_prefetch_their_way() {
    // Backward: 1-block reads from 1000 down to 980 (21 reads).
    let mut h = Harness::new("");
    for i in 0..21u64 {
        h.read(1, 1000 - i, 1);
    }
    // 20/21 reverse, rate 42/s -> quota 20 blocks before block 980.
    assert_eq!(h.tick(500), vec![(960, 20, 1)]);
    // Strided: 2 blocks every 10, 12 reads from 0: 10 of 12 reads strided
    // (20 of 24 blocks), quota 1 x 20/24 x 48 x 0.5 = 20 blocks = 10
    // strides after the last read at 110 (all issued at the tick: depth=0;
    // one request per stride, as the paper: infill=0).
    let mut h = Harness::new("depth=0,infill=0");
    for i in 0..12u64 {
        h.read(1, i * 10, 2);
    }
    let reqs = h.tick(500);
    let expect: Vec<(u64, u32, u64)> = (1..=10).map(|i| (110 + i * 10, 2, 1)).collect();
    assert_eq!(reqs, expect);
}

#[test]
fn two_processes_with_interleaved_patterns_are_tracked_separately() {
    // pid 1 reads forward from 0, pid 2 backward from 5000, interleaved
    // request by request in one block region.
    let mut h = Harness::new("");
    for i in 0..50u64 {
        h.read(1, i * 2, 2);
        h.read(2, 5000 - i * 2, 2);
    }
    assert_eq!(h.f.machines().len(), 2);
    let reqs = h.tick(500);
    // Each: 98 of 100 blocks linear, rate 200/s, quota 98.
    assert_eq!(reqs, vec![(100, 98, 1), (4804, 98, 2)]);
    let pats: Vec<Pattern> = h.f.last_tick.plans.iter().map(|p| p.1).collect();
    assert_eq!(pats, vec![Pattern::SeqForward, Pattern::SeqBackward]);
}

#[test]
fn a_stream_crossing_a_region_boundary_keeps_its_machine() {
    // 64 KiB regions = 16 blocks; a scan over 40 blocks crosses two
    // boundaries but stays one machine, and stays sequential.
    let mut h = Harness::new("region=64KiB");
    h.seq(1, 0, 40, 1);
    assert_eq!(h.f.machines().len(), 1);
    assert_eq!(*h.f.machines().keys().next().unwrap(), (1, 0, 2));
    assert_eq!(h.tick(500), vec![(40, 39, 1)]);
}

#[test]
fn the_machine_table_is_bounded() {
    let mut h = Harness::new("machines=3,region=4KiB");
    for i in 0..10u64 {
        h.read(1, i * 1000, 1);
    }
    assert_eq!(h.f.machines().len(), 3);
}

#[test]
fn pacing_keeps_at_most_depth_chunks_at_the_device() {
    // Quota 200 blocks in 16 KiB (4-block) chunks, depth 2: two chunks at
    // the tick, the next one each time one completes.
    let mut h = Harness::new("chunk=16KiB,depth=2,feedback=off,scale=2");
    h.seq(1, 0, 101, 1);
    assert_eq!(h.tick(500), vec![(101, 4, 1), (105, 4, 1)]);
    h.disk(Origin::OurPrefetch, 0, 101, 4, Some(1));
    h.disk(Origin::OurPrefetch, 0, 105, 4, Some(1));
    h.out.clear();
    let done = PrefetchDone {
        window: WindowId(1),
        dev: 0,
        lbn: 101,
        blocks: 4,
        issue_ns: 0,
        done_ns: 1,
    };
    let mut sink = Sink::new(&mut h.out, &mut h.next_window, &NoResidency);
    h.f.feed_prefetch_done(&done, &mut sink);
    let next: Vec<u64> = h
        .out
        .iter()
        .map(|r| match r.target {
            Target::Block { lbn, .. } => lbn,
            Target::File { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(next, vec![109]);
    // A new tick replaces what is left of the plan.
    h.seq(1, 101, 10, 1);
    let reqs = h.tick(1000);
    assert_eq!(reqs[0].0, 111);
}

#[test]
fn pacing_counts_blocks_so_small_strides_keep_depth_chunks_outstanding() {
    // Strides of 2 blocks every 8 (gap 6 blocks = 24 KiB, infill off), in
    // 16 KiB (4-block) chunks, depth 2: 8 blocks may be outstanding, which
    // is four 2-block strides, not two.
    let mut h = Harness::new("chunk=16KiB,depth=2,infill=0,feedback=off,scale=4");
    for i in 0..20 {
        h.read(1, i * 8, 2);
    }
    let reqs = h.tick(500);
    assert_eq!(
        reqs,
        vec![(160, 2, 1), (168, 2, 1), (176, 2, 1), (184, 2, 1)]
    );
}

#[test]
fn a_new_stream_is_planned_after_first_ms_not_at_the_polling_tick() {
    // 51 one-block reads between 0 and 50 ms: at the 100 ms tick (the
    // driver's tick is `first_ms` apart) the stream is planned from its
    // rate over the 100 ms since its first read: 510 blocks/s x 50/51
    // linear x 0.5 s = 250 blocks. With first_ms=0 (the paper) the 100 ms
    // tick does nothing, and the driver ticks only every 500 ms.
    let mut h = Harness::new("");
    for i in 0..51 {
        h.read_at(i, 1, i, 1);
    }
    assert_eq!(h.f.interests().tick_interval_ns, Some(100 * MS));
    assert_eq!(h.tick(100), vec![(51, 250, 1)]);
    // Planned once: the next early tick leaves the plan alone.
    h.read_at(150, 1, 51, 1);
    assert_eq!(h.tick(200), vec![]);
    let mut paper = Harness::new("first_ms=0");
    for i in 0..51 {
        paper.read_at(i, 1, i, 1);
    }
    assert_eq!(paper.f.interests().tick_interval_ns, Some(500 * MS));
    assert_eq!(paper.tick(100), vec![]);
}

#[test]
fn a_stream_past_half_its_plan_is_planned_again_at_the_next_early_tick() {
    // Planned at 100 ms: [51, 301) from its last read at 50, halfway 175.
    // Reads up to 199 by 190 ms pass it; the 200 ms tick plans again from
    // 199 at the rate since the run began: 200 blocks in 0.2 s, 199/200
    // linear, x 0.5 s = 497 blocks. With refill=off it waits for 500 ms.
    for (params, want) in [("", vec![(200, 497, 2)]), ("refill=off", vec![])] {
        let mut h = Harness::new(params);
        for i in 0..51 {
            h.read_at(i, 1, i, 1);
        }
        assert_eq!(h.tick(100), vec![(51, 250, 1)], "{params}");
        for i in 51..200 {
            h.read_at(100 + (i - 51) * 90 / 149, 1, i, 1);
        }
        assert_eq!(h.tick(200), want, "{params}");
    }
}

#[test]
fn a_stream_born_inside_an_interval_has_its_rate_measured_from_birth() {
    // First tick at 500 ms; a stream whose 101 reads start at 900 ms is
    // measured over the 100 ms it existed at the 1000 ms tick (1010
    // blocks/s, quota 1.0 x 100/101 x 1010 x 0.5 = 500), not over the
    // whole 500 ms interval (quota 100).
    let mut h = Harness::new("first_ms=0");
    h.tick(500);
    for i in 0..101 {
        h.read_at(900, 1, i, 1);
    }
    assert_eq!(h.tick(1000), vec![(101, 500, 1)]);
}

// ---- §IV-D: the feedback monitor ----

fn monitor() -> Monitor {
    let p = FlashyParams::default();
    Monitor {
        raise_at: p.raise_at,
        up: p.up,
        down: p.down,
        scale_min: p.scale_min,
        scale_max: p.scale_max,
    }
}

#[test]
fn feedback_raises_when_linear_reads_still_reach_the_disk() {
    let m = monitor();
    let mut scale = 1.0;
    let s = IntervalStats {
        app_linear: 100,
        disk_linear: 20,
        prefetch_disk: 80,
        prefetched: true,
    };
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Raised);
    assert_eq!(scale, 1.25);
    // At the threshold (10%) exactly: not above it, and the lowering rule
    // needs zero linear reads at the disk.
    let s = IntervalStats {
        disk_linear: 10,
        ..s
    };
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Kept);
    // Bounded above.
    let mut scale = 7.0;
    let s = IntervalStats {
        disk_linear: 50,
        ..s
    };
    m.adjust(&mut scale, &s);
    assert_eq!(scale, 8.0);
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Kept);
}

#[test]
fn feedback_lowers_when_nothing_linear_misses_and_prefetch_exceeds_need() {
    let m = monitor();
    let mut scale = 2.0;
    let s = IntervalStats {
        app_linear: 100,
        disk_linear: 0,
        prefetch_disk: 150,
        prefetched: true,
    };
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Lowered);
    assert_eq!(scale, 1.6);
    // Prefetch no larger than the linear requests: keep.
    let s = IntervalStats {
        prefetch_disk: 100,
        ..s
    };
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Kept);
    // Bounded below.
    let mut scale = 0.3;
    let s = IntervalStats {
        prefetch_disk: 1000,
        ..s
    };
    m.adjust(&mut scale, &s);
    assert_eq!(scale, 0.25);
    // Nothing prefetched in the previous interval: nothing to judge.
    let mut scale = 1.0;
    let s = IntervalStats {
        prefetched: false,
        disk_linear: 90,
        ..s
    };
    assert_eq!(m.adjust(&mut scale, &s), Adjust::Kept);
}

#[test]
fn misses_just_past_the_prefetch_raise_the_scale() {
    // Interval 1: 101 sequential reads -> prefetch [101, 201) (window 1).
    let mut h = Harness::new("");
    h.seq(1, 0, 101, 1);
    assert_eq!(h.tick(500), vec![(101, 100, 1)]);
    h.disk(Origin::OurPrefetch, 0, 101, 100, Some(1));
    // Interval 2: the app reads 200 blocks; the 100 past the prefetch
    // miss, continuing the stream's device reads -> linear misses.
    h.disk(Origin::Demand, 1, 201, 100, None);
    h.seq(1, 101, 200, 1);
    h.tick(1000);
    let st = h.f.last_tick.stats;
    assert_eq!(
        (
            st.app_linear,
            st.disk_linear,
            st.prefetch_disk,
            st.prefetched
        ),
        (200, 100, 100, true)
    );
    assert_eq!(h.f.last_tick.adjust, Some(Adjust::Raised));
    assert_eq!(h.f.scale(), 1.25);
}

#[test]
fn over_prefetching_with_no_misses_lowers_the_scale() {
    let mut h = Harness::new("scale=4");
    h.seq(1, 0, 101, 1);
    assert_eq!(h.tick(500), vec![(101, 400, 1)]);
    h.disk(Origin::OurPrefetch, 0, 101, 400, Some(1));
    // Interval 2: 100 reads, all hits: no misses at all.
    h.seq(1, 101, 100, 1);
    h.tick(1000);
    assert_eq!(h.f.last_tick.adjust, Some(Adjust::Lowered));
    assert_eq!(h.f.scale(), 3.2);
    // With feedback off the scale never moves.
    let mut h = Harness::new("scale=4,feedback=off");
    h.seq(1, 0, 101, 1);
    h.tick(500);
    h.disk(Origin::OurPrefetch, 0, 101, 400, Some(1));
    h.seq(1, 101, 100, 1);
    h.tick(1000);
    assert_eq!((h.f.last_tick.adjust, h.f.scale()), (None, 4.0));
}

#[test]
fn random_misses_do_not_raise_the_scale() {
    let mut h = Harness::new("");
    h.seq(1, 0, 101, 1);
    h.tick(500);
    h.disk(Origin::OurPrefetch, 0, 101, 100, Some(1));
    // Misses scattered away from the stream are not linear.
    for b in [9000u64, 4000, 7000] {
        h.disk(Origin::Demand, 1, b, 1, None);
    }
    h.seq(1, 101, 100, 1);
    h.tick(1000);
    assert_eq!(h.f.last_tick.stats.disk_linear, 0);
    assert_ne!(h.f.last_tick.adjust, Some(Adjust::Raised));
}

#[test]
fn series_records_one_point_per_tick() {
    let mut h = Harness::new("");
    h.seq(1, 0, 101, 1);
    h.tick(500);
    h.disk(Origin::OurPrefetch, 0, 101, 100, Some(1));
    h.seq(1, 101, 100, 1);
    h.tick(1000);
    let s = h.f.series();
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].time_ns, 1000 * MS);
    let get = |k: &str| s[1].values.iter().find(|v| v.0 == k).unwrap().1;
    // 100 blocks in 0.5 s = 0.8192 MB/s each.
    assert!((get("app_mb_s") - 0.8192).abs() < 1e-9);
    assert!((get("prefetch_mb_s") - 0.8192).abs() < 1e-9);
    assert_eq!(get("scale"), 1.0);
    h.f.start_run(2);
    assert!(h.f.series().is_empty());
}

#[test]
fn bad_parameters_are_clear_errors() {
    for (text, needle) in [
        ("threshold=1.5", "a fraction in (0, 1]"),
        ("interval_ms=0", "positive number of ms"),
        ("down=2", "multiplier in (0, 1]"),
        ("region=1000", "multiple of 4KiB"),
    ] {
        let e = parse_params(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}
