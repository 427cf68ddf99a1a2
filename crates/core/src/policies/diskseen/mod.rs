//! `diskseen`: disk-level sequence- and history-aware prefetching
//! (Jiang, Ding, Xu, Davis, "A Prefetching Scheme Exploiting both Data
//! Layout and Access History on Disk", ACM TOS 9(3), 2013).
//!
//! # What it keeps
//!
//! - The **block table** (§2.2, Fig. 1; [`table`]): per block up to four
//!   access timestamps and the resident/busy/prefetched status bits, in a
//!   512-way page-table-like tree bounded by `table_mib` (old history is
//!   purged first) and cleared progressively when the 31-bit timestamp
//!   space is 7/8 used (§3.1).
//! - **Timestamps** (§3.1) from an access counter incremented per block
//!   transferred into the caching area on demand, recorded when the demand
//!   access *completes* ([`crate::Policy::on_access_done`]): a hit in the
//!   prefetching area or the end of the disk read. Re-hits in the caching
//!   area are not stamped.
//! - **Prefetch streams** (§3.3.2–3.3.3; [`stream`]), each with a current
//!   and a readahead window, indexed by block.
//! - **Current trails** (§3.4; [`trail`]) and per-process **quality
//!   control** (§3.5; [`quality`]).
//!
//! # One table for every program (§3.1, §3.4)
//!
//! The paper's block table lives in the kernel for the whole system, so a
//! trail recorded while one program read some blocks is followed when any
//! program reads them later. Here the table is saved in the history store
//! when a process ends and loaded when the next one starts; with `shared`
//! on (the default) it is the store's one table, not an application's:
//! each save merges this process's new stamps into what is stored
//! (`history.rs`), so two processes ending in any order both leave their
//! trails. `shared=off` keeps a table per application and policy spec
//! (the behaviour before, for comparison).
//!
//! # What triggers prefetching
//!
//! When a demand access of block B completes and B is in no stream:
//! 1. the current trail through B is extended (or a new one started); once
//!    it has `match_blocks` (4) blocks echoed by history trails in the same
//!    order, a *history stream* starts: its windows are the blocks the
//!    matched trails visited next, within ±`s` (128) blocks, found by
//!    timestamp and read in LBN order, `hist_min`..`hist_max` (8..64)
//!    blocks per window (§3.4.3). This is how reversed and strided
//!    patterns get prefetched on a second run.
//! 2. otherwise, if B is the `k`-th (8th) of contiguous blocks whose most
//!    recent timestamps decrease going backwards with gaps below T
//!    (1/64 of buffer memory: 2048 for 512 MiB of 4 KiB blocks), a
//!    *sequence stream* starts with two 8-block windows right after B
//!    (§3.3.1–3.3.2).
//!
//! A demand access that first hits a stream's readahead window opens the
//! next one with `2f` blocks (f = hits in the current window), at most
//! `max` (32; history `hist_max`), cancelling the stream when `2f < min`.
//! Resident or busy blocks are left out of every read (windows shrink over
//! cached data, §3.3.2).
//!
//! # Disk arrays (§3.7)
//!
//! Every stream is a trail with its own scheduling group; its requests
//! carry the group ([`crate::Policy::schedule_group`]) and a coordinated
//! `raid0` device model serves one group at a time (`coordinate=off`
//! tags nothing, for comparison).
//!
//! # Departures from the paper
//!
//! - T is 1/64 of the buffer memory the driver reports
//!   ([`crate::Policy::on_start`]'s `cache_blocks`; 2048 for the paper's 512 MB), or
//!   the paper's 2048 when no driver reports it; `t=N` fixes it. The
//!   simulator reports its cache size; the live controller reports, once
//!   at start, MemAvailable capped by the program's memory cgroup.
//! - A window's mis-prefetch outcome is known when its last read block is
//!   evicted (the driver reports use and window per evicted block). Windows
//!   of a process whose history prefetching is disabled are *virtual*:
//!   tracked but not read, and count as mis-prefetched if no block of
//!   theirs was accessed while the stream held them.
//! - When a history extension finds fewer than `hist_min` blocks the stream
//!   keeps its current window and stops; later accesses fall back to
//!   sequence detection (§3.4.3 "if history-aware prefetching aborts,
//!   sequence-based prefetching is attempted").
//! - Windows are read as *aggregates*: `infill` (default 8 KiB = 2 blocks)
//!   holes between the blocks a window wants are read through
//!   ([`crate::mechanism::infill`], libprefetch §3.3's infill), so a
//!   strided history window is one request rather than one per block.
//!   §4.3 says DiskSeen "prefetches blocks in large aggregates and requests
//!   them in ascending order of their LBNs, and each aggregate can be
//!   prefetched in one disk rotation": a real disk serves a window's queued
//!   4 KiB requests in one pass of the head; our HDD model charges a 0.1 ms
//!   command overhead per non-contiguous request, and below ~10 KiB a gap
//!   costs less to read than to skip. `infill=0` is the literal reading of
//!   §3.3.2/§3.4.3 (exactly the chosen blocks, one request per contiguous
//!   run). The holes read through include blocks the §3.2 screen dropped
//!   from a file-level window (they cost less than a second command).
//! - Bounds the paper leaves implicit: at most `streams` streams (the
//!   least recently moved is dropped) and `trails` current trails.
//! - The system-wide table is one per history store, not per machine:
//!   root's store and each user's are separate files, so nothing about one
//!   user's blocks (which blocks, in what order, when) reaches another
//!   user's process. Between processes the table is on disk, not in
//!   memory: a process sees the trails of those that ended before it
//!   started, not of those running beside it.

