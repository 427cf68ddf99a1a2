//! Replaying a launch set: [`replay`] verifies its files, then asks for
//! its pages one reorder buffer at a time, each in physical order, within
//! an in-flight bound and the byte budget, stopping at memory pressure
//! or the launcher's exit; ahead of a launch, in the disk's idle time.

use super::evidence::{probes, spread, LaunchReads, Verdict, MISS_SHARE, OTHERS_QUIET_NS};
use super::idle::{IdleClass, IdleDisks};
use super::{around, PAGE};
use outrider_core::FileId;
use outrider_live::ebpf::Untracker;
use outrider_live::files::{FileTable, FileTableOptions};
use outrider_live::history;
use outrider_live::metawalk::{self, MetaWalk, WalkStats};
use outrider_store::{AccessRecord, AppHistory};
use outrider_sys::launch::Credentials;
use outrider_sys::Fetch;
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod confirm;
mod launcher;
mod plan;
pub use confirm::{data_files, DATA_MIN_PAGES};
use launcher::Launcher;
pub use launcher::{EventsRead, Holders, HOLDERS_MAX};
use plan::within;
pub(super) use plan::{batches, merged_ranges};
pub use plan::{runs_from_start, sequential_files, uncovered, READAHEAD_PAGES};

/// What one replay did.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReplayStats {
    /// Files verified unchanged.
    pub files_kept: u64,
    /// Files changed, replaced or deleted since they were recorded.
    pub files_dropped: u64,
    /// Pages asked for (WILLNEED).
    pub pages_requested: u64,
    /// Pages not asked for: over the budget, or of dropped files.
    pub pages_skipped: u64,
    /// Memory pressure stopped the replay (or kept it from starting).
    pub stopped_by_pressure: bool,
    /// The launching process exited before the replay ended: the rest
    /// was not asked for.
    pub stopped_at_exit: bool,
    /// A replay ahead of its launch found the disk busy for half a
    /// second in all: the rest was not asked for.
    pub stopped_busy: bool,
    /// A replay ahead of its launch stopped as the launch started
    /// ([`ReplayOptions::launched`]): its own replay took over.
    pub stopped_launched: bool,
    /// Its launch was judged to read from memory while it ran
    /// ([`LaunchReads::judge_hot`]), and its own requests had found their
    /// pages there (`asked_from_memory`): the rest was not asked for. (A set
    /// with a page or two evicted fails its probes; `rg` over a tree in
    /// memory, its set of 31 500 files, then had every file opened by
    /// handle and its tree walked, 0.37 s of the daemon's CPU, until it
    /// exited.)
    pub stopped_hot: bool,
    /// Pages of files the launch read sequentially, left to the kernel's
    /// readahead ([`sequential_files`]).
    pub pages_left_to_readahead: u64,
    /// Pages of the set's data files, not asked for as the launch was not
    /// seen to read the first page of one of them ([`data_files`]).
    pub pages_unconfirmed: u64,
    /// Seconds from the exec ([`ReplayOptions::exec_ns`]) to the
    /// replay's start, to the files of its first reorder buffer
    /// verified, to its first request and to its end (0 when it never
    /// got there).
    pub started_s: f64,
    /// See [`ReplayStats::started_s`].
    pub verified_s: f64,
    /// See [`ReplayStats::started_s`].
    pub first_request_s: f64,
    /// See [`ReplayStats::started_s`].
    pub done_s: f64,
    /// Seconds from the exec to the metadata walk's start (0: none),
    /// before the first request or after it ([`WALK_FIRST_DIRS`]).
    pub walk_started_s: f64,
    /// Directories the metadata walk beside the replay listed
    /// ([`ReplayOptions::walk_dirs`]).
    pub dirs_walked: u64,
    /// Files the walk looked up (`fstatat`) in them.
    pub files_walked: u64,
    /// The set was found in memory before any of it was asked for
    /// ([`RESIDENT_PROBES`](super::RESIDENT_PROBES)): not asked for, counted as skipped.
    pub rest_resident: bool,
    /// Pages the look for the set in memory read without waiting
    /// ([`RESIDENT_PROBES`](super::RESIDENT_PROBES)), and those of them
    /// not there.
    pub probe_pages: u64,
    /// See [`ReplayStats::probe_pages`].
    pub probe_pages_missing: u64,
    /// Pages of the set left to the replay of a launch around this one
    /// ([`ReplayOptions::covered`]).
    pub pages_covered: u64,
}

impl ReplayStats {
    /// Was the rest of the set not to be asked for (memory pressure, the
    /// launcher's exit, a busy disk, its launch started or judged hot)?
    fn stopped(&self) -> bool {
        self.stopped_by_pressure
            || self.stopped_at_exit
            || self.stopped_busy
            || self.stopped_launched
            || self.stopped_hot
    }

