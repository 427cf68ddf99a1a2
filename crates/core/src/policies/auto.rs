//! `auto`: the default policy of `outrider run` —
//! libprefetch's reorder-buffer batching fed by learned history, with
//! file-level pattern detection when there is no history or the program
//! leaves it.
//!
//! # How it decides
//!
//! * **History.** The history is an *access list*: the page ranges a
//!   previous run of the same application touched, each range once, in
//!   first-access order ([`AccessList`]), each with its physical position
//!   when known (live: FIEMAP at load; sim: the access's block number). It
//!   arrives through [`Policy::load_history`] (live: built by the driver
//!   from the history store after dropping changed or deleted files; sim:
//!   `--history DB` or the previous run of `--runs N`, see
//!   [`Policy::on_start`]). Every run records its own list, which
//!   [`Policy::save_history`] returns. Pages fault-around mapped for the
//!   program ([`Origin::Mapped`]) are recorded too, so a program start's
//!   library pages are replayed, not only the few that faulted; they
//!   match nothing and move nothing (a library's code is mapped in no
//!   fixed order relative to the program's reads: with them matched, a
//!   page of `rg`'s executable recorded late in run 1 and mapped early in
//!   run 2 moved the replay past most of its history).
//! * **Replay.** The list is fetched ahead of the program one batch (a
//!   libprefetch reorder buffer, §3.5: "traverse an access list one reorder
//!   buffer at a time, prefetching each buffer's data in disk order") at a
//!   time. A batch is the next entries of the list up to `batch_pages`
//!   pages, sorted by physical position (C-LOOK: one ascending sweep, §3.1,
//!   §4.5 "asks the kernel to prefetch, in file offset order"); entries of
//!   unknown position follow in (file, page) order. The first batch is
//!   `init_batch` and each next one doubles up to `batch` (the program's
//!   first reads are not held up behind a large sweep — unlike libprefetch,
//!   which blocked the application for a whole buffer, §4.5).
//!   Within a batch, ranges of a file at most `infill` apart (default
//!   8 KiB, two pages) are read as one request through the gap
//!   (libprefetch §3.3's infill, [`crate::mechanism::infill`]; on this machine's virtio disk a lone 4 KiB
//!   read costs about as much as reading two more pages in sequence, see
//!   `bench/results/directed.md`): a strided history is then read as the
//!   few large requests run 1's stride detection made, not one request
//!   per page. `infill=0` reads exactly the recorded pages.
//!   Of a file read forward sequentially (entries continuing each other
//!   page for page), the first `seq_limit` (4 MiB) is replayed; the
//!   kernel's own readahead reads the rest ahead of a sequential reader
//!   (replaying a 1 GiB sequential read whole only competed with that
//!   readahead; `seq_limit=0` replays it all). Reverse, strided and random
//!   histories never continue an entry, and files under 4 MiB are
//!   replayed whole.
//! * **Pacing.** The program's progress is the furthest list entry its
//!   reads matched (`pos`). A new batch is issued only while the pages
//!   requested beyond `pos` plus the batch stay within `ahead` — the bound
//!   on memory held for the program (set from the live memory budget).
//!   So the replay stays a bounded distance ahead and moves with the
//!   program, at the speed it consumes.
//! * **Resynchronisation.** A read matching an entry beyond what was
//!   issued (the program jumped ahead, e.g. skipped a phase) moves `pos`
//!   and the replay there; reads of earlier entries (re-reads) change
//!   nothing.
//! * **Departure and fallback.** Of the last `window` demand reads, if
//!   more than `depart × window` matched no entry, the program has
//!   departed from its history: replay stops. `rejoin` reads in a row
//!   matching rising entries resume it from there.
//! * **Without history or after departure** — and, during replay, for the
//!   reads the history does not know — the requests of the file-level
//!   pattern detector [`super::stride`] (forward, reverse, strided streams)
//!   pass through; it sees every read so its streams are current.
//!
//! Parameter defaults: `init_batch=1MiB`, `batch=64MiB`, `ahead=256MiB`
//! (live: at most half the memory budget), `window=64`, `depart=0.5`,
//! `rejoin=8`, `max_entries=1048576`, `max_pages=1048576` (recording bounds:
//! list entries, and pages remembered as seen — 4 GiB of data).