mod history;
mod hooks;
mod issue;
mod lead;
pub mod quality;
pub mod stream;
pub mod table;
pub mod trail;

#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;

use crate::event::{Access, WindowId};
use crate::policy::Sink;
use quality::{QcParams, Quality};
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::collections::VecDeque;
use stream::{next_window_size, Kind, Stream, Window};
use table::{BlockTable, BUSY, CACHED, RESIDENT};
use trail::{extend, Matched, Reach, Trails};

/// Registered name.
pub const NAME: &str = "diskseen";
/// One-line description.
pub const SUMMARY: &str =
    "DiskSeen disk-level sequence + history-aware prefetching (Jiang et al., ACM TOS 2013)";

/// Bound on prefetch windows awaiting their outcome; the oldest beyond it
/// is dropped unresolved.
pub const MAX_PENDING_WINDOWS: usize = 1 << 16;

/// Streams remembered per 64-block chunk of the stream index.
const OWNERS_PER_CHUNK: usize = 4;
/// Bound on chunks in the stream index; beyond it the index is rebuilt
/// from the live streams.
const MAX_OWNER_CHUNKS: usize = 1 << 16;
const NO_SLOT: u32 = u32::MAX;

/// How often (in stamped blocks) the table's size is checked against
/// `table_mib`.
const PURGE_CHECK_BLOCKS: u64 = 4096;

/// §3.3.1: T is this fraction of the buffer memory in blocks ("1/64 of the
/// size of the total system buffer memory").
pub const T_MEMORY_DIVISOR: u64 = 64;

/// T when `t=0` (auto) and the driver has not told the buffer memory: the
/// paper's 2048, for its 512 MB machine with 4 KiB blocks.
pub const T_UNKNOWN_MEMORY: u64 = 2048;

crate::params! {
    /// DiskSeen parameters (paper defaults).
    pub struct DiskSeenParams {
        /// sequence detection: contiguous blocks with decreasing timestamps that start a sequence stream (section 3.3.1: K=8)
        k: u32 = 8,
        /// timestamp gap threshold T in blocks; 0 = 1/64 of the buffer memory the driver reports (section 3.3.1: 2048 for 512 MB of 4 KiB blocks), 2048 if it reports none
        t: u64 = 0,
        /// smallest sequence/history window; 2f below it cancels a stream (section 3.3.2: 8)
        min: u32 = 8,
        /// largest sequence window (section 3.3.2: 32)
        max: u32 = 32,
        /// first history window size (section 3.4.3: min = 8)
        hist_min: u32 = 8,
        /// largest history window (section 3.4.3: 64)
        hist_max: u32 = 64,
        /// trail extent half-width S in blocks (section 3.4.1: 128)
        s: u64 = 128,
        /// blocks of the current trail matched by history before history prefetching starts (section 3.4.3: 4)
        match_blocks: u32 = 4,
        /// history-aware prefetching (section 3.4); off = the sequence-only variant
        history: bool = true,
        /// quality control: recent windows per process (section 3.5: 512)
        qc_windows: u32 = 512,
        /// quality control: disable history prefetching above this mis-prefetched ratio (section 3.5: 0.5)
        qc_off: f64 = 0.5,
        /// quality control: resume below this ratio (section 3.5: 0.3)
        qc_on: f64 = 0.3,
        /// read a window as aggregates: holes of at most this size between blocks to prefetch are read through, one request per aggregate (section 4.3: aggregates read in one rotation; 2 blocks; 0 = exactly the chosen blocks, one request per contiguous run)
        infill: crate::size::ByteSize = crate::size::ByteSize(8 << 10),
        /// disk-array coordination: tag requests with their trail's scheduling group (section 3.7)
        coordinate: bool = true,
        /// block-table memory bound in MiB (about 4 MiB per GiB of tracked blocks, section 3.1); oldest history is purged beyond it
        table_mib: u64 = 256,
        /// concurrent prefetch streams kept (not in the paper; the least recently moved is dropped)
        streams: u32 = 256,
        /// current trails tracked at once (not in the paper)
        trails: u32 = 64,
        /// one block table for every program of the history store, as the kernel's one table (sections 3.1, 3.4): a trail one program left is followed when another reads those blocks; off = a table per application and policy spec
        shared: bool = true,
    }
    validate = check_windows;
}

