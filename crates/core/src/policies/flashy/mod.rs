//! `flashy`: flashy prefetching, prefetchd (Uppal, Chiang and Huang, "Flashy
//! Prefetching for High-Performance Flash Drives", MSST 2012).
//!
//! # What triggers it
//!
//! Time, not accesses (§IV-B): every polling interval (`interval_ms`,
//! default 500 ms) the policy looks at what accumulated since the previous
//! tick and decides whether, where and how much to prefetch for the next
//! interval. Two event streams feed it (§IV-A): the application's reads as
//! they enter the cache, hits included ([`crate::Policy::on_access`]), and
//! the reads that reach the device — demand misses and our own prefetches
//! ([`crate::Policy::on_device_request`]). Events update the state machines
//! as they arrive instead of being buffered until the tick: the counters
//! are the same (events arrive in time order), and no buffer can grow.
//!
//! # The numbers it keeps
//!
//! - One state machine per (pid, device, block region) (§IV-B, §V-A: "a
//!   combination of drive id and process id, and block region"), at most
//!   `machines` (default 1024; the idlest goes first), dropped after `idle`
//!   (default 8) intervals without a read. Regions are `region` (default
//!   256 MiB, not given by the paper) wide; a stream that runs into the
//!   next region takes its machine with it (see [`Flashy::find`]).
//! - Per machine, two [`pattern::Tracker`]s: the application's requests
//!   (pattern recognition, §IV-B) and the device reads of that stream
//!   (feedback, §IV-D).
//! - One scale factor (Algorithm 1's `scale`, default start 1.0, §IV-C:
//!   "values near 1.0 typically work well as the starting point").
//!
//! # At each polling tick (Algorithm 1)
//!
//! 1. For each machine whose pattern reaches `threshold` (0.60): the quota
//!    of [`quota`] (scale × linear fraction × measured application rate,
//!    capped by the device's maximum throughput minus the unpredictable
//!    rate), turned into ranges by [`pattern::ranges`] and cut into chunks
//!    of at most `chunk` (default 1 MiB).
//!    Rates use the *actual* elapsed time since the previous tick (§IV-B:
//!    "careful to use the actual elapsed time"), or since the stream's
//!    first read when it was born after that tick; the quota the nominal
//!    interval (the next sleep).
//! 2. The [`feedback`] monitor adjusts the scale for the next interval
//!    (`feedback=off` keeps it fixed: the paper's static "normal" and
//!    "aggressive" settings of Fig. 2 are `feedback=off,scale=X`).
//! 3. One point of the time series (Fig. 5): application, prefetch and miss
//!    throughput and the scale.
//!
//! The maximum device throughput is measured, not assumed (§IV-C): the
//! driver tells it through [`crate::Policy::on_start`]'s devices (simulator:
//! the device model; live: `outrider calibrate`); `max_mb_s` overrides it.
//! Unknown, the cap is not applied.
//!
//! # Pacing (departure, setting `depth`)
//!
//! prefetchd issues its readahead calls at the tick. In the simulator's
//! FIFO device queues, half a second's worth of prefetch submitted at once
//! delays every demand read queued behind it (live, readahead(2) submits
//! synchronously in the caller, which paces a single-threaded daemon). By
//! default at most `depth` (4) chunks' worth of our blocks are outstanding
//! at the device; the next piece is issued when one completes
//! ([`crate::Policy::on_prefetch_done`]); pieces already resident are
//! skipped; a new tick's plan replaces what is left of the previous one.
//! The bound is in blocks, not requests: a strided plan's pieces are as
//! small as one stride (64 KiB of a 1 GiB strided read live), and four of
//! them at a time kept the prefetch behind a reader at the device's rate.
//! `depth=0` issues the whole plan at the tick, as the paper describes.
//!
//! # Planning between ticks (departures, settings `first_ms`, `refill`)
//!
//! A polling interval of 0.5 s is the whole life of many programs: a 1 GiB
//! strided read takes about a second on this machine's disk, and the
//! paper's timing (first plan at the first tick, one plan per interval)
//! covered 0.43-0.53 of it live. Two rules plan a stream between ticks,
//! at a driver tick every `first_ms` (100 ms):
//!
//! - a stream born since the last tick is planned once it has read for
//!   `first_ms`, from its rate since its first read;
//! - a stream that read past half of its plan (`refill`) is planned
//!   again: its reads got faster than the rate its quota was measured at
//!   (its own prefetches hit), which the feedback monitor would only see
//!   at the end of the interval.
//!
//! Both leave the other streams' plans and the feedback alone; the
//! polling tick still replans everything. Live, on that strided read,
//! coverage 0.87-0.91 with both (0.58 with the first only) and the read
//! 0.82-0.89 s against stock's 1.12-1.30 s (`first_ms=0,refill=off` is
//! the paper's timing).
//!
//! # Strided ranges (departure, setting `infill`)
//!
//! §IV-C issues one readahead call per stride. Strides whose gap is at
//! most `infill` (default 32 KiB, libprefetch §3.3's limit) are read as one
//! request, gap included ([`crate::mechanism::infill`]): every other 4 KiB
//! block otherwise costs one device request (and, live, one system call)
//! per block. `infill=0` is the paper's behaviour (strides of a pattern
//! are never adjacent: adjacent reads are sequential).
//!
//! # The faithful setting: `readahead+flashy`
//!
//! prefetchd ran in user space over the kernel's page cache with Linux
//! readahead left on (§V; §VI-C: the baseline is "the default I/O
//! configuration ... including some limited readahead by the kernel"), so
//! the paper's comparison is the stack `readahead+flashy` against
//! `readahead`, which is how `bench/flashy.sh` reports it. `flashy` alone
//! is prefetchd on a kernel without readahead. In the simulator the
//! direction of the paper's result (flashy ahead of readahead) shows where
//! readahead leaves the device idle — large records with compute between
//! them, reverse and strided scans — and not on the LFS and BLAST stand-ins,
//! where readahead already runs at the device or compute floor
//! (`bench/results/flashy.md`, "Why flashy trails readahead").
//!
//! # What is approximate
//!
//! - Our prefetch reads are attributed to their stream by window id (the
//!   simulator knows it); a driver that cannot tell leaves them out of the
//!   per-stream device trackers (they still count in the totals).
//! - The raise threshold and steps of the feedback are ours (see
//!   [`feedback`]); the paper gives none.

