//! C-LOOK queue: serve ascending from the head, then wrap to the lowest.
//!
//! libprefetch §3.1 chose Circular LOOK because forward seeks under 1 MB are
//! cheaper than backward ones (Fig. 1): "scan forward servicing requests
//! until there are no requests past the head position, then return to the
//! request with the lowest offset and repeat".
//!
//! Two min-heaps keyed by (position, arrival sequence): `sweep` holds the
//! requests at or past the head when they arrived, `next` those behind it.
//! The head only moves up while `sweep` drains (it is always served lowest
//! first), so a request behind the head stays behind it until the wrap, when
//! the heaps swap. Push and pop are O(log n); neither allocates once the
//! heaps and the request slab have grown to the queue's depth.
//!
//! Known approximation: a request that arrived at or past the head but
//! overlaps the previously served one (start < that request's end) is still
//! served in this sweep, a tiny backward seek, rather than deferred to the
//! next; exact C-LOOK with an ordered map would defer it.

use std::collections::BinaryHeap;

use super::pending::{Key, Slab};
use super::DevRequest;

/// Requests waiting for one arm, served in C-LOOK order.
///
/// Heap entries are 16 bytes, `(position, sequence << 24 | slot)`: the
/// requests themselves sit in a slab indexed by slot, so sifting moves
/// small keys and ties on position break by arrival order.
#[derive(Clone, Debug, Default)]
pub struct CLookQueue {
    sweep: BinaryHeap<Key>,
    next: BinaryHeap<Key>,
    slab: Slab<DevRequest>,
}

impl CLookQueue {
    /// Queue `req` starting at linear block `pos`, given the head is at
    /// `head` (the block after the last request started).
    #[inline]
    pub fn push(&mut self, head: u64, pos: u64, req: DevRequest) {
        let e = self.slab.insert(pos, req);
        if pos >= head {
            self.sweep.push(e);
        } else {
            self.next.push(e);
        }
    }

    /// Take the next request in C-LOOK order: the lowest at or past the
    /// head, else (wrap) the lowest overall. Returns its position too.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, DevRequest)> {
        if self.sweep.is_empty() {
            std::mem::swap(&mut self.sweep, &mut self.next);
        }
        let key = self.sweep.pop()?;
        Some(self.slab.take(key))
    }

    /// Requests queued.
    pub fn len(&self) -> usize {
        self.sweep.len() + self.next.len()
    }

    /// No requests queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drop every request, keeping capacity.
    pub fn clear(&mut self) {
        self.sweep.clear();
        self.next.clear();
        self.slab.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64) -> DevRequest {
        DevRequest {
            id,
            blocks: 1,
            ..DevRequest::default()
        }
    }

    /// C-LOOK on a hand-made queue: head at 500, requests on both sides;
    /// ascending from the head, then wrap to the lowest and ascend again.
    #[test]
    fn serves_ascending_from_head_then_wraps() {
        let mut q = CLookQueue::default();
        let mut head = 500;
        for pos in [700, 100, 900, 300, 500, 600, 100] {
            q.push(head, pos, req(pos));
        }
        let mut order = Vec::new();
        while let Some((pos, r)) = q.pop() {
            assert_eq!(pos, r.id);
            order.push(pos);
            head = pos + 1;
            // A late arrival just behind the head waits for the wrap.
            if pos == 600 {
                q.push(head, 550, req(550));
            }
        }
        let _ = head;
        assert_eq!(order, [500, 600, 700, 900, 100, 100, 300, 550]);
    }

    #[test]
    fn equal_positions_are_fifo() {
        let mut q = CLookQueue::default();
        for id in 0..5 {
            q.push(0, 42, req(id));
        }
        let ids: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(_, r)| r.id).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
    }
}
