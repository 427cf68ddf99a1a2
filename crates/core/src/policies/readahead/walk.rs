//! The page-cache side of readahead that the kernel keeps outside
//! `file_ra_state`: PG_readahead tags on pages ([`Marks`]), and, within one
//! read, which pages are already being read ([`Covered`]).
//!
//! Both are fixed-size arrays: the per-access path never allocates.

/// PG_readahead tags outstanding in one file. The kernel keeps one flag per
/// folio, unbounded; a file with several interleaved streams has one tag
/// per stream. We keep the newest [`Marks::CAPACITY`] and forget the oldest
/// (its page has most likely been read past or evicted by then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marks {
    pages: [u64; Marks::CAPACITY],
    /// Slot the next tag overwrites (the oldest).
    next: u8,
}

impl Default for Marks {
    fn default() -> Self {
        Marks {
            pages: [Marks::NONE; Marks::CAPACITY],
            next: 0,
        }
    }
}

impl Marks {
    /// Tags kept per file.
    pub const CAPACITY: usize = 8;
    const NONE: u64 = u64::MAX;

    /// Tag `page` (no-op if already tagged).
    pub fn set(&mut self, page: u64) {
        if page == Self::NONE || self.pages.contains(&page) {
            return;
        }
        self.pages[self.next as usize] = page;
        self.next = ((self.next as usize + 1) % Self::CAPACITY) as u8;
    }

    /// The lowest tagged page in `[lo, hi)`, with its slot.
    pub fn first_in(&self, lo: u64, hi: u64) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for (slot, &p) in self.pages.iter().enumerate() {
            if p >= lo && p < hi && best.is_none_or(|(_, b)| p < b) {
                best = Some((slot, p));
            }
        }
        best
    }

    /// `folio_clear_readahead` for the tag in `slot`.
    pub fn clear_slot(&mut self, slot: usize) {
        self.pages[slot] = Self::NONE;
    }

    /// Forget tags on pages in `[lo, hi)` (those pages left the cache, and
    /// their flags with them).
    pub fn clear_range(&mut self, lo: u64, hi: u64) {
        for p in &mut self.pages {
            if *p >= lo && *p < hi {
                *p = Self::NONE;
            }
        }
    }

    /// Tagged pages, lowest first (for tests and debugging).
    pub fn pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .pages
            .iter()
            .copied()
            .filter(|&p| p != Self::NONE)
            .collect();
        v.sort_unstable();
        v
    }
}

/// Page ranges whose reads were started during the current access (the
/// windows this access issued, the part inside the access included), as a
/// small union of disjoint ranges. In the kernel these pages are simply in
/// the page cache, locked; the driver only learns of our requests after
/// `on_access` returns, so the walk keeps them here.
#[derive(Clone, Copy, Debug, Default)]
pub struct Covered {
    ranges: [(u64, u64); Covered::CAPACITY],
    len: usize,
}

impl Covered {
    /// Disjoint ranges kept; when full, the lowest one is forgotten (the
    /// walk has moved past it: every window starts at or after the walk's
    /// position).
    pub const CAPACITY: usize = 4;

    /// Add `[lo, hi)`, merging with overlapping or adjacent ranges.
    pub fn add(&mut self, mut lo: u64, mut hi: u64) {
        if lo >= hi {
            return;
        }
        let mut i = 0;
        while i < self.len {
            let (a, b) = self.ranges[i];
            if a <= hi && lo <= b {
                lo = lo.min(a);
                hi = hi.max(b);
                self.len -= 1;
                self.ranges[i] = self.ranges[self.len];
            } else {
                i += 1;
            }
        }
        if self.len == Self::CAPACITY {
            let lowest = (0..self.len).min_by_key(|&i| self.ranges[i].0).unwrap_or(0);
            self.len -= 1;
            self.ranges[lowest] = self.ranges[self.len];
        }
        self.ranges[self.len] = (lo, hi);
        self.len += 1;
    }

    /// Is `page` in one of the ranges?
    pub fn contains(&self, page: u64) -> bool {
        self.ranges[..self.len]
            .iter()
            .any(|&(a, b)| a <= page && page < b)
    }

    /// The first page at or after `page` not in any range.
    pub fn skip(&self, mut page: u64) -> u64 {
        // Ranges are disjoint and non-adjacent, so one pass per range
        // suffices.
        for _ in 0..=self.len {
            match self.ranges[..self.len]
                .iter()
                .find(|&&(a, b)| a <= page && page < b)
            {
                Some(&(_, b)) => page = b,
                None => break,
            }
        }
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_forget_the_oldest_when_full() {
        let mut m = Marks::default();
        for p in 0..(Marks::CAPACITY as u64 + 2) {
            m.set(p * 10);
        }
        assert_eq!(m.pages().len(), Marks::CAPACITY);
        assert_eq!(m.pages()[0], 20, "0 and 10 were the oldest");
        let page = |m: &Marks| m.first_in(25, 55).map(|(_, p)| p);
        assert_eq!(page(&m), Some(30));
        m.clear_range(30, 50);
        assert_eq!(page(&m), Some(50));
        let (slot, _) = m.first_in(25, 55).unwrap();
        m.clear_slot(slot);
        assert_eq!(page(&m), None);
    }

    #[test]
    fn covered_merges_and_skips() {
        let mut c = Covered::default();
        c.add(10, 20);
        c.add(30, 40);
        c.add(20, 25);
        assert!(c.contains(24) && !c.contains(25) && !c.contains(9));
        assert_eq!(c.skip(12), 25);
        c.add(25, 30);
        assert_eq!(c.skip(10), 40, "10..40 merged into one range");
        assert_eq!(c.skip(5), 5);
    }
}
