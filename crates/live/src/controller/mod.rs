//! The live controller: runs a core
//! [`Policy`](outrider_core::Policy) on the traced program's file accesses with wall-clock time and
//! turns its prefetch requests into `posix_fadvise(WILLNEED)` calls.
//!
//! # From events to the policy
//!
//! `mm_filemap_get_pages` is traced at the *end* of the kernel's
//! `filemap_get_pages`, after any readahead it triggered, so the
//! `mm_filemap_add_to_page_cache` events a task emits just before its
//! `get_pages` are the pages that read brought in: those inside the read's
//! range are its misses, those beyond it the kernel's own readahead. Every
//! other page of the range was a hit. A page outrider prefetched and the
//! program then reads is a prefetched hit (and counts as *used*); one the
//! program has to bring in again was evicted before use (*wasted*).
//! `mm_filemap_fault` is a one-page access (a page fault fault-around could
//! not serve); `mm_filemap_map_pages` (fault-around mapping resident pages
//! around a fault) is told to the policy as an `Origin::Mapped` access that
//! hit (not counted as demand: see `Live::mapped`).
//!
//! # From requests to system calls
//!
//! After each batch of events the requests are translated to file ranges
//! (block targets through the extent maps of every file the program
//! touched), sorted by physical address (by file and page when unknown),
//! clipped to the file size, screened (pages already prefetched and unused
//! are skipped; a range `cachestat(2)` reports fully resident is skipped)
//! and queued to the I/O pool in chunks no larger than the device's
//! readahead cap. Bounds: the memory budget (prefetched-but-unused pages
//! never exceed `budget_bytes`), the pool's queue (`queue_bound` jobs in
//! flight, a job being up to 64 small chunks; more wait in a backlog of at
//! most `backlog_bound` chunks, drained in order at every poll, and beyond
//! that are dropped) and the unused-page
//! table (its size is the budget). A backlogged chunk names its file by id
//! and is reopened when it runs, so a replay of thousands of files does not
//! hold thousands of descriptors.
//!
//! # History
//!
//! What a policy learns it saves itself ([`outrider_core::Policy::save_history`]);
//! the files the program touched are saved beside it (`crate::history`),
//! and files registered from history ([`FileTable::seed`]) are reopened by
//! handle or path when a request names them.
//!
//! # One driver
//!
//! The policy runs in an [`outrider_driver::Driver`], the same one the
//! simulator runs: it owns admission control, the memory budget, the
//! write-off of pages unused past `unused_ttl_ns` and quality control
//! every `qc_interval_ns` ([`GuardOptions::live`]). The live kernel behind
//! it (`Live`, the [`Kernel`]) decodes the events, translates and screens
//! requests, and runs the I/O workers.

use crate::files::{FileTable, FileTableOptions};
use crate::session::Handler;
use crate::tracefs::{EventKind, LiveEvent};
use outrider_core::metrics::{Counters, Report};
use outrider_core::{
    Access, BoxedPolicy, DeviceInfo, DeviceRequest, Eviction, Feedback, FileId, Origin, Outcome,
    Positions, PrefetchDone, PrefetchRequest, Residency, RunInfo, Target, WindowId, BLOCK_SIZE,
    NO_LBN,
};
use outrider_driver::{Driver, GuardOptions, Kernel};
use outrider_sys::{Fetch, Pool};
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Longest wait for events between two polls of an idle controller: the
/// cgroup recheck, quality control and write-off run at most this late.
const IDLE_WAIT_MAX: std::time::Duration = std::time::Duration::from_millis(20);

