//! A directed-prefetching client (libprefetch §4): registered regions, the
//! access list, tracked reads, rounds.
//!
//! A tracked read (`pread`/`read`/`readv`, or [`Client::note_access`]) of a
//! registered region goes through three checks before the data is read:
//!
//! 1. **Position** (§4.1): the page is looked up on the access list at or
//!    after the current position. Not found → the program *strayed*: the
//!    callback is asked for a new list (reason [`Reason::Strayed`]) and a new
//!    round is planned from the new list.
//! 2. **Round** (§4.5): past the end of the current round, or the list was
//!    replaced → a new round. Inside the round, the page's residency is
//!    checked with `cachestat(2)` at its first access in the round; a miss
//!    is a premature eviction → the AIMD controller halves and a new round
//!    starts at this entry. With `shadow=on` (the default) only a page the
//!    kernel evicted counts (cachestat reports its shadow entry): a page the
//!    round's WILLNEED never brought in is read on demand without halving
//!    (live, such misses occurred with the cgroup far below its limit and
//!    no failed charge). `shadow=off` is the paper's fincore test: any
//!    missing page counts.
//! 3. **Low list** (§4.1): fewer than `low` entries left ahead, or too few
//!    to fill the round being planned (under 2K) → the callback is asked to
//!    extend the list (reason [`Reason::Low`]), once per list update.
//!
//! A round: K unique pages from the current entry on (K from the AIMD
//! controller or `buffer`), physical positions from FIEMAP, C-LOOK order
//! from the previous round's last position, infill merge (shared with the
//! simulator: `outrider_core::policies::directed::plan`). The infill limit
//! is `infill=SIZE`, or with `infill=auto` (the default) what the device
//! probe ([`crate::probe`]) measures at the first round with gaps to fill
//! (a list read in file order never probes). Pages of the
//! previous round not in the new one are dropped with DONTNEED first, as
//! merged ranges issued by the workers in parallel (§4.5: "faster to
//! DONTNEED pages in large batches"), finished before the new round's
//! fetches are queued. The runs are then issued as WILLNEED in chunks no larger than
//! the device's readahead cap, from the worker pool; the caller waits until
//! every chunk is submitted (libprefetch blocks the application during a
//! round, §4.5) but not for the I/O itself. Departure (`wait=auto`, the
//! default; `wait=on` is the paper): a round whose access order is its fetch
//! order (a sequential list) does not block, so reading overlaps fetching as
//! with kernel readahead; residency checks wait until its submission ends.
//! A round read page after page in file order (`readahead=on`, the
//! default; off is the paper) is not fetched at all: the kernel's
//! readahead serves it as it would without the library, and fetching it
//! as well measured 20–40 % slower than stock on a 1 GiB file
//! (`bench/results/directed.md`, the seq rows).
//!
//! What stock Linux does not allow (§4.5's kernel changes): WILLNEED does not
//! move pages already cached in the LRU, so the paper's second pass —
//! re-advising the round in reverse access order so that memory pressure
//! evicts the pages needed last — has no effect and is not done. Infill is
//! done in user space: merged runs are one WILLNEED range, so infill pages
//! enter the page cache (hence `charge=on`).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

use outrider_core::policies::directed::list::{AccessList, ListEntry, Mode, Observed};
use outrider_core::policies::directed::plan::{
    plan_round, Aimd, Page, Round, Run, PAPER_INFILL_PAGES,
};
use outrider_core::Params;
use outrider_sys::{advise, cachestat, fiemap, Advice, Extent, Fetch, Pool};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::config::{Config, Infill};

const PAGE: u64 = 4096;

/// Pages one residency check covers when the program reads the round in
/// file order (see [`Client::resident_checked`]): 1 MiB.
const CHECK_WINDOW_PAGES: u64 = 256;

/// Bound on the ranges one worker job issues (a job is also at most one
/// readahead cap of bytes).
const MAX_RANGES_PER_JOB: usize = 256;

/// Bound on the worker pool's queue, in jobs: room for a whole round (a
/// 1 GiB round is 128 jobs of 8 MiB; 50 000 scattered pages are ~200 jobs),
/// so the program does not wait at the round boundary for the workers to
/// take the round's jobs — only for its planning.
const POOL_QUEUE_JOBS: usize = 1024;

/// One access-list entry as the application gives it (§4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// File descriptor of a registered region.
    pub fd: RawFd,
    /// Byte offset of the access (its page is prefetched).
    pub offset: u64,
    /// A landmark for the callback (§4.1).
    pub marked: bool,
}

