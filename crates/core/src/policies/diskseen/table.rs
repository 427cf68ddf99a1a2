//! DiskSeen §2.2 (Fig. 1) and §3.1: the block table.
//!
//! A multi-level table indexed by segments of the LBN, like a page table:
//! two directory levels and one leaf level of [`ENTRIES`] = 512 entries per
//! page, so LBN 2,631,710 = 10·512² + 20·512 + 30 is reached through
//! directory entries 10 and 20 and leaf entry 30 ([`BlockTable::indices`]).
//! Above the two directory levels a small root map keyed by the device and
//! the LBN's bits above 27 holds the top directory pages (the paper's
//! prototype had one 8 TB disk; we have many devices and 2^40-block ones).
//!
//! A leaf entry (BTE, [`Bte`]) is 128 bits, as in the paper's prototype:
//! four 31-bit timestamps (newest first, 0 = none) and four status bits
//! (resident, busy, prefetched, cached), one in the top bit of each word.
//! Each directory entry records the largest timestamp below it, so
//! [`BlockTable::purge_before`] skips young subtrees and drops old ones
//! whole.
//!
//! Timestamps handed to and returned by the table are absolute `u64`
//! counter values; the table stores them relative to a `base` in 31 bits.
//! When the used range (counter − oldest stored) exceeds 7/8 of the 31-bit
//! space, the caller runs [`BlockTable::clear_progressively`] (§3.1): the
//! timestamps in the older half of the range are removed and the base moves
//! up, so the newest history is kept.

use rustc_hash::FxHashMap;
use std::cell::Cell;

/// Entries per table page (Fig. 1: 512).
pub const ENTRIES: usize = 512;
/// Bits of LBN per level.
const LEVEL_BITS: u32 = 9;
/// Timestamps per block (§3.1: at most four).
pub const TIMESTAMPS: usize = 4;
/// Width of a stored timestamp (§3.1: 31 bits).
pub const TS_BITS: u32 = 31;
const TS_MASK: u32 = (1 << TS_BITS) - 1;
const STATUS_BIT: u32 = 1 << 31;

/// Status bit: the block is in memory (§3.2).
pub const RESIDENT: u8 = 1;
/// Status bit: a disk read of the block is under way (§3.2).
pub const BUSY: u8 = 2;
/// Status bit: prefetched and not yet accessed on demand (§3.2).
pub const PREFETCHED: u8 = 4;
/// Status bit: in the caching area, i.e. its demand access already got a
/// timestamp (§3.1: only transfers into the caching area are stamped).
pub const CACHED: u8 = 8;

/// One block table entry: 4 × (1 status bit | 31-bit timestamp).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bte {
    words: [u32; TIMESTAMPS],
}