/// Controller settings; every default is documented on its field.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// Most prefetched-but-unused bytes (default: set by the caller from
    /// MemAvailable and the cgroup, see [`default_budget_bytes`]).
    pub budget_bytes: u64,
    /// I/O worker threads (default 2).
    pub workers: usize,
    /// Jobs queued or running at most; requests beyond are dropped
    /// (default 64).
    pub queue_bound: usize,
    /// Prefetched pages unused for this long are written off (default
    /// 30 s).
    pub unused_ttl_ns: u64,
    /// Quality-control interval (default 200 ms).
    pub qc_interval_ns: u64,
    /// Skip ranges `cachestat` reports fully resident (default true).
    pub skip_cached: bool,
    /// Chunk cap in bytes (default 0: the device's readahead cap).
    pub chunk_bytes: u64,
    /// Chunks waiting for a free slot of the I/O queue at most (default
    /// 65536); beyond, requests are dropped.
    pub backlog_bound: usize,
    /// When the program turns out to live in a memory cgroup of its own,
    /// the budget is capped at this fraction of the room that cgroup leaves
    /// to the page cache (default 0.25).
    pub cgroup_fraction: f64,
    /// Measured maximum read throughput (bytes/s) per device (user-space
    /// `dev_t`), told to the policy through `on_start`'s devices at the start
    /// (flashy §IV-C; `outrider run` fills it from `outrider calibrate`'s
    /// store). Default empty: unknown.
    pub device_max_read: Vec<(u64, u64)>,
    /// Buffer memory told to the policy at the start through
    /// `on_start`'s `cache_blocks`, in bytes (DiskSeen §3.3.1 derives T = 1/64 of it).
    /// Default 0: the page cache the program can use, MemAvailable capped
    /// by the room its memory cgroup leaves ([`default_cache_bytes`]).
    pub cache_bytes: u64,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            budget_bytes: 1 << 30,
            workers: 2,
            queue_bound: 64,
            unused_ttl_ns: 30_000_000_000,
            qc_interval_ns: 200_000_000,
            skip_cached: true,
            chunk_bytes: 0,
            backlog_bound: 1 << 16,
            cgroup_fraction: 0.25,
            device_max_read: Vec::new(),
            cache_bytes: 0,
        }
    }
}

/// Can `policy` run live? A policy that needs the future of the access
/// list (an oracle, [`outrider_core::Interests::oracle`]: libprefetch's
/// application-directed prefetching, §4.2) cannot: a traced program does
/// not tell it. The error says where such a policy works instead.
pub fn check_live(policy: &dyn outrider_core::Policy) -> Result<(), String> {
    if policy.interests().oracle {
        return Err(format!(
            "policy '{}' needs the program's future accesses (an oracle), which a traced \
             program does not give: have the application announce them through liboutrider \
             (C API: include/outrider.h; Python: python/outrider_directed.py), or replay a \
             recorded trace with `outrider sim --policy {}`",
            policy.name(),
            policy.name()
        ));
    }
    Ok(())
}

/// The buffer memory a program can use: MemAvailable, at most the room the
/// memory cgroup of `pid` leaves to the page cache (the same sources as
/// [`default_budget_bytes`], without its fraction).
pub fn default_cache_bytes(pid: Option<u32>) -> u64 {
    let mut bytes = outrider_sys::mem_available_bytes().unwrap_or(1 << 30);
    if let Ok(Some(cg)) = outrider_sys::cgroup_memory(pid) {
        if let Some(room) = cg.cache_room_bytes() {
            bytes = bytes.min(room);
        }
    }
    bytes.max(BLOCK_SIZE * 64)
}

/// The default budget: `fraction` of MemAvailable, and at most that
/// fraction of the room the cgroup of `pid` leaves to the page cache.
pub fn default_budget_bytes(pid: Option<u32>, fraction: f64) -> u64 {
    let avail = outrider_sys::mem_available_bytes().unwrap_or(1 << 30);
    let mut budget = (avail as f64 * fraction) as u64;
    if let Ok(Some(cg)) = outrider_sys::cgroup_memory(pid) {
        if let Some(room) = cg.cache_room_bytes() {
            budget = budget.min((room as f64 * fraction) as u64);
        }
    }
    budget.max(BLOCK_SIZE * 64)
}