pub mod feedback;
mod params;
pub mod pattern;
pub mod quota;
#[cfg(test)]
mod tests;
mod tick;

use crate::event::{
    Access, DeviceRequest, Op, Origin, Outcome, PrefetchDone, Target, WindowId, BLOCK_SIZE,
};
use crate::mechanism::infill;
use crate::policy::{BoxedPolicy, Feedback, Interests, Policy, RunInfo, SeriesPoint, Sink};
use feedback::{Adjust, IntervalStats, Monitor};
pub use params::{parse_params, FlashyParams};
use pattern::{Pattern, Tracker};
use std::collections::BTreeMap;

/// Registered name.
pub const NAME: &str = "flashy";
/// One-line description.
pub const SUMMARY: &str =
    "flashy prefetching / prefetchd: timed pattern recognition, throughput quota, feedback-scaled aggressiveness (MSST 2012)";

/// Bound on the points of the time series kept per run; past it every
/// other point is dropped and points are recorded half as often.
pub const MAX_SERIES_POINTS: usize = 1 << 14;

/// Bound on chunks planned but not yet issued (the rest of a tick's plan
/// is dropped past it; the quota is bounded by the device rate anyway).
pub const MAX_PENDING_CHUNKS: usize = 1 << 16;

/// Highest block a prefetch may reach: the 2^40-block (4 PiB) region a
/// device has in the simulator; live, the kernel clips at the device end.
pub const MAX_BLOCK: u64 = 1 << 40;

/// A scan continues into a neighbouring region across a gap of at most
/// 1/16 of a region (16 MiB by default). ext4 here starts its 128 MiB
/// block groups with 8 MiB of metadata, so a file's extents break exactly
/// at the 256 MiB region boundaries (filefrag on the 1 GiB file of
/// `run_flashy_covers_a_strided_read`: a 2048-block gap at each). Without
/// the slack the scan got a new machine there, and the old one, which
/// still counted the interval's reads, planned a whole quota from its last
/// request into blocks the scan had already read; its chunks were queued
/// before the live stream's (live: 560 of 2100 requests of a tick, and the
/// live stream's plan started behind the reader; coverage 0.16-0.25 before,
/// 0.48-0.55 after, same machine).
pub const CROSS_GAP_DIVISOR: u64 = 16;

/// State machine key: (pid, device, block region).
pub type Key = (u32, u32, u64);