impl Bte {
    /// Stored (relative) timestamp `i`, newest first; 0 = none.
    #[inline]
    fn raw(&self, i: usize) -> u32 {
        self.words[i] & TS_MASK
    }
    /// The status bits (bit i in the top bit of word i).
    #[inline]
    pub fn status(&self) -> u8 {
        let w = &self.words;
        ((w[0] >> 31) | (w[1] >> 31) << 1 | (w[2] >> 31) << 2 | (w[3] >> 31) << 3) as u8
    }
    /// Replace all four status bits with `bits`.
    #[inline]
    fn put_status(&mut self, bits: u8) {
        let b = u32::from(bits);
        let w = &mut self.words;
        w[0] = (w[0] & TS_MASK) | (b & 1) << 31;
        w[1] = (w[1] & TS_MASK) | (b >> 1 & 1) << 31;
        w[2] = (w[2] & TS_MASK) | (b >> 2 & 1) << 31;
        w[3] = (w[3] & TS_MASK) | (b >> 3 & 1) << 31;
    }
    /// [`Bte::push`] of `raw` and [`Bte::put_status`] of `bits` at once.
    #[inline]
    fn push_with_status(&mut self, raw: u32, bits: u8) {
        let b = u32::from(bits);
        let w = &mut self.words;
        let (t0, t1, t2) = (w[0] & TS_MASK, w[1] & TS_MASK, w[2] & TS_MASK);
        *w = [
            raw | (b & 1) << 31,
            t0 | (b >> 1 & 1) << 31,
            t1 | (b >> 2 & 1) << 31,
            t2 | (b >> 3 & 1) << 31,
        ];
    }
    #[inline]
    fn set_status(&mut self, bits: u8, on: bool) {
        let b = u32::from(bits);
        for (i, w) in self.words.iter_mut().enumerate() {
            let mask = (b >> i & 1) << 31;
            if on {
                *w |= mask;
            } else {
                *w &= !mask;
            }
        }
    }
    #[inline]
    fn push(&mut self, raw: u32) {
        for i in (1..TIMESTAMPS).rev() {
            self.words[i] = (self.words[i] & STATUS_BIT) | self.raw(i - 1);
        }
        self.words[0] = (self.words[0] & STATUS_BIT) | raw;
    }
    /// The smallest stored timestamp in `(after, after + t]` below
    /// `before`, absolute (`base` + relative). Timestamps are kept newest
    /// first, so the walk stops at the first one not after `after`.
    #[inline]
    fn following(&self, base: u64, after: u64, t: u64, before: u64) -> Option<u64> {
        let mut best = None;
        for i in 0..TIMESTAMPS {
            let r = self.raw(i);
            if r == 0 {
                break;
            }
            let x = base + u64::from(r);
            if x <= after {
                break;
            }
            if x - after <= t && x < before {
                best = Some(x);
            }
        }
        best
    }
    fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    fn max_raw(&self) -> u32 {
        self.raw(0)
    }
    /// Remove stored timestamps below `cut` (relative) and shift the rest by
    /// `shift` down.
    fn rebase(&mut self, cut: u32, shift: u32) {
        let mut kept = [0u32; TIMESTAMPS];
        let mut n = 0;
        for i in 0..TIMESTAMPS {
            let r = self.raw(i);
            if r != 0 && r >= cut {
                kept[n] = r - shift;
                n += 1;
            }
        }
        for (i, k) in kept.iter().enumerate() {
            self.words[i] = (self.words[i] & STATUS_BIT) | k;
        }
    }
}

struct Leaf {
    e: Box<[Bte; ENTRIES]>,
    max_raw: u32,
}

struct Dir<C> {
    child: Vec<C>,
    max_raw: Vec<u32>,
}

impl<C> Dir<C> {
    fn new(empty: impl Fn() -> C) -> Self {
        Dir {
            child: (0..ENTRIES).map(|_| empty()).collect(),
            max_raw: vec![0; ENTRIES],
        }
    }
}

/// Lowest directory level: leaf pages by index into [`BlockTable`]'s
/// arena ([`NO_LEAF`] = none).
type Mid = Dir<u32>;
type Top = Dir<Option<Box<Mid>>>;

const NO_LEAF: u32 = u32::MAX;

/// The block table.
///
/// Speed (the table is on every demand block's path): leaf pages live in
/// an arena and the last one looked up is remembered (`last`), so the
/// several look-ups of one block and its neighbours walk the tree once;
/// the directory maxima of the leaf being stamped are raised when
/// stamping moves to another leaf (or before a purge reads them), not at
/// every stamp.
pub struct BlockTable {
    root: FxHashMap<u64, Box<Top>>,
    arena: Vec<Leaf>,
    free: Vec<u32>,
    base: u64,
    leaves: usize,
    dirs: usize,
    /// (device, LBN >> 9, arena index) of the last leaf looked up.
    last: Cell<(u32, u64, u32)>,
    /// The newest stamp whose directory maxima are not raised yet:
    /// (device, LBN, relative timestamp).
    pending_max: Option<(u32, u64, u32)>,
}

impl Default for BlockTable {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for BlockTable {
    fn clone(&self) -> Self {
        // Deep copy, entry by entry (used when policies are cloned for sweeps).
        let mut t = BlockTable::new();
        t.base = self.base;
        self.for_each(|dev, lbn, bte| {
            *t.entry_mut(dev, lbn) = *bte;
            let m = bte.max_raw();
            t.raise_max(dev, lbn, m);
        });
        t
    }
}

impl std::fmt::Debug for BlockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockTable({} leaves)", self.leaves)
    }
}

