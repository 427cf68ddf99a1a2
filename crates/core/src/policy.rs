//! The [`Policy`] trait: the contract between a prefetching policy and the
//! driver (simulator or live runtime) that feeds it.
//!
//! Hooks, in the order a driver calls them for one request:
//! 1. [`Policy::on_access`] after the cache looked the request up (so the
//!    policy knows hits, prefetched hits and misses);
//! 2. [`Policy::on_access_done`] when that request has completed;
//! 3. [`Policy::on_prefetch_done`] whenever a prefetch the policy asked for
//!    completes;
//! 4. [`Policy::on_evict`] when a block leaves memory (used or unused);
//! 5. [`Policy::on_tick`] every [`Policy::tick_interval_ns`] of driver time,
//!    for time-driven policies (flashy's polling interval).
//!
//! Two more observation hooks: [`Policy::on_device_request`] for every read
//! that reaches the device (demand misses and prefetches, flashy §IV-A's
//! second stream) and [`Policy::on_device_info`] at the start of each run
//! (the device's maximum throughput, flashy §IV-C). A policy may expose a
//! time series of its own state through [`Policy::series`].
//!
//! Answers go into a [`Sink`]; the driver screens them (nothing already
//! resident or in flight is fetched twice) and accounts them per window.

use crate::event::{
    Access, DeviceInfo, DeviceRequest, FileId, Outcome, PrefetchDone, PrefetchRequest, Target,
    WindowId,
};

/// Read-only view of what is in memory, answered by the driver.
pub trait Residency {
    /// Is block `lbn` of device `dev` resident or being read?
    fn is_cached(&self, dev: u32, lbn: u64) -> bool;
    /// Is page `page` of `file` resident or being read? ([`FileId::RAW`]
    /// pages are device blocks.)
    fn is_page_cached(&self, file: FileId, page: u64) -> bool;
    /// Where page `page` of `file` lives on disk, as `(dev, lbn)`, when the
    /// driver knows (sim: the layout model; live: the FIEMAP extent map).
    /// Block-level policies use it to screen file-level requests.
    fn block_of(&self, _file: FileId, _page: u64) -> Option<(u32, u64)> {
        None
    }
}

/// A [`Residency`] that knows nothing (everything is absent).
pub struct NoResidency;

impl Residency for NoResidency {
    fn is_cached(&self, _dev: u32, _lbn: u64) -> bool {
        false
    }
    fn is_page_cached(&self, _file: FileId, _page: u64) -> bool {
        false
    }
}

/// Where a policy puts its prefetch requests, plus what it may ask the
/// driver while deciding.
pub struct Sink<'a> {
    out: &'a mut Vec<PrefetchRequest>,
    next_window: &'a mut u64,
    residency: &'a dyn Residency,
}

impl<'a> Sink<'a> {
    /// A sink appending to `out`, allocating window ids from `next_window`.
    pub fn new(
        out: &'a mut Vec<PrefetchRequest>,
        next_window: &'a mut u64,
        residency: &'a dyn Residency,
    ) -> Self {
        Sink {
            out,
            next_window,
            residency,
        }
    }

    /// A fresh window id, unique within this driver.
    pub fn new_window(&mut self) -> WindowId {
        *self.next_window += 1;
        WindowId(*self.next_window)
    }

    /// Ask for `blocks` blocks at `target`, accounted to `window`.
    /// Zero-length requests are ignored.
    pub fn prefetch(&mut self, target: Target, blocks: u32, window: WindowId) {
        if blocks > 0 {
            self.out.push(PrefetchRequest {
                target,
                blocks,
                window,
            });
        }
    }

    /// Is this block resident or in flight?
    pub fn is_cached(&self, dev: u32, lbn: u64) -> bool {
        self.residency.is_cached(dev, lbn)
    }

    /// Is this page of a file resident or in flight?
    pub fn is_page_cached(&self, file: FileId, page: u64) -> bool {
        self.residency.is_page_cached(file, page)
    }

