//! The live controller: runs a core
//! [`Policy`] on the traced program's file accesses with wall-clock time and
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
//! `mm_filemap_fault` is a one-page access; `mm_filemap_map_pages`
//! (fault-around over resident pages) only marks prefetched pages used.
//!
//! # From requests to system calls
//!
//! After each batch of events the requests are translated to file ranges
//! (block targets through the extent map of the files the program touched
//! recently), sorted by physical address (by file and page when unknown),
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
//! # Do no harm (DESIGN.md principle 3)
//!
//! Prefetched pages not used within `unused_ttl_ns` are written off as
//! waste and leave the budget. Every `qc_interval_ns` the controller
//! compares pages used and wasted in the interval: more waste than use
//! halves the share of requests admitted (down to 1/64), use above twice
//! the waste doubles it back (AIMD in the spirit of libprefetch §4 and
//! DiskSeen's quality control §3.5, simplified to one global throttle).

use crate::files::{FileTable, FileTableOptions};
use crate::session::Handler;
use crate::tracefs::{EventKind, LiveEvent};
use outrider_core::metrics::{Counters, Report};
use outrider_core::{
    Access, BoxedPolicy, DeviceInfo, DeviceRequest, Eviction, Feedback, FileId, Interests, Origin,
    Outcome, PrefetchDone, PrefetchRequest, Residency, RunInfo, Sink, Target, WindowId, BLOCK_SIZE,
};
use outrider_sys::{Fetch, Pool};
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
            requests: self.accesses,
            demand_blocks: self.demand_pages,
            hit_blocks: self.demand_pages - self.miss_pages,
            prefetch_served_blocks: self.served_pages,
            miss_blocks: self.miss_pages,
            prefetched_blocks: self.prefetched_pages,
            prefetched_used_blocks: self.used_pages,
            prefetched_unused_blocks: self.wasted_pages,
            lead_time_sum_ns: u128::from(self.lead_time_sum_ns),
            elapsed_ns: (elapsed_s * 1e9) as u64,
            ..Counters::default()
        };
        // The counts add up (DESIGN.md): hits + misses = demand (a page in
        // flight is a miss live: the read waits for it), and no demand page
        // is served twice.
        assert!(c.hit_blocks + c.miss_blocks == c.demand_blocks);
        assert!(c.prefetch_served_blocks <= c.demand_blocks);
        c.report(policy, 1, elapsed_s)
    }
}

/// Most recently accessed files remembered per device for block → file
/// translation.
const RECENT_FILES: usize = 8;
/// How often the program's memory cgroup is looked up again while
/// prefetching (10 ms; always before the first prefetch). A program that
/// moves itself into a cgroup as it starts (cgexec, a wrapper writing
/// `cgroup.procs`, `systemd-run --scope`) does so after outrider's first
/// look: with a 1 s recheck the first second of prefetching was charged
/// outside its limit. A recheck reads only `/proc/PID/cgroup`.
const CGROUP_RECHECK_NS: u64 = 10_000_000;
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
struct Unused<'a>(&'a FxHashMap<(FileId, u64), u64>, &'a FileTable);

impl Residency for Unused<'_> {
    fn is_cached(&self, _dev: u32, _lbn: u64) -> bool {
        false
    }
    fn is_page_cached(&self, file: FileId, page: u64) -> bool {
        self.0.contains_key(&(file, page))
    }
    fn block_of(&self, file: FileId, page: u64) -> Option<(u32, u64)> {
        let (dev, _) = self.1.key_of(file)?;
        let phys = physical_of(self.1.cached_extents(file)?, page * BLOCK_SIZE)?;
        Some((dev as u32, phys / BLOCK_SIZE))
    }
}