/// One state machine (§IV-B).
#[derive(Clone, Debug, Default)]
pub struct Machine {
    /// The application's requests.
    pub app: Tracker,
    /// Device reads of this stream: demand misses (counted) and our
    /// prefetches (state only).
    pub disk: Tracker,
    /// Consecutive intervals without an application read.
    pub idle_ticks: u32,
    /// When the stream's first read arrived (ns): a stream born inside an
    /// interval has its rate measured from here, not from the tick before.
    pub born_ns: u64,
    /// Has a tick planned for this stream since it was born or used up
    /// half its plan (see `first_ms` and `refill`)?
    pub planned: bool,
    /// Halfway through the stream's current plan, and whether the plan
    /// runs backward: a read past it makes the stream due again (`refill`).
    pub refill_at: Option<(u64, bool)>,
}

/// What one tick decided, kept for tests and diagnostics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickReport {
    /// Elapsed time the rates used (ns).
    pub elapsed_ns: u64,
    /// Per stream that prefetched: key, pattern, linear fraction, quota
    /// (blocks).
    pub plans: Vec<(Key, Pattern, f64, u64)>,
    /// The interval's totals given to the feedback monitor.
    pub stats: IntervalStats,
    /// What the monitor did.
    pub adjust: Option<Adjust>,
    /// Scale after the tick.
    pub scale: f64,
}

/// The flashy prefetcher.
#[derive(Clone, Debug)]
pub struct Flashy {
    p: FlashyParams,
    region_blocks: u64,
    chunk_blocks: u64,
    infill_blocks: u64,
    monitor: Monitor,
    machines: BTreeMap<Key, Machine>,
    scale: f64,
    last_tick_ns: u64,
    /// Maximum read throughput per device (`None` = every device), bytes/s.
    dev_max: Vec<(Option<u32>, u64)>,
    /// Blocks our prefetches read from the device this interval.
    prefetch_disk: u64,
    /// Demand blocks read from the device this interval.
    miss_disk: u64,
    /// Did the previous tick request a prefetch?
    prefetched_prev: bool,
    /// Windows of the last tick's prefetches and their machines.
    win_owner: Vec<(u64, Key)>,
    series: Vec<SeriesPoint>,
    series_every: u64,
    ticks: u64,
    scratch: Vec<(u64, u64)>,
    /// Chunks of the current plan not yet issued: (dev, lbn, blocks, window).
    pending: std::collections::VecDeque<(u32, u64, u64, WindowId)>,
    /// Our device reads submitted and not yet completed, per window
    /// (completions of other policies' windows in a stack are not ours):
    /// (window, requests, blocks).
    in_flight: Vec<(u64, u32, u64)>,
    /// The last tick's decisions.
    pub last_tick: TickReport,
}

impl Flashy {
    /// Build from parameters (checked by [`parse_params`]).
    pub fn new(p: FlashyParams) -> Self {
        Flashy {
            region_blocks: (p.region.0 / BLOCK_SIZE).max(1),
            chunk_blocks: (p.chunk.0 / BLOCK_SIZE).max(1),
            infill_blocks: infill::limit_units(p.infill),
            monitor: Monitor {
                raise_at: p.raise_at,
                up: p.up,
                down: p.down,
                scale_min: p.scale_min,
                scale_max: p.scale_max,
            },
            machines: BTreeMap::new(),
            scale: p.scale,
            last_tick_ns: 0,
            dev_max: Vec::new(),
            prefetch_disk: 0,
            miss_disk: 0,
            prefetched_prev: false,
            win_owner: Vec::new(),
            series: Vec::new(),
            series_every: 1,
            ticks: 0,
            scratch: Vec::new(),
            pending: std::collections::VecDeque::new(),
            in_flight: Vec::new(),
            last_tick: TickReport::default(),
            p,
        }
    }

    /// How often the driver ticks: the polling interval, or `first_ms`
    /// when new streams are planned early.
    fn tick_ms(&self) -> u64 {
        match self.p.first_ms {
            0 => self.p.interval_ms,
            f => f.min(self.p.interval_ms),
        }
    }

    /// The current scale factor.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The state machines.
    pub fn machines(&self) -> &BTreeMap<Key, Machine> {
        &self.machines
    }