    /// Where page `page` of `file` lives on disk, if the driver knows.
    pub fn block_of(&self, file: FileId, page: u64) -> Option<(u32, u64)> {
        self.residency.block_of(file, page)
    }

    /// Requests pushed so far (for stacking operators that screen them).
    pub fn requests(&self) -> &[PrefetchRequest] {
        self.out
    }

    /// A sink sharing this one's window ids and residency view but
    /// collecting requests into `out` (the stack operator gathers the upper
    /// policy's requests this way before the lower policy screens them).
    pub fn redirect<'b>(&'b mut self, out: &'b mut Vec<PrefetchRequest>) -> Sink<'b> {
        Sink {
            out,
            next_window: &mut *self.next_window,
            residency: self.residency,
        }
    }
}

/// A block left memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// Device number.
    pub dev: u32,
    /// Block number.
    pub lbn: u64,
    /// It had been brought in by a prefetch (ours).
    pub prefetched: bool,
    /// It was used by a demand access while resident.
    pub used: bool,
    /// Window of the prefetch that brought it, if any.
    pub window: Option<WindowId>,
}

/// A prefetching policy. See the module documentation for the hook order.
///
/// Policies are `Send` and clonable (through [`Policy::box_clone`]) so that
/// sweeps and comparisons can run copies side by side.
pub trait Policy: Send {
    /// Registered name, as on the command line (`readahead`, `obl`, ...).
    fn name(&self) -> &str;

