//! The driver: everything between a prefetching policy and the kernel,
//! written once and run unchanged by the simulator and the live runtime
//! (DESIGN.md's first principle, "one engine, two drivers").
//!
//! A [`Driver`] owns a policy and
//!
//! * feeds it accesses and feedback ([`Driver::access`],
//!   [`Driver::feedback`], [`Driver::tick`]) and the kernel's stream of
//!   evictions, device reads and finished prefetches ([`Notes`], delivered
//!   by [`Driver::settle`] and [`Driver::deliver_done`]), each only if the
//!   policy's [`Interests`] ask for it;
//! * turns its requests into fetches ([`Kernel::fetch`]), after admission
//!   control and within the memory budget (its guard);
//! * writes off prefetched blocks unused past a time to live and adapts the
//!   share of requests it admits to the measured use and waste
//!   ([`Driver::poll`]);
//! * checks the invariants the documents state ([`Driver::check`]):
//!   demand blocks are hits, misses or waits on a prefetch in flight;
//!   every prefetched block is used, unused or still pending, once;
//!   pending prefetched blocks stay within the budget.
//!
//! What differs between the simulator and the live runtime is behind
//! [`Kernel`]: residency (the cache model; `cachestat(2)` and the pages
//! outrider prefetched), fetching a range (the device model;
//! `posix_fadvise(WILLNEED)` workers), file ↔ block translation (the layout
//! model; FIEMAP), and the counters of what happened to each block, with
//! DESIGN.md's one set of definitions ([`Counters`]). A driver holds no
//! global state, so one process can host one per traced application, fed
//! by one event source.
//!
//! # Do no harm (DESIGN.md principle 3)
//!
//! [`GuardOptions::live`] is what the live runtime runs: prefetched and
//! unused pages never exceed the budget; pages unused 30 s are written off
//! as waste; every 200 ms, more waste than use in the interval (and at
//! least [`QC_MIN_WASTE`]) halves the
//! share of requests admitted (down to 1/64) and use above twice the waste
//! doubles it back — additive in steps of the exponent, in the spirit of
//! libprefetch's AIMD memory control (§3.4) and DiskSeen's quality control
//! (§3.5), simplified to one throttle per application. The simulator runs
//! [`GuardOptions::OFF`] by default (the papers' systems had none of it)
//! and the live settings with `--guard live`, so a simulation shows what
//! the throttle will do.

#![deny(missing_docs)]

pub mod benefit;

use outrider_core::metrics::Counters;
use outrider_core::{
    Access, DeviceRequest, Eviction, Feedback, Interests, Outcome, Policy, PrefetchDone,
    PrefetchRequest, Residency, RunInfo, Sink,
};
use std::collections::VecDeque;
use std::ops::DerefMut;

/// The kernel side of a driver: what the simulator models and the live
/// runtime asks the operating system.
pub trait Kernel {
    /// What the policy may ask while deciding: resident or in-flight
    /// blocks and pages, and file → block translation.
    fn residency(&self) -> &dyn Residency;
    /// Fetch what of each admitted request is neither resident nor in
    /// flight, taking every range submitted out of `budget` first (a range
    /// it refuses is not fetched). What the fetches report to the policy
    /// (device reads, prefetches done at once) goes to `notes`.
    fn fetch(&mut self, batch: &[Admitted], budget: &mut Budget, now_ns: u64, notes: &mut Notes);
    /// Prefetched blocks neither used nor written off yet.
    fn unused_blocks(&self) -> u64;
    /// Write off, as unused, the prefetched blocks issued before
    /// `issued_before_ns` and still unused; returns how many.
    fn write_off(&mut self, issued_before_ns: u64) -> u64;
    /// What happened to every block so far (this run).
    fn counters(&self) -> &Counters;
}

/// A request that passed admission control, with its scheduling group
/// ([`Policy::schedule_group`]).
#[derive(Clone, Copy, Debug)]
pub struct Admitted {
    /// The policy's request.
    pub req: PrefetchRequest,
    /// Its scheduling group (0: none).
    pub group: u32,
}