    /// Did it leave some of its set unasked for: stopped, or over the
    /// budget, dropped, unconfirmed?
    fn short_of_set(&self) -> bool {
        self.stopped() || self.pages_skipped > 0 || self.pages_unconfirmed > 0
    }
}

/// How a replay may go.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Bytes it may ask for at most.
    pub budget_bytes: u64,
    /// The launching user when not root (see [`replay`]).
    pub user: Option<Credentials>,
    /// Memory pressure (PSI `some`, percent of wall time) above which it
    /// does not start, or stops (see [`Backoff`]).
    pub pressure_max_pct: f64,
    /// The launching process: once it exited, and each of `holders`,
    /// the rest of its set is not asked for (it could only compete with
    /// the programs after it).
    pub launcher: Option<u32>,
    /// The launches whose pages this replay covers (their
    /// [`ReplayOptions::covered`] holds its set), each keeping it going
    /// until it exits; closed when it stops short of its set.
    pub holders: Arc<Holders>,
    /// When the launch exec'd (CLOCK_MONOTONIC ns), the origin of the
    /// replay's times; 0: its own start.
    pub exec_ns: u64,
    /// The program has not started yet (a predicted next launch): files
    /// it reads from start to end are asked for too, where a running
    /// program's own reads leave them to the kernel's readahead; 1 MiB
    /// at a time, each piece once the disk is idle, in the idle I/O
    /// class (the module `idle`).
    pub ahead: bool,
    /// Set by the daemon when the launch a replay ahead reads for starts:
    /// the replay stops, its launch's own replay asks for the set. Left
    /// going, a predicted `rg`'s set, asked for after `find`'s own in the
    /// day in miniature, was still being verified in the disk's idle
    /// moments while `rg` ran and its own replay verified the same 31 516
    /// files: 14% of the daemon's CPU in `rg`'s run (perf).
    pub launched: Arc<std::sync::atomic::AtomicBool>,
    /// Each mapped file no larger than half its disk's read-around window
    /// is asked for whole at its first access, as the kernel reads it at
    /// the launch's first fault in it (the module `around`, with what it
    /// cost); `false`: the pages recorded, as libprefetch and FAST
    /// replay.
    pub read_around: bool,
    /// The pages of the set's data files ([`data_files`]) are asked for
    /// only once the launch read the first recorded page of one of them;
    /// `false`: at once, as FAST and IORap replay a set. Not ahead of a
    /// launch, nor at boot (no launcher).
    pub confirm_data: bool,
    /// The directories the launch opened, in that order: listed, and the
    /// set's files looked up in them, on threads of their own beside the
    /// replay ([`outrider_live::metawalk`], as `outrider run` walks a
    /// history's), until the launcher exits. Not ahead of a launch.
    pub walk_dirs: Arc<Vec<PathBuf>>,
    /// When one of the daemon's replays last read from storage
    /// (CLOCK_MONOTONIC ns; 0: none has): a set is looked for in memory
    /// ([`RESIDENT_PROBES`](super::RESIDENT_PROBES)) only [`OTHERS_QUIET_NS`] after, as pages
    /// another replay asked for may be in the cache still on their way.
    pub storage_read_ns: Arc<AtomicU64>,
    /// What its launch read so far, kept by the daemon: a set is looked
    /// for in memory only once the launch's own reads came from there.
    pub launch_reads: Arc<LaunchReads>,
    /// Whether this replay found its set in memory, once it looked
    /// (before it asks for any of it).
    pub found_resident: Arc<Verdict>,
    /// Then the launcher's threads are no longer followed, from this
    /// thread: the daemon's main thread, at nice 19 beside a launch that
    /// keeps every core busy, came to it 7-121 ms after the exec (`rg`
    /// over a tree in memory, five runs), and the launch's records until
    /// then cost it in its own context.
    pub stop_following: Option<(Arc<Untracker>, u32)>,
    /// The sets the launches around this one replay ([`uncovered`]):
    /// their pages are left to those replays, and their walks walk its
    /// directories. Empty: none.
    pub covered: Vec<Arc<AppHistory>>,
}

/// Pages asked for between two looks at whether the launcher exited.
pub const EXIT_EVERY_PAGES: u64 = 256;

/// Pages asked for between two looks at the memory pressure.
pub const PRESSURE_EVERY_PAGES: u64 = 1024;

