//! The simulation loop's timing and accounting, on a hand-made device whose
//! every request takes a fixed time, so expectations are exact.

use outrider_core::{Access, BoxedPolicy, Outcome, Policy, Sink, Target};
use outrider_sim::device::{DevRequest, Device};
use outrider_sim::{simulate_on, CacheModel, SimConfig, SimResult};
use outrider_trace::{Record, Trace, TraceMeta};
use std::collections::VecDeque;

/// One server, FIFO, every request `latency_ns`.
struct Fixed {
    latency_ns: u64,
    queue: VecDeque<(u64, DevRequest)>,
    busy_until: u64,
    current: Option<(u64, DevRequest)>,
    busy_ns: u64,
}

impl Fixed {
    fn boxed(latency_ns: u64) -> Box<dyn Device> {
        Box::new(Fixed {
            latency_ns,
            queue: VecDeque::new(),
            busy_until: 0,
            current: None,
            busy_ns: 0,
        })
    }
}

impl Device for Fixed {
    fn submit(&mut self, now_ns: u64, req: DevRequest) {
        self.queue.push_back((now_ns, req));
    }
    fn next_completion_ns(&mut self) -> Option<u64> {
        if self.current.is_none() {
            let (arrive, req) = self.queue.pop_front()?;
            let start = arrive.max(self.busy_until);
            self.busy_until = start + self.latency_ns;
            self.busy_ns += self.latency_ns;
            self.current = Some((self.busy_until, req));
        }
        self.current.map(|c| c.0)
    }
    fn complete_next(&mut self) -> Option<(u64, DevRequest)> {
        self.next_completion_ns()?;
        self.current.take()
    }
    fn pending(&self) -> usize {
        self.queue.len() + usize::from(self.current.is_some())
    }
    fn busy_ns(&self) -> u64 {
        self.busy_ns
    }
    fn reset(&mut self) {
        self.queue.clear();
        self.current = None;
        self.busy_until = 0;
    }
    fn describe(&self) -> String {
        format!("fixed {} ns", self.latency_ns)
    }
}

/// Prefetch the next `n` blocks after every access.
#[derive(Clone)]
struct NextN(u32);

