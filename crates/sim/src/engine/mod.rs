//! The simulation loop.
//!
//! Discrete events in modelled time, earliest first (ties: device
//! completions, then policy ticks, then process requests, so data that
//! arrives at an instant is visible to an access at that instant):
//!
//! * **process request** — the process's next record is looked up block by
//!   block. Resident blocks are hits; blocks whose prefetch is in flight
//!   make the process wait for that completion only (EPCM's partial hit);
//!   missing blocks are read on demand, one device request per contiguous
//!   run, and the process blocks until all complete. Writes allocate their
//!   blocks without a device read (write-back is not charged). The policy
//!   then sees the access and its outcome and may ask for prefetches, which
//!   are issued asynchronously.
//! * **device completion** — blocks become resident; waiting processes
//!   resume; the policy hears of completed prefetches.
//! * **tick** — for time-driven policies, every `tick_interval_ns`.
//!
//! Every read submitted to the device (demand miss or prefetch) is also
//! reported to the policy ([`Feedback::DeviceRequest`], flashy's second
//! event stream), before the access that caused it is (demand) or right
//! after the prefetches are issued. At the start of each run the policy is
//! told the device model's maximum throughput and the cache size
//! ([`outrider_core::Policy::on_start`]); at its end the policy's time
//! series is collected into [`SimResult::series`].
//!
//! The policy is run by an [`outrider_driver::Driver`], the same one the
//! live runtime uses: this module and `kernel` are its simulated kernel
//! (the cache and device models). With [`SimConfig::guard`] the driver's
//! do-no-harm guard (budget, admission throttle, write-off) runs as it
//! does live; quality control runs after every event.
//!
//! Times saturate at 2^64 − 1 ns; a run whose clock got there is refused
//! by [`simulate`]. A tick that asks for nothing while the device is idle
//! skips the ticks up to the next request, so simulated idle time costs no
//! CPU time.
//!
//! Think time: with [`Timing::Think`] (default) a process issues its next
//! request the trace's inter-request gap after its previous request
//! completed; with [`Timing::Replay`] it issues at the recorded time or when
//! the previous request completes, whichever is later. `think_ns` replaces
//! the trace's gaps with a constant.

use crate::cache::{Cache, CacheModel, Evicted, Fill};
use crate::device::{build_device, Device};
use crate::layout::{block_key, Layout};
use crate::windows::WindowTable;
use outrider_core::metrics::{Counters, Report};
use outrider_core::{
    Access, BoxedPolicy, DeviceInfo, Feedback, FileId, Op, Origin, Outcome, Policy, RunInfo,
    SeriesPoint,
};
use outrider_driver::{Driver, GuardOptions, GuardStats};
use outrider_trace::{Record, RecordView, Trace};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// How many requests ahead the loop warms hash slots.
const LOOKAHEAD: usize = 8;
/// How many requests ahead the loop warms trace records (about 1 KiB of
/// packed records; a 64-byte line holds fewer than three).
const RECORD_LOOKAHEAD: usize = 48;

/// How a process's request times follow the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Timing {
    /// Next request = previous completion + the recorded gap.
    #[default]
    Think,
    /// Next request = max(previous completion, recorded time).
    Replay,
}

impl Timing {
    /// Parse `think` or `replay`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "think" => Ok(Timing::Think),
            "replay" => Ok(Timing::Replay),
            _ => Err(format!("unknown timing '{text}'; expected think or replay")),
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Cache capacity in 4 KiB blocks. Default: 256 MiB.
    pub cache_blocks: u64,
    /// Replacement model. Default: `lru`.
    pub cache_model: CacheModel,
    /// Device model spec (`hdd`, `ssd`, `nvme`, `raid0:N`). Default: `hdd`.
    pub device: String,
    /// Replays, emptying the cache but keeping policy history. Default 1.
    pub runs: u32,
    /// Request timing. Default: think.
    pub timing: Timing,
    /// Constant think time replacing the trace's gaps. Default: none.
    pub think_ns: Option<u64>,
    /// The driver's do-no-harm guard. Default: off (the papers' systems).
    pub guard: GuardOptions,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            cache_blocks: (256 << 20) / outrider_core::BLOCK_SIZE,
            cache_model: CacheModel::Lru,
            device: "hdd".into(),
            runs: 1,
            timing: Timing::Think,
            think_ns: None,
            guard: GuardOptions::OFF,
        }
    }
}

