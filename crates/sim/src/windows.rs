//! Per-window accounting of prefetched blocks (DESIGN.md
//! `mis_prefetched_windows`): how many blocks of each open window are still
//! unresolved (neither used nor evicted) and whether any was used.
//!
//! Windows live in a slab; a cached block remembers its window's slot, so
//! resolving a block (every prefetched hit and every unused eviction) is an
//! array access, not a hash lookup. The newest window is not in the id map
//! at all: it is remembered beside it and enters the map only when a newer
//! window opens while it is still open. The driver hands ids out in
//! increasing order and most windows close before the next one opens (a
//! one-block prefetch used by the very next access), so the common case
//! touches no hash table. A window closes when its last block resolves; its
//! slot is reused.

use crate::blockmap::BlockMap;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Slot {
    id: u64,
    unresolved: u32,
    used: bool,
    /// Is `id` in `slot_of`? (false for the newest window)
    mapped: bool,
}

/// Open windows. See the module documentation.
pub struct WindowTable {
    slot_of: BlockMap,
    slots: Vec<Slot>,
    free: Vec<u32>,
    newest_id: u64,
    /// Slot of window `newest_id` while it is open and unmapped, else NONE.
    newest_slot: u32,
}

impl Default for WindowTable {
    fn default() -> Self {
        WindowTable {
            slot_of: BlockMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            newest_id: 0,
            newest_slot: NONE,
        }
    }
}

impl WindowTable {
    /// Add `blocks` unresolved blocks to window `id`, opening it if it is
    /// not open. Returns its slot and whether it was opened now.
    pub fn add(&mut self, id: u64, blocks: u32) -> (u32, bool) {
        let newest = if id == self.newest_id {
            if self.newest_slot != NONE {
                self.slots[self.newest_slot as usize].unresolved += blocks;
                return (self.newest_slot, false);
            }
            true
        } else if id < self.newest_id {
            if let Some(slot) = self.slot_of.get(id) {
                self.slots[slot as usize].unresolved += blocks;
                return (slot, false);
            }
            false
        } else {
            // A newer window: the previous newest, if open, joins the map.
            if self.newest_slot != NONE {
                let old = self.newest_slot;
                self.slots[old as usize].mapped = true;
                self.slot_of.insert(self.newest_id, old);
            }
            self.newest_id = id;
            true
        };
        let s = Slot {
            id,
            unresolved: blocks,
            used: false,
            mapped: !newest,
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i
            }
            None => {
                self.slots.push(s);
                (self.slots.len() - 1) as u32
            }
        };
        if newest {
            self.newest_slot = slot;
        } else {
            self.slot_of.insert(id, slot);
        }
        (slot, true)
    }

    /// One block of the window in `slot` was used (`used`) or evicted
    /// unused. Returns `Some(mis_prefetched)` when that closed the window.
    pub fn resolve(&mut self, slot: u32, used: bool) -> Option<bool> {
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.unresolved > 0, "resolving a closed window");
        s.unresolved -= 1;
        s.used |= used;
        if s.unresolved > 0 {
            return None;
        }
        let (id, used, mapped) = (s.id, s.used, s.mapped);
        if mapped {
            self.slot_of.remove(id);
        } else {
            debug_assert_eq!(slot, self.newest_slot);
            self.newest_slot = NONE;
        }
        self.free.push(slot);
        Some(!used)
    }

    /// No window is open.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty() && self.newest_slot == NONE
    }

    /// Close every window (a new run).
    pub fn clear(&mut self) {
        self.slot_of.clear();
        self.slots.clear();
        self.free.clear();
        self.newest_id = 0;
        self.newest_slot = NONE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_closes_when_its_last_block_resolves() {
        let mut t = WindowTable::default();
        let (a, new) = t.add(5, 2);
        assert!(new);
        assert_eq!(t.add(5, 1), (a, false));
        let (b, _) = t.add(9, 1);
        assert_ne!(a, b);
        assert_eq!(t.resolve(a, false), None);
        assert_eq!(t.resolve(a, true), None);
        assert_eq!(t.resolve(a, false), Some(false), "one block was used");
        assert_eq!(t.resolve(b, false), Some(true), "mis-prefetched");
        assert!(t.is_empty());
        // An older id reopened after closing gets a (reused) slot again.
        let (c, new) = t.add(5, 1);
        assert!(new && (c == a || c == b));
    }

    /// A plain model: open windows in a std map of id -> (unresolved, used).
    #[derive(Default)]
    struct Model {
        open: std::collections::HashMap<u64, (u32, bool)>,
    }

    proptest::proptest! {
        // Any sequence of adds (ids mostly increasing, sometimes old ones)
        // and resolves agrees with the plain model on opening, closing and
        // the mis-prefetched verdict.
        #[test]
        fn agrees_with_a_plain_map(ops in proptest::collection::vec((0u8..4, 0u64..6, 1u32..3), 0..300)) {
            let mut t = WindowTable::default();
            let mut m = Model::default();
            let mut next_id = 1u64;
            let mut slots: std::collections::HashMap<u64, u32> = Default::default();
            for (op, k, n) in ops {
                match op {
                    0 | 1 => {
                        // op 0: a fresh id; op 1: an id up to k back.
                        let id = if op == 0 { next_id += 1; next_id } else { next_id.saturating_sub(k).max(1) };
                        let (slot, opened) = t.add(id, n);
                        let e = m.open.entry(id).or_insert((0, false));
                        proptest::prop_assert_eq!(opened, e.0 == 0);
                        e.0 += n;
                        if !opened {
                            proptest::prop_assert_eq!(slots[&id], slot);
                        }
                        slots.insert(id, slot);
                    }
                    _ => {
                        let mut ids: Vec<u64> = m.open.keys().copied().collect();
                        ids.sort_unstable();
                        if ids.is_empty() { continue; }
                        let id = ids[k as usize % ids.len()];
                        let used = op == 3;
                        let e = m.open.get_mut(&id).expect("open");
                        e.0 -= 1;
                        e.1 |= used;
                        let want = (e.0 == 0).then_some(!e.1);
                        if e.0 == 0 { m.open.remove(&id); }
                        proptest::prop_assert_eq!(t.resolve(slots[&id], used), want);
                    }
                }
                proptest::prop_assert_eq!(t.is_empty(), m.open.is_empty());
            }
        }
    }
}