/// Counters of a live run (the summary `outrider run` prints).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveStats {
    /// Demand accesses seen (reads and faults of the tree).
    pub accesses: u64,
    /// Pages those accesses covered.
    pub demand_pages: u64,
    /// Of them, pages the program had to bring in (misses).
    pub miss_pages: u64,
    /// Pages the kernel's own readahead brought in for the program.
    pub kernel_readahead_pages: u64,
    /// Requests the policy made.
    pub requests: u64,
    /// Pages submitted for prefetching (WILLNEED issued).
    pub prefetched_pages: u64,
    /// Prefetched pages the program then read.
    pub used_pages: u64,
    /// Prefetched pages evicted before use or unused past the TTL, plus
    /// those still unused at exit.
    pub wasted_pages: u64,
    /// Demand pages served by a prefetch: prefetched pages a read or a
    /// fault then used (fault-around over resident pages is not demand, so
    /// the pages it maps count in `used_pages` only).
    pub served_pages: u64,
    /// Sum over `served_pages` of the time from the prefetch's queueing to
    /// the read that used it (ns).
    pub lead_time_sum_ns: u64,
    /// Requested pages skipped: already resident (cachestat) or already
    /// prefetched.
    pub skipped_cached_pages: u64,
    /// Requested pages dropped by the memory budget.
    pub dropped_budget_pages: u64,
    /// Requested pages dropped because the I/O queue and its backlog were
    /// full.
    pub dropped_queue_pages: u64,
    /// Most chunks waiting for the I/O queue at once.
    pub peak_backlog_chunks: u64,
    /// Requests not admitted by quality control.
    pub throttled_requests: u64,
    /// Requests whose file could not be opened or block not translated.
    pub untranslated_requests: u64,
    /// Files seen.
    pub files: u64,
    /// Peak prefetched-but-unused bytes.
    pub peak_unused_bytes: u64,
    /// Device reads of the traced tree (`block_rq_issue`) given to a
    /// policy that reads the device stream (flashy §IV-A).
    pub device_reads: u64,
    /// Blocks (4 KiB) of those reads.
    pub device_read_blocks: u64,
    /// Prefetched, still unused pages dropped again when outrider followed
    /// the program into its memory cgroup: they were charged to the cgroup
    /// outrider was in before, outside the program's limit (also counted
    /// as wasted; what the policy asks for again is fetched under the
    /// program's cgroup).
    pub recharged_pages: u64,
    /// Pages requested but still queued when the program read them itself
    /// (too late: not counted as prefetched, nor as waste for quality
    /// control — only pages a worker read and the kernel evicted before
    /// use are).
    pub late_pages: u64,
    /// Prefetched pages found evicted before use by the sweep that runs
    /// when unused pages hold more than half the budget (also waste).
    pub evicted_unused_pages: u64,
}

impl LiveStats {
    /// The metrics of DESIGN.md from these counts, defined once
    /// ([`outrider_core::metrics`]): a page is a block. The device's wait
    /// time and windows are not measured live (0).
    pub fn report(&self, policy: &str, elapsed_s: f64) -> Report {
        let c = Counters {
            elapsed_ns: (elapsed_s * 1e9) as u64,
            ..self.counters()
        };
        // The counts add up (DESIGN.md): hits + misses = demand (a page in
        // flight is a miss live: the read waits for it), and no demand page
        // is served twice.
        assert!(c.hit_blocks + c.miss_blocks == c.demand_blocks);
        assert!(c.prefetch_served_blocks <= c.demand_blocks);
        c.report(policy, 1, elapsed_s)
    }

    /// These counts as the driver's [`Counters`].
    pub fn counters(&self) -> Counters {
        Counters {
            requests: self.accesses,
            demand_blocks: self.demand_pages,
            hit_blocks: self.demand_pages - self.miss_pages,
            prefetch_served_blocks: self.served_pages,
            miss_blocks: self.miss_pages,
            prefetched_blocks: self.prefetched_pages,
            prefetched_used_blocks: self.used_pages,
            prefetched_unused_blocks: self.wasted_pages,
            lead_time_sum_ns: u128::from(self.lead_time_sum_ns),
            ..Counters::default()
        }
    }
}