/// Why the callback was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Few entries left ahead of the position.
    Low,
    /// The program read a registered page that is not on the list ahead.
    Strayed,
}

/// What the callback is told (§4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Why.
    pub reason: Reason,
    /// The access that triggered it: (fd, byte offset of its page).
    pub current: (RawFd, u64),
    /// The most recently accessed (or passed) marked entry, if any.
    pub last_marked: Option<(RawFd, u64)>,
}

/// The application's callback: extend or replace the list with
/// [`Client::request_prefetching`].
pub type Callback = Box<dyn FnMut(&mut Client, &Event) + Send>;

/// Counters of what the client did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Tracked reads.
    pub tracked_reads: u64,
    /// Rounds planned.
    pub rounds: u64,
    /// Rounds started because a page of the current round was not resident.
    pub premature_rounds: u64,
    /// Callbacks for a low list.
    pub low_callbacks: u64,
    /// Callbacks because the program strayed.
    pub stray_callbacks: u64,
    /// Pages asked for (rounds' unique pages).
    pub round_pages: u64,
    /// Pages read as infill.
    pub infill_pages: u64,
    /// Pages dropped with DONTNEED.
    pub dropped_pages: u64,
    /// Current reorder-buffer size, pages.
    pub buffer_pages: u64,
    /// Infill limit in use, pages (`infill=auto`: from the device probe).
    pub infill_limit_pages: u64,
    /// Rounds read in file order, left to the kernel's readahead
    /// (`readahead=on`).
    pub readahead_rounds: u64,
}

struct Region {
    fd: Arc<OwnedFd>,
    ranges: Vec<(u64, u64)>,
    extents: Vec<Extent>,
    ra_cap: u64,
    /// `infill=auto`: the limit the device probe chose (`None`: not
    /// probed, or the probe could not measure).
    infill: Option<u64>,
    /// The probe was tried on this region.
    probed: bool,
}

impl Region {
    fn covers(&self, off: u64) -> bool {
        self.ranges.iter().any(|&(o, l)| off >= o && off < o + l)
    }
    fn phys_block(&self, page: u64) -> u64 {
        let off = page * PAGE;
        let i = self
            .extents
            .partition_point(|e| e.logical + e.length <= off);
        self.extents
            .get(i)
            .and_then(|e| e.physical_of(off))
            .map_or(page, |p| p / PAGE)
    }
}

/// A directed-prefetching client (see the module docs).
pub struct Client {
    cfg: Config,
    callback: Option<Callback>,
    regions: FxHashMap<RawFd, Region>,
    list: AccessList,
    /// Absolute list index one past the current round.
    round_end: u64,
    /// Pages of the current round (requested, not infill) not accessed yet
    /// in the round (each is checked for residency at its first access).
    round_pages: FxHashSet<(u64, u64)>,
    /// Runs fetched by the current round (for the next round's drops).
    round_runs: Vec<Run>,
    replan: bool,
    low_armed: bool,
    ignore: u32,
    aimd: Aimd,
    head: (u32, u64),
    pool: Pool,
    stats: Stats,
    /// Pages a window check found resident: (file, first page, end page).
    verified: (u64, u64, u64),
    /// The page whose residency was last asked about.
    last_checked: (u64, u64),
    /// Infill limit of the last round planned, pages.
    infill_used: u64,
}

impl Client {
    /// A client with `cfg`; the reorder buffer starts at 90 % of the memory
    /// available to the page cache (cgroup-aware, §4.6).
    pub fn new(cfg: Config) -> Client {
        let avail = available_pages(&cfg);
        let aimd = Aimd::new(avail, cfg.min.blocks(), cfg.aimd);
        let infill_used = match cfg.infill {
            Infill::Size(s) => s.0 / PAGE,
            Infill::Auto => 0,
        };
        Client {
            list: AccessList::new(cfg.list),
            pool: Pool::new(cfg.threads, POOL_QUEUE_JOBS),
            cfg,
            callback: None,
            regions: FxHashMap::default(),
            round_end: 0,
            round_pages: FxHashSet::default(),
            round_runs: Vec::new(),
            replan: true,
            low_armed: true,
            ignore: 0,
            aimd,
            head: (0, 0),
            stats: Stats::default(),
            verified: (u64::MAX, 0, 0),
            last_checked: (u64::MAX, 0),
            infill_used,
        }
    }