impl BlockTable {
    /// An empty table.
    pub fn new() -> Self {
        BlockTable {
            root: FxHashMap::default(),
            arena: Vec::new(),
            free: Vec::new(),
            base: 0,
            leaves: 0,
            dirs: 0,
            last: Cell::new((u32::MAX, u64::MAX, NO_LEAF)),
            pending_max: None,
        }
    }

    /// Fig. 1: (top directory index, middle directory index, leaf index) of
    /// an LBN.
    pub fn indices(lbn: u64) -> (usize, usize, usize) {
        let m = ENTRIES as u64 - 1;
        (
            ((lbn >> (2 * LEVEL_BITS)) & m) as usize,
            ((lbn >> LEVEL_BITS) & m) as usize,
            (lbn & m) as usize,
        )
    }

    #[inline]
    fn root_key(dev: u32, lbn: u64) -> u64 {
        (u64::from(dev) << 40) ^ (lbn >> (3 * LEVEL_BITS))
    }

    /// Arena index of the leaf page holding `lbn`, if any.
    #[inline(always)]
    fn leaf_ix(&self, dev: u32, lbn: u64) -> Option<u32> {
        let (d, p, ix) = self.last.get();
        if d == dev && p == lbn >> LEVEL_BITS {
            return Some(ix);
        }
        self.walk(dev, lbn)
    }

    /// [`BlockTable::leaf_ix`] through the directories.
    #[inline(never)]
    fn walk(&self, dev: u32, lbn: u64) -> Option<u32> {
        let page = lbn >> LEVEL_BITS;
        let (a, b, _) = Self::indices(lbn);
        let top = self.root.get(&Self::root_key(dev, lbn))?;
        let ix = top.child[a].as_ref()?.child[b];
        if ix == NO_LEAF {
            return None;
        }
        self.last.set((dev, page, ix));
        Some(ix)
    }

    fn leaf(&self, dev: u32, lbn: u64) -> Option<&Leaf> {
        self.leaf_ix(dev, lbn).map(|ix| &self.arena[ix as usize])
    }

    /// The entry of a block, if the table holds its page.
    #[inline]
    pub fn get(&self, dev: u32, lbn: u64) -> Option<&Bte> {
        let leaf = self.leaf(dev, lbn)?;
        let e = &leaf.e[(lbn & (ENTRIES as u64 - 1)) as usize];
        (!e.is_empty()).then_some(e)
    }

    /// The leaf holding `lbn`, created (with its directories) if absent.
    #[inline]
    fn leaf_mut(&mut self, dev: u32, lbn: u64) -> &mut Leaf {
        let ix = match self.leaf_ix(dev, lbn) {
            Some(ix) => ix,
            None => self.create_leaf(dev, lbn),
        };
        &mut self.arena[ix as usize]
    }

    #[cold]
    fn create_leaf(&mut self, dev: u32, lbn: u64) -> u32 {
        let (a, b, _) = Self::indices(lbn);
        let dirs = &mut self.dirs;
        let top = self
            .root
            .entry(Self::root_key(dev, lbn))
            .or_insert_with(|| {
                *dirs += 1;
                Box::new(Dir::new(|| None))
            });
        let mid = top.child[a].get_or_insert_with(|| {
            *dirs += 1;
            Box::new(Dir::new(|| NO_LEAF))
        });
        if mid.child[b] == NO_LEAF {
            let ix = match self.free.pop() {
                Some(ix) => {
                    let leaf = &mut self.arena[ix as usize];
                    *leaf.e = [Bte::default(); ENTRIES];
                    leaf.max_raw = 0;
                    ix
                }
                None => {
                    self.arena.push(Leaf {
                        e: Box::new([Bte::default(); ENTRIES]),
                        max_raw: 0,
                    });
                    (self.arena.len() - 1) as u32
                }
            };
            mid.child[b] = ix;
            self.leaves += 1;
        }
        let ix = mid.child[b];
        self.last.set((dev, lbn >> LEVEL_BITS, ix));
        ix
    }

    #[inline]
    fn entry_mut(&mut self, dev: u32, lbn: u64) -> &mut Bte {
        &mut self.leaf_mut(dev, lbn).e[(lbn & (ENTRIES as u64 - 1)) as usize]
    }