/// Backing off under memory pressure (PSI, `/proc/pressure/memory`): a
/// replay does not start while tasks waited on memory more than
/// `max_pct` of the last 10 s, and stops at once (checked every
/// [`PRESSURE_EVERY_PAGES`] pages) when, since it started, they waited
/// more than `max_pct` of its time (at least 1 ms): prefetched pages
/// that evict pages in use cost more than they save. Without PSI, no
/// back-off.
pub struct Backoff {
    max_pct: f64,
    start: Option<(outrider_sys::MemoryPressure, u64)>,
}

impl Backoff {
    /// `None` when the pressure is already too high.
    pub fn start(max_pct: f64) -> Option<Backoff> {
        let now = outrider_sys::memory_pressure();
        if now.is_some_and(|p| p.some_avg10 > max_pct) {
            return None;
        }
        Some(Backoff {
            max_pct,
            start: now.map(|p| (p, outrider_sys::monotonic_ns())),
        })
    }

    /// Has pressure built up since the start?
    pub fn pressed(&self) -> bool {
        let (Some((p0, t0)), Some(p)) = (self.start, outrider_sys::memory_pressure()) else {
            return false;
        };
        let waited_us = p.some_total_us.saturating_sub(p0.some_total_us);
        let wall_us = outrider_sys::monotonic_ns().saturating_sub(t0) / 1000;
        waited_us >= 1000 && waited_us as f64 > wall_us as f64 * self.max_pct / 100.0
    }
}

/// Replay `h`: ask the kernel for its pages, one reorder buffer of the
/// first-touch order at a time, each in physical order; at most
/// `o.budget_bytes`, backing off under memory pressure ([`Backoff`]).
/// Runs in the calling thread. For a launch by a user other than root,
/// `o.user` is that process's identity: a file of the set
/// is replayed only if that user can open it by its path (the set may
/// hold another user's launch of the same executable); the others count
/// as dropped.
pub fn replay(h: &AppHistory, o: &ReplayOptions) -> ReplayStats {
    let origin = if o.exec_ns > 0 {
        o.exec_ns
    } else {
        outrider_sys::monotonic_ns()
    };
    let since = || outrider_sys::monotonic_ns().saturating_sub(origin) as f64 / 1e9;
    let started_s = since();
    let (left, covered) = uncovered(h, &o.covered);
    let h = left.as_ref().unwrap_or(h);
    let (mut walk, mut walk_started_s) = (None, 0.0);
    let read_before = outrider_sys::thread_bytes_read();
    let mut st = replay_from(h, o, &since, &mut || {
        walk = start_walk(h, o);
        walk_started_s = if walk.is_some() { since() } else { 0.0 };
    });
    st.walk_started_s = walk_started_s;
    st.pages_covered = covered;
    let read = outrider_sys::thread_bytes_read() - read_before;
    let from_memory = asked_from_memory(read, st.pages_requested);
    if let Some(w) = walk {
        let hot = || from_memory && o.launch_reads.judged_hot();
        let walked = end_walk(w, &Launcher::new(o.launcher, &o.holders), &hot);
        st.dirs_walked = walked.dirs;
        st.files_walked = walked.stats;
    }
    st.started_s = started_s;
    st.done_s = since();
    if st.short_of_set() {
        o.holders.close();
    }
    st
}

/// The metadata walk of a replay at its launch ([`ReplayOptions::walk_dirs`]),
/// if the launch opened at least [`WALK_DIRS_MIN`] directories and no
/// launch around it replays (whose walk covers its directories).
fn start_walk(h: &AppHistory, o: &ReplayOptions) -> Option<MetaWalk> {
    if o.ahead || o.walk_dirs.len() < WALK_DIRS_MIN || !o.covered.is_empty() {
        return None;
    }
    // Files in id order: the order the launch first touched them.
    let files = metawalk::walk_order(h.files.iter().map(|f| Path::new(&f.path)));
    MetaWalk::start_as(o.walk_dirs.to_vec(), files, o.user.clone())
}

/// Let walk `w` go on until it is done, `launcher` exits (the walk
/// could then only compete with the programs after it) or its launch
/// reads from memory (`hot`: the walk could then find nothing to read);
/// what it did.
fn end_walk(w: MetaWalk, launcher: &Launcher, hot: &dyn Fn() -> bool) -> WalkStats {
    while !w.is_finished() && !launcher.exited() && !hot() {
        std::thread::sleep(WALK_LOOK);
    }
    w.finish()
}