/// Window bounds that contradict each other are refused rather than
/// silently clamped (`min=64,max=8` would otherwise run as `max=64`).
fn check_windows(p: &DiskSeenParams) -> Result<(), String> {
    let cap = stream::MAX_WINDOW_BLOCKS as u64;
    for (lo, hi, lo_name, hi_name) in [
        (p.min, p.max, "min", "max"),
        (p.hist_min, p.hist_max, "hist_min", "hist_max"),
    ] {
        if lo > hi {
            return Err(format!(
                "{lo_name}={lo} is above {hi_name}={hi}; expected {lo_name} <= {hi_name}"
            ));
        }
        if u64::from(hi) > cap {
            return Err(format!(
                "{hi_name}={hi} is above the largest window, {cap} blocks"
            ));
        }
    }
    if p.qc_on > p.qc_off {
        return Err(format!(
            "qc_on={} is above qc_off={}; quality control resumes below qc_on after stopping above qc_off",
            p.qc_on, p.qc_off
        ));
    }
    Ok(())
}

/// Counters of what the policy did (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sequence streams started (§3.3.1).
    pub sequence_streams: u64,
    /// History streams started (§3.4.3).
    pub history_streams: u64,
    /// History activations whose first window was below `hist_min`.
    pub history_aborts: u64,
    /// Streams cancelled because 2f < min.
    pub cancelled: u64,
    /// Upper-level candidates dropped as prefetched-but-evicted-unused (§3.2).
    pub screened_unused: u64,
    /// Upper-level candidate blocks skipped as resident or busy (§3.2).
    pub screened_resident: u64,
    /// Table purges (§2.2) and progressive clearings (§3.1).
    pub purges: u64,
    /// Windows whose read came after the demand access (each raised the
    /// lead, see `lead.rs`).
    pub late_windows: u64,
}

/// Who a window is for.
#[derive(Clone, Copy, Debug)]
struct Tag {
    dev: u32,
    pid: crate::event::Pid,
    group: u32,
}

#[derive(Clone, Copy, Debug)]
struct WinRec {
    pid: crate::event::Pid,
    left: u32,
    used: bool,
    group: u32,
    /// A block of it was evicted before use.
    evicted_unused: bool,
}

/// The DiskSeen policy.
#[derive(Clone, Debug)]
pub struct DiskSeen {
    p: DiskSeenParams,
    /// T in effect: `p.t`, or 1/64 of the buffer memory when `p.t` is 0.
    t: u64,
    table: BlockTable,
    counter: u64,
    streams: Vec<Option<Stream>>,
    /// How many of `streams` are `None` (lets [`DiskSeen::alloc_slot`]
    /// skip the search when there is none).
    vacant: usize,
    /// Reused buffer for the blocks of a window to read.
    scratch: Vec<u64>,
    /// Which streams have windows in each 64-block chunk (§3.3.3's
    /// stream index; verified against the windows on lookup).
    owner: FxHashMap<u64, [u32; OWNERS_PER_CHUNK]>,
    /// The last chunk looked up in `owner` and its entry (most demand
    /// blocks follow their neighbour into the same chunk).
    owner_last: Cell<(u64, [u32; OWNERS_PER_CHUNK])>,
    trails: Trails,
    windows: FxHashMap<u64, WinRec>,
    window_order: VecDeque<u64>,
    qc: Quality,
    next_group: u32,
    purge_cut: u64,
    /// The counter of the shared table loaded (0: none), so a save tells
    /// this process's stamps (after it) from the store's.
    loaded_counter: u64,
    stats: Stats,
    /// Windows each stream keeps read ahead of the one in use: 1 (the
    /// readahead window, §3.3.2) until prefetches come late (`lead.rs`).
    lead_windows: u32,
    /// The last window whose late read raised `lead_windows`.
    late_window: Option<u64>,
}

