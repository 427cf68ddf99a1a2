//! Recording a launch set (or the boot set) from events, and replaying one.
//!
//! A [`Recorder`] takes the page ranges a process tree read (`GetPages`
//! and `Fault` events: cache hits included, so a launch that was served by
//! a replay is recorded as fully as a cold one) in first-touch order, each
//! page once, up to its cap; files are identified through the live
//! runtime's [`FileTable`] (opened by inode as root, so a file the program
//! already closed is still found). [`Recorder::finish`] turns it into an
//! [`AppHistory`] for `outrider_store`.
//!
//! [`replay`] verifies the saved files (handle, then path; dev, ino, size
//! and mtime unchanged — [`outrider_live::history::restore`]) and, for a
//! launch by a user other than root, that this user may open each by its
//! path (checked with the user's own file-system identity), merges each
//! file's ranges, and asks for them with `POSIX_FADV_WILLNEED` in physical
//! order (FIEMAP), stopping at the byte budget.

use outrider_core::FileId;
use outrider_live::files::{FileTable, FileTableOptions};
use outrider_live::history;
use outrider_store::{AccessRecord, AppHistory};
use outrider_sys::launch::Credentials;
use outrider_sys::Fetch;
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::AsFd;
use std::path::Path;

mod around;
mod idle;
use idle::{IdleClass, IdleDisks};

/// The application a launch belongs to, the key of its launch set: the
/// executable, and with `args > 0` the shape of its first `args`
/// command-line words — the name it was started by (`argv[0]`, its last
/// path component), then the arguments, each file that exists (relative
/// to `cwd`) written `<file>` and the rest cut at 32 bytes. A word
/// starting with `-` is an option, never looked up: each lookup is a
/// directory read, from the disk when cold, on the exec's path. One
/// executable serves many applications: a venv's `python` and
/// `python3 -c pass` are both `/usr/bin/python3.11`, `git status` and
/// `git log -p` are both `git`; with the executable alone (`args = 0`,
/// the Windows Prefetcher's key) a bare `python3` replayed the 100 MiB
/// set of a pandas import and took 0.154 s instead of 0.034 s
/// (`bench/daemon/launch.sh`, the day in miniature). Files stand for
/// their role, so `cat a` and `cat b` share one set.
pub fn app_name(exe: &str, argv: &[String], cwd: &Path, args: usize) -> String {
    let mut words: Vec<String> = Vec::new();
    for (i, a) in argv.iter().take(args).enumerate() {
        let w = if i == 0 {
            a.rsplit('/').next().unwrap_or(a).to_string()
        } else if !a.is_empty() && !a.starts_with('-') && cwd.join(a).is_file() {
            "<file>".to_string()
        } else {
            let mut end = a.len().min(32);
            while !a.is_char_boundary(end) {
                end -= 1;
            }
            a[..end].to_string()
        };
        words.push(w);
    }
    if words.is_empty() {
        exe.to_string()
    } else {
        format!("{exe} [{}]", words.join(" "))
    }
}

/// Bytes per page in the access lists.
pub const PAGE: u64 = 4096;

/// Pages of one recorded range at most (a `GetPages` of a huge read is
/// cut: the launch set is bounded by its cap anyway).
const MAX_RANGE_PAGES: u64 = 1 << 16;

/// Pages a task read: `pages` pages of file (dev, ino) from `index`,
/// through page faults if `mapped` (an event of a mapping: a fault, or
/// the pages mapped around one).
#[derive(Clone, Copy, Debug)]
pub struct PagesRead {
    /// Device number of the file.
    pub dev: u64,
    /// Inode number of the file.
    pub ino: u64,
    /// First page.
    pub index: u64,
    /// Pages.
    pub pages: u64,
    /// Read through page faults.
    pub mapped: bool,
}