/// The outcome of simulating one policy over all runs.
#[derive(Clone, Debug, Default)]
pub struct SimResult {
    /// One report per run.
    pub reports: Vec<Report>,
    /// Raw counters per run.
    pub counters: Vec<Counters>,
    /// Peak blocks held by the cache model.
    pub peak_cache_blocks: usize,
    /// Bytes of cache-model state per cached block.
    pub cache_bytes_per_block: f64,
    /// Bytes of policy state at the end.
    pub policy_bytes: usize,
    /// The policy's time series, one per run ([`outrider_core::Policy::series`]).
    pub series: Vec<Vec<SeriesPoint>>,
    /// What the driver's guard decided, per run.
    pub guard: Vec<GuardStats>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Demand,
    Prefetch,
}

struct Inflight {
    kind: Kind,
    window: u64,
    key: u64,
    blocks: u32,
    issue_ns: u64,
    waiters: Vec<u32>,
}

struct Proc {
    /// Its list of record indices in `Engine::lists` (None: all records,
    /// one process).
    list: Option<u32>,
    pos: usize,
    len: usize,
    outstanding: u32,
    wait_start_ns: u64,
    /// The request in progress, for [`Feedback::AccessDone`].
    access: Access,
    /// The record at `pos`, decoded once when the process is scheduled
    /// (decoding it again for the request and for the next issue time was
    /// 13% of `sim --cache 1%` on the 10 M-request page trace, perf).
    record: Record,
}

/// The driver as the simulator runs it (the policy is the caller's).
type SimDriver<'p> = Driver<&'p mut (dyn Policy + 'static)>;

/// The simulated kernel and its processes. The [`Kernel`] side
/// (residency, fetching, write-off) is in `kernel`.
///
/// [`Kernel`]: outrider_driver::Kernel
struct Engine<'t> {
    records: RecordView<'t>,
    /// Record indices of each process, in order of first appearance; empty
    /// when the trace has one pid (most block traces need no lists at all).
    lists: Vec<Vec<u32>>,
    layout: Layout,
    cfg: SimConfig,
    cache: Cache,
    device: Box<dyn Device>,
    inflight: Vec<Inflight>,
    free_inflight: Vec<u32>,
    procs: Vec<Proc>,
    ready: BinaryHeap<Reverse<(u64, u32)>>,
    windows: WindowTable,
    c: Counters,
    evicted: Vec<Evicted>,
    pieces: Vec<(u32, u64, u32)>,
    /// The device completes every request when submitted (`none`): reads
    /// skip the device queue and prefetch completions wait in the
    /// driver's notes, in submission order, to be told to the policy
    /// before the next event -- exactly when the queue would have
    /// delivered them.
    instant: bool,
    /// Prefetched blocks not yet used, evicted or written off.
    pending_prefetched: u64,
    /// Prefetch reads in issue order, for the write-off (kept only when
    /// the guard has a time to live): (issue time, first key, blocks).
    issued: VecDeque<(u64, u64, u32)>,
    track_issued: bool,
    seq: u64,
    t0_ns: u64,
    live: usize,
    end_ns: u64,
}

/// Simulate `policy` over `trace` for `cfg.runs` runs. `progress` is called
/// with the number of requests done so far, every 2^20 requests.
pub fn simulate(
    trace: &Trace,
    policy: &mut BoxedPolicy,
    policy_spec: &str,
    cfg: &SimConfig,
    progress: &mut dyn FnMut(u64),
) -> Result<SimResult, String> {
    let device = build_device(&cfg.device)?;
    check_records(trace)?;
    let result = simulate_on(trace, policy, policy_spec, cfg, device, progress);
    if result.counters.iter().any(|c| c.elapsed_ns == u64::MAX) {
        return Err(format!(
            "{}: the simulated clock reached 2^64 ns (584 years): request times or think \
             times too large",
            trace.meta.source
        ));
    }
    Ok(result)
}

/// Largest block address the models accept: 2^40 blocks (4 PiB), the
/// per-device region of the device models.
pub const MAX_LBN: u64 = 1 << crate::device::DEV_REGION_SHIFT;