/// Did a replay's requests of `pages` pages find them in memory: its
/// thread read `bytes` from storage, at most one page in [`MISS_SHARE`]
/// of them? Its launch judged to read from memory (at most that share
/// missed) is then what it looks like; a replay that read its launch's
/// pages before the launch did makes the launch look so too, and goes
/// on (`rg`'s cold launch, its 256 MiB set asked for ahead of it, reads
/// its first 64 MiB from memory).
pub(super) fn asked_from_memory(bytes: u64, pages: u64) -> bool {
    bytes / PAGE * MISS_SHARE <= pages
}

/// Directories a launch opened for its next replay to walk them: fewer
/// are the odd directory a short program lists (`make --version`,
/// `seq`, `basename`: one each), whose listing it does itself as fast.
/// `python3 -c pass` opens 14 (its module search path) and ran at 1.20x
/// of stock walked against 1.12x not (medians of 9, `/tmp` A/B); tree
/// walkers open hundreds (`git status` 235, `find` 5 103). The noise of
/// such an A/B: `sqlite3`, which opens none, measured 1.32x and 1.20x
/// in its two arms.
pub const WALK_DIRS_MIN: usize = 4;

/// Directories a launch opened from which its replay starts their walk
/// before its first request; fewer, it starts the walk once its first
/// reorder buffer is asked for. A short walk is what the program does
/// itself as fast, and its lookups, ahead of the first request, delayed
/// it: `python3 -c pass` (14 directories) had its first request 9-11 ms
/// after its exec with the walk (5 ms in the one launch without it),
/// and ran at 1.12x, 1.13x and 1.10x of stock with the walk after the
/// first request against 1.01x, 1.04x and 0.96x before it (three
/// sittings, medians of 9, 9 and 11, alternated). A long walk is what a
/// tree walker waits on: `git status` (235) ran at 1.25x with it first
/// against 1.09x after, and `python3` importing pandas (373) 1.18x
/// against 1.13x (medians of 9 and 11). No launch between 14 and 235
/// was measured; 64 lies between.
pub const WALK_FIRST_DIRS: usize = 64;

/// How often a replay done before its walk looks whether the walk or the
/// launcher ended.
const WALK_LOOK: std::time::Duration = std::time::Duration::from_millis(2);

/// [`replay`], its times but the start and end taken by `since`; `walk`
/// starts its metadata walk unless the set is found in memory: before the
/// first request, or after it for a walk of fewer than [`WALK_FIRST_DIRS`].
fn replay_from(
    h: &AppHistory,
    o: &ReplayOptions,
    since: &dyn Fn() -> f64,
    walk: &mut dyn FnMut(),
) -> ReplayStats {
    let _idle_class = o.ahead.then(IdleClass::enter);
    let Some(backoff) = Backoff::start(o.pressure_max_pct) else {
        o.found_resident.set(false);
        return ReplayStats {
            stopped_by_pressure: true,
            pages_skipped: h.accesses.iter().map(|a| u64::from(a.pages)).sum(),
            ..ReplayStats::default()
        };
    };
    // First-touch order, one reorder buffer at a time, each in physical
    // order (libprefetch §3.5, as `auto` replays): the pages a launch
    // needs first are asked for first. The first buffer's files are
    // verified before the others: verifying every file first (each a
    // cold inode and extent read) held the first request of `vim` and
    // `go version` back 3-12 ms, while the program read its own pages.
    // The others are verified together, right after: verifying each
    // buffer's files just before it queued their inode reads behind the
    // buffer before (`g++`'s 213 headers: 0.8x of stock, from 0.97x).
    // For another user each buffer's files are registered just before
    // its requests, as each is checked then (an open as the user):
    // checked at once, `rg`'s 31 572 files held every request past its
    // first buffer until the whole check was done, 0.56-0.62 s cold on
    // an idle machine, longer at nice 19 beside `rg`'s own threads.
    let mut r = Replayer {
        user: o.user.clone(),
        tables: Vec::new(),
        table_of: FxHashMap::default(),
        // Found after the look in memory, which has no use for them.
        readahead: FxHashSet::default(),
        held_files: FxHashMap::default(),
        pending: Vec::new(),
        in_order: FxHashSet::default(),
        launcher: Launcher::new(o.launcher, &o.holders),
        backoff,
        budget: o.budget_bytes / PAGE,
        next_look: PRESSURE_EVERY_PAGES,
        next_exit: 0,
        inflight: std::collections::VecDeque::new(),
        inflight_pages: 0,
        inflight_max: if o.ahead {
            AHEAD_INFLIGHT_PAGES
        } else {
            INFLIGHT_PAGES
        },
        idle: o.ahead.then(|| IdleDisks::new(Arc::clone(&o.launched))),
        st: ReplayStats::default(),
        reads: Reads {
            start: outrider_sys::thread_bytes_read(),
            seen: outrider_sys::thread_bytes_read(),
            shared: Arc::clone(&o.storage_read_ns),
        },
        launch_reads: Arc::clone(&o.launch_reads),
    };
    let mut windows = around::Windows::default();
    let accesses = if o.read_around {
        around::widened(h, |dev| windows.pages(dev))
    } else {
        std::borrow::Cow::Borrowed(h.accesses.as_slice())
    };
    let accesses = &accesses[..within(&accesses, r.budget)];
    let batches = batches(accesses);
    let first = batches.first().copied().unwrap_or_default();
    let in_memory = r.in_memory(h, (first, &accesses[first.len()..]), o);
    o.found_resident.set(in_memory);
    if in_memory {
        r.st.rest_resident = true;
        if let Some((u, pid)) = &o.stop_following {
            u.untrack_threads_of(*pid);
        }
        r.st.pages_skipped += accesses.iter().map(|a| u64::from(a.pages)).sum::<u64>();
        return r.st;
    }
    if !o.ahead {
        let mapped = h.files.iter().filter(|f| f.mapped).map(|f| f.id).collect();
        let runs = runs_from_start(&h.accesses, &mapped);
        r.readahead = sequential_files(&runs);
        if o.confirm_data && o.launcher.is_some() {
            r.held_files = data_files(&h.accesses, &mapped);
            r.in_order = (runs.into_keys())
                .filter(|f| r.held_files.contains_key(f))
                .collect();
        }
    }
    let mut walked = o.walk_dirs.len() >= WALK_FIRST_DIRS;
    if walked {
        walk();
    }
    for (i, b) in batches.iter().copied().enumerate() {
        if r.stopped() {
            r.st.pages_skipped += b.iter().map(|a| u64::from(a.pages)).sum::<u64>();
            continue;
        }
        match (i, &r.user) {
            (0, _) | (_, Some(_)) => r.restore(h, b),
            (1, None) => r.restore(h, accesses),
            _ => {}
        }
        if i == 0 {
            r.st.verified_s = since();
        }
        r.fetch(b, since);
        if !walked {
            walked = true;
            walk();
        }
        r.fetch_confirmed(since);
        r.reads.note();
    }
    if !walked {
        walk();
    }
    r.wait_confirmed(since);
    r.st
}