/// The controller. Feed it through its [`Handler`] implementation.
pub struct Controller {
    policy: BoxedPolicy,
    opts: ControllerOptions,
    files: FileTable,
    pool: Pool,
    jobs_in_flight: Arc<AtomicUsize>,
    /// Pages prefetched and not yet used → issue time (ns since start;
    /// [`SUBMITTED`] flags a worker's call made).
    unused: FxHashMap<(FileId, u64), u64>,
    /// Per task: (file, page, pages) added to the cache since its last read.
    adds: FxHashMap<u32, Vec<(FileId, u64, u32)>>,
    recent: Vec<FileId>,
    requests: Vec<PrefetchRequest>,
    next_window: u64,
    seq: u64,
    t0_ns: u64,
    last_tick_ns: u64,
    last_qc_ns: u64,
    qc_used: u64,
    qc_wasted: u64,
    admit_shift: u32,
    admit_counter: u64,
    disabled: Option<String>,
    root_pid: u32,
    cgroup_target: Arc<CgroupTarget>,
    last_cgroup_check_ns: u64,
    /// `/proc/<root>/cgroup` as last read.
    last_proc_cgroup: String,
    seen_files: FxHashSet<FileId>,
    /// Block requests whose WILLNEED calls all ran (filled by the workers),
    /// told to the policy as `on_prefetch_done` at the next poll.
    done: Arc<Mutex<Vec<PendingDone>>>,
    /// Block requests that submitted nothing (skipped, dropped): done at
    /// once, told at the next poll.
    done_now: Vec<PendingDone>,
    /// What the policy wants to hear (asked again at the start).
    interests: Interests,
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
    pub stats: LiveStats,
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
        let pool = Pool::new(opts.workers, opts.queue_bound);
        let interests = policy.interests();
        Controller {
            policy,
            files: FileTable::new(FileTableOptions::default()),
            pool,
            jobs_in_flight: Arc::new(AtomicUsize::new(0)),
            unused: FxHashMap::default(),
            adds: FxHashMap::default(),
            recent: Vec::new(),
            requests: Vec::new(),
            next_window: 0,
            seq: 0,
            t0_ns: 0,
            last_tick_ns: 0,
            last_qc_ns: 0,
            qc_used: 0,
            qc_wasted: 0,
            admit_shift: 0,
            admit_counter: 0,
            disabled: None,
            root_pid: 0,
            cgroup_target: Arc::new(CgroupTarget::default()),
            recharge: None,
            settling: false,
            worker_skips: Arc::new(Mutex::new(Vec::new())),
            submitted: Arc::new(Mutex::new(Vec::new())),
            last_cgroup_check_ns: 0,
            last_proc_cgroup: String::new(),
            seen_files: FxHashSet::default(),
            done: Arc::new(Mutex::new(Vec::new())),
            done_now: Vec::new(),
            interests,
            devices: Vec::new(),
            cache_blocks: 0,
            backlog: std::collections::VecDeque::new(),
            ra_caps: FxHashMap::default(),
            opts,
            stats: LiveStats::default(),
        }
    }

    /// Why prefetching was turned off, if it was.
    pub fn disabled(&self) -> Option<&str> {
        self.disabled.as_deref()
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// The policy (for its [`outrider_core::Policy::save_history`]).
    pub fn policy(&self) -> &dyn outrider_core::Policy {
        self.policy.as_ref()
    }

    /// End the I/O workers once what they have queued is done: after the
    /// program finished, before `outrider run` forks its history saver
    /// (a fork must not leave other threads' locks behind).
    pub fn stop_workers(&mut self) {
        self.pool.shutdown();
    }

    /// The policy, to load history into before the run.
    pub fn policy_mut(&mut self) -> &mut BoxedPolicy {
        &mut self.policy
    }

    /// The file table (seed it from history before the run).
    pub fn files_mut(&mut self) -> &mut FileTable {
        &mut self.files
    }

    /// The file table.
    pub fn files(&self) -> &FileTable {
        &self.files
    }

    /// The memory budget in force (it shrinks when the program moves to a
    /// smaller cgroup).
    pub fn budget_bytes(&self) -> u64 {
        self.opts.budget_bytes
    }

    /// Times outrider moved itself into the program's cgroup.
    pub fn cgroup_joins(&self) -> u64 {
        self.cgroup_target.joins.load(Ordering::Relaxed)
    }

    fn rel(&self, ts_ns: u64) -> u64 {
        ts_ns.saturating_sub(self.t0_ns)
    }

    fn note_recent(&mut self, id: FileId) {
        if self.recent.first() == Some(&id) {
            return;
        }
        self.recent.retain(|f| *f != id);
        self.recent.insert(0, id);
        self.recent.truncate(RECENT_FILES);
    }

    fn file_id(&mut self, dev: u64, ino: u64) -> Option<FileId> {
        let id = self.files.id_of(dev, ino)?;
        if self.seen_files.insert(id) {
            self.stats.files += 1;
        }
        Some(id)
    }

    /// Deliver one demand access of `pages` pages from `index`.
    fn access(&mut self, e: &LiveEvent, dev: u64, ino: u64, index: u64, pages: u64) {
        let Some(id) = self.file_id(dev, ino) else {
            return;
        };
        let mut pages = pages.clamp(1, u64::from(u32::MAX));
        // mm_filemap_get_pages reports the read's requested range, not
        // clipped to the file: a 2 KiB file read with a 96 KiB buffer (grep)
        // would count 24 demand pages. Clip to the size known at open.
        // A file known from history (or opened before and since closed)
        // is not reopened for this: its size is known, and opening it
        // again for every read of a replayed history of small files cost
        // more than the replay. The policy's requests for it reopen it.
        let size = match self.files.get(id) {
            Some(f) => Some(f.size),
            None => match self.files.info(id) {
                Some(i) => Some(i.size),
                None => self.files.resolve(id, e.pid).map(|f| f.size),
            },
        };
        if let Some(size) = size {
            let size_pages = size.div_ceil(BLOCK_SIZE);
            if size_pages > index {
                pages = pages.min(size_pages - index);
            }
        }
        let end = index + pages;
        // Misses: this task's adds inside the range; beyond: readahead.
        let mut miss = 0u64;
        let mut missed: Vec<u64> = Vec::new();
        if let Some(list) = self.adds.remove(&e.pid) {
            for (f, p, n) in list {
                if f != id {
                    continue;
                }
                for q in p..p + u64::from(n) {
                    if q >= index && q < end {
                        miss += 1;
                        missed.push(q);
                    } else {
                        self.stats.kernel_readahead_pages += 1;
                    }
                    match self.unused.remove(&(id, q)) {
                        // Read by a worker, then evicted before the
                        // program came: waste, and quality control hears.
                        Some(t) if t & SUBMITTED != 0 => {
                            self.stats.wasted_pages += 1;
                            self.qc_wasted += 1;
                        }
                        // Still queued when the program read it: the
                        // prefetch came too late and reads nothing.
                        Some(_) => {
                            self.stats.prefetched_pages -= 1;
                            self.stats.late_pages += 1;
                        }
                        None => {}
                    }
                }
            }
        }
        let mut used = 0u64;
        let now = self.rel(e.ts_ns);
        if !self.unused.is_empty() {
            for q in index..end {
                if let Some(t) = self.unused.remove(&(id, q)) {
                    used += 1;
                    self.stats.lead_time_sum_ns += now.saturating_sub(t & !SUBMITTED);
                }
            }
        }
        self.stats.used_pages += used;
        self.stats.served_pages += used;
        self.qc_used += used;
        self.stats.accesses += 1;
        self.stats.demand_pages += pages;
        let miss = miss.min(pages);
        self.stats.miss_pages += miss;
        self.note_recent(id);
        // lbn: physical block from the extent map when known (an open
        // file's, or the one a history registered with the file: the same
        // block in both runs, as a block-level policy's history needs).
        let lbn = self
            .extents_of(id)
            .and_then(|ex| physical_of(&ex, index * BLOCK_SIZE))
            .map_or(index, |b| b / BLOCK_SIZE);
        self.seq += 1;
        let access = Access {
            seq: self.seq,
            time_ns: self.rel(e.ts_ns),
            pid: e.pid,
            dev: dev as u32,
            lbn,
            file: id,
            page: index,
            blocks: pages as u32,
            op: outrider_core::Op::Read,
            origin: Origin::Demand,
        };
        let outcome = Outcome {
            hit_blocks: (pages - miss) as u32,
            prefetched_hit_blocks: used.min(pages - miss) as u32,
            inflight_blocks: 0,
            miss_blocks: miss as u32,
        };
        // A file seen for the first time was opened above (resolve)
        // before the policy answers, so its requests can be acted on.
        // A page the program had to bring in was not resident: tell a
        // block-level policy that keeps its own residency model (DiskSeen's
        // block table, §3.1) that the block left memory, as the simulator
        // does at eviction. Without it, blocks read once stay "resident" in
        // the model forever and a second pass (DiskSeen's history, §3.4)
        // finds nothing to prefetch.
        if !missed.is_empty() {
            if let Some(ex) = self.extents_of(id) {
                for q in missed {
                    if let Some(b) = physical_of(&ex, q * BLOCK_SIZE) {
                        self.feed(&Feedback::Evicted(&Eviction {
                            dev: dev as u32,
                            lbn: b / BLOCK_SIZE,
                            prefetched: false,
                            used: false,
                            window: None,
                        }));
                    }
                }
            }
        }
        let residency = Unused(&self.unused, &self.files);
        let mut sink = Sink::new(&mut self.requests, &mut self.next_window, &residency);
        self.policy.on_access(&access, &outcome, &mut sink);
        if self.interests.access_done {
            // mm_filemap_get_pages fires once the read holds its pages, so
            // the access is complete in memory: DiskSeen §3.1 records its
            // timestamps here, as the simulator does at completion.
            self.feed(&Feedback::AccessDone(&access));
        }
    }

    /// The extent map of `id`: computed for an open file, else the one
    /// known without opening it (registered from history).
    fn extents_of(&mut self, id: FileId) -> Option<Arc<Vec<outrider_sys::Extent>>> {
        self.files
            .extents(id)
            .or_else(|| self.files.known_extents(id))
    }

    /// Tell the policy `f`; its requests wait for the next actuation.
    fn feed(&mut self, f: &Feedback<'_>) {
        let residency = Unused(&self.unused, &self.files);
        let mut sink = Sink::new(&mut self.requests, &mut self.next_window, &residency);
        self.policy.on_feedback(f, &mut sink);
    }

    /// Tell the policy its memory budget: at the start (`changed` false)
    /// with everything else it is told then, later when it changed.
    fn tell_budget(&mut self, bytes: u64, changed: bool) {
        self.policy.on_start(&RunInfo {
            run: 1,
            budget_changed: changed,
            cache_blocks: self.cache_blocks,
            devices: &self.devices,
            memory_budget_bytes: Some(bytes),
            oracle: None,
        });
        self.interests = self.policy.interests();
    }

    fn on_event(&mut self, e: &LiveEvent) {
        match e.kind {
            EventKind::GetPages {
                dev,
                ino,
                index,
                last_index,
            } => self.access(e, dev, ino, index, last_index.saturating_sub(index) + 1),
            EventKind::Fault { dev, ino, index } => self.access(e, dev, ino, index, 1),
            EventKind::AddToCache {
                dev,
                ino,
                index,
                order,
            } => {
                if let Some(id) = self.file_id(dev, ino) {
                    let list = self.adds.entry(e.pid).or_default();
                    if list.len() < MAX_PENDING_ADDS {
                        list.push((id, index, 1u32 << order.min(20)));
                    }
                }
            }
            EventKind::MapPages {
                dev,
                ino,
                index,
                last_index,
            } => {
                if let Some(id) = self.file_id(dev, ino) {
                    for q in index..=last_index.min(index + 1024) {
                        if self.unused.remove(&(id, q)).is_some() {
                            self.stats.used_pages += 1;
                            self.qc_used += 1;
                        }
                    }
                }
            }
            EventKind::BlockIssue {
                dev,
                sector,
                nr_sector,
                write: false,
            } if self.interests.device_requests && nr_sector > 0 => {
                self.device_read(e, dev, sector, nr_sector)
            }
            _ => {}
        }
    }

    /// A read the traced tree sent to the device (`block_rq_issue` in one
    /// of its tasks): flashy's second stream (§IV-A, "every I/O request
    /// that actually reaches the disk"). Demand misses and the kernel's
    /// readahead for the program both arrive here, as they reach blktrace
    /// in the paper; outrider's own reads never do: its I/O workers are
    /// not in the traced set (the kernel filters on `set_event_pid`, and
    /// `in_tree` again), so they are told apart by pid as prefetchd does
    /// (§V-A) and reported by the controller itself as
    /// [`Origin::OurPrefetch`] when it submits them. Sectors are 512 bytes
    /// from the start of the device the event names; the policy's blocks
    /// are 4 KiB blocks of the file system's device (the same here when the
    /// file system sits on the whole disk; a partition's offset is not
    /// subtracted).
    fn device_read(&mut self, e: &LiveEvent, dev: u64, sector: u64, nr_sector: u32) {
        let first = sector / 8;
        let end = (sector + u64::from(nr_sector)).div_ceil(8);
        let blocks = (end - first).min(u64::from(u32::MAX)) as u32;
        self.stats.device_reads += 1;
        self.stats.device_read_blocks += u64::from(blocks);
        self.feed(&Feedback::DeviceRequest(&DeviceRequest {
            time_ns: self.rel(e.ts_ns),
            pid: e.pid,
            dev: dev as u32,
            lbn: first,
            blocks,
            origin: Origin::Demand,
            window: None,
        }));
    }

    fn quality_control(&mut self, now_rel_ns: u64) {
        if now_rel_ns < self.last_qc_ns + self.opts.qc_interval_ns {
            return;
        }
        self.last_qc_ns = now_rel_ns;
        // Write off pages unused past the TTL.
        let ttl = self.opts.unused_ttl_ns;
        let before = self.unused.len();
        self.unused
            .retain(|_, t| now_rel_ns.saturating_sub(*t & !SUBMITTED) < ttl);
        let expired = (before - self.unused.len()) as u64;
        self.stats.wasted_pages += expired;
        self.qc_wasted += expired;
        self.sweep_evicted();
        if self.qc_wasted > self.qc_used {
            self.admit_shift = (self.admit_shift + 1).min(6);
        } else if self.qc_used > 2 * self.qc_wasted {
            self.admit_shift = self.admit_shift.saturating_sub(1);
        }
        self.qc_used = 0;
        self.qc_wasted = 0;
        self.recheck_cgroup(now_rel_ns, false);
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
        self.root_pid = root_pid;
        self.t0_ns = t0_ns;
        // flashy §IV-C: the measured maximum throughput of each device.
        self.devices = (self.opts.device_max_read.iter())
            .map(|&(dev, bps)| DeviceInfo {
                dev: Some(dev as u32),
                max_read_bytes_per_s: Some(bps),
            })
            .collect();
        // The buffer memory, as the simulator tells its cache size
        // (DiskSeen's T is 1/64 of it, §3.3.1).
        let cache_bytes = match self.opts.cache_bytes {
            0 => default_cache_bytes(Some(root_pid)),
            b => b,
        };
        self.cache_blocks = cache_bytes / BLOCK_SIZE;
        self.follow_cgroup(root_pid);
        self.begin_settling();
    }

    fn on_events(&mut self, events: &[LiveEvent], in_tree: &[bool]) {
        self.apply_submitted();
        for (e, mine) in events.iter().zip(in_tree) {
            if *mine {
                self.on_event(e);
            }
        }
        let now = events.last().map_or(0, |e| self.rel(e.ts_ns));
        self.actuate(now);
    }

    fn on_poll(&mut self, now_ns: u64) {
        let now = self.rel(now_ns);
        self.end_settling(now);
        self.finish_recharge(now);
        self.apply_worker_skips();
        self.apply_submitted();
        self.deliver_done(now);
        self.drain_backlog();
        if let Some(iv) = self.interests.tick_interval_ns {
            if now >= self.last_tick_ns.saturating_add(iv) {
                self.last_tick_ns = now;
                self.feed(&Feedback::Tick(now));
                self.actuate(now);
            }
        }
        self.quality_control(now);
    }

    fn on_fault(&mut self, why: &str) {
        self.disabled.get_or_insert_with(|| why.to_string());
    }

    fn on_finish(&mut self, _now_ns: u64) {
        // The program is done: what still waits would come too late, and
        // was never prefetched.
        for (id, o, len, _) in std::mem::take(&mut self.backlog) {
            for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                if self.unused.remove(&(id, q)).is_some() {
                    self.stats.prefetched_pages -= 1;
                }
            }
        }
        let _ = self.pool.wait();
        self.apply_worker_skips();
        // What is still unused at exit was never used.
        self.stats.wasted_pages += self.unused.len() as u64;
        self.unused.clear();
    }
}

mod actuate;
mod memory;

#[cfg(test)]
mod tests;