/// The reads of one launch (or of the boot), as they come.
pub struct Recorder {
    table: FileTable,
    accesses: Vec<AccessRecord>,
    /// Pages recorded, as 64-page bitmaps keyed by (file, page / 64):
    /// 16 bytes of key and word per 64 pages where a set of (file,
    /// page) pairs held 16 per page.
    seen: FxHashMap<(u32, u64), u64>,
    /// Files the table resolved once (their identity is kept after the
    /// descriptor is closed): not opened again at every read. Resolving
    /// at every read reopened each file past the table's 64 descriptors
    /// per event; `open_by_handle_at`, `readlink` and `close` were a
    /// quarter of the daemon's CPU over the day in miniature (perf).
    /// Each with its pages as last seen ([`Recorder::end_page`]).
    resolved: FxHashMap<u32, u64>,
    /// Files read through page faults ([`outrider_store::FileRecord::mapped`]).
    mapped: FxHashSet<u32>,
    cap_pages: u64,
    /// Files held at most (`launch_files_max`, [`crate::config`]).
    files_max: usize,
    /// Pages recorded.
    pub pages: u64,
    /// Pages not recorded: over the cap, or of files not found.
    pub dropped_pages: u64,
}

impl Recorder {
    /// A recorder holding at most `cap_bytes` of `files_max` files.
    pub fn new(cap_bytes: u64, files_max: usize) -> Recorder {
        Recorder {
            table: FileTable::new(FileTableOptions {
                program_user: None,
                max_open: 64,
                ..FileTableOptions::default()
            }),
            accesses: Vec::new(),
            seen: FxHashMap::default(),
            resolved: FxHashMap::default(),
            mapped: FxHashSet::default(),
            cap_pages: cap_bytes / PAGE,
            files_max,
            pages: 0,
            dropped_pages: 0,
        }
    }

    /// Task `pid` read `r`.
    pub fn read(&mut self, pid: u32, r: PagesRead) {
        let PagesRead {
            dev,
            ino,
            index,
            pages,
            mapped,
        } = r;
        let pages = pages.min(MAX_RANGE_PAGES);
        // A full set takes nothing more: no file is resolved for it (a
        // tree walker's launch opened, stamped and saved 31 577 files
        // after its cap, most of the daemon's CPU over the day in
        // miniature, perf).
        if self.is_full() {
            self.dropped_pages += pages;
            return;
        }
        let Some(id) = self.table.id_of(dev, ino) else {
            self.dropped_pages += pages;
            return;
        };
        let Ok(fid) = u32::try_from(id.0) else {
            return;
        };
        // Only regular files the table can open are kept (not pipes,
        // not anonymous memory files).
        if !self.resolved.contains_key(&fid) {
            let f = (self.resolved.len() < self.files_max)
                .then(|| self.table.resolve(id, pid))
                .flatten();
            let Some(f) = f else {
                self.dropped_pages += pages;
                return;
            };
            self.resolved.insert(fid, f.size.div_ceil(PAGE));
        }
        if mapped {
            self.mapped.insert(fid);
        }
        let end = (index + pages).min(self.end_page(id, fid, index + pages));
        let mut run: Option<AccessRecord> = None;
        for p in index..end {
            let word = self.seen.entry((fid, p / 64)).or_insert(0);
            if *word & (1 << (p % 64)) != 0 {
                continue;
            }
            *word |= 1 << (p % 64);
            if self.pages >= self.cap_pages {
                self.dropped_pages += 1;
                continue;
            }
            self.pages += 1;
            match &mut run {
                Some(r) if r.page + u64::from(r.pages) == p => r.pages += 1,
                _ => {
                    if let Some(r) = run.take() {
                        self.accesses.push(r);
                    }
                    run = Some(AccessRecord {
                        file: fid,
                        page: p,
                        pages: 1,
                    });
                }
            }
        }
        self.accesses.extend(run);
    }

    /// The pages file `fid` has, for a read that ends at page `end`:
    /// those a read asked for past the end of the file are none of its
    /// (a read is traced with the pages it asked for: `rg`'s 64 KiB reads
    /// of 8 KiB files filled its 256 MiB set with 87% such pages, and a
    /// replay waited in vain for each one's arrival). Past the size last
    /// seen the file is looked at again, if still open: it may have grown.
    fn end_page(&mut self, id: FileId, fid: u32, end: u64) -> u64 {
        let known = self.resolved[&fid];
        if end <= known || !self.table.refresh(id) {
            return known;
        }
        let now = self.table.get(id).map_or(known, |f| f.size.div_ceil(PAGE));
        self.resolved.insert(fid, now);
        now
    }

    /// Has the set reached its cap (nothing more will be recorded)?
    pub fn is_full(&self) -> bool {
        self.pages >= self.cap_pages || self.resolved.len() >= self.files_max
    }