/// Reject records the models cannot place (beyond [`MAX_LBN`]).
pub fn check_records(trace: &Trace) -> Result<(), String> {
    let records = trace.records.view();
    // Packed records know their end from the check made when mapped.
    if records.end_block_bound().is_some_and(|end| end <= MAX_LBN) {
        return Ok(());
    }
    for i in 0..records.len() {
        let r = records.get(i);
        let end = r.first_block() + u64::from(r.block_count());
        if end > MAX_LBN {
            return Err(format!(
                "{}: record {}: byte offset {} + size {} lies beyond the 4 PiB a device model holds",
                trace.meta.source,
                i + 1,
                r.offset,
                r.size
            ));
        }
    }
    Ok(())
}

/// [`simulate`] on a device model built by the caller (`cfg.device` is
/// ignored).
pub fn simulate_on(
    trace: &Trace,
    policy: &mut BoxedPolicy,
    policy_spec: &str,
    cfg: &SimConfig,
    device: Box<dyn Device>,
    progress: &mut dyn FnMut(u64),
) -> SimResult {
    let records = trace.records.view();
    let mut e = Engine {
        records,
        lists: process_lists(records),
        layout: Layout::from_meta(&trace.meta),
        cfg: cfg.clone(),
        cache: Cache::new(cfg.cache_model, cfg.cache_blocks),
        instant: device.is_instantaneous(),
        device,
        inflight: Vec::new(),
        free_inflight: Vec::new(),
        procs: Vec::new(),
        ready: BinaryHeap::new(),
        windows: WindowTable::default(),
        c: Counters::default(),
        evicted: Vec::new(),
        pieces: Vec::new(),
        pending_prefetched: 0,
        issued: VecDeque::new(),
        track_issued: cfg.guard.unused_ttl_ns.is_some(),
        seq: 0,
        live: 0,
        end_ns: 0,
        t0_ns: if records.is_empty() {
            0
        } else {
            records.get(0).time_ns
        },
    };
    let mut result = SimResult::default();
    let mut done_total = 0u64;
    // Oracle policies (libprefetch `directed`) get the trace's future.
    let oracle: Vec<Access> = if policy.interests().oracle {
        (0..records.len())
            .map(|i| record_access(&records.get(i)))
            .collect()
    } else {
        Vec::new()
    };
    let mut d: SimDriver<'_> = Driver::new(policy.as_mut(), cfg.guard);
    for run in 1..=cfg.runs.max(1) {
        let started = Instant::now();
        let cpu_started = thread_cpu_secs();
        e.reset();
        let device = DeviceInfo {
            dev: None,
            max_read_bytes_per_s: e.device.max_throughput_bytes_per_s(),
        };
        d.start(&RunInfo {
            run,
            budget_changed: false,
            cache_blocks: cfg.cache_blocks,
            devices: std::slice::from_ref(&device),
            memory_budget_bytes: cfg
                .guard
                .budget_blocks
                .map(|b| b * outrider_core::BLOCK_SIZE),
            oracle: (!oracle.is_empty()).then_some(oracle.as_slice()),
        });
        e.run(&mut d, &mut |n| progress(done_total + n));
        done_total += e.c.requests;
        let secs = started.elapsed().as_secs_f64();
        let mut report = e.c.report(policy_spec, run, secs);
        let cpu_secs = thread_cpu_secs() - cpu_started;
        if cpu_secs > 0.0 {
            report.events_per_cpu_s = e.c.requests as f64 / cpu_secs;
        }
        result.reports.push(report);
        result.counters.push(e.c.clone());
        result.series.push(d.policy().series());
        result.guard.push(d.stats());
        result.peak_cache_blocks = result.peak_cache_blocks.max(e.cache.peak_blocks());
    }
    result.cache_bytes_per_block = e.cache.bytes_per_block();
    result.policy_bytes = d.policy().memory_bytes();
    result
}

/// CPU time used by the calling thread, in seconds (0 if unavailable).
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Record indices per pid, in order of first appearance; empty for a
/// single-pid trace.
fn process_lists(records: RecordView<'_>) -> Vec<Vec<u32>> {
    if records.one_pid() {
        return Vec::new();
    }
    let mut pid_index: FxHashMap<u32, usize> = FxHashMap::default();
    let mut lists: Vec<Vec<u32>> = Vec::new();
    for i in 0..records.len() {
        let r = records.get(i);
        let k = *pid_index.entry(r.pid).or_insert_with(|| {
            lists.push(Vec::new());
            lists.len() - 1
        });
        lists[k].push(i as u32);
    }
    lists
}

