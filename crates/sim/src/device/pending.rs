//! Requests a device model holds, one implementation for every model: a
//! slab of requests and min-heaps of 16-byte keys `(order, sequence << 24 |
//! slot)`, so sifting moves small keys, ties on `order` break by
//! submission, and nothing allocates once the slab and heaps have grown
//! to the queue's depth ([`MAX_PENDING_REQUESTS`]).
//!
//! [`Pending`] orders by completion time (the flash and calibrated
//! models); the C-LOOK queue keeps two heaps over one [`Slab`].

use super::MAX_PENDING_REQUESTS;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bits of a key's tie-breaker that hold the slot index.
const SLOT_BITS: u32 = MAX_PENDING_REQUESTS.trailing_zeros();
/// Submission sequence numbers must fit above the slot bits.
const MAX_SEQ: u64 = 1 << (64 - SLOT_BITS);

const _: () = assert!(MAX_PENDING_REQUESTS.is_power_of_two());

/// A heap key: `order`, then submission sequence, then the slot.
pub type Key = Reverse<(u64, u64)>;

/// Requests by slot, with a sequence for tie-breaking keys.
#[derive(Clone, Debug)]
pub struct Slab<T> {
    slots: Vec<T>,
    free: Vec<u32>,
    seq: u64,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
}

impl<T: Copy> Slab<T> {
    /// Store `v`; returns its heap key with `order`.
    #[inline]
    pub fn insert(&mut self, order: u64, v: T) -> Key {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = v;
                i
            }
            None => {
                assert!(
                    self.slots.len() < MAX_PENDING_REQUESTS,
                    "device queue overflow"
                );
                self.slots.push(v);
                (self.slots.len() - 1) as u32
            }
        };
        assert!(self.seq < MAX_SEQ, "sequence overflow; reset between runs");
        let key = Reverse((order, self.seq << SLOT_BITS | u64::from(slot)));
        self.seq += 1;
        key
    }

    /// Take the request of `key` out; returns its order and the request.
    #[inline]
    pub fn take(&mut self, key: Key) -> (u64, T) {
        let Reverse((order, tag)) = key;
        let slot = (tag & ((1 << SLOT_BITS) - 1)) as u32;
        self.free.push(slot);
        (order, self.slots[slot as usize])
    }

    /// Drop everything, keeping capacity.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.seq = 0;
    }
}

/// Requests by completion time, earliest first (ties: submission order).
#[derive(Clone, Debug)]
pub struct Pending<T> {
    heap: BinaryHeap<Key>,
    slab: Slab<T>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            heap: BinaryHeap::new(),
            slab: Slab::default(),
        }
    }
}

impl<T: Copy> Pending<T> {
    /// Hold `v`, completing at `end_ns`.
    #[inline]
    pub fn push(&mut self, end_ns: u64, v: T) {
        let key = self.slab.insert(end_ns, v);
        self.heap.push(key);
    }

    /// When the next request completes.
    #[inline]
    pub fn next_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((end, _))| *end)
    }

    /// The next request to complete, and when.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        let key = self.heap.pop()?;
        Some(self.slab.take(key))
    }

    /// Requests held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Drop everything, keeping capacity.
    pub fn clear(&mut self) {
        self.heap.clear();
        self.slab.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_submission_order() {
        let mut p = Pending::default();
        for (end, id) in [(30, 'a'), (10, 'b'), (30, 'c'), (10, 'd'), (20, 'e')] {
            p.push(end, id);
        }
        assert_eq!(p.next_ns(), Some(10));
        let order: Vec<char> = std::iter::from_fn(|| p.pop()).map(|(_, v)| v).collect();
        assert_eq!(order, ['b', 'd', 'e', 'a', 'c']);
        assert_eq!(p.len(), 0);
    }

    #[test]
    fn slots_are_reused_without_growing() {
        let mut p = Pending::default();
        for i in 0..1000u64 {
            p.push(i, i);
            assert_eq!(p.pop(), Some((i, i)));
        }
        assert_eq!(p.slab.slots.len(), 1);
    }
}