use crate::event::{Access, Op, Origin, Outcome, Target};
use crate::mechanism::{chunk, clook, infill};
use crate::policy::{BoxedPolicy, Feedback, Interests, Policy, Positions, RunInfo, Sink};
use crate::size::ByteSize;
use crate::{FileId, BLOCK_SIZE};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

use super::stride::{Stride, StrideParams};

/// Registered name.
pub const NAME: &str = "auto";
/// One-line description.
pub const SUMMARY: &str = "history replay in physically ordered reorder-buffer batches paced by the program's progress, stride detection without history";

/// Largest list entry in pages (recording coalesces contiguous pages up to
/// this: 1 MiB), so one entry never overshoots a batch by much.
pub const MAX_ENTRY_PAGES: u32 = 256;
/// Tick interval with history: the first batch is issued at the first tick
/// or the first read, whichever comes first (10 ms).
pub const TICK_NS: u64 = 10_000_000;
/// Entries examined backwards when matching a read against the list.
const MAX_MATCH_WALK: usize = 64;
pub use crate::event::NO_LBN;

crate::params! {
    /// `auto` parameters.
    pub struct AutoParams {
        /// first replay batch (reorder buffer), doubling per batch up to `batch`
        init_batch: ByteSize = ByteSize(1 << 20),
        /// largest replay batch (libprefetch reorder buffer)
        batch: ByteSize = ByteSize(64 << 20),
        /// most history data requested ahead of the program's progress (pacing bound)
        ahead: ByteSize = ByteSize(256 << 20),
        /// demand reads in the departure window
        window: u32 = 64,
        /// fraction of the window's reads matching no history entry that means departure
        depart: f64 = 0.5,
        /// reads in a row matching rising entries that resume replay after departure
        rejoin: u32 = 8,
        /// access-list entries recorded at most
        max_entries: u32 = 1 << 20,
        /// distinct pages remembered while recording at most
        max_pages: u32 = 1 << 20,
        /// run the stride detector (without history, after departure, for reads outside it)
        stride: bool = true,
        /// largest gap between two history ranges of a file in one batch read through as one request (libprefetch §3.3 infill; 0 = exactly the recorded pages)
        infill: ByteSize = ByteSize(8 << 10),
        /// most of a forward-sequential run of a file replayed; the rest is left to the kernel's readahead, which reads it ahead of a sequential reader anyway (0 = no limit)
        seq_limit: ByteSize = ByteSize(4 << 20),
    }
}

/// One access-list entry: `pages` pages of `file` from `page`, at block
/// `lbn` of device `dev` ([`NO_LBN`]: position unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// File.
    pub file: FileId,
    /// First page.
    pub page: u64,
    /// Pages.
    pub pages: u32,
    /// Device of the first page.
    pub dev: u32,
    /// Physical block of the first page, or [`NO_LBN`].
    pub lbn: u64,
}

/// Records an access list: each page once, in first-access order,
/// contiguous pages of a file coalesced up to [`MAX_ENTRY_PAGES`]. Bounded:
/// at most `max_entries` entries and `max_pages` remembered pages; beyond,
/// nothing more is recorded.
#[derive(Clone, Debug, Default)]
pub struct AccessList {
    entries: Vec<Entry>,
    seen: FxHashSet<(FileId, u64)>,
    max_entries: usize,
    max_pages: usize,
}

impl AccessList {
    /// An empty list with these bounds.
    pub fn new(max_entries: usize, max_pages: usize) -> Self {
        AccessList {
            max_entries,
            max_pages,
            ..AccessList::default()
        }
    }

