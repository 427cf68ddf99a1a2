//! Miss-ratio curves in one pass: Mattson's LRU stack distances.
//!
//! LRU is a stack algorithm (Mattson, Gecsei, Slutz and Traiger, "Evaluation
//! techniques for storage hierarchies", IBM Systems Journal 9(2), 1970): a
//! cache of `C` blocks holds exactly the `C` most recently used blocks, so
//! an access hits in every cache at least as large as its *stack distance*
//! — the number of distinct blocks used since the block's previous access,
//! itself included. One pass that records the histogram of stack distances
//! gives the hit ratio at every size: `hits(C) = Σ_{d ≤ C} hist[d]`.
//!
//! The stream is the trace's 4 KiB block accesses in order (each request
//! contributes its blocks, first to last), reads and writes alike: what
//! `outrider sim --policy none --cache-model lru --split-pages` replays, so
//! the counts agree with it exactly at every size (the tests check this
//! against [`Cache`](crate::Cache) itself). Without `--split-pages` the
//! simulator inserts a multi-block request's missing blocks after any hit
//! that follows them in the request, which is not a stack order; for
//! single-block requests both agree.
//!
//! # Counting distinct blocks since the last access
//!
//! Each access gets the next *slot* (a virtual time); a bit set over slots
//! holds a 1 at each block's latest slot. The stack distance of an access
//! to a block last seen at slot `s` is one plus the number of 1s after `s`;
//! then the 1 moves from `s` to the new slot. The bits are counted through
//! two levels of totals — per 64-word block (4096 slots) and per 64-block
//! group (262 144 slots) — so a count sums at most 32 word popcounts, 32
//! block totals and half the groups, from whichever side of `s` is shorter,
//! in a structure of M/8 bytes that stays in the CPU cache. (A Fenwick tree
//! over the same slots took three dependent walks of ~20 levels per access:
//! 38% of the pass on the 10 M-access trace.) Slots would grow with the
//! trace, so when they run out the live slots are renumbered 0..live in
//! order: M stays [`SLOTS_PER_BLOCK`] times the distinct blocks (at least
//! [`MIN_SLOTS`]), and each renumbering (O(M/64 + live) work) is paid for
//! by the ≥ 7·live accesses since the previous one.

use crate::blockmap::BlockMap;
use crate::layout::block_key;
use outrider_trace::{Record, Trace};

/// Fewest slots (so small traces renumber rarely).
pub const MIN_SLOTS: usize = 1 << 20;
/// Slots per distinct block after a renumbering.
pub const SLOTS_PER_BLOCK: usize = 8;
/// How many requests ahead the pass warms the block map's slots (the map
/// outgrows the CPU caches; without the hint, its lookups were 60% of the
/// pass on the 10 M-access trace).
const LOOKAHEAD: usize = 8;

/// The stack-distance histogram of a block access stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackDistances {
    /// `hist[d]`: accesses with stack distance `d` (1-based; `hist[0]` is 0).
    hist: Vec<u64>,
    /// First accesses to a block (a miss at every size).
    cold: u64,
    /// All block accesses.
    accesses: u64,
}

impl StackDistances {
    /// One pass over `trace`'s 4 KiB block accesses.
    pub fn of(trace: &Trace) -> StackDistances {
        let mut s = Stack::default();
        let records: &[Record] = &trace.records;
        let key = |r: &Record| block_key(u32::from(r.dev), r.first_block());
        for (n, r) in records.iter().enumerate() {
            if let Some(ahead) = records.get(n + LOOKAHEAD) {
                s.slot_of.prefetch(key(ahead));
            }
            let first = key(r);
            for i in 0..u64::from(r.block_count()) {
                s.access(first + i);
            }
        }
        s.finish()
    }

    /// Block accesses counted.
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// Distinct blocks (= first accesses, the misses of an infinite cache).
    pub fn distinct_blocks(&self) -> u64 {
        self.cold
    }

    /// Hits of an LRU cache of `cache_blocks` blocks (as the simulator
    /// sizes it, a cache of 0 blocks holds 1).
    pub fn hits(&self, cache_blocks: u64) -> u64 {
        let c = cache_blocks.max(1).min(self.hist.len() as u64 - 1) as usize;
        self.hist[..=c].iter().sum()
    }