    /// Raise the directory maxima above `lbn` to `raw` (§2.2: each
    /// directory entry holds the largest timestamp below it).
    fn raise_max(&mut self, dev: u32, lbn: u64, raw: u32) {
        let (a, b, _) = Self::indices(lbn);
        if let Some(top) = self.root.get_mut(&Self::root_key(dev, lbn)) {
            top.max_raw[a] = top.max_raw[a].max(raw);
            if let Some(mid) = top.child[a].as_mut() {
                mid.max_raw[b] = mid.max_raw[b].max(raw);
                let ix = mid.child[b];
                if ix != NO_LEAF {
                    let leaf = &mut self.arena[ix as usize];
                    leaf.max_raw = leaf.max_raw.max(raw);
                }
            }
        }
    }

    /// A stamp of `raw` at `lbn` went into its leaf: remember it, raising
    /// the directories for the previous leaf stamped if this is another.
    #[inline]
    fn note_max(&mut self, dev: u32, lbn: u64, raw: u32) {
        match self.pending_max {
            Some((d, l, _)) if d == dev && l >> LEVEL_BITS == lbn >> LEVEL_BITS => {}
            Some((d, l, r)) => self.raise_max(d, l, r),
            None => {}
        }
        self.pending_max = Some((dev, lbn, raw));
    }

    /// Raise the directory maxima for the last stamp (before they are read).
    fn flush_max(&mut self) {
        if let Some((d, l, r)) = self.pending_max.take() {
            self.raise_max(d, l, r);
        }
    }

    /// Record an access at absolute time `ts` (§3.1): the newest of the
    /// block's four timestamps; the oldest falls off.
    pub fn stamp(&mut self, dev: u32, lbn: u64, ts: u64) {
        let raw = (ts - self.base) as u32;
        debug_assert!(raw > 0 && raw <= TS_MASK, "timestamp outside the window");
        let leaf = self.leaf_mut(dev, lbn);
        leaf.e[(lbn & (ENTRIES as u64 - 1)) as usize].push(raw);
        leaf.max_raw = leaf.max_raw.max(raw);
        self.note_max(dev, lbn, raw);
    }

    /// §3.1 in one step: if the block is not already in the caching area
    /// (`CACHED`), stamp it with `ts`, set `set` bits and clear `clear`
    /// bits. Returns the status before.
    pub fn stamp_cached(&mut self, dev: u32, lbn: u64, ts: u64, set: u8, clear: u8) -> u8 {
        let base = self.base;
        let leaf = self.leaf_mut(dev, lbn);
        let e = &mut leaf.e[(lbn & (ENTRIES as u64 - 1)) as usize];
        let before = e.status();
        if before & CACHED != 0 {
            return before;
        }
        let raw = (ts - base) as u32;
        debug_assert!(raw > 0 && raw <= TS_MASK, "timestamp outside the window");
        e.push_with_status(raw, (before & !clear) | set);
        leaf.max_raw = leaf.max_raw.max(raw);
        self.note_max(dev, lbn, raw);
        before
    }

    /// Visit the blocks `from..=to` of `dev` that have a timestamp, in LBN
    /// order, with their timestamps (absolute, newest first); one table
    /// walk per leaf page rather than per block.
    pub fn scan(&self, dev: u32, from: u64, to: u64, mut f: impl FnMut(u64, [u64; TIMESTAMPS])) {
        let mut lbn = from;
        while lbn <= to {
            let page_end = (lbn | (ENTRIES as u64 - 1)).min(to);
            if let Some(leaf) = self.leaf(dev, lbn) {
                for b in lbn..=page_end {
                    let e = &leaf.e[(b & (ENTRIES as u64 - 1)) as usize];
                    if e.raw(0) == 0 {
                        continue;
                    }
                    let mut out = [0u64; TIMESTAMPS];
                    for (i, o) in out.iter_mut().enumerate() {
                        let r = e.raw(i);
                        if r != 0 {
                            *o = self.base + u64::from(r);
                        }
                    }
                    f(b, out);
                }
            }
            if page_end == u64::MAX {
                break;
            }
            lbn = page_end + 1;
        }
    }