/// Room left in the memory budget for one batch of fetches, in blocks.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    room: u64,
    dropped: u64,
}

impl Budget {
    /// A budget with `room` blocks left.
    pub fn new(room: u64) -> Self {
        Budget { room, dropped: 0 }
    }

    /// May `blocks` more blocks be prefetched? If so they are taken from
    /// the room; if not they count as dropped.
    pub fn take(&mut self, blocks: u64) -> bool {
        if blocks <= self.room {
            self.room -= blocks;
            true
        } else {
            self.dropped += blocks;
            false
        }
    }

    /// Blocks refused so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The kernel's stream back to the policy, in arrival order per kind.
/// A kernel records only what [`Notes::wants`] asks for.
#[derive(Debug, Default)]
pub struct Notes {
    /// Blocks that left memory.
    pub evicted: Vec<Eviction>,
    /// Reads that reached the device.
    pub device: Vec<DeviceRequest>,
    /// Prefetches whose data arrived (or whose submission finished, live).
    pub done: VecDeque<PrefetchDone>,
    wants: Interests,
}

impl Notes {
    /// What the policy wants to hear.
    pub fn wants(&self) -> &Interests {
        &self.wants
    }
}

/// The do-no-harm settings. See the crate documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardOptions {
    /// Most prefetched-but-unused blocks (`None`: unbounded).
    pub budget_blocks: Option<u64>,
    /// Prefetched blocks unused this long are written off (`None`: never).
    pub unused_ttl_ns: Option<u64>,
    /// Quality-control interval; 0 turns the admission throttle off.
    pub qc_interval_ns: u64,
}

impl GuardOptions {
    /// No guard: every request is fetched (the papers' systems).
    pub const OFF: GuardOptions = GuardOptions {
        budget_blocks: None,
        unused_ttl_ns: None,
        qc_interval_ns: 0,
    };

    /// Parse `off`, `live` (a budget of a quarter of `cache_blocks`, as
    /// the live runtime's default is a quarter of the memory the program
    /// can use) or `live:B` with B a size (`512MiB`) or a fraction of the
    /// cache (`0.1`).
    pub fn parse(text: &str, cache_blocks: u64) -> Result<Self, String> {
        let bad = || {
            format!("'{text}': expected off, live, or live:BUDGET (a size such as 64MiB, or a fraction of the cache such as 0.25)")
        };
        let budget = match text.split_once(':') {
            None if text == "off" => return Ok(GuardOptions::OFF),
            None if text == "live" => (cache_blocks / 4).max(1),
            Some(("live", b)) if b.contains('.') => {
                let f: f64 = b.parse().map_err(|_| bad())?;
                if !(f > 0.0 && f <= 1.0) {
                    return Err(bad());
                }
                ((cache_blocks as f64 * f) as u64).max(1)
            }
            Some(("live", b)) => {
                let bytes =
                    outrider_core::size::parse_size(b).map_err(|e| format!("{}: {e}", bad()))?;
                (bytes / outrider_core::BLOCK_SIZE).max(1)
            }
            _ => return Err(bad()),
        };
        Ok(GuardOptions::live(budget))
    }

    /// The live runtime's settings with a budget of `budget_blocks`:
    /// 30 s write-off, 200 ms quality control.
    pub fn live(budget_blocks: u64) -> Self {
        GuardOptions {
            budget_blocks: Some(budget_blocks),
            unused_ttl_ns: Some(30_000_000_000),
            qc_interval_ns: 200_000_000,
        }
    }
}

/// Admission control and the budget's state.
#[derive(Clone, Debug)]
struct Guard {
    opts: GuardOptions,
    /// One request in 2^`admit_shift` is admitted.
    admit_shift: u32,
    admit_counter: u64,
    last_qc_ns: u64,
    /// Cumulative used / unused prefetched blocks at the last interval.
    last_used: u64,
    last_unused: u64,
    /// Share of the told budget this application may use, and the
    /// admission shift a run starts at ([`benefit::Gate::limits`]).
    budget_share: f64,
    start_shift: u32,
}