    /// Was page `page` of (dev, ino) recorded?
    pub fn has(&self, dev: u64, ino: u64, page: u64) -> bool {
        (self.table.lookup(dev, ino))
            .and_then(|id| u32::try_from(id.0).ok())
            .and_then(|fid| self.seen.get(&(fid, page / 64)))
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }

    /// Pages of the launch set `h` that this recording read too: what a
    /// replay of `h` brought in for it (or would have).
    pub fn overlap(&self, h: &AppHistory) -> u64 {
        let files: rustc_hash::FxHashMap<u32, (u64, u64)> =
            h.files.iter().map(|f| (f.id, (f.dev, f.ino))).collect();
        h.accesses
            .iter()
            .filter_map(|a| files.get(&a.file).map(|&(d, i)| (d, i, a)))
            .map(|(d, i, a)| {
                (a.page..a.page + u64::from(a.pages))
                    .filter(|&p| self.has(d, i, p))
                    .count() as u64
            })
            .sum()
    }

    /// The recorded set as a history for the store (`exe` for people).
    pub fn finish(mut self, exe: &str) -> AppHistory {
        let mut h = history::collect(&mut self.table, &[exe.into()], Path::new("/"));
        for f in &mut h.files {
            f.mapped = self.mapped.contains(&f.id);
        }
        h.accesses = self.accesses;
        h
    }
}

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
    /// Pages of files the launch read sequentially, left to the kernel's
    /// readahead ([`sequential_files`]).
    pub pages_left_to_readahead: u64,
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
}

/// A file read sequentially over more than this many pages (8 MiB, the
/// readahead window of this machine's virtio disk) is left to the
/// kernel's readahead.
pub const READAHEAD_PAGES: u64 = 2048;

/// The files of a launch set that the launch read from its first page
/// to its last in one ascending run, over more than [`READAHEAD_PAGES`]:
/// Linux readahead serves exactly that pattern, and a replay beside it
/// only races it for the disk. Measured: `wc -l` of a 256 MiB file with
/// its whole set replayed took 0.83x of stock (medians of 7, alternated,
/// `bench/daemon/launch.sh`).
pub fn sequential_files(accesses: &[AccessRecord]) -> rustc_hash::FxHashSet<u32> {
    let mut next: rustc_hash::FxHashMap<u32, Option<u64>> = Default::default();
    for a in accesses {
        let n = next.entry(a.file).or_insert(Some(0));
        *n = n.filter(|&p| p == a.page).map(|p| p + u64::from(a.pages));
    }
    next.into_iter()
        .filter(|(_, end)| end.is_some_and(|e| e > READAHEAD_PAGES))
        .map(|(f, _)| f)
        .collect()
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
    /// The launching process: once it exited, the rest of its set is
    /// not asked for (it could only compete with the programs after it).
    pub launcher: Option<u32>,
    /// When the launch exec'd (CLOCK_MONOTONIC ns), the origin of the
    /// replay's times; 0: its own start.
    pub exec_ns: u64,
    /// The program has not started yet (a predicted next launch): files
    /// it reads from start to end are asked for too, where a running
    /// program's own reads leave them to the kernel's readahead; 1 MiB
    /// at a time, each piece once the disk is idle, in the idle I/O
    /// class (the module `idle`).
    pub ahead: bool,
    /// Each mapped file no larger than half its disk's read-around window
    /// is asked for whole at its first access, as the kernel reads it at
    /// the launch's first fault in it (the module `around`, with what it
    /// cost); `false`: the pages recorded, as libprefetch and FAST
    /// replay.
    pub read_around: bool,
}

/// Pages asked for between two looks at whether the launcher exited.
pub const EXIT_EVERY_PAGES: u64 = 256;

/// Has the process of `pidfd` exited (its pidfd readable)?
fn exited(pidfd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

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
    let mut st = replay_from(h, o, &since);
    st.started_s = started_s;
    st.done_s = since();
    st
}