    /// §3.4.3's extension search over `from..=to` of `dev`: every block
    /// holding, for each of `cursors`, a timestamp in `(cursor, cursor +
    /// t]` older than `before`, pushed to `out` as (its timestamp for
    /// `cursors[0]`, LBN), in LBN order. The same as [`BlockTable::scan`]
    /// plus a filter, without building each block's timestamp array.
    #[allow(clippy::too_many_arguments)]
    pub fn find_following(
        &self,
        dev: u32,
        from: u64,
        to: u64,
        cursors: &[u64],
        t: u64,
        before: u64,
        out: &mut Vec<(u64, u64)>,
    ) {
        let Some((&c0, rest)) = cursors.split_first() else {
            return;
        };
        let base = self.base;
        let mut lbn = from;
        while lbn <= to {
            let page_end = (lbn | (ENTRIES as u64 - 1)).min(to);
            if let Some(leaf) = self.leaf(dev, lbn) {
                let m = ENTRIES as u64 - 1;
                let entries = &leaf.e[(lbn & m) as usize..=(page_end & m) as usize];
                for (e, b) in entries.iter().zip(lbn..) {
                    let Some(x0) = e.following(base, c0, t, before) else {
                        continue;
                    };
                    if rest
                        .iter()
                        .all(|&c| e.following(base, c, t, before).is_some())
                    {
                        out.push((x0, b));
                    }
                }
            }
            if page_end == u64::MAX {
                break;
            }
            lbn = page_end + 1;
        }
    }

    /// The smallest timestamp of a block in `(after, after + t]` older than
    /// `before` (absolute), if any.
    pub fn following(&self, dev: u32, lbn: u64, after: u64, t: u64, before: u64) -> Option<u64> {
        self.get(dev, lbn)?.following(self.base, after, t, before)
    }

    /// Timestamps of a block, absolute, newest first.
    pub fn timestamps(&self, dev: u32, lbn: u64) -> [u64; TIMESTAMPS] {
        let mut out = [0u64; TIMESTAMPS];
        if let Some(e) = self.get(dev, lbn) {
            for (i, o) in out.iter_mut().enumerate() {
                let r = e.raw(i);
                if r != 0 {
                    *o = self.base + u64::from(r);
                }
            }
        }
        out
    }

    /// Most recent timestamp (0 = never accessed).
    #[inline]
    pub fn newest(&self, dev: u32, lbn: u64) -> u64 {
        match self.get(dev, lbn) {
            Some(e) if e.raw(0) != 0 => self.base + u64::from(e.raw(0)),
            _ => 0,
        }
    }

    /// Status bits of a block (0 when absent).
    #[inline]
    pub fn status(&self, dev: u32, lbn: u64) -> u8 {
        self.get(dev, lbn).map_or(0, Bte::status)
    }

    /// Set (`on`) or clear status bits. Clearing on an absent block does
    /// not create its page.
    #[inline]
    pub fn set_status(&mut self, dev: u32, lbn: u64, bits: u8, on: bool) {
        if on {
            self.entry_mut(dev, lbn).set_status(bits, true);
        } else if let Some(ix) = self.leaf_ix(dev, lbn) {
            self.arena[ix as usize].e[(lbn & (ENTRIES as u64 - 1)) as usize]
                .set_status(bits, false);
        }
    }

    /// Replace a block's status bits with `f(old)`; returns the old bits.
    pub fn modify_status(&mut self, dev: u32, lbn: u64, f: impl FnOnce(u8) -> u8) -> u8 {
        let e = self.entry_mut(dev, lbn);
        let old = e.status();
        let new = f(old);
        if new != old {
            e.put_status(new);
        }
        old
    }

    /// Clear `bits` on every block (a new run starts with an empty cache).
    pub fn clear_status_everywhere(&mut self, bits: u8) {
        for top in self.root.values() {
            for mid in top.child.iter().flatten() {
                for &ix in mid.child.iter().filter(|&&ix| ix != NO_LEAF) {
                    for e in self.arena[ix as usize].e.iter_mut() {
                        e.set_status(bits, false);
                    }
                }
            }
        }
    }

    /// Leaf pages held.
    pub fn leaf_pages(&self) -> usize {
        self.leaves
    }

