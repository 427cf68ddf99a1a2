//! The page-cache model: a byte capacity (in 4 KiB blocks) and two
//! replacement models.
//!
//! * `lru` — one LRU list. A prefetched block is inserted at the MRU end,
//!   the convention libCacheSim uses, so miss ratios compare with it.
//! * `split` — DiskSeen's buffer cache (DiskSeen §3.3.3, §3.6): prefetched
//!   blocks wait in a FIFO *reclamation queue* (the prefetching area) until
//!   a demand access hits them, which moves them to the caching area's LRU
//!   list, or until they reach the queue's head and are evicted. Demand
//!   blocks go straight to the caching area. Memory moves between the two
//!   areas as §3.6 says: ghost segments of [`GHOST_BLOCKS`] remember blocks
//!   recently evicted from each area; each epoch (as many demand blocks as
//!   the prefetching area holds) compares the misses that hit either ghost,
//!   and if they differ by more than 10% of the area size, [`MOVE_BLOCKS`]
//!   of capacity move to the area with more such misses. The prefetching
//!   area never shrinks below 1/64 of the cache (§3.6's minimum).
//!
//! Blocks being read (demand misses and prefetches in flight) occupy space
//! from the moment their read is issued, as folios in the Linux page cache
//! do. If such a block is evicted before its read completes, the completion
//! finds it gone and the data is dropped.
//!
//! Nodes live in a slab and are linked into intrusive lists by `u32`
//! indices; a hash map finds a block's node. Nothing allocates in steady
//! state once the slab has grown to the capacity.

use crate::blockmap::BlockMap;
use rustc_hash::FxHashSet;
use std::collections::VecDeque;

/// Capacity of each ghost segment in blocks (DiskSeen §3.6: 2048).
pub const GHOST_BLOCKS: usize = 2048;
/// Blocks of capacity moved between areas per rebalancing (DiskSeen §3.6: 128).
pub const MOVE_BLOCKS: u64 = 128;
/// Hit difference, as a fraction of the prefetching area, that triggers a
/// move (DiskSeen §3.6: 10%).
pub const MOVE_THRESHOLD: f64 = 0.10;
/// Minimum prefetching area, as a divisor of the capacity (§3.6: 1/64).
pub const MIN_PREFETCH_AREA_DIVISOR: u64 = 64;

const NIL: u32 = u32::MAX;

/// Which replacement model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheModel {
    /// One LRU list; prefetched blocks inserted at MRU.
    Lru,
    /// DiskSeen's prefetching area (FIFO) + caching area (LRU).
    Split,
}

impl CacheModel {
    /// Parse `lru` or `split`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "lru" => Ok(CacheModel::Lru),
            "split" => Ok(CacheModel::Split),
            _ => Err(format!(
                "unknown cache model '{text}'; expected lru or split"
            )),
        }
    }
}

/// Why a block is in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Read or written on demand.
    Demand,
    /// Brought in by our prefetch, not yet used.
    Prefetch,
}

/// A cached block, 32 bytes: what every access and eviction touches. What
/// only prefetched blocks need is beside it in a [`PrefetchInfo`] (with
/// both in one 48-byte node, the nodes and hash slots of a 10% cache of
/// the 10 M-request page trace outgrew the 2 MiB L2 and the loads of the
/// next LRU victims were the costliest instructions of `insert`, perf).
#[derive(Clone, Copy, Debug)]
pub struct Node {
    /// Cache key: `dev << 48 | lbn`.
    pub key: u64,
    prev: u32,
    next: u32,
    /// A read for it is in flight: the device request id.
    pub inflight: Option<u32>,
    /// The prefetch window's slot in the driver's window table (while
    /// prefetched).
    pub window_slot: u32,
    list: u8,
    /// Prefetched and not yet used by a demand access.
    pub prefetched: bool,
    /// Inserted by a prefetch: its [`PrefetchInfo`] is valid.
    from_prefetch: bool,
}

const _: () = assert!(std::mem::size_of::<Node>() == 32);

/// What a prefetched block carries besides its [`Node`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PrefetchInfo {
    /// Window of the prefetch that brought it (0 = none).
    pub window: u64,
    /// When its prefetch was issued (ns).
    pub issue_ns: u64,
}