    /// Hits at each of `sizes` (blocks, any order), in one walk of the
    /// histogram.
    pub fn hits_at(&self, sizes: &[u64]) -> Vec<u64> {
        let mut order: Vec<usize> = (0..sizes.len()).collect();
        order.sort_by_key(|&i| sizes[i]);
        let mut out = vec![0; sizes.len()];
        let (mut d, mut sum) = (0usize, 0u64);
        for i in order {
            let c = sizes[i].max(1).min(self.hist.len() as u64 - 1) as usize;
            while d < c {
                d += 1;
                sum += self.hist[d];
            }
            out[i] = sum;
        }
        out
    }

    /// Hit ratio (hits / block accesses) at `cache_blocks`; 0 for an empty
    /// stream.
    pub fn hit_ratio(&self, cache_blocks: u64) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.hits(cache_blocks) as f64 / self.accesses as f64
        }
    }
}

/// The pass's state: last slot per block and the marks over slots.
#[derive(Default)]
struct Stack {
    /// Block key → its latest slot.
    slot_of: BlockMap,
    /// A 1 at each block's latest slot.
    marks: Marks,
    /// Next free slot.
    next: usize,
    hist: Vec<u64>,
    accesses: u64,
}

impl Stack {
    #[inline]
    fn access(&mut self, key: u64) {
        if self.next >= self.marks.slots() {
            self.renumber();
        }
        let now = self.next as u32;
        self.next += 1;
        self.accesses += 1;
        match self.slot_of.replace(key, now) {
            Some(s) => {
                let d = self.marks.ones_after(s as usize) as usize + 1;
                self.hist[d] += 1;
                self.marks.clear(s as usize);
            }
            None => {
                if self.hist.len() <= self.marks.total as usize + 1 {
                    self.hist.resize(self.hist.len().max(1024) * 2, 0);
                }
            }
        }
        self.marks.set(now as usize);
    }

    /// Renumber the live slots 0..live in order, with room for
    /// [`SLOTS_PER_BLOCK`] times as many slots.
    fn renumber(&mut self) {
        let live = self.marks.total as usize;
        let marks = &self.marks;
        self.slot_of
            .update_values(|s| marks.ones_before(s as usize) as u32);
        self.marks = Marks::new((live * SLOTS_PER_BLOCK).max(MIN_SLOTS));
        for s in 0..live {
            self.marks.set(s);
        }
        self.next = live;
    }

    fn finish(mut self) -> StackDistances {
        let live = self.marks.total;
        self.hist.truncate(live as usize + 1);
        if self.hist.is_empty() {
            self.hist.push(0);
        }
        StackDistances {
            hist: self.hist,
            cold: live,
            accesses: self.accesses,
        }
    }
}

/// Words (of 64 slots) per block total.
const BLOCK_WORDS: usize = 64;
/// Blocks per group total.
const GROUP_BLOCKS: usize = 64;

/// A bit set over slots with per-block and per-group counts of its ones.
#[derive(Default)]
struct Marks {
    words: Vec<u64>,
    /// Ones per block of [`BLOCK_WORDS`] words (at most 4096).
    blocks: Vec<u16>,
    /// Ones per group of [`GROUP_BLOCKS`] blocks.
    groups: Vec<u32>,
    /// All ones.
    total: u64,
}

impl Marks {
    /// Room for at least `slots` slots, all 0.
    fn new(slots: usize) -> Marks {
        let per_group = 64 * BLOCK_WORDS * GROUP_BLOCKS;
        let groups = slots.div_ceil(per_group);
        Marks {
            words: vec![0; groups * GROUP_BLOCKS * BLOCK_WORDS],
            blocks: vec![0; groups * GROUP_BLOCKS],
            groups: vec![0; groups],
            total: 0,
        }
    }

    fn slots(&self) -> usize {
        self.words.len() * 64
    }

    #[inline]
    fn set(&mut self, s: usize) {
        debug_assert_eq!(self.words[s / 64] & (1 << (s % 64)), 0);
        self.words[s / 64] |= 1 << (s % 64);
        self.blocks[s / (64 * BLOCK_WORDS)] += 1;
        self.groups[s / (64 * BLOCK_WORDS * GROUP_BLOCKS)] += 1;
        self.total += 1;
    }

    #[inline]
    fn clear(&mut self, s: usize) {
        debug_assert_ne!(self.words[s / 64] & (1 << (s % 64)), 0);
        self.words[s / 64] &= !(1 << (s % 64));
        self.blocks[s / (64 * BLOCK_WORDS)] -= 1;
        self.groups[s / (64 * BLOCK_WORDS * GROUP_BLOCKS)] -= 1;
        self.total -= 1;
    }