/// How often the program's memory cgroup is looked up again after its
/// first second (100 ms). A program that moves itself into a cgroup as it
/// starts (cgexec, a wrapper writing `cgroup.procs`, `systemd-run
/// --scope`) does so after outrider's first look: with a 1 s recheck the
/// first second of prefetching was charged outside its limit, so the first
/// second looks before every batch ([`EARLY_CGROUP_NS`]). A recheck reads
/// `/proc/PID/cgroup`: 40 µs here (`perf`, a tree walk with cgroup v1),
/// a tenth of outrider's CPU on `tar` when it was every 10 ms and before
/// every batch of requests the kernel's cache already held.
const CGROUP_RECHECK_NS: u64 = 100_000_000;
/// Before the first page is fetched (requests so far all found cached),
/// the cgroup is looked up again at most this often (10 ms).
const FIRST_FETCH_CGROUP_NS: u64 = 10_000_000;
/// After a partial batch of events, how long more gather when nothing
/// is being fetched (4 ms; 1 ms while fetching, [`crate::session::IDLE_SLEEP`]).
/// On `tar` over a source tree a 1 ms wait was a fifth of outrider's CPU
/// in wake-ups and reads of partly filled tracing pages (`perf`).
const QUIET_BATCH_WAIT: std::time::Duration = std::time::Duration::from_millis(4);
/// Pages queued for fetching within this long (50 ms) keep batches quick.
const BUSY_NS: u64 = 50_000_000;
/// Ranges of at most this many pages that cachestat finds partly evicted
/// are looked at page by page.
const SWEEP_PAGE_BY_PAGE: u64 = 64;
/// Until this long after the start the cgroup is looked up before every
/// batch (1 s).
const EARLY_CGROUP_NS: u64 = 1_000_000_000;
/// After a cgroup join, the pages prefetched before it are dropped once at
/// the join (after the workers finished their calls) and once more this
/// long after, when the reads those calls started have completed (a page
/// still being read cannot be dropped): 20 ms. No prefetching meanwhile.
const RECHARGE_SETTLE_NS: u64 = 20_000_000;
/// Most add-to-cache events remembered per task between two reads.
const MAX_PENDING_ADDS: usize = 4096;
/// Most pages one I/O job carries (several small chunks; a chunk larger
/// than this is a job of its own): 1 MiB.
const JOB_PAGES: u64 = 256;
/// Most chunks one I/O job carries.
const JOB_CHUNKS: usize = 64;

/// What the policy may ask while deciding: pages outrider prefetched and
/// not yet used count as cached; `block_of` answers from the extent maps
/// already computed (files the program touched).
impl Residency for Live {
    fn is_cached(&self, _dev: u32, _lbn: u64) -> bool {
        false
    }
    fn is_page_cached(&self, file: FileId, page: u64) -> bool {
        self.unused.contains_key(&(file, page))
    }
    fn block_of(&self, file: FileId, page: u64) -> Option<(u32, u64)> {
        let (dev, _) = self.files.key_of(file)?;
        let phys = physical_of(self.files.cached_extents(file)?, page * BLOCK_SIZE)?;
        Some((dev as u32, phys / BLOCK_SIZE))
    }
}

/// The driver as the live runtime runs it.
type LiveDriver = Driver<BoxedPolicy>;

/// The controller: a policy's [`Driver`] and the live kernel under it.
/// Feed it through its [`Handler`] implementation.
pub struct Controller {
    driver: LiveDriver,
    k: Live,
}