    /// A read of `pages` pages of `file` from `page`, the first at block
    /// `lbn` of `dev` (or [`NO_LBN`]).
    pub fn note(&mut self, file: FileId, page: u64, pages: u64, dev: u32, lbn: u64) {
        for q in page..page.saturating_add(pages) {
            if self.seen.len() >= self.max_pages {
                return;
            }
            if !self.seen.insert((file, q)) {
                continue;
            }
            let qlbn = if lbn == NO_LBN {
                NO_LBN
            } else {
                lbn + (q - page)
            };
            if let Some(last) = self.entries.last_mut() {
                let contiguous_lbn = (last.lbn == NO_LBN && qlbn == NO_LBN)
                    || (last.lbn != NO_LBN && qlbn == last.lbn + u64::from(last.pages));
                if last.file == file
                    && last.page + u64::from(last.pages) == q
                    && last.pages < MAX_ENTRY_PAGES
                    && contiguous_lbn
                {
                    last.pages += 1;
                    continue;
                }
            }
            if self.entries.len() >= self.max_entries {
                return;
            }
            self.entries.push(Entry {
                file,
                page: q,
                pages: 1,
                dev,
                lbn: qlbn,
            });
        }
    }

    /// The entries so far.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Take the entries, leaving the list empty.
    pub fn take(&mut self) -> Vec<Entry> {
        self.seen.clear();
        std::mem::take(&mut self.entries)
    }

    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

const MAGIC: &[u8; 8] = b"ORAUTO1\0";
const RECORD: usize = 32;

/// Encode an access list as the `auto` history blob: the magic
/// `ORAUTO1\0`, then 32-byte little-endian records (file u64, page u64,
/// pages u32, dev u32, lbn u64).
pub fn encode_history(list: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + list.len() * RECORD);
    out.extend_from_slice(MAGIC);
    for e in list {
        out.extend_from_slice(&e.file.0.to_le_bytes());
        out.extend_from_slice(&e.page.to_le_bytes());
        out.extend_from_slice(&e.pages.to_le_bytes());
        out.extend_from_slice(&e.dev.to_le_bytes());
        out.extend_from_slice(&e.lbn.to_le_bytes());
    }
    out
}

/// Decode [`encode_history`]'s blob, saying what is wrong.
pub fn decode_history(b: &[u8]) -> Result<Vec<Entry>, String> {
    if b.len() < 8 || &b[..8] != MAGIC {
        return Err("not an auto access list (bad magic)".into());
    }
    let body = &b[8..];
    if !body.len().is_multiple_of(RECORD) {
        return Err(format!(
            "{} bytes of records is not a multiple of {RECORD}",
            body.len()
        ));
    }
    let u64_at = |c: &[u8], o: usize| u64::from_le_bytes(c[o..o + 8].try_into().expect("8"));
    let u32_at = |c: &[u8], o: usize| u32::from_le_bytes(c[o..o + 4].try_into().expect("4"));
    body.chunks_exact(RECORD)
        .enumerate()
        .map(|(i, c)| {
            let e = Entry {
                file: FileId(u64_at(c, 0)),
                page: u64_at(c, 8),
                pages: u32_at(c, 16),
                dev: u32_at(c, 20),
                lbn: u64_at(c, 24),
            };
            if e.pages == 0 || e.page.checked_add(u64::from(e.pages)).is_none() {
                return Err(format!("record {i}: bad page range"));
            }
            Ok(e)
        })
        .collect()
}

/// Counters of the replay (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoStats {
    /// Batches issued from history.
    pub batches: u64,
    /// Pages requested from history.
    pub replayed_pages: u64,
    /// Demand reads that matched a history entry.
    pub matched: u64,
    /// Demand reads that matched none.
    pub unmatched: u64,
    /// Jumps of the program beyond the issued part of the list.
    pub resyncs: u64,
    /// Times replay stopped because the program departed.
    pub departures: u64,
    /// Times replay resumed after a departure.
    pub rejoins: u64,
    /// Replays restarted from the program's position because the memory
    /// budget shrank.
    pub rewinds: u64,
}