    /// The machine a request `(pid, dev, lbn, end)` at `now_ns` belongs to:
    /// the one of its region, else one in a neighbouring region whose
    /// stream this request continues (a scan crossing a region boundary),
    /// also across a gap of at most 1/[`CROSS_GAP_DIVISOR`] of a region
    /// (what a file system leaves between a file's extents there).
    /// With `create`, a neighbour found is moved to the request's region
    /// and a missing machine is created, born at `now_ns` (evicting the
    /// idlest when the table is full).
    fn find(&mut self, a: (u32, u32, u64, u64), now_ns: u64, create: bool) -> Option<Key> {
        let (pid, dev, lbn, end) = a;
        let r = lbn / self.region_blocks;
        let key = (pid, dev, r);
        if self.machines.contains_key(&key) {
            return Some(key);
        }
        let neighbours = [r.checked_sub(1), r.checked_add(1)];
        for nr in neighbours.into_iter().flatten() {
            let nk = (pid, dev, nr);
            if let Some(m) = self.machines.get(&nk) {
                let gap = self.region_blocks / CROSS_GAP_DIVISOR;
                if m.app.continues(lbn, end)
                    || m.disk.continues(lbn, end)
                    || m.app.stream.is_near(lbn, end, gap)
                {
                    if !create {
                        return Some(nk);
                    }
                    let m = self.machines.remove(&nk).expect("present");
                    self.machines.insert(key, m);
                    for w in &mut self.win_owner {
                        if w.1 == nk {
                            w.1 = key;
                        }
                    }
                    return Some(key);
                }
            }
        }
        if !create {
            return None;
        }
        if self.machines.len() >= self.p.machines as usize {
            let victim = self
                .machines
                .iter()
                .max_by_key(|(_, m)| m.idle_ticks)
                .map(|(k, _)| *k)
                .expect("table is full, so not empty");
            self.machines.remove(&victim);
        }
        let m = Machine {
            born_ns: now_ns,
            ..Machine::default()
        };
        self.machines.insert(key, m);
        Some(key)
    }

    /// Maximum read rate (blocks/s) of the device group of `dev`, and that
    /// group: a device told individually is its own group, the others
    /// share the driver's `None` entry.
    fn max_rate(&self, dev: u32) -> (Option<u32>, Option<f64>) {
        let group = self
            .dev_max
            .iter()
            .any(|(d, _)| *d == Some(dev))
            .then_some(dev);
        if self.p.max_mb_s > 0.0 {
            return (group, Some(self.p.max_mb_s * 1e6 / BLOCK_SIZE as f64));
        }
        let bytes = self
            .dev_max
            .iter()
            .find(|(d, _)| *d == group)
            .map(|(_, b)| *b as f64 / BLOCK_SIZE as f64);
        (group, bytes)
    }

    /// Issue pending chunks while fewer than `depth` chunks' worth of our
    /// blocks are at the device, skipping resident blocks (each uncached
    /// run is one device read, so `in_flight` counts exactly what the
    /// driver submits).
    fn pump(&mut self, sink: &mut Sink<'_>) {
        let limit = u64::from(self.p.depth) * self.chunk_blocks;
        let mut issued = 0u64;
        let outstanding: u64 = self.in_flight.iter().map(|w| w.2).sum();
        while limit == 0 || outstanding + issued < limit {
            let Some((dev, lbn, n, w)) = self.pending.pop_front() else {
                break;
            };
            let mut run: Option<u64> = None;
            for b in lbn..lbn + n {
                match (sink.is_cached(dev, b), run) {
                    (true, Some(s)) => {
                        sink.prefetch(Target::Block { dev, lbn: s }, (b - s) as u32, w);
                        issued += b - s;
                        run = None;
                    }
                    (false, None) => run = Some(b),
                    _ => {}
                }
            }
            if let Some(s) = run {
                sink.prefetch(Target::Block { dev, lbn: s }, (lbn + n - s) as u32, w);
                issued += lbn + n - s;
            }
        }
    }

    fn push_series(&mut self, now_ns: u64, values: Vec<(&'static str, f64)>) {
        self.ticks += 1;
        if !self.ticks.is_multiple_of(self.series_every) {
            return;
        }
        if self.series.len() >= MAX_SERIES_POINTS {
            let mut i = 0;
            self.series.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.series_every *= 2;
        }
        self.series.push(SeriesPoint {
            time_ns: now_ns,
            values,
        });
    }
}

impl Policy for Flashy {
    fn name(&self) -> &str {
        NAME
    }