/// Most halvings of the admitted share (1/64).
pub const MAX_ADMIT_SHIFT: u32 = 6;

/// Least waste in an interval that halves admission: 64 blocks (256 KiB,
/// two of the kernel's default readahead windows). Fewer says nothing of
/// a policy: a live DiskSeen run following a 64 MiB trail lost 45 of its
/// 336 requests, and 13% of the file's coverage, to 17 pages that raced
/// the program in its first interval.
pub const QC_MIN_WASTE: u64 = 64;

impl Guard {
    fn admit(&mut self) -> bool {
        if self.admit_shift == 0 {
            return true;
        }
        self.admit_counter += 1;
        self.admit_counter & ((1u64 << self.admit_shift) - 1) == 0
    }

    /// One quality-control step on the interval's use and waste.
    fn adapt(&mut self, used: u64, wasted: u64) {
        if wasted > used && wasted >= QC_MIN_WASTE {
            self.admit_shift = (self.admit_shift + 1).min(MAX_ADMIT_SHIFT);
        } else if used > 2 * wasted {
            self.admit_shift = self.admit_shift.saturating_sub(1);
        }
    }
}

/// What the driver itself decided, per run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// Requests the policy made.
    pub requests: u64,
    /// Requests admission control refused.
    pub throttled_requests: u64,
    /// Blocks refused by the memory budget.
    pub dropped_budget_blocks: u64,
    /// Prefetched blocks written off unused past the time to live.
    pub written_off_blocks: u64,
    /// Share of requests admitted at the end, as a power of two (0: all).
    pub admit_shift: u32,
}

/// A policy and everything between it and a [`Kernel`]. `P` is an owned
/// policy (`Box<dyn Policy>`) or a borrowed one (`&mut dyn Policy`).
pub struct Driver<P> {
    policy: P,
    interests: Interests,
    out: Vec<PrefetchRequest>,
    batch: Vec<Admitted>,
    next_window: u64,
    /// The kernel's stream back to the policy.
    pub notes: Notes,
    guard: Guard,
    stats: GuardStats,
    /// The first invariant found broken ([`Driver::broken`]).
    broken: Option<String>,
}