    /// Bytes of table memory: leaf pages of 512 × 16-byte BTEs and
    /// directory pages of 512 × (pointer + max timestamp).
    pub fn memory_bytes(&self) -> usize {
        self.leaves * (ENTRIES * std::mem::size_of::<Bte>() + 8)
            + self.dirs * ENTRIES * (std::mem::size_of::<usize>() + 4)
            + self.root.len() * 24
    }

    /// Visit every non-empty entry.
    pub fn for_each(&self, mut f: impl FnMut(u32, u64, &Bte)) {
        for (&rk, top) in &self.root {
            let dev = (rk >> 40) as u32;
            let hi = (rk & ((1 << 40) - 1)) << (3 * LEVEL_BITS);
            for (a, mid) in top.child.iter().enumerate() {
                let Some(mid) = mid else { continue };
                for (b, &ix) in mid.child.iter().enumerate() {
                    if ix == NO_LEAF {
                        continue;
                    }
                    for (c, e) in self.arena[ix as usize].e.iter().enumerate() {
                        if !e.is_empty() {
                            let lbn = hi
                                | ((a as u64) << (2 * LEVEL_BITS))
                                | ((b as u64) << LEVEL_BITS)
                                | c as u64;
                            f(dev, lbn, e);
                        }
                    }
                }
            }
        }
    }

    /// §2.2: remove every timestamp older than `ts` (absolute), top level
    /// first: subtrees whose largest timestamp is older are dropped whole
    /// unless they hold status bits; pages left empty are freed.
    pub fn purge_before(&mut self, ts: u64) {
        self.rewrite(ts, 0);
    }

    /// Is the used range over 7/8 of the timestamp space (§3.1)?
    pub fn needs_clearing(&self, counter: u64) -> bool {
        counter - self.base > u64::from(TS_MASK) / 8 * 7
    }

    /// §3.1 progressive clearing: drop the timestamps in the older half of
    /// the used range `[oldest, counter]` and move the base up so the rest
    /// fit the 31-bit space again. Returns the absolute cut.
    pub fn clear_progressively(&mut self, counter: u64) -> u64 {
        let oldest = self.oldest().unwrap_or(counter);
        let cut = oldest + (counter - oldest) / 2;
        self.rewrite(cut, cut.saturating_sub(1).saturating_sub(self.base));
        cut
    }

    /// Oldest stored timestamp (absolute).
    pub fn oldest(&self) -> Option<u64> {
        let mut m: Option<u32> = None;
        self.for_each(|_, _, e| {
            for i in 0..TIMESTAMPS {
                let r = e.raw(i);
                if r != 0 {
                    m = Some(m.map_or(r, |x| x.min(r)));
                }
            }
        });
        m.map(|r| self.base + u64::from(r))
    }