/// The `auto` policy.
#[derive(Clone, Debug)]
pub struct Auto {
    p: AutoParams,
    hist: Vec<Entry>,
    /// cum[i] = pages of entries 0..i.
    cum: Vec<u64>,
    /// cont[i]: entry i continues, page for page, an earlier entry of its
    /// file (a forward-sequential run) already `seq_limit` long: not
    /// replayed.
    cont: Vec<bool>,
    /// Per file: (first page, end page, entry index), sorted by page.
    index: FxHashMap<FileId, Vec<(u64, u64, u32)>>,
    /// One past the furthest entry the program's reads matched.
    pos: usize,
    /// Entries 0..issued have been requested (or skipped).
    issued: usize,
    batch_pages: u64,
    /// The live memory budget in pages, once told
    /// ([`Policy::on_memory_budget`]): `ahead` is at most half of it and a
    /// batch at most a quarter.
    budget_pages: Option<u64>,
    replaying: bool,
    recent: VecDeque<bool>,
    recent_unmatched: u32,
    rejoin_run: u32,
    last_match: usize,
    stride: Stride,
    scratch: Vec<crate::PrefetchRequest>,
    record: AccessList,
    /// Counters since the run started.
    pub stats: AutoStats,
}

impl Auto {
    /// Build from parameters.
    pub fn new(p: AutoParams) -> Self {
        let record = AccessList::new(p.max_entries as usize, p.max_pages as usize);
        let mut a = Auto {
            stride: Stride::new(StrideParams::default()),
            hist: Vec::new(),
            cum: vec![0],
            cont: Vec::new(),
            index: FxHashMap::default(),
            pos: 0,
            issued: 0,
            batch_pages: 0,
            budget_pages: None,
            replaying: false,
            recent: VecDeque::new(),
            recent_unmatched: 0,
            rejoin_run: 0,
            last_match: 0,
            scratch: Vec::new(),
            record,
            stats: AutoStats::default(),
            p,
        };
        a.reset_run();
        a
    }

    /// Replace the history with `list` (first-access order).
    pub fn set_history(&mut self, list: Vec<Entry>) {
        self.hist = list;
        self.cum = Vec::with_capacity(self.hist.len() + 1);
        self.cum.push(0);
        let mut total = 0u64;
        self.index.clear();
        self.cont = Vec::with_capacity(self.hist.len());
        // Per file: where its last entry ended, and the pages of the
        // forward-sequential run that entry belongs to.
        let mut runs: FxHashMap<FileId, (u64, u64)> = FxHashMap::default();
        let limit = self.p.seq_limit.0 / BLOCK_SIZE;
        for (i, e) in self.hist.iter().enumerate() {
            total += u64::from(e.pages);
            self.cum.push(total);
            let end = e.page + u64::from(e.pages);
            let run = match runs.get(&e.file) {
                Some(&(last_end, len)) if last_end == e.page => len,
                _ => 0,
            };
            self.cont.push(limit > 0 && run >= limit);
            runs.insert(e.file, (end, run + u64::from(e.pages)));
            self.index.entry(e.file).or_default().push((
                e.page,
                e.page + u64::from(e.pages),
                i as u32,
            ));
        }
        for v in self.index.values_mut() {
            v.sort_unstable();
        }
        self.reset_run();
    }

    /// The history in use.
    pub fn history(&self) -> &[Entry] {
        &self.hist
    }

    /// Is history being replayed (not departed, history present)?
    pub fn replaying(&self) -> bool {
        self.replaying
    }

    /// Pages requested from history beyond the program's progress.
    pub fn outstanding_pages(&self) -> u64 {
        self.cum[self.issued] - self.cum[self.pos.min(self.issued)]
    }

    fn reset_run(&mut self) {
        self.pos = 0;
        self.issued = 0;
        self.batch_pages = (self.p.init_batch.0 / BLOCK_SIZE).max(1);
        self.replaying = !self.hist.is_empty();
        self.recent.clear();
        self.recent_unmatched = 0;
        self.rejoin_run = 0;
        self.last_match = 0;
        self.stats = AutoStats::default();
    }