/// A block the cache evicted, for the caller's accounting.
#[derive(Clone, Copy, Debug)]
pub struct Evicted {
    /// Cache key.
    pub key: u64,
    /// Prefetched and never used.
    pub prefetched: bool,
    /// Its window's slot (meaningful while `prefetched`).
    pub window_slot: u32,
    /// Window of the prefetch that brought it (0 = none).
    pub window: u64,
}

const LIST_LRU: u8 = 0;
const LIST_FIFO: u8 = 1;
const LIST_FREE: u8 = 2;

#[derive(Clone, Copy, Default)]
struct List {
    head: u32, // LRU end / FIFO head (next victim)
    tail: u32, // MRU end / FIFO tail
    len: u64,
}

impl List {
    fn new() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// A bounded FIFO of recently evicted keys with membership test.
#[derive(Default, Clone)]
struct Ghost {
    order: VecDeque<u64>,
    set: FxHashSet<u64>,
}

impl Ghost {
    fn push(&mut self, key: u64) {
        if self.set.insert(key) {
            self.order.push_back(key);
            if self.order.len() > GHOST_BLOCKS {
                let old = self.order.pop_front().expect("non-empty");
                self.set.remove(&old);
            }
        }
    }
    fn take(&mut self, key: u64) -> bool {
        // The key stays in `order` until it ages out; `set` is the truth.
        self.set.remove(&key)
    }
}

/// The page cache.
#[derive(Clone)]
pub struct Cache {
    model: CacheModel,
    capacity_blocks: u64,
    map: BlockMap,
    nodes: Vec<Node>,
    /// Beside `nodes`, index for index; valid where `from_prefetch`.
    info: Vec<PrefetchInfo>,
    free: u32,
    lru: List,
    fifo: List,
    // split model state (§3.6)
    prefetch_target_blocks: u64,
    min_prefetch_blocks: u64,
    ghost_prefetch: Ghost,
    ghost_cache: Ghost,
    epoch_left: u64,
    epoch_len: u64,
    hits_prefetch_ghost: u64,
    hits_cache_ghost: u64,
    /// Peak number of nodes (for memory reports).
    peak_nodes: usize,
}

impl Cache {
    /// An empty cache of `capacity_blocks` 4 KiB blocks (at least 1).
    pub fn new(model: CacheModel, capacity_blocks: u64) -> Self {
        let map = BlockMap::with_capacity(capacity_blocks.clamp(1, 1 << 24) as usize);
        Self::with_map(model, capacity_blocks, map)
    }

    fn with_map(model: CacheModel, capacity_blocks: u64, map: BlockMap) -> Self {
        let capacity_blocks = capacity_blocks.max(1);
        let min_prefetch_blocks = (capacity_blocks / MIN_PREFETCH_AREA_DIVISOR).max(1);
        Cache {
            model,
            capacity_blocks,
            map,
            nodes: Vec::new(),
            info: Vec::new(),
            free: NIL,
            lru: List::new(),
            fifo: List::new(),
            prefetch_target_blocks: min_prefetch_blocks,
            min_prefetch_blocks,
            ghost_prefetch: Ghost::default(),
            ghost_cache: Ghost::default(),
            epoch_left: min_prefetch_blocks,
            epoch_len: min_prefetch_blocks,
            hits_prefetch_ghost: 0,
            hits_cache_ghost: 0,
            peak_nodes: 0,
        }
    }

    /// Empty the cache (between runs), keeping the capacity.
    pub fn clear(&mut self) {
        let mut map = std::mem::take(&mut self.map);
        map.clear();
        let peak = self.peak_nodes;
        *self = Cache::with_map(self.model, self.capacity_blocks, map);
        self.peak_nodes = peak;
    }

    /// Capacity in blocks.
    pub fn capacity_blocks(&self) -> u64 {
        self.capacity_blocks
    }

    /// Blocks held (resident or in flight).
    pub fn len(&self) -> u64 {
        self.lru.len + self.fifo.len
    }

    /// Is the cache empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks in the prefetching area (split model; 0 for lru).
    pub fn prefetch_area_blocks(&self) -> u64 {
        self.fifo.len
    }

    /// Current prefetching-area target (split model).
    pub fn prefetch_target_blocks(&self) -> u64 {
        self.prefetch_target_blocks
    }

    /// Bytes of model state per cached block at the peak, for memory reports.
    pub fn bytes_per_block(&self) -> f64 {
        let node = (std::mem::size_of::<Node>() + std::mem::size_of::<PrefetchInfo>()) as f64;
        node + BlockMap::bytes_per_key_max() as f64
    }