/// The live kernel (see the module documentation).
pub(crate) struct Live {
    opts: ControllerOptions,
    files: FileTable,
    pool: Pool,
    jobs_in_flight: Arc<AtomicUsize>,
    /// Pages prefetched and not yet used → issue time (ns since start;
    /// [`SUBMITTED`] flags a worker's call made).
    unused: FxHashMap<(FileId, u64), u64>,
    /// Per task: (file, page, pages) added to the cache since its last read.
    adds: FxHashMap<u32, Vec<(FileId, u64, u32)>>,
    /// End of file in pages, learned from the kernel's readahead, of files
    /// left unopened (see `Live::clip`).
    eof_pages: FxHashMap<FileId, u64>,
    /// Per device: the kernel's largest readahead window in pages (`None`:
    /// unknown).
    ra_window: FxHashMap<u64, Option<u64>>,
    /// Block → file translation: every extent of the files the program
    /// touched, by (device, physical start): (file, logical start,
    /// length), in bytes.
    phys_map: std::collections::BTreeMap<(u32, u64), (FileId, u64, u64)>,
    /// Files whose extents are in `phys_map`.
    mapped: FxHashSet<FileId>,
    seq: u64,
    t0_ns: u64,
    last_tick_ns: u64,
    disabled: Option<String>,
    root_pid: u32,
    cgroup_target: Arc<CgroupTarget>,
    last_cgroup_check_ns: u64,
    /// When pages were last queued for the workers (ns since the start).
    last_issue_ns: u64,
    /// `/proc/<root>/cgroup` as last read.
    last_proc_cgroup: String,
    seen_files: FxHashSet<FileId>,
    /// Block requests whose WILLNEED calls all ran (filled by the workers),
    /// told to the policy as `on_prefetch_done` at the next poll.
    done: Arc<Mutex<Vec<PendingDone>>>,
    /// A budget the policy has still to be told: (bytes, mid-run).
    pending_budget: Option<(u64, bool)>,
    /// [`Self::stats`] as the driver's counters (refreshed by `sync`).
    counters: Counters,
    /// What the policy was told at the start: the devices' throughput and
    /// the buffer memory in blocks (told again with every budget change).
    devices: Vec<DeviceInfo>,
    cache_blocks: u64,
    /// Chunks waiting for room in the I/O queue (bounded), each with the
    /// done tracker of the block request it belongs to.
    backlog: std::collections::VecDeque<(FileId, u64, u64, Option<Tracker>)>,
    ra_caps: FxHashMap<u64, u64>,
    /// Since a cgroup join: the ranges prefetched before it, (file, first
    /// page, pages), to drop a second time at the given time.
    recharge: Option<(Vec<PageRange>, u64)>,
    /// The start-up cap on the policy's budget is still on (see
    /// [`memory::CGROUP_SETTLE_NS`]).
    settling: bool,
    /// Chunks a worker did not read: (file, offset, length, resident)
    /// — resident already (cachestat), or the file could not be opened
    /// unchanged. Taken back out of the unused set at the next poll.
    worker_skips: Arc<Mutex<Vec<WorkerSkip>>>,
    /// Chunks whose WILLNEED call a worker made: (file, offset, length).
    /// Their pages are flagged [`SUBMITTED`] at the next poll or batch.
    submitted: Arc<Mutex<Vec<(FileId, u64, u64)>>>,
    /// Counters.
    stats: LiveStats,
}

/// (file, first page, pages).
type PageRange = (FileId, u64, u64);

/// Flag in an unused page's issue time: a worker made its WILLNEED call.
const SUBMITTED: u64 = 1 << 63;

/// A chunk a worker did not read: (file, offset, length, resident).
type WorkerSkip = (FileId, u64, u64, bool);

/// Where a job's chunk is read from: a descriptor the table holds, or a
/// file the worker opens itself (a replayed history's files are many and
/// small; opening each in the controller's thread cost more than the
/// reads).
enum Src {
    Open(FileId, Arc<OwnedFd>),
    Spec(FileId, Arc<crate::files::OpenSpec>),
}

/// A block prefetch request whose submission finished: (window, dev, lbn,
/// blocks, issue time).
type PendingDone = (WindowId, u32, u64, u32, u64);

/// Chunks of a block request still to be read, and its done record.
type Tracker = Arc<(AtomicUsize, PendingDone)>;

/// One chunk of a block request was read (or given up): the last one
/// queues the request's done record for the next poll.
fn chunk_done(t: &Tracker, done: &Mutex<Vec<PendingDone>>) {
    if t.0.fetch_sub(1, Ordering::AcqRel) == 1 {
        done.lock().expect("not poisoned").push(t.1);
    }
}