    /// Drop timestamps older than `cut` (absolute) and shift the kept ones
    /// down by `shift` (relative units; the base rises by as much).
    fn rewrite(&mut self, cut: u64, shift: u64) {
        self.flush_max();
        self.last.set((u32::MAX, u64::MAX, NO_LEAF));
        let arena = &mut self.arena;
        let free = &mut self.free;
        let cut_raw = cut.saturating_sub(self.base).min(u64::from(TS_MASK) + 1) as u32;
        let shift = shift as u32;
        let (mut leaves, mut dirs) = (0usize, 0usize);
        self.root.retain(|_, top| {
            for a in 0..ENTRIES {
                let Some(mid) = top.child[a].as_mut() else {
                    continue;
                };
                let mut mid_max = 0;
                for b in 0..ENTRIES {
                    let ix = mid.child[b];
                    if ix == NO_LEAF {
                        continue;
                    }
                    let leaf = &mut arena[ix as usize];
                    let old = mid.max_raw[b] < cut_raw;
                    let mut leaf_max = 0;
                    let mut live = false;
                    for e in leaf.e.iter_mut() {
                        if old && e.status() == 0 {
                            *e = Bte::default();
                            continue;
                        }
                        e.rebase(cut_raw, shift);
                        leaf_max = leaf_max.max(e.max_raw());
                        live |= !e.is_empty();
                    }
                    if live {
                        leaf.max_raw = leaf_max;
                        mid.max_raw[b] = leaf_max;
                        mid_max = mid_max.max(leaf_max);
                        leaves += 1;
                    } else {
                        free.push(ix);
                        mid.child[b] = NO_LEAF;
                        mid.max_raw[b] = 0;
                    }
                }
                if mid.child.iter().any(|&ix| ix != NO_LEAF) {
                    top.max_raw[a] = mid_max;
                    dirs += 1;
                } else {
                    top.child[a] = None;
                    top.max_raw[a] = 0;
                }
            }
            let keep = top.child.iter().any(Option::is_some);
            dirs += usize::from(keep);
            keep
        });
        self.base += u64::from(shift);
        self.leaves = leaves;
        self.dirs = dirs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fig1_lbn_2631710_is_reached_through_10_20_30() {
        // Fig. 1: 2,631,710 = 10 × 512² + 20 × 512 + 30.
        assert_eq!(BlockTable::indices(2_631_710), (10, 20, 30));
        let mut t = BlockTable::new();
        t.stamp(0, 2_631_710, 7);
        assert_eq!(t.newest(0, 2_631_710), 7);
        assert_eq!(t.newest(0, 2_631_711), 0);
        assert_eq!((t.leaf_pages(), t.dirs), (1, 2));
    }

    #[test]
    fn keeps_the_four_newest_timestamps_and_status_bits_apart() {
        let mut t = BlockTable::new();
        t.set_status(0, 5, RESIDENT | PREFETCHED, true);
        for ts in 1..=6 {
            t.stamp(0, 5, ts * 10);
        }
        assert_eq!(t.timestamps(0, 5), [60, 50, 40, 30]);
        assert_eq!(t.status(0, 5), RESIDENT | PREFETCHED);
        t.set_status(0, 5, PREFETCHED, false);
        assert_eq!(t.status(0, 5), RESIDENT);
        assert_eq!(t.timestamps(0, 5), [60, 50, 40, 30]);
        assert_eq!(std::mem::size_of::<Bte>(), 16, "a BTE is 128 bits (§3.1)");
    }

    #[test]
    fn purge_keeps_the_newest_history() {
        // Two leaf pages: one old (timestamps 1..=10), one young (1000+).
        let mut t = BlockTable::new();
        for i in 0..10 {
            t.stamp(0, i, i + 1);
        }
        for i in 0..10 {
            t.stamp(0, 4096 + i, 1000 + i);
        }
        t.stamp(0, 4097, 2000);
        t.set_status(0, 3, RESIDENT, true);
        assert_eq!(t.leaf_pages(), 2);
        t.purge_before(1001);
        // The old leaf survives only for the resident block, stripped of
        // its timestamps; the young leaf loses only timestamp 1000.
        assert_eq!(t.leaf_pages(), 2);
        assert_eq!(t.timestamps(0, 3), [0; 4]);
        assert_eq!(t.status(0, 3), RESIDENT);
        assert_eq!(t.newest(0, 4096), 0);
        assert_eq!(t.timestamps(0, 4097), [2000, 1001, 0, 0]);
        t.set_status(0, 3, RESIDENT, false);
        t.purge_before(1001);
        assert_eq!(t.leaf_pages(), 1, "the old page is freed");
    }

    #[test]
    fn progressive_clearing_keeps_the_newest_half() {
        let mut t = BlockTable::new();
        let top = u64::from(TS_MASK);
        t.stamp(0, 1, 1);
        t.stamp(0, 2, top / 2);
        t.stamp(0, 3, top / 8 * 7 + 5);
        let counter = top / 8 * 7 + 5;
        assert!(t.needs_clearing(counter));
        let cut = t.clear_progressively(counter);
        assert_eq!(cut, 1 + (counter - 1) / 2);
        assert_eq!(t.newest(0, 1), 0, "the older half is removed");
        assert_eq!(t.newest(0, 2), top / 2, "absolute values are kept");
        assert_eq!(t.newest(0, 3), counter);
        assert!(!t.needs_clearing(counter));
        // New stamps still fit after the base moved.
        t.stamp(0, 4, counter + 1);
        assert_eq!(t.newest(0, 4), counter + 1);
    }
}