    /// Peak nodes held since the cache was created (kept across clears).
    pub fn peak_blocks(&self) -> usize {
        self.peak_nodes
    }

    /// Find a block.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        self.map.get(key)
    }

    /// Does the cache hold the block (resident or in flight)?
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(key)
    }

    /// The node at `idx`.
    #[inline]
    pub fn node(&self, idx: u32) -> &Node {
        &self.nodes[idx as usize]
    }

    /// The node at `idx`, mutably.
    #[inline]
    pub fn node_mut(&mut self, idx: u32) -> &mut Node {
        &mut self.nodes[idx as usize]
    }

    /// The prefetch window that brought block `idx` (0 = none).
    #[inline]
    pub fn window(&self, idx: u32) -> u64 {
        self.info_of(idx).window
    }

    /// When the prefetch that brought block `idx` was issued (0 = none).
    #[inline]
    pub fn issue_ns(&self, idx: u32) -> u64 {
        self.info_of(idx).issue_ns
    }

    #[inline]
    fn info_of(&self, idx: u32) -> PrefetchInfo {
        if self.nodes[idx as usize].from_prefetch {
            self.info[idx as usize]
        } else {
            PrefetchInfo::default()
        }
    }

    /// Block `idx`, just inserted by a prefetch, belongs to `window` (in
    /// window-table slot `window_slot`), issued at `issue_ns`.
    #[inline]
    pub fn set_prefetch(&mut self, idx: u32, window: u64, window_slot: u32, issue_ns: u64) {
        debug_assert!(self.nodes[idx as usize].from_prefetch);
        self.nodes[idx as usize].window_slot = window_slot;
        self.info[idx as usize] = PrefetchInfo { window, issue_ns };
    }

    /// Hint that `key` will be looked up soon.
    #[inline]
    pub fn prefetch_key(&self, key: u64) {
        self.map.prefetch(key);
    }

    /// Warm the next LRU victims: the head's hash slot, and the node two
    /// places behind it, so that every node has been fetched two
    /// evictions before its own (one eviction ahead left the load of the
    /// new head's key the costliest instruction of `insert`, perf on the
    /// 10 M-request page trace).
    #[inline]
    fn prefetch_victims(&self) {
        let h = self.lru.head;
        if h == NIL {
            return;
        }
        let n = &self.nodes[h as usize];
        self.map.prefetch(n.key);
        if n.next != NIL {
            let n1 = &self.nodes[n.next as usize];
            self.map.prefetch(n1.key);
            if n1.next != NIL {
                crate::blockmap::prefetch_read(&self.nodes[n1.next as usize]);
            }
        }
    }

    /// A demand access found the block: move it to the MRU end of the
    /// (caching-area) LRU list. In the split model a hit in the prefetching
    /// area moves the block to the caching area (§3.3.3).
    #[inline]
    pub fn touch(&mut self, idx: u32) {
        self.unlink(idx);
        self.push_tail(idx, LIST_LRU);
    }

    /// A demand access missed `key`: count ghost hits (split model §3.6)
    /// and advance the epoch.
    #[inline]
    pub fn note_demand(&mut self, key: u64, missed: bool) {
        if self.model != CacheModel::Split {
            return;
        }
        if missed {
            if self.ghost_prefetch.take(key) {
                self.hits_prefetch_ghost += 1;
            } else if self.ghost_cache.take(key) {
                self.hits_cache_ghost += 1;
            }
        }
        self.epoch_left -= 1;
        if self.epoch_left == 0 {
            self.end_epoch();
        }
    }

    fn end_epoch(&mut self) {
        let n = self.epoch_len.max(1);
        let (hp, hc) = (self.hits_prefetch_ghost, self.hits_cache_ghost);
        if (hp.abs_diff(hc) as f64) / n as f64 > MOVE_THRESHOLD {
            let max_target = self
                .capacity_blocks
                .saturating_sub(self.min_prefetch_blocks)
                .max(self.min_prefetch_blocks);
            self.prefetch_target_blocks = if hp > hc {
                (self.prefetch_target_blocks + MOVE_BLOCKS).min(max_target)
            } else {
                self.prefetch_target_blocks
                    .saturating_sub(MOVE_BLOCKS)
                    .max(self.min_prefetch_blocks)
            };
        }
        self.hits_prefetch_ghost = 0;
        self.hits_cache_ghost = 0;
        self.epoch_len = self.fifo.len.max(self.min_prefetch_blocks);
        self.epoch_left = self.epoch_len;
    }

    /// Insert a block that is not present, evicting as needed. Evicted nodes
    /// are appended to `evicted` for the caller's accounting. Returns the
    /// new node's index.
    pub fn insert(&mut self, key: u64, fill: Fill, evicted: &mut Vec<Evicted>) -> u32 {
        debug_assert!(!self.map.contains_key(key));
        while self.len() >= self.capacity_blocks {
            let victim = self.victim();
            let node = self.remove(victim);
            evicted.push(node);
        }
        let idx = if self.free != NIL {
            let idx = self.free;
            self.free = self.nodes[idx as usize].next;
            idx
        } else {
            self.nodes.push(Node {
                key: 0,
                prev: NIL,
                next: NIL,
                inflight: None,
                window_slot: 0,
                list: LIST_FREE,
                prefetched: false,
                from_prefetch: false,
            });
            self.info.push(PrefetchInfo::default());
            (self.nodes.len() - 1) as u32
        };
        let n = &mut self.nodes[idx as usize];
        n.key = key;
        n.prefetched = fill == Fill::Prefetch;
        n.from_prefetch = fill == Fill::Prefetch;
        n.inflight = None;
        if fill == Fill::Prefetch {
            self.info[idx as usize] = PrefetchInfo::default();
        }
        let list = if fill == Fill::Prefetch && self.model == CacheModel::Split {
            LIST_FIFO
        } else {
            LIST_LRU
        };
        self.push_tail(idx, list);
        self.map.insert_absent(key, idx);
        self.peak_nodes = self.peak_nodes.max(self.map.len());
        self.prefetch_victims();
        debug_assert!(self.len() <= self.capacity_blocks);
        idx
    }

    #[inline]
    fn victim(&self) -> u32 {
        match self.model {
            CacheModel::Lru => self.lru.head,
            CacheModel::Split => {
                let from_fifo = self.fifo.len > 0
                    && (self.fifo.len > self.prefetch_target_blocks || self.lru.len == 0);
                if from_fifo {
                    self.fifo.head
                } else {
                    self.lru.head
                }
            }
        }
    }

    /// Remove a block, returning what the caller accounts.
    #[inline]
    pub fn remove(&mut self, idx: u32) -> Evicted {
        let node = self.nodes[idx as usize];
        let out = Evicted {
            key: node.key,
            prefetched: node.prefetched,
            window_slot: node.window_slot,
            window: self.window(idx),
        };
        if self.model == CacheModel::Split {
            if node.list == LIST_FIFO {
                self.ghost_prefetch.push(node.key);
            } else {
                self.ghost_cache.push(node.key);
            }
        }
        self.unlink(idx);
        self.map.remove(node.key);
        let n = &mut self.nodes[idx as usize];
        n.list = LIST_FREE;
        n.next = self.free;
        self.free = idx;
        out
    }

    /// Remove every block, showing each to `f` first (end of run
    /// accounting; no copy of the nodes: a copy cost 48 bytes per cached
    /// block of peak memory).
    pub fn drain_each(&mut self, mut f: impl FnMut(&Node)) {
        self.nodes
            .iter()
            .filter(|n| n.list != LIST_FREE)
            .for_each(&mut f);
        self.clear();
    }

    #[inline]
    fn list_mut(&mut self, list: u8) -> &mut List {
        if list == LIST_LRU {
            &mut self.lru
        } else {
            &mut self.fifo
        }
    }

    #[inline]
    fn unlink(&mut self, idx: u32) {
        let Node {
            prev, next, list, ..
        } = self.nodes[idx as usize];
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            self.list_mut(list).head = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            self.list_mut(list).tail = prev;
        }
        self.list_mut(list).len -= 1;
    }

    #[inline]
    fn push_tail(&mut self, idx: u32, list: u8) {
        let tail = self.list_mut(list).tail;
        {
            let n = &mut self.nodes[idx as usize];
            n.prev = tail;
            n.next = NIL;
            n.list = list;
        }
        if tail != NIL {
            self.nodes[tail as usize].next = idx;
        } else {
            self.list_mut(list).head = idx;
        }
        let l = self.list_mut(list);
        l.tail = idx;
        l.len += 1;
    }

    /// Keys from LRU (next victim) to MRU, for tests.
    pub fn lru_order(&self) -> Vec<u64> {
        let mut v = vec![];
        let mut i = self.lru.head;
        while i != NIL {
            v.push(self.nodes[i as usize].key);
            i = self.nodes[i as usize].next;
        }
        v
    }

    /// Keys of the prefetching area from head (next victim) to tail.
    pub fn fifo_order(&self) -> Vec<u64> {
        let mut v = vec![];
        let mut i = self.fifo.head;
        while i != NIL {
            v.push(self.nodes[i as usize].key);
            i = self.nodes[i as usize].next;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(c: &mut Cache, k: u64, f: Fill) -> Vec<u64> {
        let mut ev = vec![];
        c.insert(k, f, &mut ev);
        ev.iter().map(|n| n.key).collect()
    }

    #[test]
    fn lru_evicts_least_recent_and_prefetch_goes_to_mru() {
        let mut c = Cache::new(CacheModel::Lru, 3);
        ins(&mut c, 1, Fill::Demand);
        ins(&mut c, 2, Fill::Demand);
        ins(&mut c, 3, Fill::Prefetch);
        c.touch(c.get(1).unwrap());
        assert_eq!(c.lru_order(), vec![2, 3, 1]);
        assert_eq!(ins(&mut c, 4, Fill::Prefetch), vec![2]);
        assert_eq!(c.lru_order(), vec![3, 1, 4]);
        assert!(c.node(c.get(4).unwrap()).prefetched);
    }

    #[test]
    fn split_keeps_prefetched_blocks_in_fifo_until_hit() {
        // Capacity 128 → minimum prefetching area 2 blocks.
        let mut c = Cache::new(CacheModel::Split, 128);
        for k in 0..126 {
            ins(&mut c, k, Fill::Demand);
        }
        ins(&mut c, 1000, Fill::Prefetch);
        ins(&mut c, 1001, Fill::Prefetch);
        assert_eq!(c.fifo_order(), vec![1000, 1001]);
        // A hit moves 1000 to the caching area's MRU end.
        c.touch(c.get(1000).unwrap());
        assert_eq!(c.fifo_order(), vec![1001]);
        assert_eq!(*c.lru_order().last().unwrap(), 1000);
        // FIFO at/below target: demand insert evicts the LRU tail (block 0).
        assert_eq!(ins(&mut c, 2000, Fill::Demand), vec![0]);
        // While the FIFO is at or below its target of 2 blocks, the caching
        // area gives up blocks; once it exceeds the target, the FIFO head
        // (the oldest prefetched block) goes first.
        assert_eq!(ins(&mut c, 1002, Fill::Prefetch), vec![1]);
        assert_eq!(ins(&mut c, 1003, Fill::Prefetch), vec![2]);
        assert_eq!(c.fifo_order(), vec![1001, 1002, 1003]);
        assert_eq!(ins(&mut c, 1004, Fill::Prefetch), vec![1001]);
        assert_eq!(c.len(), 128);
    }

    #[test]
    fn capacity_is_never_exceeded_and_slab_reuses_nodes() {
        let mut c = Cache::new(CacheModel::Lru, 10);
        for k in 0..1000 {
            ins(
                &mut c,
                k,
                if k % 3 == 0 {
                    Fill::Prefetch
                } else {
                    Fill::Demand
                },
            );
            assert!(c.len() <= 10);
        }
        assert_eq!(c.nodes.len(), 10);
        assert_eq!(c.lru_order(), (990..1000).collect::<Vec<_>>());
    }

    #[test]
    fn split_area_grows_when_prefetch_ghost_misses_dominate() {
        let mut c = Cache::new(CacheModel::Split, 64 * 1024);
        let before = c.prefetch_target_blocks();
        // Evict prefetched blocks from the FIFO into its ghost, then miss on
        // them: every epoch sees only prefetch-ghost hits.
        let mut ev = vec![];
        for k in 0..(64 * 1024 + 4096) {
            c.insert(k, Fill::Prefetch, &mut ev);
        }
        let ghosts: Vec<u64> = ev.iter().rev().take(2048).map(|n| n.key).collect();
        for k in ghosts {
            c.note_demand(k, true);
        }
        assert!(c.prefetch_target_blocks() > before);
    }
}