/// §2.2's purge: while `table` holds more than `table_mib` MiB, drop the
/// older half of the timestamps in `[purge_cut, counter]` (raising
/// `purge_cut`). Returns the purges made.
fn purge_to_budget(
    table: &mut BlockTable,
    table_mib: u64,
    purge_cut: &mut u64,
    counter: u64,
) -> u64 {
    let budget = (table_mib as usize) << 20;
    let mut purges = 0;
    while table.memory_bytes() > budget && *purge_cut < counter {
        let cut = *purge_cut + (counter - *purge_cut).div_ceil(2);
        table.purge_before(cut);
        *purge_cut = cut;
        purges += 1;
    }
    purges
}

#[inline]
fn key(dev: u32, lbn: u64) -> u64 {
    (u64::from(dev) << 40) | lbn
}

impl DiskSeen {
    /// Build from parameters.
    pub fn new(p: DiskSeenParams) -> Self {
        let mut p = p;
        p.k = p.k.max(1);
        p.min = p.min.max(1);
        p.max = p.max.clamp(p.min, stream::MAX_WINDOW_BLOCKS as u32);
        p.hist_min = p.hist_min.max(1);
        p.hist_max = p
            .hist_max
            .clamp(p.hist_min, stream::MAX_WINDOW_BLOCKS as u32);
        p.match_blocks = p.match_blocks.max(2);
        let qc = Quality::new(QcParams {
            windows: p.qc_windows.max(1) as usize,
            off: p.qc_off,
            on: p.qc_on,
        });
        DiskSeen {
            t: if p.t == 0 { T_UNKNOWN_MEMORY } else { p.t },
            trails: Trails::new(p.trails.max(1) as usize),
            p,
            table: BlockTable::new(),
            counter: 0,
            streams: Vec::new(),
            vacant: 0,
            scratch: Vec::new(),
            owner: FxHashMap::default(),
            owner_last: Cell::new((u64::MAX, [NO_SLOT; OWNERS_PER_CHUNK])),
            windows: FxHashMap::default(),
            window_order: VecDeque::new(),
            qc,
            next_group: 0,
            purge_cut: 0,
            loaded_counter: 0,
            stats: Stats::default(),
            lead_windows: 1,
            late_window: None,
        }
    }

    fn reach(&self) -> Reach {
        Reach {
            t: self.t,
            s: self.p.s,
        }
    }

    /// The block table (read-only, for tests and reports).
    pub fn table(&self) -> &BlockTable {
        &self.table
    }

    /// What the policy did so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The quality-control state.
    pub fn quality(&self) -> &Quality {
        &self.qc
    }

    /// The timestamp gap threshold T in effect (§3.3.1).
    pub fn gap_threshold(&self) -> u64 {
        self.t
    }

    /// Derive T from the buffer memory (`cache_blocks` 4 KiB blocks) unless
    /// the `t` parameter set it: 1/64 of it, at least 1 (§3.3.1).
    pub fn set_memory_blocks(&mut self, cache_blocks: u64) {
        if self.p.t == 0 {
            self.t = (cache_blocks / T_MEMORY_DIVISOR).max(1);
        }
    }

    /// The access counter (last timestamp given).
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Live streams.
    pub fn streams(&self) -> impl Iterator<Item = &Stream> {
        self.streams.iter().flatten()
    }

    /// §3.3.1: is `lbn` the K-th of contiguous blocks whose most recent
    /// timestamps decrease going backwards, each gap below T?
    pub fn is_sequence_end(&self, dev: u32, lbn: u64) -> bool {
        let mut later = self.table.newest(dev, lbn);
        if later == 0 || lbn + 1 < u64::from(self.p.k) {
            return false;
        }
        for i in 1..u64::from(self.p.k) {
            let ts = self.table.newest(dev, lbn - i);
            if ts == 0 || ts >= later || later - ts >= self.t {
                return false;
            }
            later = ts;
        }
        true
    }