    /// The furthest entry overlapping pages `page..page+n` of `file`.
    fn lookup(&self, file: FileId, page: u64, n: u64) -> Option<usize> {
        let v = self.index.get(&file)?;
        let end = page + n;
        let mut i = v.partition_point(|r| r.0 < end);
        let mut best: Option<usize> = None;
        let mut walked = 0;
        while i > 0 && walked < MAX_MATCH_WALK {
            i -= 1;
            walked += 1;
            let (s, e, idx) = v[i];
            if e <= page {
                break;
            }
            if s < end {
                best = Some(best.map_or(idx as usize, |b: usize| b.max(idx as usize)));
            }
        }
        best
    }

    fn note_window(&mut self, matched: bool) {
        self.recent.push_back(matched);
        if !matched {
            self.recent_unmatched += 1;
        }
        if self.recent.len() > self.p.window.max(1) as usize {
            if let Some(false) = self.recent.pop_front() {
                self.recent_unmatched -= 1;
            }
        }
    }

    fn departed(&self) -> bool {
        f64::from(self.recent_unmatched) > self.p.depart * f64::from(self.p.window.max(1))
    }

    /// Issue batches while the pacing bound allows.
    fn pump(&mut self, sink: &mut Sink<'_>) {
        let mut ahead = (self.p.ahead.0 / BLOCK_SIZE).max(1);
        let mut max_batch = (self.p.batch.0 / BLOCK_SIZE).max(1);
        if let Some(b) = self.budget_pages {
            ahead = ahead.min(b / 2).max(1);
            max_batch = max_batch.min(b / 4).max(1);
        }
        if self.issued < self.pos {
            self.issued = self.pos;
        }
        while self.replaying && self.issued < self.hist.len() {
            let b = self.batch_pages.min(max_batch).min(ahead);
            if self.outstanding_pages() + b > ahead {
                break;
            }
            let start = self.issued;
            let mut pages = 0u64;
            while self.issued < self.hist.len() {
                let n = u64::from(self.hist[self.issued].pages);
                if pages > 0 && pages + n > b {
                    break;
                }
                pages += n;
                self.issued += 1;
            }
            let mut batch: Vec<Entry> = self.hist[start..self.issued]
                .iter()
                .zip(&self.cont[start..self.issued])
                .filter(|(_, c)| !**c)
                .map(|(e, _)| *e)
                .collect();
            // Physical (C-LOOK) order from the device's start (the head
            // is unknown); unknown positions after, by file and page.
            clook::order(
                &mut batch,
                |e| (e.lbn == NO_LBN, e.dev, e.lbn, e.file, e.page),
                (false, 0, 0, FileId(0), 0),
            );
            let w = sink.new_window();
            // Ranges of a file at most `infill` apart: one request reads
            // through the gap.
            let pieces = batch.iter().map(|e| infill::Span {
                key: e.file,
                start: e.page,
                end: e.page + u64::from(e.pages),
            });
            let limit = infill::limit_units(self.p.infill);
            infill::merge(
                pieces,
                limit,
                |_, _, _| true,
                |r| emit(sink, r.key, r.start, r.end - r.start, w),
            );
            self.stats.batches += 1;
            self.stats.replayed_pages += pages;
            self.batch_pages = (self.batch_pages * 2).min(max_batch);
        }
    }
}

fn emit(sink: &mut Sink<'_>, file: FileId, page: u64, pages: u64, w: crate::WindowId) {
    for (at, n) in chunk::ascending(page, page + pages, u64::from(u32::MAX)) {
        sink.prefetch(Target::File { file, page: at }, n as u32, w);
    }
}

impl Policy for Auto {
    fn name(&self) -> &str {
        NAME
    }

