//! The [`Policy`] trait: the contract between a prefetching policy and the
//! driver that feeds it (see the crate documentation for the whole
//! contract). Answers go into a [`Sink`]; the driver screens them (nothing
//! already resident, in flight or prefetched and unused is fetched twice)
//! and accounts them per window.

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

/// What a policy wants to hear besides its accesses, declared once per run
/// (the driver asks after every [`Policy::on_start`] and skips the hooks
/// nobody wants: evictions and completions are its hottest paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interests {
    /// [`Feedback::AccessDone`] (default false).
    pub access_done: bool,
    /// [`Feedback::Evicted`] (default true).
    pub evictions: bool,
    /// [`Feedback::PrefetchDone`] (default true).
    pub prefetch_done: bool,
    /// [`Feedback::DeviceRequest`] (default false).
    pub device_requests: bool,
    /// The trace's future in [`RunInfo::oracle`] (default false).
    pub oracle: bool,
    /// [`Feedback::Tick`] every this many ns of driver time (default
    /// `None`: event-driven).
    pub tick_interval_ns: Option<u64>,
    /// What [`Access::lbn`] holds (default [`Positions::Physical`]).
    pub positions: Positions,
}

/// What [`Access::lbn`] holds for a policy: in the simulator always the
/// trace's block; live, a physical block costs a `FIEMAP` of the file, and
/// looking it up for every file means opening every file the program reads
/// (on a tree walker, about half of outrider's CPU per file, measured with
/// `perf`: `open_by_handle_at`, `fstat`, `close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Positions {
    /// The file page: the policy never looks at `lbn`.
    FilePage,
    /// The physical block when the file's extent map is at hand (a file
    /// outrider opened to prefetch, or one registered from history), else
    /// [`crate::NO_LBN`]: never a lookup of its own.
    WhenKnown,
    /// The physical block, looked up for every file (block-level policies:
    /// DiskSeen's block table, OBL).
    Physical,
}

impl Default for Interests {
    fn default() -> Self {
        Interests {
            evictions: true,
            prefetch_done: true,
            ..Interests::ACCESSES_ONLY
        }
    }
}

impl Interests {
    /// Accesses only: no feedback at all.
    pub const ACCESSES_ONLY: Interests = Interests {
        access_done: false,
        evictions: false,
        prefetch_done: false,
        device_requests: false,
        oracle: false,
        tick_interval_ns: None,
        positions: Positions::Physical,
    };