    /// A demand access, after the cache lookup.
    fn on_access(&mut self, access: &Access, outcome: &Outcome, sink: &mut Sink<'_>);

    /// A demand access completed: every block of it is in memory (for a
    /// hit, right after [`Policy::on_access`]; for a miss, when its last
    /// device read finished). DiskSeen §3.1 records access times here.
    fn on_access_done(&mut self, _access: &Access, _sink: &mut Sink<'_>) {}

    /// Does this policy use [`Policy::on_access_done`]? Drivers skip the
    /// call otherwise (it is on the per-request hot path). Default: no.
    fn wants_access_done(&self) -> bool {
        false
    }

    /// A request from the policy stacked above this one (`upper+this`, see
    /// [`crate::policies::stack`]): the lower policy decides what of it to
    /// issue, e.g. DiskSeen §3.2 screens out resident, busy and
    /// previously-wasted blocks. Default: pass it through unchanged.
    fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
        sink.prefetch(request.target, request.blocks, request.window);
    }

    /// A prefetch this policy requested finished reading. (Under a stack
    /// both policies see every completion; ignore windows you did not open.)
    fn on_prefetch_done(&mut self, _done: &PrefetchDone, _sink: &mut Sink<'_>) {}

    /// A block left memory.
    fn on_evict(&mut self, _eviction: &Eviction) {}

    /// Does this policy use [`Policy::on_evict`]? A driver may skip the
    /// call for policies that answer false (it is made for every eviction,
    /// the simulator's hottest path). Default: true.
    fn wants_evictions(&self) -> bool {
        true
    }

    /// Does this policy use [`Policy::on_prefetch_done`]? A driver may skip
    /// the call for policies that answer false. Default: true.
    fn wants_prefetch_done(&self) -> bool {
        true
    }

    /// A read reached the device (a demand miss or a prefetch), reported
    /// when it is submitted. Observation only: a policy answers at its next
    /// access or tick. Default: ignored.
    fn on_device_request(&mut self, _req: &DeviceRequest) {}

    /// Does this policy use [`Policy::on_device_request`]? Drivers skip
    /// building the device stream otherwise. Default: no.
    fn wants_device_requests(&self) -> bool {
        false
    }

    /// What the driver knows about the device(s), told after
    /// [`Policy::on_run_start`] of every run. Default: ignored.
    fn on_device_info(&mut self, _info: &DeviceInfo) {}

    /// The buffer memory the driver manages, in 4 KiB blocks (sim:
    /// `--cache`), told after [`Policy::on_run_start`] of every run.
    /// DiskSeen derives its timestamp gap threshold T from it (1/64 of
    /// buffer memory, §3.3.1). Default: ignored.
    fn on_cache_info(&mut self, _cache_blocks: u64) {}

    /// The memory the live driver lets prefetched-but-unused data hold, in
    /// bytes: told at the start and again whenever it changes (it shrinks
    /// when the program moves into a smaller memory cgroup, and what was
    /// prefetched before the move was dropped again so it can be fetched
    /// anew under the program's cgroup). A policy that paces itself by
    /// memory bounds itself by it and re-requests what it had asked for
    /// beyond the program's progress. Not told by the simulator. Default:
    /// ignored.
    fn on_memory_budget(&mut self, _bytes: u64) {}

    /// Points of a time series the policy recorded since the current run
    /// started (flashy: application and prefetch throughput and the scale
    /// factor, its Fig. 5). Drivers collect it at the end of each run.
    /// Default: none.
    fn series(&self) -> Vec<SeriesPoint> {
        Vec::new()
    }

    /// Time tick, every [`Policy::tick_interval_ns`].
    fn on_tick(&mut self, _now_ns: u64, _sink: &mut Sink<'_>) {}

    /// Interval between [`Policy::on_tick`] calls, or `None` for
    /// event-driven policies (the default).
    fn tick_interval_ns(&self) -> Option<u64> {
        None
    }

    /// A new run starts with an empty cache (`--runs N`); learned history is
    /// kept, per-run state (windows, streams) should be dropped.
    fn on_run_start(&mut self, _run: u32) {}

    /// Does this policy need the future (an oracle access list, libprefetch
    /// §4.2)? If so the simulator calls [`Policy::on_oracle`] at the start
    /// of every run. Default: no.
    fn wants_oracle(&self) -> bool {
        false
    }

    /// Every access of the trace, in trace order (all processes), and the
    /// cache capacity in blocks; called after [`Policy::on_run_start`] when
    /// [`Policy::wants_oracle`] says so. Default: ignored.
    fn on_oracle(&mut self, _future: &[Access], _cache_blocks: u64) {}

    /// The scheduling group of the requests issued for `window` (DiskSeen
    /// §3.7: one group per trail, so a coordinated disk array can serve
    /// one trail at a time); 0 = no group (the default).
    fn schedule_group(&self, _window: WindowId) -> u32 {
        0
    }

    /// Learned history worth keeping across processes (EPCM §6/§7: the
    /// model persists), as an opaque blob the driver stores (the CLI's
    /// `--history DB`, `outrider-store`); `None` (the default) when the
    /// policy keeps nothing.
    fn save_history(&self) -> Option<Vec<u8>> {
        None
    }

    /// Replace learned history with a blob from [`Policy::save_history`] of
    /// the same policy. On error the policy must be left as it was (fresh).
    fn load_history(&mut self, _data: &[u8]) -> Result<(), String> {
        Err(format!("policy '{}' keeps no history", self.name()))
    }

    /// Bytes of policy state, for memory reports.
    fn memory_bytes(&self) -> usize {
        0
    }

    /// A boxed copy with the same state.
    fn box_clone(&self) -> BoxedPolicy;
}

/// One point of a policy's time series: named values at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoint {
    /// Driver time of the point (ns).
    pub time_ns: u64,
    /// Named values, in a fixed order per policy (units in the names).
    pub values: Vec<(&'static str, f64)>,
}

impl serde::Serialize for SeriesPoint {
    /// As a flat JSON object: `{"t_s": 0.5, "NAME": VALUE, ...}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.values.len() + 1))?;
        m.serialize_entry("t_s", &(self.time_ns as f64 * 1e-9))?;
        for (k, v) in &self.values {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// An owned, dynamically dispatched policy.
pub type BoxedPolicy = Box<dyn Policy>;

impl Clone for BoxedPolicy {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}