/// Where prefetching is charged: the traced program's memory cgroup.
/// The kernel charges page cache to the memory cgroup of
/// the reading thread's `mm->owner` — the process, not the thread (measured
/// here on cgroup v1: moving only the worker threads to the program's
/// cgroup charged nothing there) — so outrider moves its whole process
/// (`cgroup.procs`) into the program's memory cgroup when they differ.
#[derive(Debug, Default)]
pub struct CgroupTarget {
    path: std::sync::Mutex<Option<(u8, std::path::PathBuf)>>,
    /// Times outrider moved itself.
    pub joins: AtomicU64,
}

impl Controller {
    /// A controller running `policy`.
    pub fn new(policy: BoxedPolicy, opts: ControllerOptions) -> Self {
        let guard = GuardOptions {
            qc_interval_ns: opts.qc_interval_ns,
            unused_ttl_ns: Some(opts.unused_ttl_ns),
            ..GuardOptions::live(opts.budget_bytes / BLOCK_SIZE)
        };
        Controller {
            driver: Driver::new(policy, guard),
            k: Live::new(opts),
        }
    }

    /// Why prefetching was turned off, if it was.
    pub fn disabled(&self) -> Option<&str> {
        self.k.disabled.as_deref()
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.driver.policy().name()
    }

    /// The policy (for its [`outrider_core::Policy::save_history`]).
    pub fn policy(&self) -> &dyn outrider_core::Policy {
        self.driver.policy()
    }

    /// End the I/O workers once what they have queued is done: after the
    /// program finished, before `outrider run` forks its history saver
    /// (a fork must not leave other threads' locks behind).
    pub fn stop_workers(&mut self) {
        self.k.pool.shutdown();
    }

    /// The policy, to load history into before the run.
    pub fn policy_mut(&mut self) -> &mut dyn outrider_core::Policy {
        self.driver.policy_mut()
    }

    /// The file table (seed it from history before the run).
    pub fn files_mut(&mut self) -> &mut FileTable {
        &mut self.k.files
    }

    /// The file table.
    pub fn files(&self) -> &FileTable {
        &self.k.files
    }

    /// The memory budget in force (it shrinks when the program moves to a
    /// smaller cgroup).
    pub fn budget_bytes(&self) -> u64 {
        self.k.opts.budget_bytes
    }

    /// Times outrider moved itself into the program's cgroup.
    pub fn cgroup_joins(&self) -> u64 {
        self.k.cgroup_target.joins.load(Ordering::Relaxed)
    }

    /// The counters of the run, with the driver's decisions (requests,
    /// throttled, dropped by the budget).
    pub fn stats(&self) -> LiveStats {
        let g = self.driver.stats();
        let mut s = self.k.stats.clone();
        s.requests += g.requests;
        s.throttled_requests += g.throttled_requests;
        s.dropped_budget_pages += g.dropped_budget_blocks;
        s
    }

    /// Limit prefetching from the start on, as `gate` decided for this
    /// application ([`outrider_driver::benefit`]).
    pub fn limit(&mut self, gate: &outrider_driver::benefit::Gate) {
        let (share, shift) = gate.limits();
        self.driver.limit(share, shift);
    }

    /// Tell the policy the budget the kernel side set, if it changed.
    fn tell_budget(&mut self) {
        let Some((bytes, changed)) = self.k.pending_budget.take() else {
            return;
        };
        self.driver.start(&RunInfo {
            run: 1,
            budget_changed: changed,
            cache_blocks: self.k.cache_blocks,
            devices: &self.k.devices,
            memory_budget_bytes: Some(bytes),
            oracle: None,
        });
    }

    /// Fetch what the policy asked for; then tell it a new budget, if
    /// fetching set one (a cgroup join).
    fn issue(&mut self, now_rel_ns: u64) {
        self.driver.issue(&mut self.k, now_rel_ns);
        self.tell_budget();
    }
}

