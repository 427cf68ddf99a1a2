//! Per-window accounting of prefetched blocks (DESIGN.md
//! `mis_prefetched_windows`): how many blocks of each open window are still
//! unresolved (neither used nor evicted) and whether any was used.
//!
//! Windows live in a slab; a cached block remembers its window's slot, so
//! resolving a block (every prefetched hit and every unused eviction) is an
//! array access, not a hash lookup. Only opening a window looks its id up,
//! and not even that when the id is newer than any seen so far (the driver
//! hands ids out in increasing order, so a fresh window is the common
//! case). A window closes when its last block resolves; its slot is reused.

use crate::blockmap::BlockMap;

#[derive(Clone, Copy)]
struct Slot {
    id: u64,
    unresolved: u32,
    used: bool,
}

/// Open windows. See the module documentation.
#[derive(Default)]
pub struct WindowTable {
    slot_of: BlockMap,
    slots: Vec<Slot>,
    free: Vec<u32>,
    newest_id: u64,
}

impl WindowTable {
    /// Add `blocks` unresolved blocks to window `id`, opening it if it is
    /// not open. Returns its slot and whether it was opened now.
    pub fn add(&mut self, id: u64, blocks: u32) -> (u32, bool) {
        if id <= self.newest_id {
            if let Some(slot) = self.slot_of.get(id) {
                self.slots[slot as usize].unresolved += blocks;
                return (slot, false);
            }
        } else {
            self.newest_id = id;
        }
        let s = Slot {
            id,
            unresolved: blocks,
            used: false,
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
        self.slot_of.insert(id, slot);
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
        let (id, used) = (s.id, s.used);
        self.slot_of.remove(id);
        self.free.push(slot);
        Some(!used)
    }

    /// No window is open.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Close every window (a new run).
    pub fn clear(&mut self) {
        self.slot_of.clear();
        self.slots.clear();
        self.free.clear();
        self.newest_id = 0;
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
}