    /// A client configured from `k=v,...` text (see [`Config`]).
    pub fn from_params(text: &str) -> Result<Client, outrider_core::ParamError> {
        let cfg = Config::parse("directed", text)?;
        if !matches!(cfg.wait.as_str(), "on" | "off" | "auto") {
            return Err(outrider_core::ParamError::BadValue {
                policy: "directed".into(),
                key: "wait".into(),
                value: cfg.wait.clone(),
                expected: "on, off or auto".into(),
            });
        }
        Ok(Client::new(cfg))
    }

    /// Install the callback (`register_client`'s callback, §4).
    pub fn set_callback(&mut self, cb: impl FnMut(&mut Client, &Event) + Send + 'static) {
        self.callback = Some(Box::new(cb));
    }

    /// Move `other`'s callback to this client (used when reconfiguring).
    pub fn take_callback_from(&mut self, other: &mut Client) {
        self.callback = other.callback.take();
    }

    /// Track reads of bytes `[offset, offset + len)` of `fd` (`register_region`).
    /// The descriptor is duplicated for the I/O workers; its extent map is
    /// read once here (FIEMAP; files without one are taken as contiguous).
    pub fn register_region(&mut self, fd: BorrowedFd<'_>, offset: u64, len: u64) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        if let Some(r) = self.regions.get_mut(&raw) {
            r.ranges.push((offset, len));
            return Ok(());
        }
        let dup = fd.try_clone_to_owned()?;
        let extents = fiemap(fd).unwrap_or_default();
        self.regions.insert(
            raw,
            Region {
                ra_cap: outrider_sys::ra_cap_bytes(fd),
                fd: Arc::new(dup),
                ranges: vec![(offset, len)],
                extents,
                infill: None,
                probed: false,
            },
        );
        Ok(())
    }

    /// `request_prefetching` (§4.2): change the list by `mode`; returns how
    /// many entries were accepted (fewer once the list buffer is full).
    /// Replacing the list (`Replace`, `AfterMark`) plans a new round at the
    /// next tracked read.
    pub fn request_prefetching(&mut self, entries: &[Entry], mode: Mode) -> usize {
        let list: Vec<ListEntry> = entries
            .iter()
            .map(|e| ListEntry {
                file: e.fd as u64,
                page: e.offset / PAGE,
                marked: e.marked,
            })
            .collect();
        let n = self.list.request(&list, mode);
        if mode != Mode::Append {
            self.replan = true;
        }
        // Re-arm the low-list callback, unless the application appended
        // nothing (it has no more to give).
        if n > 0 || mode != Mode::Append {
            self.low_armed = true;
        }
        n
    }

    /// The done flag (§4.2, Fig. 7's `PF_DONE`): the application has handed
    /// over its whole access list. No low-list callbacks follow until the
    /// list is replaced (`Replace` or `AfterMark`); a stray still calls back.
    pub fn list_done(&mut self) {
        self.low_armed = false;
    }

    /// Stop tracking reads (nested: each call needs an unignore). Used by
    /// callbacks that read registered data themselves (§4.2).
    pub fn ignore_accesses(&mut self) {
        self.ignore += 1;
    }

    /// Undo one [`Client::ignore_accesses`].
    pub fn unignore_accesses(&mut self) {
        self.ignore = self.ignore.saturating_sub(1);
    }

    /// What the client did so far.
    pub fn stats(&self) -> Stats {
        Stats {
            buffer_pages: self.buffer_pages(),
            infill_limit_pages: self.infill_used,
            ..self.stats
        }
    }

    /// With `infill=auto`: the smallest limit the probe chose for the
    /// registered regions' devices; the paper's 32 KiB once every region was
    /// tried and none could be measured; `None` while regions are untried.
    fn auto_infill(&self) -> Option<u64> {
        if let Some(m) = self.regions.values().filter_map(|r| r.infill).min() {
            return Some(m);
        }
        self.regions
            .values()
            .all(|r| r.probed)
            .then_some(PAPER_INFILL_PAGES)
    }

    /// Probe the devices of the regions not tried yet (once per device per
    /// process, [`crate::probe::device_cost`]), on each region's largest
    /// registered range.
    fn probe_regions(&mut self) {
        let charge = self.cfg.charge;
        for r in self.regions.values_mut().filter(|r| !r.probed) {
            r.probed = true;
            let (off, len) = r
                .ranges
                .iter()
                .copied()
                .max_by_key(|x| x.1)
                .unwrap_or((0, 0));
            r.infill = crate::probe::device_cost(r.fd.as_fd(), off, len).map(|c| {
                if charge {
                    c.infill_pages
                } else {
                    c.infill_pages_uncharged
                }
            });
        }
    }

    /// The list from `index` on with physical positions, read lazily (the
    /// planner stops at the k-th unique page). Enough entries to find k
    /// unique pages in any list shape is unknown; at most 4k + 1024 are
    /// looked at.
    fn upcoming(&self, index: u64, k: u64) -> impl Iterator<Item = Page> + '_ {
        (index..)
            .map_while(|i| self.list.get(i))
            .take((4 * k.max(1) + 1024) as usize)
            .map(|e| Page {
                file: e.file,
                page: e.page,
                dev: 0,
                phys: self
                    .regions
                    .get(&(e.file as RawFd))
                    .map_or(e.page, |r| r.phys_block(e.page)),
            })
    }

    /// Entries left ahead of the position.
    pub fn remaining(&self) -> u64 {
        self.list.remaining()
    }

    fn buffer_pages(&self) -> u64 {
        match self.cfg.buffer.blocks() {
            0 => self.aimd.pages,
            b => b,
        }
    }

    /// `pread` through the client: track, then read.
    pub fn pread(&mut self, fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.note_access(fd.as_raw_fd(), offset, buf.len() as u64);
        // SAFETY: `buf` is valid for writes of its length.
        let r = unsafe {
            libc::pread(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// `read` through the client (at the descriptor's file position).
    pub fn read(&mut self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
        self.track_at_position(fd.as_raw_fd(), buf.len() as u64);
        // SAFETY: `buf` is valid for writes of its length.
        let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// Track a read of `len` bytes at `fd`'s current file position.
    pub fn track_at_position(&mut self, fd: RawFd, len: u64) {
        if self.ignore == 0 && self.regions.contains_key(&fd) {
            // SAFETY: lseek on a descriptor the caller owns; no side effect.
            let pos = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
            if pos >= 0 {
                self.note_access(fd, pos as u64, len);
            }
        }
    }

    /// Track an access of `len` bytes at `offset` of `fd` without reading
    /// (for programs that read by other means, e.g. mmap).
    pub fn note_access(&mut self, fd: RawFd, offset: u64, len: u64) {
        if self.ignore > 0 || len == 0 {
            return;
        }
        let Some(region) = self.regions.get(&fd) else {
            return;
        };
        if !region.covers(offset) {
            return;
        }
        self.stats.tracked_reads += 1;
        for page in offset / PAGE..=(offset + len - 1) / PAGE {
            self.track_page(fd, page);
        }
    }

    fn track_page(&mut self, fd: RawFd, page: u64) {
        let key = (fd as u64, page);
        let index = match self.list.observe(key.0, key.1) {
            Observed::Same => return,
            Observed::OnList { index, .. } => Some(index),
            Observed::Strayed => {
                self.stats.stray_callbacks += 1;
                self.call_back(Reason::Strayed, fd, page);
                self.replan = true;
                // The new list should start with (or contain) this access.
                match self.list.observe(key.0, key.1) {
                    Observed::OnList { index, .. } => Some(index),
                    _ => None,
                }
            }
        };
        if let Some(index) = index {
            if self.replan || index >= self.round_end {
                self.new_round(index, false);
            } else if !self.round_pages.is_empty()
                && self.pool.pending() == 0
                && self.round_pages.remove(&key)
                && !self.resident_checked(fd, page)
            {
                // §4.5/§4.6: a page of this round evicted before its first
                // use is a premature eviction. Each page is checked once per
                // round, at its first access (it is removed from the set):
                // an eviction after use is not premature, and a page read
                // eight times costs one residency check, not eight.
                self.stats.premature_rounds += 1;
                self.new_round(index, true);
            }
        }
        if self.low_armed && (self.list.remaining() as usize) < self.cfg.low {
            self.low_armed = false;
            self.stats.low_callbacks += 1;
            self.call_back(Reason::Low, fd, page);
        }
    }

    /// [`Client::resident`] with one saving for lists read in file order:
    /// when the page asked about follows the one asked about before, one
    /// `cachestat` covers the next [`CHECK_WINDOW_PAGES`]; if all are cached,
    /// their first accesses need no further call. A page of the window
    /// evicted between that check and its first access (under a
    /// millisecond at sequential speed) is then not counted as a premature
    /// eviction. Random orders are checked page by page, as before.
    fn resident_checked(&mut self, fd: RawFd, page: u64) -> bool {
        let f = fd as u64;
        let in_order = self.last_checked == (f, page.wrapping_sub(1));
        self.last_checked = (f, page);
        let (vf, vs, ve) = self.verified;
        if vf == f && page >= vs && page < ve {
            return true;
        }
        if in_order {
            if let Some(r) = self.regions.get(&fd) {
                if let Ok(s) = cachestat(r.fd.as_fd(), page * PAGE, CHECK_WINDOW_PAGES * PAGE) {
                    if s.cache >= CHECK_WINDOW_PAGES {
                        self.verified = (f, page, page + CHECK_WINDOW_PAGES);
                        return true;
                    }
                }
            }
        }
        self.resident(fd, page)
    }

    /// Is the page cached — or, with `shadow=on`, absent without having been
    /// evicted (no shadow entry: the round's WILLNEED never brought it in,
    /// which is not an eviction of a prefetched page)?
    fn resident(&self, fd: RawFd, page: u64) -> bool {
        let Some(r) = self.regions.get(&fd) else {
            return true;
        };
        cachestat(r.fd.as_fd(), page * PAGE, PAGE)
            .map_or(true, |s| s.cache > 0 || (self.cfg.shadow && s.evicted == 0))
    }

    fn call_back(&mut self, reason: Reason, fd: RawFd, page: u64) {
        let Some(mut cb) = self.callback.take() else {
            return;
        };
        let ev = Event {
            reason,
            current: (fd, page * PAGE),
            last_marked: self
                .list
                .last_marked()
                .map(|e| (e.file as RawFd, e.page * PAGE)),
        };
        cb(self, &ev);
        if self.callback.is_none() {
            self.callback = Some(cb);
        }
    }

    /// Plan and issue a round starting at list entry `index` (§4.5).
    fn new_round(&mut self, index: u64, premature: bool) {
        // The previous round's submissions finish before its pages are
        // dropped.
        let _ = self.pool.wait();
        if self.stats.rounds > 0 {
            self.aimd.round_done(premature);
        }
        let avail = available_pages(&self.cfg);
        self.aimd.set_available(avail);
        self.replan = false;
        self.verified = (u64::MAX, 0, 0);
        let k = self.buffer_pages();
        // The list is low if it cannot fill this round: ask for more first
        // (once per list update, as for the `low` mark).
        let mut index = index;
        if self.low_armed && self.list.remaining() < 2 * k {
            if let Some(e) = self.list.get(index).copied() {
                self.low_armed = false;
                self.stats.low_callbacks += 1;
                self.call_back(Reason::Low, e.file as RawFd, e.page);
                if self.replan {
                    // The callback replaced the list: plan from its start.
                    self.replan = false;
                    index = self.list.pos();
                }
            }
        }
        // Infill: the setting, or (auto) the device probe's limit. The
        // probe runs at the first round that has gaps to fill: a list read
        // in file order never pays for it.
        let (charge, head) = (self.cfg.charge, self.head);
        let mut infill = match self.cfg.infill {
            Infill::Size(s) => Some(s.0 / PAGE),
            Infill::Auto => self.auto_infill(),
        };
        let mut round = plan_round(
            self.upcoming(index, k),
            k,
            infill.unwrap_or(0),
            charge,
            head,
        );
        if infill.is_none() && has_gaps(&round.runs) {
            self.probe_regions();
            let v = self.auto_infill().unwrap_or(PAPER_INFILL_PAGES);
            if v > 0 {
                round = plan_round(self.upcoming(index, k), k, v, charge, head);
            }
            infill = Some(v);
        }
        self.infill_used = infill.unwrap_or(0);
        if self.cfg.readahead && round.in_file_order() {
            self.leave_to_readahead(index, round);
            return;
        }
        // §4.5 blocks the program for the round. `wait=auto` does so unless
        // the round will be read in the order it is fetched (ascending
        // physical order: a sequential list), where reading can overlap the
        // rest of the round like kernel readahead.
        let in_fetch_order = round
            .pages
            .windows(2)
            .all(|w| (w[0].dev, w[0].phys) < (w[1].dev, w[1].phys));
        let wait = match self.cfg.wait.as_str() {
            "off" => false,
            "on" => true,
            _ => !in_fetch_order,
        };
        // Drop the previous round's pages that the new round does not read.
        if self.cfg.drop {
            let drop = subtract_runs(&self.round_runs, &round.runs);
            self.stats.dropped_pages += drop.iter().map(|d| d.2).sum::<u64>();
            // Dropped by the workers in parallel. A blocking round waits for
            // the drops before its fetches are queued, so that it does not
            // push its own pages out (premature evictions) while the old
            // ones are still being dropped; a round read in fetch order
            // fills memory at the device's pace, far slower than dropping,
            // and does not stall the program for it.
            self.drop_ranges(drop);
            if wait {
                let _ = self.pool.wait();
            }
        }
        // Issue the runs in C-LOOK order from the workers, batched.
        let mut batch: Vec<(u64, u64)> = Vec::new();
        let mut batch_fd: Option<RawFd> = None;
        let mut batch_bytes = 0u64;
        for r in &round.runs {
            let fd = r.file as RawFd;
            let Some(region) = self.regions.get(&fd) else {
                continue;
            };
            // One job per readahead-cap worth of ranges (at most
            // MAX_RANGES_PER_JOB), so that big runs are submitted by several
            // workers in parallel and small ones share a job.
            let cap = region.ra_cap;
            for (off, len) in outrider_sys::chunks(r.page * PAGE, r.pages * PAGE, cap) {
                if batch_fd != Some(fd)
                    || batch_bytes + len > cap
                    || batch.len() >= MAX_RANGES_PER_JOB
                {
                    self.flush_batch(batch_fd, &mut batch);
                    batch_fd = Some(fd);
                    batch_bytes = 0;
                }
                batch.push((off, len));
                batch_bytes += len;
            }
        }
        self.flush_batch(batch_fd, &mut batch);
        if wait {
            let _ = self.pool.wait();
        }
        if let Some(last) = round.runs.last() {
            self.head = (last.dev, last.phys + last.pages);
        }
        self.stats.rounds += 1;
        self.stats.round_pages += round.pages.len() as u64;
        self.stats.infill_pages += outrider_core::policies::directed::plan::run_pages(&round.runs)
            - round.pages.len() as u64;
        self.round_end = index + round.entries as u64;
        self.round_pages = round.pages.iter().map(|p| (p.file, p.page)).collect();
        self.round_runs = round.runs;
    }

    /// A round read in file order: the kernel's readahead fetches it as the
    /// program reads, as it would without the library. The previous round's
    /// fetched pages that this one does not read are dropped as usual; this
    /// round fetched nothing, so it has nothing to drop or check for
    /// premature eviction later.
    fn leave_to_readahead(&mut self, index: u64, round: Round) {
        if self.cfg.drop {
            let drop = subtract_runs(&self.round_runs, &round.runs);
            self.stats.dropped_pages += drop.iter().map(|d| d.2).sum::<u64>();
            self.drop_ranges(drop);
        }
        self.stats.rounds += 1;
        self.stats.readahead_rounds += 1;
        self.stats.round_pages += round.pages.len() as u64;
        self.round_end = index + round.entries as u64;
        self.round_pages.clear();
        self.round_runs.clear();
    }

    /// Queue DONTNEED of `(file, page, pages)` ranges, batched per file.
    fn drop_ranges(&self, drop: Vec<(u64, u64, u64)>) {
        let mut job: Vec<(u64, u64)> = Vec::new();
        let mut job_fd: Option<RawFd> = None;
        for (file, page, pages) in drop {
            let fd = file as RawFd;
            if job_fd != Some(fd) || job.len() >= MAX_RANGES_PER_JOB {
                self.drop_job(job_fd, &mut job);
                job_fd = Some(fd);
            }
            job.push((page * PAGE, pages * PAGE));
        }
        self.drop_job(job_fd, &mut job);
    }

    fn drop_job(&self, fd: Option<RawFd>, ranges: &mut Vec<(u64, u64)>) {
        let ranges = std::mem::take(ranges);
        let Some(region) = fd.and_then(|fd| self.regions.get(&fd)) else {
            return;
        };
        if ranges.is_empty() {
            return;
        }
        let file = Arc::clone(&region.fd);
        self.pool.submit(move || {
            for (off, len) in ranges {
                advise(file.as_fd(), off, len, Advice::DontNeed)?;
            }
            Ok(())
        });
    }

    fn flush_batch(&self, fd: Option<RawFd>, batch: &mut Vec<(u64, u64)>) {
        let Some(region) = fd.and_then(|fd| self.regions.get(&fd)) else {
            batch.clear();
            return;
        };
        if batch.is_empty() {
            return;
        }
        let ranges = std::mem::take(batch);
        let file = Arc::clone(&region.fd);
        let cap = region.ra_cap;
        self.pool.submit(move || {
            for (off, len) in ranges {
                outrider_sys::fetch_chunks(file.as_fd(), off, len, cap, Fetch::WillNeed)?;
            }
            Ok(())
        });
    }
}

/// Does any run of a file start past the logical end of the file's run
/// before it (C-LOOK order)? Runs split only at extent boundaries (a list
/// read in file order) leave no gap for infill to fill.
fn has_gaps(runs: &[Run]) -> bool {
    runs.windows(2)
        .any(|w| w[0].file == w[1].file && w[1].page > w[0].page + w[0].pages)
}

/// The pages of `old` runs not covered by `new` runs, as (file, first
/// page, pages) ranges in file order: interval arithmetic over the runs,
/// not a set of pages (a sequential round is a few runs of 50 000 pages).
fn subtract_runs(old: &[Run], new: &[Run]) -> Vec<(u64, u64, u64)> {
    let sorted = |runs: &[Run]| {
        let mut v: Vec<(u64, u64, u64)> = runs
            .iter()
            .map(|r| (r.file, r.page, r.page + r.pages))
            .collect();
        v.sort_unstable();
        v
    };
    let (old, new) = (sorted(old), sorted(new));
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut push = |f: u64, s: u64, e: u64| {
        if s >= e {
            return;
        }
        match out.last_mut() {
            Some((lf, ls, n)) if *lf == f && *ls + *n >= s => *n = (*n).max(e - *ls),
            _ => out.push((f, s, e - s)),
        }
    };
    let mut j = 0;
    for &(f, s, e) in &old {
        // Skip new runs wholly before this one.
        while j < new.len() && (new[j].0, new[j].2) <= (f, s) {
            j += 1;
        }
        let mut at = s;
        let mut k = j;
        while k < new.len() && new[k].0 == f && new[k].1 < e {
            push(f, at, new[k].1.min(e));
            at = at.max(new[k].2);
            k += 1;
        }
        push(f, at, e);
    }
    out
}

/// Pages of memory the page cache may use for this process: the cgroup's
/// room (limit − anonymous memory) and `MemAvailable`, whichever is
/// smaller; `memory=SIZE` overrides.
pub fn available_pages(cfg: &Config) -> u64 {
    if cfg.memory.0 > 0 {
        return cfg.memory.blocks();
    }
    let avail = outrider_sys::mem_available_bytes().unwrap_or(1 << 30);
    let room = outrider_sys::cgroup_memory(None)
        .ok()
        .flatten()
        .and_then(|c| c.cache_room_bytes())
        .unwrap_or(u64::MAX);
    avail.min(room) / PAGE
}

/// Wrap a raw descriptor number for the duration of a call.
///
/// # Safety
/// `fd` must be open for the duration of the borrow.
pub unsafe fn borrow_fd<'a>(fd: RawFd) -> BorrowedFd<'a> {
    BorrowedFd::borrow_raw(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(file: u64, page: u64, pages: u64) -> Run {
        Run {
            file,
            page,
            dev: 0,
            phys: page,
            pages,
        }
    }

    #[test]
    fn subtract_runs_keeps_exactly_the_uncovered_pages() {
        // Old: file 1 pages 0..100, file 2 pages 10..20; new covers 1:20..30,
        // 1:50..60 (two runs), 1:95..120, and all of file 2.
        let old = [run(1, 0, 100), run(2, 10, 10)];
        let new = [
            run(1, 50, 5),
            run(1, 20, 10),
            run(1, 55, 5),
            run(2, 0, 64),
            run(1, 95, 25),
        ];
        assert_eq!(
            subtract_runs(&old, &new),
            vec![(1, 0, 20), (1, 30, 20), (1, 60, 35)]
        );
        // Nothing new: everything old is dropped, adjacent runs merged.
        assert_eq!(
            subtract_runs(&[run(1, 5, 3), run(1, 0, 5)], &[]),
            vec![(1, 0, 8)]
        );
        assert_eq!(subtract_runs(&[], &new), vec![]);
    }
}