/// Ahead of a launch, may the replay go on reading from device `dev`
/// (once it is idle)? If not, `st` says why: the disk stayed busy, or
/// the launch started.
fn go_on(idle: &mut IdleDisks, st: &mut ReplayStats, dev: u64) -> bool {
    if idle.wait(dev) {
        return true;
    }
    if idle.launched() {
        st.stopped_launched = true;
    } else {
        st.stopped_busy = true;
    }
    false
}

/// What a replay read from storage, noted for the others
/// ([`ReplayOptions::storage_read_ns`]).
struct Reads {
    /// Its thread's bytes read from storage when it started.
    start: u64,
    /// Its thread's bytes read from storage when it last looked.
    seen: u64,
    shared: Arc<AtomicU64>,
}

std::thread_local! {
    /// When a replay on this thread last noted a read from storage.
    static NOTED_HERE_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Reads {
    /// Did its requests so far, `pages` of them, find their pages in
    /// memory ([`asked_from_memory`])?
    fn found_in_memory(&self, pages: u64) -> bool {
        asked_from_memory(outrider_sys::thread_bytes_read() - self.start, pages)
    }

    fn note(&mut self) {
        let read = outrider_sys::thread_bytes_read();
        if read > self.seen {
            self.seen = read;
            let now = outrider_sys::monotonic_ns();
            NOTED_HERE_NS.set(now);
            (self.shared).store(now, Ordering::Relaxed);
        }
    }

    /// Has no replay on another thread read from storage for
    /// [`OTHERS_QUIET_NS`]? The replays of one launch run one after the
    /// other on one thread (its own, then its successors'): one that
    /// ended is not reading beside the next, and pages it asked for
    /// that are still on their way are missing to the probes
    /// (`RWF_NOWAIT`). Counting it, the predicted `rg`'s set was read
    /// ahead whole after a successor's 9 pages from storage.
    fn others_quiet(&self) -> bool {
        let last = self.shared.load(Ordering::Relaxed);
        let quiet = outrider_sys::monotonic_ns().saturating_sub(last) >= OTHERS_QUIET_NS;
        quiet || last == 0 || last == NOTED_HERE_NS.get()
    }
}

/// One replay under way: its files (those of the first reorder buffer
/// in one table, the rest in another), its budget and checks.
struct Replayer {
    user: Option<Credentials>,
    tables: Vec<FileTable>,
    /// The table each verified file is in.
    table_of: FxHashMap<u32, usize>,
    readahead: FxHashSet<u32>,
    /// The data files, each with its first recorded page
    /// ([`data_files`]), until the launch is seen to read one.
    held_files: FxHashMap<u32, u64>,
    /// Their ranges, held back until then: (file, first page, pages).
    pending: Vec<(u32, u64, u64)>,
    /// Those of them the set read from start to end in one run: the one
    /// the launch is seen reading is left to the kernel's readahead.
    in_order: FxHashSet<u32>,
    launcher: Launcher,
    backoff: Backoff,
    budget: u64,
    next_look: u64,
    next_exit: u64,
    /// Ranges asked for whose last page may not have arrived yet: (file,
    /// last page, pages), oldest first ([`INFLIGHT_PAGES`]).
    inflight: std::collections::VecDeque<(u32, u64, u64)>,
    inflight_pages: u64,
    /// [`INFLIGHT_PAGES`], or [`AHEAD_INFLIGHT_PAGES`] ahead of a launch.
    inflight_max: u64,
    /// Ahead of a launch: each piece waits for an idle disk.
    idle: Option<IdleDisks>,
    st: ReplayStats,
    reads: Reads,
    /// Its launch's reads, and whether the daemon judged it hot.
    launch_reads: Arc<LaunchReads>,
}

impl Replayer {
    /// Has the launcher exited, and the launches it covers?
    fn launcher_exited(&self) -> bool {
        self.launcher.exited()
    }

    /// Is the rest of the set not to be asked for (memory pressure, the
    /// launcher's exit, a busy disk, its launch started or judged hot)?
    fn stopped(&self) -> bool {
        self.st.stopped()
    }

    /// Verify and register, in a table of their own, the files `batch`
    /// names that are not verified yet. Ahead of a launch, in this thread
    /// and in the disk's idle time, as its pieces are read: the set of
    /// `rg` (8 192 files), verified by eight threads at once while `find`
    /// walked its tree, made `find` 0.89x of stock in the day in
    /// miniature; paced, 1.09x (`bench/daemon/launch.sh`, medians of 5,
    /// one sitting each).
    fn restore(&mut self, h: &AppHistory, batch: &[AccessRecord]) {
        let new: FxHashSet<u32> = (batch.iter())
            .map(|a| a.file)
            .filter(|f| !self.table_of.contains_key(f))
            .collect();
        if new.is_empty() {
            return;
        }
        let part = AppHistory {
            files: (h.files.iter())
                .filter(|f| new.contains(&f.id))
                .cloned()
                .collect(),
            ..AppHistory::default()
        };
        // For another user, the parts share one table (its ids seeded out
        // of order): with a table per reorder buffer, each holding its
        // files' descriptors, `rg`'s replay ran out of them (`EMFILE`)
        // and dropped 11 451 of its 31 485 files.
        let at = match (&self.user, self.tables.len()) {
            (Some(_), n) if n > 0 => 0,
            (_, n) => {
                self.tables.push(FileTable::new(FileTableOptions {
                    program_user: self.user.clone(),
                    ..FileTableOptions::default()
                }));
                n
            }
        };
        let table = &mut self.tables[at];
        let restored = match self.idle.as_mut() {
            Some(idle) => {
                let mut go = |dev| go_on(idle, &mut self.st, dev);
                history::restore_paced(&part, table, &mut go)
            }
            // For another user, the parts of a set of more than
            // EAGER_FILES files are registered unverified, each file
            // verified as it is opened (as root's replay registers the
            // rest of such a set at once): each part's verification
            // before its requests (eight threads, a handle open and an
            // extent map per file) held `rg`'s replay for `nobody` to
            // 36 864 of its 65 536 pages by the end of `rg`'s run.
            None if self.user.is_some() && h.files.len() > history::EAGER_FILES => {
                history::restore_with(&part, table, 0)
            }
            None => history::restore(&part, table),
        };
        self.st.files_kept += restored.files_kept;
        self.st.files_dropped += restored.files_dropped;
        self.table_of.extend(new.into_iter().map(|f| (f, at)));
    }

    /// Ask for one reorder buffer's ranges, in physical order.
    fn fetch(&mut self, batch: &[AccessRecord], since: &dyn Fn() -> f64) {
        let mut b = merged_ranges(batch);
        // Pages past the end of a file (verified unchanged since its set
        // was recorded: sets recorded before the recorder dropped them
        // hold them) can never arrive: not asked for.
        for r in &mut b {
            let info = self.table(r.0).info(FileId(u64::from(r.0)));
            let end = info.map_or(u64::MAX, |i| i.size.div_ceil(PAGE));
            r.2 = r.2.min(end.saturating_sub(r.1));
        }
        b.retain(|r| r.2 > 0);
        let readahead = &self.readahead;
        let left: u64 = (b.iter().filter(|r| readahead.contains(&r.0)))
            .map(|r| r.2)
            .sum();
        self.st.pages_left_to_readahead += left;
        b.retain(|r| !readahead.contains(&r.0));
        let (held, b): (Vec<_>, Vec<_>) = b
            .into_iter()
            .partition(|r| self.held_files.contains_key(&r.0));
        self.pending.extend(held);
        self.fetch_ranges(b, since);
    }

    /// Ask for ranges `b` (file, first page, pages), in physical order.
    fn fetch_ranges(&mut self, mut b: Vec<(u32, u64, u64)>, since: &dyn Fn() -> f64) {
        b.sort_by_cached_key(|&(file, page, _)| {
            let phys = (self.table(file).known_extents(FileId(u64::from(file)))).and_then(|ex| {
                ex.iter()
                    .find_map(|e| e.physical_of(page * PAGE))
                    .map(|p| (0u8, p))
            });
            (phys.unwrap_or((1, u64::from(file))), page)
        });
        let piece = if self.inflight_max < INFLIGHT_PAGES {
            self.inflight_max
        } else {
            u64::MAX
        };
        for (file, page, pages) in b {
            for at in (page..page + pages).step_by(piece.min(pages).max(1) as usize) {
                self.fetch_range(file, at, piece.min(page + pages - at), since);
            }
        }
    }

    /// replay read from storage lately, its `first` reorder buffer and the
    /// `rest` are found there (their probes apart: the first buffer is
    /// what the launch needs first, and a small share of the pages), and
    /// so did its launch's own first reads (a replay ahead of its launch
    /// has none: its probes alone decide, and a wrong "in memory" costs
    /// only the read-ahead, the launch's own replay still running at its
    /// exec). The probes come first: a set not in memory fails at its
    /// first missing probe, before any wait for the launch's reads.
    fn in_memory(
        &mut self,
        h: &AppHistory,
        (first, rest): (&[AccessRecord], &[AccessRecord]),
        o: &ReplayOptions,
    ) -> bool {
        self.reads.others_quiet()
            && !first.is_empty()
            && self.resident(h, first)
            && self.resident(h, rest)
            && (o.ahead || o.launch_reads.read_from_memory(o.launcher))
    }

    /// Is `part` of the set in memory? Up to [`PAGES_PER_PROBE`](super::evidence::PAGES_PER_PROBE) pages
    /// spread over each of its [`probes`]
    /// are read without waiting (`RWF_NOWAIT`): a page still on its way
    /// counts as missing, where `cachestat` counts it cached. At most one
    /// page in [`MISS_SHARE`] of them may be missing, and no probe half
    /// missing (the first such ends the look).
    fn resident(&mut self, h: &AppHistory, part: &[AccessRecord]) -> bool {
        let probes = probes(part);
        self.restore(h, &probes);
        let (mut looked, mut missing) = (0, 0);
        let each = probes.iter().all(|a| {
            let t = &mut self.tables[self.table_of[&a.file]];
            let id = FileId(u64::from(a.file));
            let end = t.info(id).map_or(0, |i| i.size.div_ceil(PAGE));
            let pages = u64::from(a.pages).min(end.saturating_sub(a.page));
            // A file dropped (changed or gone) has nothing to ask for.
            let Some(f) = t.open_known(id) else {
                return true;
            };
            let at = spread(a.page, pages);
            let ready = |&p: &u64| outrider_sys::page_cached_nowait(f.fd.as_fd(), p * PAGE);
            let gone = at.iter().filter(|p| !ready(p).unwrap_or(false)).count() as u64;
            (looked, missing) = (looked + at.len() as u64, missing + gone);
            gone * 2 <= at.len() as u64
        });
        self.st.probe_pages += looked;
        self.st.probe_pages_missing += missing;
        each && missing * MISS_SHARE <= looked
    }

    fn table(&self, file: u32) -> &FileTable {
        &self.tables[self.table_of[&file]]
    }

    /// Ask for `pages` pages of `file` from `page`, within the budget,
    /// unless memory pressure or the launcher's exit stopped the replay.
    fn fetch_range(&mut self, file: u32, page: u64, pages: u64, since: &dyn Fn() -> f64) {
        let st = &mut self.st;
        if st.pages_requested >= self.next_look {
            self.next_look = st.pages_requested + PRESSURE_EVERY_PAGES;
            st.stopped_by_pressure = self.backoff.pressed();
        }
        if st.pages_requested >= self.next_exit {
            self.next_exit = st.pages_requested + EXIT_EVERY_PAGES;
            self.st.stopped_at_exit = self.launcher_exited();
            let st = &mut self.st;
            st.stopped_hot =
                self.launch_reads.judged_hot() && self.reads.found_in_memory(st.pages_requested);
            self.reads.note();
        }
        if self.stopped() {
            self.budget = 0;
        }
        let n = pages.min(self.budget);
        if n == 0 {
            // Nothing to ask for: the file is not opened.
            self.st.pages_skipped += pages;
            return;
        }
        self.wait_for_room(n);
        let st = &mut self.st;
        let t = &mut self.tables[self.table_of[&file]];
        let id = FileId(u64::from(file));
        let dev = t.key_of(id).map_or(0, |(dev, _)| dev);
        if self.idle.as_mut().is_some_and(|idle| !go_on(idle, st, dev)) {
            self.budget = 0;
            st.pages_skipped += pages;
            return;
        }
        let Some(f) = t.open_known(id) else {
            st.pages_skipped += pages;
            return;
        };
        if st.pages_requested == 0 {
            st.first_request_s = since();
        }
        if outrider_sys::fetch_chunks(
            f.fd.as_fd(),
            page * PAGE,
            n * PAGE,
            1 << 21,
            Fetch::WillNeed,
        )
        .is_ok()
        {
            st.pages_requested += n;
            self.budget -= n;
            self.inflight.push_back((file, page + n - 1, n));
            self.inflight_pages += n;
            debug_assert!(
                self.inflight_pages <= self.inflight_max.max(n),
                "the in-flight bound"
            );
        }
        st.pages_skipped += pages - n;
    }

    /// Wait until `n` more pages fit in the in-flight bound beside those
    /// asked for and not yet arrived (the last page of the oldest range
    /// read without waiting, `RWF_NOWAIT`), at most
    /// [`INFLIGHT_WAIT_NS`] in all for this range.
    fn wait_for_room(&mut self, n: u64) {
        let deadline = outrider_sys::monotonic_ns() + INFLIGHT_WAIT_NS;
        while self.inflight_pages + n > self.inflight_max {
            let Some(&(file, last, pages)) = self.inflight.front() else {
                return;
            };
            let t = &mut self.tables[self.table_of[&file]];
            let arrived = (t.open_known(FileId(u64::from(file)))).is_none_or(|f| {
                outrider_sys::page_cached_nowait(f.fd.as_fd(), last * PAGE).unwrap_or(true)
            });
            if arrived || outrider_sys::monotonic_ns() > deadline {
                self.inflight.pop_front();
                self.inflight_pages -= pages;
            } else {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
    }
}

/// Pages a replay has asked for and not yet received, at most (16 MiB,
/// 8-10 ms of this machine's disk): beyond it the replay waits for the
/// oldest to arrive, so a program's own reads never queue behind more
/// than that. Unbounded, a set is asked for all at once: `collect2`'s
/// 46 MiB set (shared with `rustc`'s link) was asked for within 10 ms
/// and the `ld` after it waited 38 ms on block I/O for 1 235 pages of
/// its own (delay accounting). Measured in one sitting (medians of 5,
/// cold, alternated, stock / unbounded / bound): with a 4 MiB bound
/// `node -e` fell behind (0.171 / 0.129 / 0.147 s) while `rustc -O` gained
/// (0.584 / 0.262 / 0.235 s); with 16 MiB, `node` 0.158 / 0.124 / 0.125,
/// `rustc` 0.564 / 0.249 / 0.241, `gcc` 0.098 / 0.074 / 0.073: a bounded
/// queue at no cost.
const INFLIGHT_PAGES: u64 = 4096;

/// The in-flight bound of a replay ahead of a launch (a predicted next
/// launch's set, [`ReplayOptions::ahead`]), in ranges of at most as
/// many pages: 1 MiB, so the launch running meanwhile, whose own reads
/// the set does not hold, never waits behind more than about a
/// millisecond of it. With the 16 MiB bound, `perl` and `python3 -c
/// pass` in the day in miniature, each followed by its successor's set
/// read during its own run, took 0.77x and 0.88x of their stock time
/// (`bench/daemon/launch.sh`, medians of 5). Each piece also waits for
/// an idle disk and goes in the idle I/O class ([`IdleDisks`],
/// [`IdleClass`]).
const AHEAD_INFLIGHT_PAGES: u64 = 256;

/// How long a replay waits for room for one range, at most: a range
/// that does not arrive (a slow disk, a page the kernel dropped) stops
/// holding the rest back.
const INFLIGHT_WAIT_NS: u64 = 50_000_000;