/// A record as the policy will see it, without its time and sequence
/// number (left 0: unknown in advance for the oracle, set when issued).
fn record_access(r: &Record) -> Access {
    Access {
        pid: r.pid,
        dev: u32::from(r.dev),
        lbn: r.first_block(),
        file: FileId(u64::from(r.file)),
        page: r.first_page(),
        blocks: r.block_count(),
        op: if r.is_write() { Op::Write } else { Op::Read },
        ..Access::default()
    }
}

impl Engine<'_> {
    fn reset(&mut self) {
        self.cache.clear();
        self.device.reset();
        self.inflight.clear();
        self.free_inflight.clear();
        self.windows.clear();
        self.ready.clear();
        self.c = Counters::default();
        self.pending_prefetched = 0;
        self.issued.clear();
        self.procs.clear();
        if self.lists.is_empty() {
            self.procs.push(Proc {
                list: None,
                pos: 0,
                len: self.records.len(),
                outstanding: 0,
                wait_start_ns: 0,
                access: Access::default(),
                record: Record::default(),
            });
        } else {
            for (k, l) in self.lists.iter().enumerate() {
                self.procs.push(Proc {
                    list: Some(k as u32),
                    pos: 0,
                    len: l.len(),
                    outstanding: 0,
                    wait_start_ns: 0,
                    access: Access::default(),
                    record: Record::default(),
                });
            }
        }
        for p in 0..self.procs.len() {
            if self.procs[p].len > 0 {
                self.procs[p].record = self.record_of(p, 0);
                let t = self.first_issue_ns(p);
                self.ready.push(Reverse((t, p as u32)));
            }
        }
    }

    // Inlined: called as a function, its 40-byte result went through the
    // stack and the caller's wider loads of it missed store forwarding
    // (16% of the loop's samples, perf at 10% on the page trace).
    #[inline(always)]
    fn record_of(&self, p: usize, pos: usize) -> Record {
        let proc = &self.procs[p];
        let i = match proc.list {
            None => pos,
            Some(k) => self.lists[k as usize][pos] as usize,
        };
        self.records.get(i)
    }

    fn first_issue_ns(&self, p: usize) -> u64 {
        match (self.cfg.timing, self.cfg.think_ns) {
            (Timing::Replay, _) | (Timing::Think, None) => {
                self.procs[p].record.time_ns.saturating_sub(self.t0_ns)
            }
            (Timing::Think, Some(_)) => 0,
        }
    }

    /// When a process issues its next record (recorded at `cur`), given
    /// that its previous one (recorded at `prev`) completed at `done_ns`.
    fn next_issue_ns(&self, prev: u64, cur: u64, done_ns: u64) -> u64 {
        match (self.cfg.timing, self.cfg.think_ns) {
            (_, Some(t)) => done_ns.saturating_add(t),
            (Timing::Think, None) => done_ns.saturating_add(cur.saturating_sub(prev)),
            (Timing::Replay, None) => done_ns.max(cur.saturating_sub(self.t0_ns)),
        }
    }

    fn run(&mut self, d: &mut SimDriver<'_>, progress: &mut dyn FnMut(u64)) {
        let tick_iv = d.interests().tick_interval_ns.filter(|&t| t > 0);
        let qc = d.guard().qc_interval_ns > 0;
        // `None`: no tick due (event-driven, or the clock would pass 2^64).
        let mut next_tick = tick_iv;
        self.live = self.procs.iter().filter(|p| p.len > 0).count();
        self.end_ns = 0;
        while self.live > 0 {
            // An instantaneous device never holds a request (see `instant`).
            let t_dev = if self.instant {
                None
            } else {
                self.device.next_completion_ns()
            };
            let t_proc = self.ready.peek().map(|r| r.0 .0);
            // Ties: completions, then ticks, then requests (module docs).
            let before =
                |a: Option<u64>, b: Option<u64>| a.is_some_and(|a| b.is_none_or(|b| a <= b));
            let now = if t_dev.is_some() && before(t_dev, t_proc) && before(t_dev, next_tick) {
                let (now, req) = self
                    .device
                    .complete_next()
                    .expect("device promised a completion");
                debug_assert_eq!(Some(now), t_dev);
                self.complete(d, req.id as u32, now);
                now
            } else if next_tick.is_some() && before(next_tick, t_proc) {
                let now = next_tick.expect("due");
                let iv = tick_iv.expect("ticking");
                let idle = d.tick(self, now);
                next_tick = self.next_tick_after(d, now, iv, idle, t_proc);
                now
            } else {
                let Reverse((now, p)) = self
                    .ready
                    .pop()
                    .expect("a live process is ready or waits on the device");
                let p = p as usize;
                self.request(d, p, now);
                if self.c.requests & ((1 << 20) - 1) == 0 {
                    progress(self.c.requests);
                }
                if self.procs[p].outstanding == 0 {
                    self.advance(p, now);
                }
                now
            };
            if !d.notes.done.is_empty() {
                d.deliver_done(self);
            }
            if qc {
                d.poll(self, now);
            }
        }
        self.c.elapsed_ns = self.end_ns;
        self.c.device_busy_ns = self.device.busy_ns();
        self.finish_run(d);
    }

    /// The tick after the one at `now`. A tick that asked for nothing while
    /// the device is idle leaves nothing to change before the next
    /// request at `t_proc`: the ticks between are skipped, to the last one
    /// at or before it (a simulated idle gap costs no CPU time; flashy
    /// measures each interval by its own length, so the one long interval
    /// reads as the idle ones would).
    fn next_tick_after(
        &mut self,
        d: &SimDriver<'_>,
        now: u64,
        iv: u64,
        idle: bool,
        t_proc: Option<u64>,
    ) -> Option<u64> {
        let next = now.checked_add(iv)?;
        let device_idle =
            d.notes.done.is_empty() && (self.instant || self.device.next_completion_ns().is_none());
        match t_proc {
            Some(t) if idle && device_idle && t > next => Some(next + (t - next) / iv * iv),
            _ => Some(next),
        }
    }

    /// Move process `p` past the request it just completed at `now`;
    /// returns true if it has no more requests.
    fn advance(&mut self, p: usize, now: u64) -> bool {
        let proc = &mut self.procs[p];
        proc.pos += 1;
        if proc.pos >= proc.len {
            self.live -= 1;
            self.end_ns = self.end_ns.max(now);
            return true;
        }
        let prev = proc.record.time_ns;
        let pos = proc.pos;
        let next = self.record_of(p, pos);
        self.procs[p].record = next;
        let t = self.next_issue_ns(prev, next.time_ns, now);
        self.ready.push(Reverse((t, p as u32)));
        false
    }

    fn request(&mut self, d: &mut SimDriver<'_>, p: usize, now: u64) {
        let pos = self.procs[p].pos;
        let r = self.procs[p].record;
        // Warm the hash slot of a request a few ahead (memory-latency bound),
        // and of the block after it, which sequential policies look up
        // (OBL's `is_cached` was 5% of its run at 10%, perf); and that
        // request's record further ahead still.
        if self.procs[p].list.is_none() {
            self.records.prefetch(pos + RECORD_LOOKAHEAD);
        }
        if pos + LOOKAHEAD < self.procs[p].len {
            let ahead = self.record_of(p, pos + LOOKAHEAD);
            let key = block_key(u32::from(ahead.dev), ahead.first_block());
            self.cache.prefetch_key(key);
            self.cache
                .prefetch_key(key + u64::from(ahead.block_count()));
        }
        self.seq += 1;
        self.c.requests += 1;
        let access = Access {
            seq: self.seq,
            time_ns: now,
            origin: Origin::Demand,
            ..record_access(&r)
        };
        let o = self.look_up(d, p, &access, now);
        self.settle_evictions(d);
        d.settle(self);
        self.c.miss_blocks += u64::from(o.miss_blocks);
        self.c.inflight_blocks += u64::from(o.inflight_blocks);
        d.access(self, &access, &o);
        if self.procs[p].outstanding > 0 {
            self.procs[p].wait_start_ns = now;
            self.procs[p].access = access;
        } else {
            self.access_done(d, &access, now);
        }
    }

    /// Look the blocks of process `p`'s `access` up, block by block: hits,
    /// waits on reads in flight, and demand reads (one per run of missing
    /// blocks) or write allocations for the rest.
    fn look_up(&mut self, d: &mut SimDriver<'_>, p: usize, access: &Access, now: u64) -> Outcome {
        let key0 = block_key(access.dev, access.lbn);
        let mut o = Outcome::default();
        let mut run_start = 0u64;
        let mut run_len = 0u32;
        self.c.demand_blocks += u64::from(access.blocks);
        for i in 0..u64::from(access.blocks) {
            let key = key0 + i;
            if let Some(idx) = self.cache.get(key) {
                let n = self.cache.node(idx);
                let (inflight, prefetched) = (n.inflight, n.prefetched);
                if let Some(req) = inflight {
                    if prefetched {
                        o.inflight_blocks += 1;
                        self.use_prefetched(idx, now);
                    } else {
                        o.miss_blocks += 1;
                    }
                    self.wait_on(p, req);
                } else {
                    o.hit_blocks += 1;
                    self.c.hit_blocks += 1;
                    if prefetched {
                        o.prefetched_hit_blocks += 1;
                        self.use_prefetched(idx, now);
                    }
                }
                self.cache.touch(idx);
                self.cache.note_demand(key, false);
                if run_len > 0 {
                    self.demand_read(d, p, run_start, run_len, now);
                    run_len = 0;
                }
            } else {
                o.miss_blocks += 1;
                self.cache.note_demand(key, true);
                if access.op == Op::Write {
                    self.cache.insert(key, Fill::Demand, &mut self.evicted);
                    self.settle_evictions(d);
                } else {
                    if run_len == 0 {
                        run_start = key;
                    }
                    run_len += 1;
                }
            }
        }
        if run_len > 0 {
            self.demand_read(d, p, run_start, run_len, now);
        }
        o
    }

    /// The demand request `access` completed at `now`: tell the policy.
    fn access_done(&mut self, d: &mut SimDriver<'_>, access: &Access, now: u64) {
        if d.interests().access_done {
            d.feedback(self, &Feedback::AccessDone(access), now);
        }
    }

    fn use_prefetched(&mut self, idx: u32, now: u64) {
        let issue = self.cache.issue_ns(idx);
        let n = self.cache.node_mut(idx);
        n.prefetched = false;
        let slot = n.window_slot;
        self.pending_prefetched -= 1;
        self.c.prefetched_used_blocks += 1;
        self.c.prefetch_served_blocks += 1;
        self.c.lead_time_sum_ns += u128::from(now.saturating_sub(issue));
        self.resolve_window(slot, true);
    }

    /// One prefetched block of the window in `slot` was used or evicted.
    fn resolve_window(&mut self, slot: u32, used: bool) {
        resolve_window(&mut self.windows, &mut self.c, slot, used);
    }

    fn wait_on(&mut self, p: usize, req: u32) {
        let w = &mut self.inflight[req as usize].waiters;
        if !w.contains(&(p as u32)) {
            w.push(p as u32);
            self.procs[p].outstanding += 1;
        }
    }

    fn alloc_inflight(&mut self, f: Inflight) -> u32 {
        if let Some(i) = self.free_inflight.pop() {
            // Keep the old waiter list's allocation.
            let slot = &mut self.inflight[i as usize];
            let waiters = std::mem::take(&mut slot.waiters);
            *slot = f;
            slot.waiters = waiters;
            i
        } else {
            self.inflight.push(f);
            (self.inflight.len() - 1) as u32
        }
    }

    fn demand_read(&mut self, d: &mut SimDriver<'_>, p: usize, key: u64, blocks: u32, now: u64) {
        if d.notes.wants().device_requests {
            let pid = self.procs[p].record.pid;
            self.log_device(&mut d.notes, now, pid, key, blocks, Origin::Demand, None);
        }
        if self.instant {
            for i in 0..u64::from(blocks) {
                self.cache.insert(key + i, Fill::Demand, &mut self.evicted);
            }
            self.c.device_requests += 1;
            return;
        }
        let id = self.alloc_inflight(Inflight {
            kind: Kind::Demand,
            window: 0,
            key,
            blocks,
            issue_ns: now,
            waiters: Vec::new(),
        });
        for i in 0..u64::from(blocks) {
            let idx = self.cache.insert(key + i, Fill::Demand, &mut self.evicted);
            self.cache.node_mut(idx).inflight = Some(id);
        }
        self.wait_on(p, id);
        self.submit(id, key, blocks, now, 0);
    }
}

/// One prefetched block of the window in `slot` was used or evicted; a
/// window that closes with none used is mis-prefetched.
fn resolve_window(windows: &mut WindowTable, c: &mut Counters, slot: u32, used: bool) {
    if windows.resolve(slot, used) == Some(true) {
        c.mis_prefetched_windows += 1;
    }
}

mod kernel;