    /// What either of two stacked policies wants (ticks at the shorter
    /// interval).
    pub fn union(self, o: Interests) -> Interests {
        Interests {
            access_done: self.access_done || o.access_done,
            evictions: self.evictions || o.evictions,
            prefetch_done: self.prefetch_done || o.prefetch_done,
            device_requests: self.device_requests || o.device_requests,
            oracle: self.oracle || o.oracle,
            positions: self.positions.max(o.positions),
            tick_interval_ns: match (self.tick_interval_ns, o.tick_interval_ns) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// What the driver tells a policy at the start of a run, in one call.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunInfo<'a> {
    /// Run number, from 1 (`--runs N` in the simulator; a live run is run
    /// 1 of its process).
    pub run: u32,
    /// Only the memory budget changed, mid-run: per-run state is kept
    /// (live: the program moved into a smaller memory cgroup and what was
    /// prefetched beyond its progress was dropped; the start-up cap
    /// lifted).
    pub budget_changed: bool,
    /// The buffer memory the driver manages, in 4 KiB blocks (sim:
    /// `--cache`; live: MemAvailable capped by the program's cgroup).
    /// DiskSeen derives its timestamp gap threshold T from it (1/64 of
    /// buffer memory, §3.3.1).
    pub cache_blocks: u64,
    /// What the driver knows about the device(s) (flashy §IV-C: maximum
    /// throughput).
    pub devices: &'a [DeviceInfo],
    /// The memory prefetched-but-unused data may hold, in bytes, when the
    /// driver bounds it. A policy that paces itself by memory bounds itself
    /// by it and, when it shrinks mid-run, re-requests what it had asked
    /// for beyond the program's progress.
    pub memory_budget_bytes: Option<u64>,
    /// Every access of the trace in trace order (all processes), for a
    /// policy whose [`Interests::oracle`] is set (libprefetch §4.2); times
    /// and sequence numbers are 0.
    pub oracle: Option<&'a [Access]>,
}

/// Feedback from the driver, each kind sent only when the policy's
/// [`Interests`] ask for it.
#[derive(Clone, Copy, Debug)]
pub enum Feedback<'a> {
    /// A demand access completed: every block of it is in memory (for a
    /// hit, right after [`Policy::on_access`]; for a miss, when its last
    /// device read finished). DiskSeen §3.1 records access times here.
    AccessDone(&'a Access),
    /// A prefetch this policy requested finished reading (under a stack
    /// both parts see every completion; ignore windows you did not open).
    PrefetchDone(&'a PrefetchDone),
    /// A block left memory (used or unused).
    Evicted(&'a Eviction),
    /// A read reached the device (a demand miss or a prefetch), reported
    /// when it is submitted (flashy §IV-A's second stream).
    DeviceRequest(&'a DeviceRequest),
    /// Driver time passed [`Interests::tick_interval_ns`] (ns since the run
    /// started).
    Tick(u64),
}

/// A prefetching policy: fifteen methods. See the crate documentation for
/// the contract and the order of calls.
///
/// Policies are `Send` and clonable (through [`Policy::box_clone`]) so that
/// sweeps and comparisons can run copies side by side.
pub trait Policy: Send {
    /// Registered name, as on the command line (`readahead`, `obl`, ...).
    fn name(&self) -> &str;

    /// What the policy wants to hear; asked after every
    /// [`Policy::on_start`]. Default: [`Interests::default`].
    fn interests(&self) -> Interests {
        Interests::default()
    }

    /// A run starts (`info.budget_changed` false: the cache is empty,
    /// learned history is kept, per-run state such as windows and streams
    /// is dropped) or the memory budget changed mid-run (true).
    fn on_start(&mut self, _info: &RunInfo<'_>) {}

    /// A demand access, after the cache looked it up (so the policy knows
    /// hits, prefetched hits and misses).
    fn on_access(&mut self, access: &Access, outcome: &Outcome, sink: &mut Sink<'_>);

    /// Feedback the policy declared an interest in. Default: ignored.
    fn on_feedback(&mut self, _feedback: &Feedback<'_>, _sink: &mut Sink<'_>) {}

    /// A request from the policy stacked above this one (`upper+this`, see
    /// [`crate::policies::stack`]): the lower policy decides what of it to
    /// issue, e.g. DiskSeen §3.2 screens out resident, busy and
    /// previously-wasted blocks. Default: pass it through unchanged.
    fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
        sink.prefetch(request.target, request.blocks, request.window);
    }

    /// The scheduling group of the requests issued for `window` (DiskSeen
    /// §3.7: one group per trail, so a coordinated disk array can serve
    /// one trail at a time); 0 = no group (the default).
    fn schedule_group(&self, _window: WindowId) -> u32 {
        0
    }

    /// Learned history worth keeping across processes (EPCM §6/§7: the
    /// model persists), as an opaque blob the driver stores per
    /// application and policy name (`outrider-store`); `None` (the
    /// default) when the policy learns nothing.
    fn save_history(&self) -> Option<Vec<u8>> {
        None
    }

    /// Replace learned history with a blob from [`Policy::save_history`] of
    /// the same policy. On error the policy must be left as it was (fresh).
    fn load_history(&mut self, _data: &[u8]) -> Result<(), String> {
        Err(format!("policy '{}' keeps no history", self.name()))
    }

    /// The name of history this policy keeps for the whole history store
    /// rather than for one application (DiskSeen §3.1: one block table
    /// for the system, so a trail one program left is followed when any
    /// program reads those blocks, §3.4); `None` (the default) when it
    /// keeps none. Policies of different parameters or stacks that share
    /// the format share the name, and so the history.
    fn shared_history_name(&self) -> Option<&str> {
        None
    }

    /// Replace the shared history with a blob stored under
    /// [`Policy::shared_history_name`]; called after
    /// [`Policy::load_history`]. On error the policy must be left as it
    /// was.
    fn load_shared_history(&mut self, _data: &[u8]) -> Result<(), String> {
        Err(format!("policy '{}' keeps no shared history", self.name()))
    }

    /// What to store as the shared history at the end of the process,
    /// given what the store holds now (`stored`, read in the same
    /// transaction as the write: other processes may have saved since
    /// this one loaded, and their history must stay); `None` (the
    /// default) leaves the store as it is.
    fn merge_shared_history(&self, _stored: Option<&[u8]>) -> Option<Vec<u8>> {
        None
    }

    /// Points of a time series the policy recorded since the current run
    /// started (flashy: application and prefetch throughput and the scale
    /// factor, its Fig. 5). Drivers collect it at the end of each run.
    /// Default: none.
    fn series(&self) -> Vec<SeriesPoint> {
        Vec::new()
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

/// Shorthands for feeding a policy one event outside a driver (unit tests,
/// examples): each builds the [`RunInfo`] or [`Feedback`] and calls the
/// [`Policy`] method. Requests a policy makes from [`PolicyExt::feed_evict`]
/// and [`PolicyExt::feed_device_request`] are dropped.
pub trait PolicyExt: Policy {
    /// [`Policy::on_start`] of run `run`, nothing else known.
    fn start_run(&mut self, run: u32) {
        self.on_start(&RunInfo {
            run,
            ..RunInfo::default()
        });
    }
    /// [`Policy::on_start`] of run 1 with `cache_blocks` of buffer memory.
    fn start_with_cache(&mut self, cache_blocks: u64) {
        self.on_start(&RunInfo {
            run: 1,
            cache_blocks,
            ..RunInfo::default()
        });
    }
    /// [`Policy::on_start`] of run 1 on one described device.
    fn start_with_device(&mut self, device: &DeviceInfo) {
        self.on_start(&RunInfo {
            run: 1,
            devices: std::slice::from_ref(device),
            ..RunInfo::default()
        });
    }
    /// [`Policy::on_start`] of run 1 with the oracle `future`.
    fn start_with_oracle(&mut self, future: &[Access], cache_blocks: u64) {
        self.on_start(&RunInfo {
            run: 1,
            cache_blocks,
            oracle: Some(future),
            ..RunInfo::default()
        });
    }
    /// A mid-run budget change to `bytes`.
    fn feed_budget(&mut self, bytes: u64) {
        self.on_start(&RunInfo {
            budget_changed: true,
            memory_budget_bytes: Some(bytes),
            ..RunInfo::default()
        });
    }
    /// [`Feedback::Evicted`].
    fn feed_evict(&mut self, e: &Eviction) {
        let (mut out, mut next) = (Vec::new(), u64::MAX / 2);
        self.on_feedback(
            &Feedback::Evicted(e),
            &mut Sink::new(&mut out, &mut next, &NoResidency),
        );
    }
    /// [`Feedback::DeviceRequest`].
    fn feed_device_request(&mut self, r: &DeviceRequest) {
        let (mut out, mut next) = (Vec::new(), u64::MAX / 2);
        self.on_feedback(
            &Feedback::DeviceRequest(r),
            &mut Sink::new(&mut out, &mut next, &NoResidency),
        );
    }
    /// [`Feedback::Tick`].
    fn feed_tick(&mut self, now_ns: u64, sink: &mut Sink<'_>) {
        self.on_feedback(&Feedback::Tick(now_ns), sink);
    }
    /// [`Feedback::AccessDone`].
    fn feed_access_done(&mut self, a: &Access, sink: &mut Sink<'_>) {
        self.on_feedback(&Feedback::AccessDone(a), sink);
    }
    /// [`Feedback::PrefetchDone`].
    fn feed_prefetch_done(&mut self, d: &PrefetchDone, sink: &mut Sink<'_>) {
        self.on_feedback(&Feedback::PrefetchDone(d), sink);
    }
    /// [`Interests::tick_interval_ns`].
    fn tick_interval_ns(&self) -> Option<u64> {
        self.interests().tick_interval_ns
    }
}

impl<P: Policy + ?Sized> PolicyExt for P {}