    fn on_access(&mut self, a: &Access, _o: &Outcome, _sink: &mut Sink<'_>) {
        if a.op != Op::Read || a.origin != Origin::Demand || a.blocks == 0 {
            return;
        }
        if let Some(k) = self.find((a.pid, a.dev, a.lbn, a.end_lbn()), a.time_ns, true) {
            let m = self.machines.get_mut(&k).expect("found");
            m.app.observe(a.lbn, a.blocks, true);
            let passed = match m.refill_at {
                Some((at, false)) => a.end_lbn() > at,
                Some((at, true)) => a.lbn < at,
                None => false,
            };
            if passed && self.p.refill {
                m.planned = false;
                m.refill_at = None;
            }
        }
    }

    fn interests(&self) -> Interests {
        Interests {
            device_requests: true,
            evictions: false,
            tick_interval_ns: Some(self.tick_ms().saturating_mul(1_000_000)),
            ..Interests::default()
        }
    }

    fn on_feedback(&mut self, f: &Feedback<'_>, sink: &mut Sink<'_>) {
        match *f {
            Feedback::DeviceRequest(r) => self.device_request(r),
            Feedback::PrefetchDone(d) => self.prefetch_done(d, sink),
            Feedback::Tick(now_ns) => self.tick(now_ns, sink),
            Feedback::AccessDone(_) | Feedback::Evicted(_) => {}
        }
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        for d in info.devices {
            self.dev_max.retain(|(x, _)| *x != d.dev);
            if let Some(b) = d.max_read_bytes_per_s.filter(|&b| b > 0) {
                self.dev_max.push((d.dev, b));
            }
        }
        if info.budget_changed {
            return;
        }
        // Streams and interval counters are per run; the scale factor is
        // learned history and carries over.
        self.machines.clear();
        self.win_owner.clear();
        self.series.clear();
        self.series_every = 1;
        self.ticks = 0;
        self.last_tick_ns = 0;
        self.prefetch_disk = 0;
        self.miss_disk = 0;
        self.prefetched_prev = false;
        self.pending.clear();
        self.in_flight.clear();
    }

    fn series(&self) -> Vec<SeriesPoint> {
        self.series.clone()
    }

    fn memory_bytes(&self) -> usize {
        self.machines.len() * (std::mem::size_of::<(Key, Machine)>() + 16)
            + self.series.len() * (std::mem::size_of::<SeriesPoint>() + 5 * 24)
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

impl Flashy {
    /// A read reached the device: the second stream (§IV-A).
    fn device_request(&mut self, r: &DeviceRequest) {
        match r.origin {
            Origin::OurPrefetch => {
                // Ours if the window is one of this tick's plan; a stacked
                // policy's prefetches are not. A driver that cannot tell
                // windows (window None) has every prefetch counted as ours.
                let owner = r
                    .window
                    .and_then(|w| self.win_owner.iter().find(|o| o.0 == w.0))
                    .copied();
                if r.window.is_none() || owner.is_some() {
                    self.prefetch_disk += u64::from(r.blocks);
                }
                if let Some((w, k)) = owner {
                    match self.in_flight.iter_mut().find(|f| f.0 == w) {
                        Some(f) => {
                            f.1 += 1;
                            f.2 += u64::from(r.blocks);
                        }
                        None => self.in_flight.push((w, 1, u64::from(r.blocks))),
                    }
                    // A zero-length read (live: a request that submitted
                    // nothing) counts as in flight until its done but does
                    // not move the stream.
                    if let Some(m) = self.machines.get_mut(&k).filter(|_| r.blocks > 0) {
                        m.disk.observe(r.lbn, r.blocks, false);
                    }
                }
            }
            Origin::Demand => {
                self.miss_disk += u64::from(r.blocks);
                if let Some(k) = self.find((r.pid, r.dev, r.lbn, r.end_lbn()), 0, false) {
                    let m = self.machines.get_mut(&k).expect("found");
                    m.disk.observe(r.lbn, r.blocks, true);
                }
            }
            Origin::FilePrefetch | Origin::Mapped => {}
        }
    }

    fn prefetch_done(&mut self, done: &PrefetchDone, sink: &mut Sink<'_>) {
        if let Some(i) = self.in_flight.iter().position(|w| w.0 == done.window.0) {
            let f = &mut self.in_flight[i];
            f.1 -= 1;
            f.2 = f.2.saturating_sub(u64::from(done.blocks));
            if f.1 == 0 {
                self.in_flight.swap_remove(i);
            }
            self.pump(sink);
        }
    }
}