/// [`replay`], its times but the start and end taken by `since`.
fn replay_from(h: &AppHistory, o: &ReplayOptions, since: &dyn Fn() -> f64) -> ReplayStats {
    let _idle_class = o.ahead.then(IdleClass::enter);
    let Some(backoff) = Backoff::start(o.pressure_max_pct) else {
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
    let mut r = Replayer {
        user: o.user.clone(),
        tables: Vec::new(),
        table_of: FxHashMap::default(),
        readahead: if o.ahead {
            FxHashSet::default()
        } else {
            sequential_files(&h.accesses)
        },
        launcher: o.launcher.map(outrider_live::session::pidfd),
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
        idle: o.ahead.then(IdleDisks::default),
        st: ReplayStats::default(),
    };
    let mut windows = around::Windows::default();
    let accesses = if o.read_around {
        around::widened(h, |dev| windows.pages(dev))
    } else {
        std::borrow::Cow::Borrowed(h.accesses.as_slice())
    };
    let accesses = &accesses[..within(&accesses, r.budget)];
    for (i, b) in batches(accesses).into_iter().enumerate() {
        if i < 2 {
            r.restore(h, if i == 0 { b } else { accesses });
        }
        if i == 0 {
            r.st.verified_s = since();
        }
        r.fetch(b, since);
    }
    r.st
}

/// One replay under way: its files (those of the first reorder buffer
/// in one table, the rest in another), its budget and checks.
struct Replayer {
    user: Option<Credentials>,
    tables: Vec<FileTable>,
    /// The table each verified file is in.
    table_of: FxHashMap<u32, usize>,
    readahead: FxHashSet<u32>,
    launcher: Option<Option<std::os::fd::OwnedFd>>,
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
}

impl Replayer {
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
        let mut table = FileTable::new(FileTableOptions {
            program_user: self.user.clone(),
            ..FileTableOptions::default()
        });
        let restored = match self.idle.as_mut() {
            Some(idle) => {
                let mut go = |dev| {
                    idle.wait(dev) || {
                        self.st.stopped_busy = true;
                        false
                    }
                };
                history::restore_paced(&part, &mut table, &mut go)
            }
            None => history::restore(&part, &mut table),
        };
        self.st.files_kept += restored.files_kept;
        self.st.files_dropped += restored.files_dropped;
        let at = self.tables.len();
        self.tables.push(table);
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
            // A launcher already gone (no pidfd) counts as exited.
            st.stopped_at_exit =
                (self.launcher.as_ref()).is_some_and(|f| f.as_ref().is_none_or(exited));
        }
        if st.stopped_by_pressure || st.stopped_at_exit || st.stopped_busy {
            self.budget = 0;
        }
        let mut n = pages.min(self.budget);
        if n > 0 {
            self.wait_for_room(n);
        }
        let st = &mut self.st;
        let t = &mut self.tables[self.table_of[&file]];
        let id = FileId(u64::from(file));
        let dev = t.key_of(id).map_or(0, |(dev, _)| dev);
        if n > 0 && self.idle.as_mut().is_some_and(|idle| !idle.wait(dev)) {
            st.stopped_busy = true;
            (self.budget, n) = (0, 0);
        }
        let Some(f) = t.open_known(id) else {
            st.pages_skipped += pages;
            return;
        };
        if n > 0 && st.pages_requested == 0 {
            st.first_request_s = since();
        }
        if n > 0
            && outrider_sys::fetch_chunks(
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

/// The first reorder buffer's pages: 1 MiB, each next one twice the last
/// up to [`MAX_BATCH_PAGES`].
const FIRST_BATCH_PAGES: u64 = 256;
/// The largest reorder buffer: 16 MiB.
const MAX_BATCH_PAGES: u64 = 4096;

/// How many of `accesses`, from the first, start within `budget` pages:
/// the files of the rest are not even verified (each a cold inode and
/// extent read).
fn within(accesses: &[AccessRecord], budget: u64) -> usize {
    let mut pages = 0u64;
    (accesses.iter())
        .take_while(|a| {
            let before = pages;
            pages += u64::from(a.pages);
            before < budget
        })
        .count()
}

/// The access list cut into reorder buffers, in first-touch order.
fn batches(accesses: &[AccessRecord]) -> Vec<&[AccessRecord]> {
    let (mut out, mut start, mut size, mut pages) = (Vec::new(), 0, FIRST_BATCH_PAGES, 0);
    for (i, a) in accesses.iter().enumerate() {
        pages += u64::from(a.pages);
        if pages >= size {
            out.push(&accesses[start..=i]);
            (start, pages, size) = (i + 1, 0, (size * 2).min(MAX_BATCH_PAGES));
        }
    }
    if start < accesses.len() {
        out.push(&accesses[start..]);
    }
    out
}

/// Each file's recorded pages as sorted, merged (file, first page, pages).
fn merged_ranges(accesses: &[AccessRecord]) -> Vec<(u32, u64, u64)> {
    let mut v: Vec<(u32, u64, u64)> = accesses
        .iter()
        .map(|a| (a.file, a.page, u64::from(a.pages)))
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u32, u64, u64)> = Vec::with_capacity(v.len());
    for (f, p, n) in v {
        match out.last_mut() {
            Some((lf, lp, ln)) if *lf == f && *lp + *ln >= p => *ln = (*ln).max(p + n - *lp),
            _ => out.push((f, p, n)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// `pages` pages from `index` of the file of `md`, read by `read(2)`.
    fn read_of(md: &std::fs::Metadata, index: u64, pages: u64) -> PagesRead {
        PagesRead {
            dev: md.dev(),
            ino: md.ino(),
            index,
            pages,
            mapped: false,
        }
    }

    #[test]
    fn reorder_buffers_start_at_1_mib_and_double_to_16() {
        let a = |pages| AccessRecord {
            file: 0,
            page: 0,
            pages,
        };
        let list: Vec<AccessRecord> = [200, 100, 512, 1, 4096, 5000, 3].map(a).to_vec();
        let sizes: Vec<usize> = batches(&list).iter().map(|b| b.len()).collect();
        // 256 pages reached at the 2nd entry, 512 at the 3rd, 1024 at the
        // 5th, 2048 at the 6th, then the rest.
        assert_eq!(sizes, vec![2, 1, 2, 1, 1]);
        assert_eq!(batches(&list).concat(), list, "every entry once, in order");
        assert!(batches(&[]).is_empty());
    }

    #[test]
    fn an_application_is_its_executable_and_the_shape_of_its_command() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cwd = Path::new("/etc");
        let py = "/usr/bin/python3.11";
        assert_eq!(
            app_name(py, &v(&["/usr/bin/python3", "-c", "pass"]), cwd, 2),
            "/usr/bin/python3.11 [python3 -c]"
        );
        assert_eq!(
            app_name(py, &v(&["/venv/bin/python", "-c", "pass"]), cwd, 2),
            "/usr/bin/python3.11 [python -c]"
        );
        assert_eq!(
            app_name("/usr/bin/cat", &v(&["cat", "hostname"]), cwd, 2),
            "/usr/bin/cat [cat <file>]"
        );
        assert_eq!(
            app_name("/usr/bin/cat", &v(&["cat", "/etc/passwd"]), cwd, 2),
            "/usr/bin/cat [cat <file>]"
        );
        assert_eq!(
            app_name("/usr/bin/git", &v(&["git", "status", "-s"]), cwd, 2),
            "/usr/bin/git [git status]"
        );
        assert_eq!(
            app_name("/usr/bin/git", &v(&["git", "status"]), cwd, 0),
            "/usr/bin/git"
        );
        let long = "é".repeat(40);
        let n = app_name("/x", &v(&["x", &long]), cwd, 2);
        assert!(n.len() <= "/x [x ]".len() + 32, "{n}");
        assert_eq!(app_name("/x", &[], cwd, 2), "/x");
        // An option is never looked up, even where a file has its name.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("-c"), "").unwrap();
        assert_eq!(
            app_name(py, &v(&["python3", "-c", "pass"]), dir.path(), 2),
            "/usr/bin/python3.11 [python3 -c]"
        );
    }

    #[test]
    fn long_sequential_files_are_left_to_readahead() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let seq = sequential_files(&[
            a(1, 0, 1024),
            a(2, 0, 4096), // sequential, but in 2 only after a gap below
            a(1, 1024, 1025),
            a(3, 0, 2048), // exactly 8 MiB: kept
            a(2, 4097, 1),
            a(4, 100, 4000), // not from the first page
        ]);
        assert_eq!(seq.into_iter().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn ranges_of_a_file_merge() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let m = merged_ranges(&[
            a(2, 10, 5),
            a(1, 0, 2),
            a(2, 0, 3),
            a(2, 12, 10),
            a(1, 2, 1),
        ]);
        assert_eq!(m, vec![(1, 0, 3), (2, 0, 3), (2, 10, 12)]);
    }

    fn opts(user: Option<Credentials>) -> ReplayOptions {
        ReplayOptions {
            budget_bytes: 1 << 20,
            user,
            pressure_max_pct: 100.0,
            launcher: None,
            exec_ns: 0,
            ahead: false,
            read_around: false,
        }
    }

    /// A file read from start to end is left to the kernel's readahead
    /// when the launch runs, and asked for ahead of it.
    #[test]
    fn a_replay_ahead_of_its_launch_asks_for_sequential_files_too() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("seq");
        let pages = READAHEAD_PAGES + 7;
        std::fs::write(&p, vec![3u8; (pages * PAGE) as usize]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let mut r = Recorder::new(64 << 20, 8192);
        r.read(std::process::id(), read_of(&md, 0, pages));
        let h = r.finish("/bin/seq");
        let big = ReplayOptions {
            budget_bytes: 64 << 20,
            ..opts(None)
        };
        let st = replay(&h, &big);
        assert_eq!((st.pages_requested, st.pages_left_to_readahead), (0, pages));
        let st = replay(&h, &ReplayOptions { ahead: true, ..big });
        assert_eq!((st.pages_requested, st.pages_left_to_readahead), (pages, 0));
    }

    /// A file the launch read through page faults is saved as mapped, and
    /// with `read_around` replayed whole where the window allows (this
    /// disk's, or the kernel's default 32 pages): the 16-page file here;
    /// a file read with `read(2)` stays as recorded.
    #[test]
    fn a_small_mapped_file_is_replayed_whole() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let (m, r) = (dir.path().join("mapped"), dir.path().join("read"));
        std::fs::write(&m, vec![1u8; 16 * 4096]).unwrap();
        std::fs::write(&r, vec![1u8; 16 * 4096]).unwrap();
        let (mmd, rmd) = (
            std::fs::metadata(&m).unwrap(),
            std::fs::metadata(&r).unwrap(),
        );
        let me = std::process::id();
        let mut rec = Recorder::new(1 << 20, 8192);
        let faulted = PagesRead {
            mapped: true,
            ..read_of(&mmd, 3, 1)
        };
        rec.read(me, faulted);
        rec.read(me, read_of(&rmd, 5, 1));
        rec.read(me, read_of(&mmd, 9, 2));
        let h = rec.finish("/bin/x");
        let mapped: Vec<(String, bool)> = (h.files.iter())
            .map(|f| (f.path.rsplit('/').next().unwrap().to_string(), f.mapped))
            .collect();
        assert!(mapped.contains(&("mapped".into(), true)), "{mapped:?}");
        assert!(mapped.contains(&("read".into(), false)), "{mapped:?}");
        assert_eq!(replay(&h, &opts(None)).pages_requested, 4);
        let around = ReplayOptions {
            read_around: true,
            ..opts(None)
        };
        let window = around::Windows::default().pages(mmd.dev());
        let want = if window >= 32 { 16 + 1 } else { 4 };
        assert_eq!(replay(&h, &around).pages_requested, want);
    }

    /// A read is traced with the pages it asked for; those past the end
    /// of the file are neither recorded nor, from a set that holds them,
    /// asked for. A file that grew is looked at again. A set holds
    /// `files_max` files, and a replay verifies only the files its budget
    /// reaches.
    #[test]
    fn a_set_holds_only_pages_and_files_a_replay_can_use() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 10 << 10]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let me = std::process::id();
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 16)); // a 64 KiB read of 10 KiB
        assert_eq!((r.pages, r.dropped_pages), (3, 0));
        r.read(me, read_of(&md, 8, 4));
        assert_eq!(r.pages, 3, "a read wholly past the end adds nothing");
        let mut h = r.finish("/bin/x");
        assert_eq!(replay(&h, &opts(None)).pages_requested, 3);
        // A set recorded with such pages: only the file's are asked for.
        h.accesses.push(AccessRecord {
            file: h.accesses[0].file,
            page: 3,
            pages: 13,
        });
        assert_eq!(replay(&h, &opts(None)).pages_requested, 3);
        // A set holds `files_max` files: the next file is not recorded,
        // and the set is full.
        let mut r = Recorder::new(1 << 20, 1);
        r.read(me, read_of(&md, 0, 1));
        assert!(r.is_full());
        let g = dir.path().join("g");
        std::fs::write(&g, vec![1u8; 4096]).unwrap();
        r.read(me, read_of(&std::fs::metadata(&g).unwrap(), 0, 1));
        assert_eq!((r.pages, r.dropped_pages), (1, 1));
        // A replay verifies only the files of what its budget lets it ask
        // for: here the first file's page.
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 1));
        r.read(me, read_of(&std::fs::metadata(&g).unwrap(), 0, 1));
        let one_page = ReplayOptions {
            budget_bytes: PAGE,
            ..opts(None)
        };
        let st = replay(&r.finish("/bin/x"), &one_page);
        assert_eq!((st.files_kept, st.pages_requested), (1, 1));
        // Grown while it was read: its new pages count.
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 16));
        std::fs::write(&p, vec![1u8; 20 << 10]).unwrap();
        r.read(me, read_of(&md, 0, 16));
        assert_eq!(r.pages, 5);
    }

    /// Pages are recorded once, in first-touch order, up to the cap; the
    /// history names the file so a replay finds it again (as root).
    #[test]
    fn a_recorder_keeps_first_touches_up_to_its_cap() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 16 * 4096]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let me = std::process::id();
        let mut r = Recorder::new(6 * PAGE, 8192);
        r.read(me, read_of(&md, 4, 2));
        r.read(me, read_of(&md, 0, 2));
        r.read(me, read_of(&md, 4, 3)); // 4, 5 again; 6 new
        r.read(me, read_of(&md, 10, 4)); // over the cap after 1
        assert_eq!((r.pages, r.dropped_pages), (6, 3));
        assert!(r.is_full());
        // Once full, a file read for the first time is not even resolved:
        // it is not in the history below.
        let g = dir.path().join("g");
        std::fs::write(&g, vec![1u8; 4096]).unwrap();
        let gmd = std::fs::metadata(&g).unwrap();
        r.read(me, read_of(&gmd, 0, 1));
        assert_eq!((r.pages, r.dropped_pages), (6, 4));
        let mut r2 = Recorder::new(1 << 20, 8192);
        r2.read(me, read_of(&md, 5, 3)); // 5, 6 in the first set; 7 not
        let h = r.finish("/bin/x");
        assert_eq!(r2.overlap(&h), 2);
        let pages: Vec<(u64, u32)> = h.accesses.iter().map(|a| (a.page, a.pages)).collect();
        assert_eq!(pages, vec![(4, 2), (0, 2), (6, 1), (10, 1)]);
        assert_eq!(h.files.len(), 1);
        let st = replay(&h, &opts(None));
        assert_eq!((st.files_kept, st.pages_requested), (1, 6));
        // For a launch by `nobody`, who cannot search the 0700 directory:
        // nothing; once the directory is searchable, all of it.
        let nobody = Credentials {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let st = replay(&h, &opts(Some(nobody.clone())));
        assert_eq!(
            (st.files_kept, st.files_dropped, st.pages_requested),
            (0, 1, 0)
        );
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let st = replay(&h, &opts(Some(nobody)));
        assert_eq!((st.files_kept, st.pages_requested), (1, 6));
        // Under memory pressure (here: any, with a limit below zero) no
        // replay starts, where the kernel reports PSI.
        if outrider_sys::memory_pressure().is_some() {
            let st = replay(
                &h,
                &ReplayOptions {
                    pressure_max_pct: -1.0,
                    ..opts(None)
                },
            );
            assert!(st.stopped_by_pressure && st.pages_requested == 0, "{st:?}");
        }
        // For a launcher that has exited: nothing.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        let st = replay(
            &h,
            &ReplayOptions {
                launcher: Some(gone_pid),
                ..opts(None)
            },
        );
        gone.wait().unwrap();
        let st2 = replay(
            &h,
            &ReplayOptions {
                launcher: Some(gone_pid),
                ..opts(None)
            },
        );
        assert!(
            st2.stopped_at_exit && st2.pages_requested == 0,
            "{st:?} {st2:?}"
        );
        // Changed since: nothing is replayed.
        std::fs::write(&p, vec![2u8; 4096]).unwrap();
        let st = replay(&h, &opts(None));
        assert_eq!((st.files_dropped, st.pages_requested), (1, 0));
    }
}