impl Live {
    fn new(opts: ControllerOptions) -> Self {
        Live {
            files: FileTable::new(FileTableOptions::default()),
            pool: Pool::new(opts.workers, opts.queue_bound),
            jobs_in_flight: Arc::new(AtomicUsize::new(0)),
            unused: FxHashMap::default(),
            adds: FxHashMap::default(),
            eof_pages: FxHashMap::default(),
            ra_window: FxHashMap::default(),
            phys_map: std::collections::BTreeMap::new(),
            mapped: FxHashSet::default(),
            seq: 0,
            t0_ns: 0,
            last_tick_ns: 0,
            disabled: None,
            root_pid: 0,
            cgroup_target: Arc::new(CgroupTarget::default()),
            recharge: None,
            settling: false,
            worker_skips: Arc::new(Mutex::new(Vec::new())),
            submitted: Arc::new(Mutex::new(Vec::new())),
            last_cgroup_check_ns: 0,
            last_issue_ns: 0,
            last_proc_cgroup: String::new(),
            seen_files: FxHashSet::default(),
            done: Arc::new(Mutex::new(Vec::new())),
            pending_budget: None,
            counters: Counters::default(),
            devices: Vec::new(),
            cache_blocks: 0,
            backlog: std::collections::VecDeque::new(),
            ra_caps: FxHashMap::default(),
            opts,
            stats: LiveStats::default(),
        }
    }

    /// Refresh [`Kernel::counters`] from the stats.
    fn sync(&mut self) {
        self.counters = self.stats.counters();
    }

    /// Write off the pages unused since before `issued_before_ns`, and
    /// those the kernel already evicted (the sweep); returns how many.
    fn write_off_unused(&mut self, issued_before_ns: u64) -> u64 {
        let before = self.unused.len();
        self.unused
            .retain(|_, t| *t & !SUBMITTED >= issued_before_ns);
        let expired = (before - self.unused.len()) as u64;
        self.stats.wasted_pages += expired;
        let swept = self.sweep_evicted();
        self.sync();
        expired + swept
    }
}