    /// A slot for a new stream, which the caller fills: the lowest vacant
    /// one, else a new one, else the least recently moved stream's.
    fn alloc_slot(&mut self) -> usize {
        if self.vacant > 0 {
            if let Some(i) = self.streams.iter().position(Option::is_none) {
                self.vacant -= 1;
                return i;
            }
        }
        if self.streams.len() < self.p.streams.max(1) as usize {
            self.streams.push(None);
            return self.streams.len() - 1;
        }
        let oldest = self
            .streams
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.as_ref().map_or(0, |s| s.last_ts))
            .map(|(i, _)| i)
            .expect("streams is not empty");
        self.drop_stream(oldest);
        self.vacant -= 1;
        oldest
    }

    fn drop_stream(&mut self, slot: usize) {
        if let Some(mut s) = self.streams[slot].take() {
            self.vacant += 1;
            let (cur, ra) = (std::mem::take(&mut s.cur), std::mem::take(&mut s.ra));
            self.retire(slot, &s, cur);
            self.retire(slot, &s, ra);
            for w in std::mem::take(&mut s.beyond) {
                self.retire(slot, &s, w);
            }
        }
    }

    /// A window leaves its stream: unindex its blocks; a virtual window's
    /// outcome goes to quality control now (a read one's at eviction).
    fn retire(&mut self, slot: usize, s: &Stream, w: Window) {
        let _ = slot; // stale index entries are filtered on lookup
        if w.virtual_only && !w.blocks.is_empty() {
            self.qc.record(s.pid, w.hits() == 0);
        }
    }

    fn new_group(&mut self) -> u32 {
        self.next_group = self.next_group.wrapping_add(1).max(1);
        self.next_group
    }

    /// §3.3.2: a sequence ends at `lbn`; prefetch `min` blocks after it into
    /// the current window and the next `min` into the readahead window.
    fn start_sequence(&mut self, dev: u32, lbn: u64, pid: crate::event::Pid, sink: &mut Sink<'_>) {
        let slot = self.alloc_slot();
        let group = self.new_group();
        let n = u64::from(self.p.min);
        let cur = self.open_window(
            slot,
            Tag { dev, pid, group },
            (lbn + 1..lbn + 1 + n).collect(),
            false,
            sink,
        );
        let ra = self.open_window(
            slot,
            Tag { dev, pid, group },
            (lbn + 1 + n..lbn + 1 + 2 * n).collect(),
            false,
            sink,
        );
        self.streams[slot] = Some(Stream {
            dev,
            pid,
            kind: Kind::Sequence {
                next: lbn + 1 + 2 * n,
            },
            cur,
            ra,
            beyond: VecDeque::new(),
            last_ts: self.counter,
            group,
        });
        self.stats.sequence_streams += 1;
        self.fill_lead(slot, sink);
    }

    /// §3.4.3: the next history window from `center` with `cursors`.
    fn history_blocks(
        &self,
        dev: u32,
        center: &mut u64,
        cursors: &mut [u64],
        size: u32,
        before: u64,
    ) -> Vec<u64> {
        let found = extend(
            &self.table,
            dev,
            *center,
            cursors,
            self.reach(),
            size as usize,
            before,
        );
        if let Some(&last) = found.last() {
            *center = last;
        }
        found
    }

    /// Start a history stream at `lbn`; false when the first window would
    /// be smaller than `hist_min` (history prefetching aborts).
    fn start_history(
        &mut self,
        dev: u32,
        lbn: u64,
        m: Matched,
        pid: crate::event::Pid,
        sink: &mut Sink<'_>,
    ) -> bool {
        let mut cursors = m.cursors;
        let mut center = lbn;
        let min = self.p.hist_min;
        let first = self.history_blocks(dev, &mut center, &mut cursors, min, m.before);
        if first.len() < min as usize {
            self.stats.history_aborts += 1;
            return false;
        }
        let second = self.history_blocks(dev, &mut center, &mut cursors, min, m.before);
        let second = if second.len() < min as usize {
            Vec::new()
        } else {
            second
        };
        let virtual_only = !self.qc.history_enabled(pid);
        let slot = self.alloc_slot();
        let group = self.new_group();
        let cur = self.open_window(slot, Tag { dev, pid, group }, first, virtual_only, sink);
        let ra = self.open_window(slot, Tag { dev, pid, group }, second, virtual_only, sink);
        self.streams[slot] = Some(Stream {
            dev,
            pid,
            kind: Kind::History {
                cursors,
                center,
                before: m.before,
            },
            cur,
            ra,
            beyond: VecDeque::new(),
            last_ts: self.counter,
            group,
        });
        self.stats.history_streams += 1;
        self.fill_lead(slot, sink);
        true
    }

    /// A high-level demand request touched `lbn`, which stream `slot`
    /// holds: count the hit; the first hit in the readahead window moves
    /// the stream on (§3.3.2).
    fn hit(&mut self, slot: usize, lbn: u64, sink: &mut Sink<'_>) {
        let counter = self.counter;
        let Some(s) = self.streams[slot].as_mut() else {
            return;
        };
        s.last_ts = counter;
        if let Some(i) = s.cur.position(lbn) {
            s.cur.hit_mask |= 1 << i;
            return;
        }
        let Some(i) = s.ra.position(lbn) else {
            return;
        };
        let first = s.ra.hit_mask == 0;
        s.ra.hit_mask |= 1 << i;
        if first {
            self.advance(slot, sink);
        }
    }

    fn advance(&mut self, slot: usize, sink: &mut Sink<'_>) {
        let mut s = self.streams[slot].take().expect("advancing a live stream");
        let (min, max) = match s.kind {
            Kind::Sequence { .. } => (self.p.min, self.p.max),
            Kind::History { .. } => (self.p.min, self.p.hist_max),
        };
        let Some(size) = next_window_size(s.cur.hits(), min, max) else {
            self.stats.cancelled += 1;
            self.streams[slot] = Some(s);
            self.drop_stream(slot);
            return;
        };
        let old = std::mem::take(&mut s.cur);
        self.retire(slot, &s, old);
        s.cur = std::mem::take(&mut s.ra);
        // The new window goes at the far end: it is the readahead window,
        // or the last of those beyond it (which move up by one).
        let new = self.next_window(slot, &mut s, size, min, sink);
        match s.beyond.pop_front() {
            Some(next) => {
                s.ra = next;
                s.beyond.push_back(new);
            }
            None => s.ra = new,
        }
        self.streams[slot] = Some(s);
    }

    /// Keep the table within `table_mib` and its timestamps within 31 bits.
    fn maintain_table(&mut self) {
        if self.table.needs_clearing(self.counter) {
            let cut = self.table.clear_progressively(self.counter);
            self.purge_cut = self.purge_cut.max(cut);
            self.stats.purges += 1;
        }
        if self.counter.is_multiple_of(PURGE_CHECK_BLOCKS) {
            let purges = purge_to_budget(
                &mut self.table,
                self.p.table_mib,
                &mut self.purge_cut,
                self.counter,
            );
            self.stats.purges += purges;
        }
    }

    /// One demand block completed (§3.1): stamp it unless it was already in
    /// the caching area, then look for a trail match or a sequence.
    fn block_done(&mut self, a: &Access, lbn: u64, sink: &mut Sink<'_>) {
        let dev = a.dev;
        let ts = self.counter + 1;
        let before = self
            .table
            .stamp_cached(dev, lbn, ts, RESIDENT | CACHED, BUSY);
        if before & CACHED != 0 {
            return;
        }
        self.counter = ts;
        self.maintain_table();
        if self.owner_of(dev, lbn).is_some() {
            return;
        }
        if self.p.history {
            let m =
                self.trails
                    .observe(&self.table, dev, lbn, ts, self.reach(), self.p.match_blocks);
            if let Some(m) = m {
                if self.start_history(dev, lbn, m, a.pid, sink) {
                    self.trails.hand_over();
                    return;
                }
                self.trails.aborted();
            }
        }
        if self.is_sequence_end(dev, lbn) {
            self.start_sequence(dev, lbn, a.pid, sink);
        }
    }

    /// The scheduling group of a window's requests (§3.7), 0 = none.
    pub fn group_of(&self, window: WindowId) -> u32 {
        if !self.p.coordinate {
            return 0;
        }
        self.windows.get(&window.0).map_or(0, |w| w.group)
    }
}
