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
//! heaps have grown to the queue's depth.
//!
//! Known approximation: a request that arrived at or past the head but
//! overlaps the previously served one (start < that request's end) is still
//! served in this sweep, a tiny backward seek, rather than deferred to the
//! next; exact C-LOOK with an ordered map would defer it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::DevRequest;

#[derive(Clone, Copy, Debug)]
struct Entry {
    pos: u64,
    seq: u64,
    req: DevRequest,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.pos, self.seq) == (other.pos, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.pos, self.seq).cmp(&(other.pos, other.seq))
    }
}

/// Requests waiting for one arm, served in C-LOOK order.
#[derive(Clone, Debug, Default)]
pub struct CLookQueue {
    sweep: BinaryHeap<Reverse<Entry>>,
    next: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl CLookQueue {
    /// Queue `req` starting at linear block `pos`, given the head is at
    /// `head` (the block after the last request started).
    #[inline]
    pub fn push(&mut self, head: u64, pos: u64, req: DevRequest) {
        let e = Reverse(Entry {
            pos,
            seq: self.seq,
            req,
        });
        self.seq += 1;
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
        self.sweep.pop().map(|Reverse(e)| (e.pos, e.req))
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
        self.seq = 0;
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