impl Kernel for Live {
    fn residency(&self) -> &dyn Residency {
        self
    }
    fn fetch(
        &mut self,
        batch: &[outrider_driver::Admitted],
        budget: &mut outrider_driver::Budget,
        now_ns: u64,
        notes: &mut outrider_driver::Notes,
    ) {
        self.actuate(batch, budget, now_ns, notes);
        self.sync();
    }
    fn unused_blocks(&self) -> u64 {
        self.unused.len() as u64
    }
    fn write_off(&mut self, issued_before_ns: u64) -> u64 {
        self.write_off_unused(issued_before_ns)
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// `pages` as sorted, maximal runs of consecutive pages of a file.
fn page_ranges(mut pages: Vec<(FileId, u64)>) -> Vec<PageRange> {
    pages.sort_unstable();
    let mut ranges: Vec<PageRange> = Vec::new();
    for (id, q) in pages {
        match ranges.last_mut() {
            Some((f, p, n)) if *f == id && *p + *n == q => *n += 1,
            _ => ranges.push((id, q, 1)),
        }
    }
    ranges
}

/// Physical byte address of file byte `off` through an extent list.
fn physical_of(ex: &[outrider_sys::Extent], off: u64) -> Option<u64> {
    let i = ex.partition_point(|x| x.logical + x.length <= off);
    ex.get(i).and_then(|x| x.physical_of(off))
}

impl Handler for Controller {
    fn on_start(&mut self, root_pid: u32, t0_ns: u64) {
        let k = &mut self.k;
        k.root_pid = root_pid;
        k.t0_ns = t0_ns;
        // flashy §IV-C: the measured maximum throughput of each device.
        k.devices = (k.opts.device_max_read.iter())
            .map(|&(dev, bps)| DeviceInfo {
                dev: Some(dev as u32),
                max_read_bytes_per_s: Some(bps),
            })
            .collect();
        // The buffer memory, as the simulator tells its cache size
        // (DiskSeen's T is 1/64 of it, §3.3.1).
        let cache_bytes = match k.opts.cache_bytes {
            0 => default_cache_bytes(Some(root_pid)),
            b => b,
        };
        k.cache_blocks = cache_bytes / BLOCK_SIZE;
        k.follow_cgroup(root_pid);
        k.begin_settling();
        self.tell_budget();
    }

    fn on_events(&mut self, events: &[LiveEvent], in_tree: &[bool]) {
        self.k.apply_submitted();
        for (e, mine) in events.iter().zip(in_tree) {
            if *mine {
                self.k.on_event(&mut self.driver, e);
            }
        }
        let now = events.last().map_or(0, |e| self.k.rel(e.ts_ns));
        self.issue(now);
    }

    fn on_poll(&mut self, now_ns: u64) {
        let now = self.k.rel(now_ns);
        self.k.end_settling(now);
        self.k.finish_recharge(now);
        self.tell_budget();
        self.k.apply_worker_skips();
        self.k.apply_submitted();
        self.k.collect_done(&mut self.driver.notes, now);
        self.driver.deliver_done(&mut self.k);
        self.k.drain_backlog();
        if let Some(iv) = self.driver.interests().tick_interval_ns {
            if now >= self.k.last_tick_ns.saturating_add(iv) {
                self.k.last_tick_ns = now;
                self.driver.tick(&mut self.k, now);
            }
        }
        self.k.sync();
        self.driver.poll(&mut self.k, now);
        if let (Some(e), None) = (self.driver.broken(), &self.k.disabled) {
            let why = format!("outrider's accounting is inconsistent ({e})");
            outrider_sys::warnln!("outrider: warning: {why}; prefetching turned off");
            self.k.disabled = Some(why);
        }
        self.k.recheck_cgroup(now, CGROUP_RECHECK_NS);
        self.tell_budget();
    }

    fn on_fault(&mut self, why: &str) {
        self.k.disabled.get_or_insert_with(|| why.to_string());
    }

    /// Fetches queued or running: poll as often as before (their
    /// completions and the backlog are handled in [`Handler::on_poll`]);
    /// otherwise until the policy's next tick, at most [`IDLE_WAIT_MAX`].
    fn idle_wait(&self) -> std::time::Duration {
        if !self.k.backlog.is_empty() || self.k.jobs_in_flight.load(Ordering::Acquire) > 0 {
            return crate::session::IDLE_SLEEP;
        }
        let tick = self.driver.interests().tick_interval_ns.unwrap_or(u64::MAX);
        std::time::Duration::from_nanos(tick).min(IDLE_WAIT_MAX)
    }

    /// Quick while fetches are queued or running or the policy asked for
    /// some lately ([`BUSY_NS`]), so its next requests follow the reads
    /// that prompt them; otherwise [`QUIET_BATCH_WAIT`].
    fn batch_wait(&self) -> std::time::Duration {
        let now = self.k.rel(outrider_sys::files::monotonic_ns());
        let busy = !self.k.backlog.is_empty()
            || self.k.jobs_in_flight.load(Ordering::Acquire) > 0
            || now < self.k.last_issue_ns.saturating_add(BUSY_NS);
        if busy {
            crate::session::IDLE_SLEEP
        } else {
            QUIET_BATCH_WAIT
        }
    }

    fn on_finish(&mut self, _now_ns: u64) {
        let k = &mut self.k;
        // The program is done: what still waits would come too late, and
        // was never prefetched.
        for (id, o, len, _) in std::mem::take(&mut k.backlog) {
            for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                if k.unused.remove(&(id, q)).is_some() {
                    k.stats.prefetched_pages -= 1;
                }
            }
        }
        let _ = k.pool.wait();
        k.apply_worker_skips();
        k.apply_submitted();
        k.sync();
        let before = self.driver.verify(&self.k);
        let k = &mut self.k;
        // What is still unused at exit was never used.
        k.stats.wasted_pages += k.unused.len() as u64;
        k.unused.clear();
        k.sync();
        // A broken invariant turns prefetching off (and is reported as
        // such) instead of ending outrider while the program runs.
        if let Some(e) = (before.and(self.driver.verify(&self.k)).err())
            .or(self.driver.broken().map(str::to_string))
        {
            let _ = self
                .k
                .disabled
                .get_or_insert(format!("outrider's accounting is inconsistent ({e})"));
        }
    }
}

mod actuate;
mod events;
mod memory;

#[cfg(test)]
mod tests;