impl<P: DerefMut<Target = dyn Policy>> Driver<P> {
    /// A driver running `policy` under `guard`.
    pub fn new(policy: P, guard: GuardOptions) -> Self {
        let interests = policy.interests();
        Driver {
            policy,
            interests,
            out: Vec::new(),
            batch: Vec::new(),
            next_window: 0,
            notes: Notes {
                wants: interests,
                ..Notes::default()
            },
            guard: Guard {
                opts: guard,
                admit_shift: 0,
                admit_counter: 0,
                last_qc_ns: 0,
                last_used: 0,
                last_unused: 0,
                budget_share: 1.0,
                start_shift: 0,
            },
            stats: GuardStats::default(),
            broken: None,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &dyn Policy {
        &*self.policy
    }

    /// The policy, to load history into.
    pub fn policy_mut(&mut self) -> &mut dyn Policy {
        &mut *self.policy
    }

    /// What the policy wants to hear.
    pub fn interests(&self) -> &Interests {
        &self.interests
    }

    /// The guard's settings.
    pub fn guard(&self) -> &GuardOptions {
        &self.guard.opts
    }

    /// Limit this application's prefetching from the next start on: a
    /// `budget_share` of every budget it is told (the policy is told the
    /// reduced budget too), and admission starting at one request in
    /// 2^`start_shift` ([`benefit`]).
    pub fn limit(&mut self, budget_share: f64, start_shift: u32) {
        self.guard.budget_share = budget_share.clamp(0.0, 1.0);
        self.guard.start_shift = start_shift.min(MAX_ADMIT_SHIFT);
    }

    /// What the driver decided this run.
    pub fn stats(&self) -> GuardStats {
        GuardStats {
            admit_shift: self.guard.admit_shift,
            ..self.stats
        }
    }

    /// Start a run (or, with `info.budget_changed`, tell a new budget):
    /// the policy hears `info`; a new run starts with fresh guard state.
    /// Window ids stay unique across runs.
    pub fn start(&mut self, info: &RunInfo<'_>) {
        if !info.budget_changed {
            self.guard.admit_shift = self.guard.start_shift;
            self.guard.admit_counter = 0;
            self.guard.last_qc_ns = 0;
            self.guard.last_used = 0;
            self.guard.last_unused = 0;
            self.stats = GuardStats::default();
            self.notes.evicted.clear();
            self.notes.device.clear();
            self.notes.done.clear();
        }
        let mut info = *info;
        info.memory_budget_bytes =
            (info.memory_budget_bytes).map(|b| (b as f64 * self.guard.budget_share) as u64);
        if let (Some(bytes), Some(b)) =
            (info.memory_budget_bytes, &mut self.guard.opts.budget_blocks)
        {
            *b = bytes / outrider_core::BLOCK_SIZE;
        }
        self.policy.on_start(&info);
        self.interests = self.policy.interests();
        self.notes.wants = self.interests;
    }

    /// A demand access and its outcome: the policy decides, its requests
    /// are fetched.
    pub fn access<K: Kernel>(&mut self, k: &mut K, a: &Access, o: &Outcome) {
        self.on_access(k, a, o);
        self.issue(k, a.time_ns);
    }

    /// Feedback the policy asked for; its requests are fetched.
    pub fn feedback<K: Kernel>(&mut self, k: &mut K, f: &Feedback<'_>, now_ns: u64) {
        self.on_feedback(k, f);
        self.issue(k, now_ns);
    }

    /// A demand access: the policy decides; its requests wait for
    /// [`Driver::issue`] (a kernel that orders a whole batch of events'
    /// requests by disk position, as the live one does).
    pub fn on_access<K: Kernel>(&mut self, k: &K, a: &Access, o: &Outcome) {
        let mut sink = Sink::new(&mut self.out, &mut self.next_window, k.residency());
        self.policy.on_access(a, o, &mut sink);
    }

    /// Feedback: the policy decides; its requests wait for
    /// [`Driver::issue`].
    pub fn on_feedback<K: Kernel>(&mut self, k: &K, f: &Feedback<'_>) {
        let mut sink = Sink::new(&mut self.out, &mut self.next_window, k.residency());
        self.policy.on_feedback(f, &mut sink);
    }

    /// A timer tick; returns whether the policy asked for nothing.
    pub fn tick<K: Kernel>(&mut self, k: &mut K, now_ns: u64) -> bool {
        let mut sink = Sink::new(&mut self.out, &mut self.next_window, k.residency());
        self.policy.on_feedback(&Feedback::Tick(now_ns), &mut sink);
        let idle = self.out.is_empty();
        self.issue(k, now_ns);
        idle
    }

    /// Tell the policy the evictions, then the device reads, noted since
    /// last time; what it asks in reply waits for the next issue.
    pub fn settle<K: Kernel>(&mut self, k: &K) {
        let Driver {
            policy,
            out,
            next_window,
            notes,
            ..
        } = self;
        if notes.evicted.is_empty() && notes.device.is_empty() {
            return;
        }
        let mut sink = Sink::new(out, next_window, k.residency());
        for e in &notes.evicted {
            policy.on_feedback(&Feedback::Evicted(e), &mut sink);
        }
        notes.evicted.clear();
        for r in &notes.device {
            policy.on_feedback(&Feedback::DeviceRequest(r), &mut sink);
        }
        notes.device.clear();
    }

    /// Tell the policy the finished prefetches, in order, fetching what it
    /// asks after each (what that completes at once is told after them).
    pub fn deliver_done<K: Kernel>(&mut self, k: &mut K) {
        while let Some(done) = self.notes.done.pop_front() {
            self.feedback(k, &Feedback::PrefetchDone(&done), done.done_ns);
        }
    }

    /// Fetch what the policy asked for: admission control, the budget,
    /// then the kernel; then tell it what the fetches noted.
    // Inlined, with the work apart: most accesses ask for nothing, and the
    // call alone was 1-2% of a simulation (perf, 10 M-request page trace).
    #[inline]
    pub fn issue<K: Kernel>(&mut self, k: &mut K, now_ns: u64) {
        if !self.out.is_empty() {
            self.issue_requests(k, now_ns);
        }
    }

    fn issue_requests<K: Kernel>(&mut self, k: &mut K, now_ns: u64) {
        if self.broken.is_some() {
            self.out.clear();
            return;
        }
        for r in self.out.drain(..) {
            self.stats.requests += 1;
            if !self.guard.admit() {
                self.stats.throttled_requests += 1;
                continue;
            }
            let group = self.policy.schedule_group(r.window);
            self.batch.push(Admitted { req: r, group });
        }
        let room = match self.guard.opts.budget_blocks {
            Some(b) => b.saturating_sub(k.unused_blocks()),
            None => u64::MAX,
        };
        let mut budget = Budget::new(room);
        k.fetch(&self.batch, &mut budget, now_ns, &mut self.notes);
        self.batch.clear();
        self.stats.dropped_budget_blocks += budget.dropped();
        self.settle(k);
    }

    /// Quality control, at most once per interval: write off what stayed
    /// unused past the time to live, then adapt admission to the
    /// interval's use and waste. Returns blocks written off.
    pub fn poll<K: Kernel>(&mut self, k: &mut K, now_ns: u64) -> u64 {
        let iv = self.guard.opts.qc_interval_ns;
        if iv == 0 || now_ns < self.guard.last_qc_ns.saturating_add(iv) {
            return 0;
        }
        self.guard.last_qc_ns = now_ns;
        let written = match self.guard.opts.unused_ttl_ns {
            Some(ttl) => k.write_off(now_ns.saturating_sub(ttl)),
            None => 0,
        };
        self.stats.written_off_blocks += written;
        let c = k.counters();
        let used = c.prefetched_used_blocks - self.guard.last_used;
        let wasted = c.prefetched_unused_blocks - self.guard.last_unused;
        self.guard.last_used = c.prefetched_used_blocks;
        self.guard.last_unused = c.prefetched_unused_blocks;
        self.guard.adapt(used, wasted);
        if self.broken.is_none() {
            self.broken = self.verify(k).err();
        }
        written
    }

    /// Assert the invariants of the crate documentation on `k`'s counters
    /// (and that none broke at an earlier [`Driver::poll`]).
    pub fn check<K: Kernel>(&self, k: &K) {
        if let Err(e) = self.verify(k).and(self.broken.clone().map_or(Ok(()), Err)) {
            panic!("{e}");
        }
    }

    /// The invariants of the crate documentation on `k`'s counters.
    pub fn verify<K: Kernel>(&self, k: &K) -> Result<(), String> {
        let c = k.counters();
        if c.hit_blocks + c.miss_blocks + c.inflight_blocks != c.demand_blocks {
            return Err(format!(
                "every demand block is a hit, a miss or waits on a prefetch: {} + {} + {} != {}",
                c.hit_blocks, c.miss_blocks, c.inflight_blocks, c.demand_blocks
            ));
        }
        let unused = k.unused_blocks();
        let resolved = c.prefetched_used_blocks + c.prefetched_unused_blocks + unused;
        if resolved != c.prefetched_blocks {
            return Err(format!(
                "every prefetched block is used, unused or pending, once: {} + {} + {unused} != {}",
                c.prefetched_used_blocks, c.prefetched_unused_blocks, c.prefetched_blocks
            ));
        }
        match self.guard.opts.budget_blocks {
            Some(b) if unused > b => {
                Err(format!("{unused} unused blocks exceed the budget of {b}"))
            }
            _ => Ok(()),
        }
    }

    /// The first invariant [`Driver::poll`] found broken, if any: from
    /// then on nothing is fetched (a driver whose accounting is wrong
    /// cannot keep its promises; the live runtime turns prefetching off
    /// and says why rather than end the program's supervisor).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }
}

#[cfg(test)]
mod tests;