    fn on_access(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        let recorded = matches!(a.origin, Origin::Demand | Origin::Mapped);
        if a.op != Op::Read || !recorded {
            return;
        }
        let n = u64::from(a.blocks.max(1));
        self.record.note(a.file, a.page, n, a.dev, a.lbn);
        if a.origin == Origin::Mapped {
            return;
        }
        let m = if self.hist.is_empty() {
            None
        } else {
            self.lookup(a.file, a.page, n)
        };
        if !self.hist.is_empty() {
            match m {
                Some(_) => self.stats.matched += 1,
                None => self.stats.unmatched += 1,
            }
            self.note_window(m.is_some());
        }
        if self.replaying {
            if let Some(i) = m {
                if i >= self.issued && i > self.pos {
                    self.stats.resyncs += 1;
                }
                self.pos = self.pos.max(i + 1);
                self.last_match = self.last_match.max(i);
            }
            if self.departed() {
                self.replaying = false;
                self.stats.departures += 1;
                self.rejoin_run = 0;
            } else {
                self.pump(sink);
            }
        } else if !self.hist.is_empty() {
            match m {
                Some(i) if i > self.last_match || self.rejoin_run == 0 => {
                    self.rejoin_run += 1;
                    self.last_match = i;
                }
                _ => self.rejoin_run = 0,
            }
            if self.rejoin_run >= self.p.rejoin.max(1) {
                self.replaying = true;
                self.stats.rejoins += 1;
                self.pos = self.last_match + 1;
                self.recent.clear();
                self.recent_unmatched = 0;
                self.rejoin_run = 0;
                self.pump(sink);
            }
        }
        if self.p.stride {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            {
                let mut sub = sink.redirect(&mut scratch);
                self.stride.on_access(a, o, &mut sub);
            }
            if !self.replaying || m.is_none() {
                for r in &scratch {
                    sink.prefetch(r.target, r.blocks, r.window);
                }
            }
            self.scratch = scratch;
        }
    }

    /// Ticks also when the program is idle: the first batch before its
    /// first read, and more once a larger budget allows (the pacing bound
    /// holds either way).
    fn on_feedback(&mut self, f: &Feedback<'_>, sink: &mut Sink<'_>) {
        if let (Feedback::Tick(_), true) = (f, self.replaying) {
            self.pump(sink);
        }
    }

    fn interests(&self) -> Interests {
        // Positions only order a replayed batch (C-LOOK): not worth
        // opening every file the program reads on run 1 (live) to know them.
        Interests {
            tick_interval_ns: (!self.hist.is_empty()).then_some(TICK_NS),
            positions: Positions::WhenKnown,
            ..Interests::ACCESSES_ONLY
        }
    }

    /// A new run: what the previous run recorded is the next one's history
    /// (`--runs N`). A budget smaller than before (the program moved into
    /// a smaller cgroup, and the driver dropped what was prefetched beyond
    /// the program's progress): bound the replay by it and replay again
    /// from the program's position, starting with a small batch. The
    /// requests go out at the next read or tick.
    fn on_start(&mut self, info: &RunInfo<'_>) {
        if !info.budget_changed {
            if info.run > 0 && !self.record.is_empty() {
                let list = self.record.take();
                self.set_history(list);
            }
            self.stride.on_start(info);
            self.reset_run();
        }
        if let Some(bytes) = info.memory_budget_bytes {
            let pages = (bytes / BLOCK_SIZE).max(1);
            let shrank = self.budget_pages.is_some_and(|b| pages < b);
            self.budget_pages = Some(pages);
            if shrank && self.issued > self.pos {
                self.issued = self.pos;
                self.batch_pages = (self.p.init_batch.0 / BLOCK_SIZE).max(1);
                self.stats.rewinds += 1;
            }
        }
    }

    fn save_history(&self) -> Option<Vec<u8>> {
        if self.record.is_empty() {
            Some(encode_history(&self.hist))
        } else {
            Some(encode_history(self.record.entries()))
        }
    }

    fn load_history(&mut self, data: &[u8]) -> Result<(), String> {
        let list = decode_history(data)?;
        self.set_history(list);
        Ok(())
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.hist.capacity() * std::mem::size_of::<Entry>()
            + self.cum.capacity() * 8
            + self.hist.len() * 24
            + self.record.entries.capacity() * std::mem::size_of::<Entry>()
            + self.record.seen.capacity() * 24
            + self.stride.memory_bytes()
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests;