impl Policy for NextN {
    fn name(&self) -> &str {
        "next-n"
    }
    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        let w = sink.new_window();
        sink.prefetch(
            Target::Block {
                dev: a.dev,
                lbn: a.end_lbn(),
            },
            self.0,
            w,
        );
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

fn reads(blocks: &[u64], pid: u32, gap_ns: u64) -> Vec<Record> {
    blocks
        .iter()
        .enumerate()
        .map(|(i, &b)| Record::block(i as u64 * gap_ns, 0, b * 4096, 4096, false, pid))
        .collect()
}

fn run(
    records: Vec<Record>,
    policy: BoxedPolicy,
    cache_blocks: u64,
    latency_ns: u64,
    runs: u32,
) -> SimResult {
    let trace = Trace::new(TraceMeta::default(), records);
    let cfg = SimConfig {
        cache_blocks,
        cache_model: CacheModel::Lru,
        runs,
        ..SimConfig::default()
    };
    let mut p = policy;
    simulate_on(
        &trace,
        &mut p,
        "test",
        &cfg,
        Fixed::boxed(latency_ns),
        &mut |_| {},
    )
}

#[test]
fn demand_misses_block_the_process_for_the_device_time() {
    // Three misses, 1 ms each, no think time: 3 ms elapsed, all of it waiting.
    let r = run(
        reads(&[10, 50, 90], 1, 0),
        Box::new(NextN(0)),
        100,
        1_000_000,
        1,
    );
    let c = &r.counters[0];
    assert_eq!(
        (c.requests, c.demand_blocks, c.hit_blocks, c.miss_blocks),
        (3, 3, 0, 3)
    );
    assert_eq!(c.elapsed_ns, 3_000_000);
    assert_eq!(c.io_wait_ns, 3_000_000);
}

#[test]
fn think_time_from_trace_gaps_is_added_after_completion() {
    // Gaps of 5 ms between requests: miss (1 ms) + 5 + miss (1) + 5 + miss (1).
    let r = run(
        reads(&[10, 50, 90], 1, 5_000_000),
        Box::new(NextN(0)),
        100,
        1_000_000,
        1,
    );
    assert_eq!(r.counters[0].elapsed_ns, 13_000_000);
}

#[test]
fn a_prefetch_in_flight_is_a_partial_hit_and_a_finished_one_a_hit() {
    // Block 0 misses at t=0 (done 1 ms); the policy prefetches block 1 at
    // t=0, queued behind it (done 2 ms). With no think time, block 1 is
    // accessed at 1 ms while in flight: a partial hit waiting 1 ms.
    let r = run(reads(&[0, 1], 1, 0), Box::new(NextN(1)), 100, 1_000_000, 1);
    let c = &r.counters[0];
    assert_eq!(
        (c.hit_blocks, c.prefetch_served_blocks, c.miss_blocks),
        (0, 1, 1)
    );
    assert_eq!(c.elapsed_ns, 2_000_000);
    assert_eq!(c.lead_time_sum_ns, 1_000_000);
    // With 10 ms of think time the prefetch has landed: a real hit.
    let r = run(
        reads(&[0, 1], 1, 10_000_000),
        Box::new(NextN(1)),
        100,
        1_000_000,
        1,
    );
    let c = &r.counters[0];
    assert_eq!(
        (c.hit_blocks, c.prefetch_served_blocks, c.miss_blocks),
        (1, 1, 1)
    );
    assert_eq!(c.elapsed_ns, 11_000_000);
    assert_eq!(c.io_wait_ns, 1_000_000);
}

#[test]
fn unused_prefetches_are_counted_and_windows_marked_mis_prefetched() {
    // Random far-apart reads with next-2 prefetching: every window wasted.
    let r = run(
        reads(&[0, 100, 200, 300], 1, 10_000_000),
        Box::new(NextN(2)),
        1000,
        1_000,
        1,
    );
    let c = &r.counters[0];
    assert_eq!(c.prefetched_blocks, 8);
    assert_eq!(c.prefetched_used_blocks, 0);
    assert_eq!(c.prefetched_unused_blocks, 8);
    assert_eq!((c.windows, c.mis_prefetched_windows), (4, 4));
    let rep = &r.reports[0];
    assert_eq!(
        (rep.prefetch_accuracy, rep.coverage, rep.cost),
        (0.0, 0.0, 2.0)
    );
}

#[test]
fn evicted_unused_prefetches_count_as_unused() {
    // Cache of 2 blocks: prefetched block 1 is pushed out by 50 and its
    // window, before 1 is read.
    let r = run(
        reads(&[0, 50, 1], 1, 10_000_000),
        Box::new(NextN(1)),
        2,
        1_000,
        1,
    );
    let c = &r.counters[0];
    assert!(c.prefetched_unused_blocks >= 1);
    assert_eq!(
        c.prefetched_used_blocks + c.prefetched_unused_blocks,
        c.prefetched_blocks
    );
}

#[test]
fn two_processes_overlap_their_think_time_with_each_others_io() {
    // Each process: two misses 1 ms apart in device time with 2 ms think.
    // Alone each needs 1 + 2 + 1 = 4 ms; together they share one device
    // but overlap think with I/O, so elapsed < 8 ms.
    let mut recs = reads(&[0, 500], 1, 2_000_000);
    recs.extend(reads(&[1000, 1500], 2, 2_000_000));
    recs.sort_by_key(|r| r.time_ns);
    let r = run(recs, Box::new(NextN(0)), 100, 1_000_000, 1);
    let c = &r.counters[0];
    assert_eq!(c.requests, 4);
    assert!(
        c.elapsed_ns < 8_000_000 && c.elapsed_ns >= 4_000_000,
        "{}",
        c.elapsed_ns
    );
}

#[test]
fn runs_empty_the_cache_between_replays() {
    let r = run(
        reads(&[1, 2, 3, 1, 2, 3], 1, 0),
        Box::new(NextN(0)),
        100,
        1_000,
        2,
    );
    assert_eq!(r.reports.len(), 2);
    for c in &r.counters {
        assert_eq!((c.hit_blocks, c.miss_blocks), (3, 3));
    }
}

#[test]
fn writes_allocate_without_reading_the_device() {
    let mut recs = reads(&[7], 1, 0);
    recs[0] = Record::block(0, 0, 7 * 4096, 4096, true, 1);
    recs.extend(reads(&[7], 1, 0));
    let r = run(recs, Box::new(NextN(0)), 100, 1_000_000, 1);
    let c = &r.counters[0];
    assert_eq!(
        (c.miss_blocks, c.hit_blocks, c.device_requests, c.elapsed_ns),
        (1, 1, 0, 0)
    );
}

/// The live runtime's guard, simulated: a policy whose every prefetch is
/// wasted (the next 8 blocks after random reads) is throttled once quality
/// control has seen an interval of waste, and its unused blocks never exceed
/// the budget (the driver asserts it at every interval); with the guard off
/// every request is fetched.
#[test]
fn the_live_guard_throttles_a_wasteful_policy_within_its_budget() {
    let blocks: Vec<u64> = (0..4000u64).map(|i| (i * 7919) % 100_000 * 64).collect();
    let sim = |guard| {
        let trace = Trace::new(TraceMeta::default(), reads(&blocks, 1, 0));
        let cfg = SimConfig {
            cache_blocks: 256,
            guard,
            ..SimConfig::default()
        };
        let mut p: BoxedPolicy = Box::new(NextN(8));
        simulate_on(
            &trace,
            &mut p,
            "t",
            &cfg,
            Fixed::boxed(1_000_000),
            &mut |_| {},
        )
    };
    let off = sim(outrider_driver::GuardOptions::OFF);
    let live = sim(outrider_driver::GuardOptions::live(64));
    assert_eq!(off.guard[0].throttled_requests, 0);
    assert_eq!(off.counters[0].prefetched_blocks, 4000 * 8);
    let g = live.guard[0];
    assert_eq!(g.requests, 4000);
    assert!(g.throttled_requests > 2000, "{g:?}");
    assert_eq!(g.admit_shift, 6, "all waste: admission at its floor");
    assert!(
        live.counters[0].prefetched_blocks < 4000 * 8 / 4,
        "{:?}",
        live.counters[0]
    );
    // Demand is served the same either way (every prefetch was useless).
    assert_eq!(live.counters[0].miss_blocks, off.counters[0].miss_blocks);
}