    /// Ones at slots after `s`.
    #[inline]
    fn ones_after(&self, s: usize) -> u64 {
        let w = s / 64;
        let in_word = u64::from((self.words[w] >> (s % 64) >> 1).count_ones());
        let b = w / BLOCK_WORDS;
        let g = b / GROUP_BLOCKS;
        in_word
            + after(
                &self.words[b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS],
                w % BLOCK_WORDS,
                u64::from(self.blocks[b]),
                |x| u64::from(x.count_ones()),
            )
            + after(
                &self.blocks[g * GROUP_BLOCKS..(g + 1) * GROUP_BLOCKS],
                b % GROUP_BLOCKS,
                u64::from(self.groups[g]),
                u64::from,
            )
            + after(&self.groups, g, self.total, u64::from)
    }

    /// Ones at slots before `s`.
    fn ones_before(&self, s: usize) -> u64 {
        let bit = u64::from(self.words[s / 64] & (1 << (s % 64)) != 0);
        self.total - self.ones_after(s) - bit
    }
}

/// The sum of `weight` over `items[i + 1..]`, where `total` is the sum over
/// all of `items`: summed directly or as `total` minus `items[..=i]`,
/// whichever walks fewer items.
#[inline]
fn after<T: Copy>(items: &[T], i: usize, total: u64, weight: impl Fn(T) -> u64) -> u64 {
    if i >= items.len() / 2 {
        items[i + 1..].iter().map(|&x| weight(x)).sum()
    } else {
        total - items[..=i].iter().map(|&x| weight(x)).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Cache, CacheModel, Fill};
    use outrider_trace::{Record, TraceMeta};
    use proptest::prelude::*;

    fn trace(blocks: &[u64]) -> Trace {
        let recs = blocks
            .iter()
            .map(|&b| Record::block(0, 0, b * 4096, 4096, false, 0))
            .collect();
        Trace::new(TraceMeta::default(), recs)
    }

    /// Hits of the simulator's own LRU cache model on the same stream.
    fn lru_hits(blocks: &[u64], capacity: u64) -> u64 {
        let mut c = Cache::new(CacheModel::Lru, capacity);
        let mut ev = Vec::new();
        let mut hits = 0;
        for &b in blocks {
            match c.get(b) {
                Some(idx) => {
                    hits += 1;
                    c.touch(idx);
                }
                None => {
                    c.insert(b, Fill::Demand, &mut ev);
                    ev.clear();
                }
            }
        }
        hits
    }

    #[test]
    fn mattsons_example_stream() {
        // a b c a b d a: distances of the re-accesses: a→3, b→3, a→3.
        let s = StackDistances::of(&trace(&[1, 2, 3, 1, 2, 4, 1]));
        assert_eq!((s.accesses(), s.distinct_blocks()), (7, 4));
        assert_eq!(s.hits_at(&[1, 2, 3, 4, 100]), vec![0, 0, 3, 3, 3]);
        assert_eq!(s.hits(0), 0);
    }

    #[test]
    fn renumbering_keeps_distances_exact_past_many_rounds() {
        // A loop over 3000 blocks, 1000 times: every re-access has distance
        // 3000; slots (2^20) run out and are renumbered twice.
        let blocks: Vec<u64> = (0..1000).flat_map(|_| 0..3000u64).collect();
        let s = StackDistances::of(&trace(&blocks));
        assert_eq!(s.hits(2999), 0);
        assert_eq!(s.hits(3000), 999 * 3000);
    }

    #[test]
    fn counts_cross_words_blocks_and_groups() {
        let mut m = Marks::new(3 * 64 * BLOCK_WORDS * GROUP_BLOCKS);
        let ones = [0, 63, 64, 4095, 4096, 262_143, 262_144, 600_000, 786_431];
        for &s in &ones {
            m.set(s);
        }
        for s in [
            0, 1, 63, 64, 100, 4095, 4096, 262_143, 262_144, 500_000, 786_431,
        ] {
            let after = ones.iter().filter(|&&o| o > s).count() as u64;
            let before = ones.iter().filter(|&&o| o < s).count() as u64;
            assert_eq!(
                (m.ones_after(s), m.ones_before(s)),
                (after, before),
                "slot {s}"
            );
        }
    }

    proptest! {
        #[test]
        fn hits_equal_the_lru_cache_model_at_every_size(
            blocks in proptest::collection::vec(0u64..64, 0..400),
            sizes in proptest::collection::vec(1u64..80, 1..6),
        ) {
            let s = StackDistances::of(&trace(&blocks));
            let at = s.hits_at(&sizes);
            for (i, &c) in sizes.iter().enumerate() {
                prop_assert_eq!(at[i], lru_hits(&blocks, c));
                prop_assert_eq!(s.hits(c), at[i]);
            }
        }
    }
}
