//! Cutting a range `[start, end)` into requests of at most `max` units
//! (pages or blocks), the one place that does it for every policy.
//!
//! The kernel caps one `posix_fadvise(WILLNEED)` / `readahead(2)` call at
//! max(read_ahead_kb, device max I/O) — 8 MiB on this machine (DESIGN.md
//! "Kernel facts") — and a prefetch request carries its length in a `u32`,
//! so a policy that plans a large range hands it out in pieces. Ascending
//! order serves a forward reader first; descending (highest piece first)
//! serves a backward reader first.

/// The pieces of `[start, end)` of at most `max` units each (`max` 0 is
/// taken as 1), lowest first: `(first, len)`.
///
/// `ascending(0, 10, 4)` gives `(0, 4), (4, 4), (8, 2)`.
pub fn ascending(start: u64, end: u64, max: u64) -> Pieces {
    pieces(start, end, max, false)
}

/// The pieces of `[start, end)` of at most `max` units each (`max` 0 is
/// taken as 1), highest first: `(first, len)`.
///
/// `descending(0, 10, 4)` gives `(6, 4), (2, 4), (0, 2)`.
pub fn descending(start: u64, end: u64, max: u64) -> Pieces {
    pieces(start, end, max, true)
}

/// [`ascending`] or, with `highest_first`, [`descending`].
pub fn pieces(start: u64, end: u64, max: u64, highest_first: bool) -> Pieces {
    Pieces {
        start,
        end: end.max(start),
        max: max.max(1),
        highest_first,
    }
}

/// The iterator of [`pieces`]: what is left of the range to hand out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pieces {
    start: u64,
    end: u64,
    max: u64,
    highest_first: bool,
}

impl Iterator for Pieces {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.start >= self.end {
            return None;
        }
        let n = (self.end - self.start).min(self.max);
        if self.highest_first {
            self.end -= n;
            Some((self.end, n))
        } else {
            self.start += n;
            Some((self.start - n, n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_cuts_lowest_first_with_a_short_last_piece() {
        let v: Vec<_> = ascending(0, 10, 4).collect();
        assert_eq!(v, vec![(0, 4), (4, 4), (8, 2)]);
        let v: Vec<_> = ascending(100, 104, 4).collect();
        assert_eq!(v, vec![(100, 4)]);
    }

    #[test]
    fn descending_cuts_highest_first_with_a_short_last_piece() {
        let v: Vec<_> = descending(0, 10, 4).collect();
        assert_eq!(v, vec![(6, 4), (2, 4), (0, 2)]);
    }

    #[test]
    fn empty_range_and_zero_max() {
        assert_eq!(ascending(5, 5, 4).count(), 0);
        assert_eq!(descending(5, 3, 4).count(), 0);
        // max 0 means pieces of one unit, never an endless loop.
        let v: Vec<_> = ascending(0, 3, 0).collect();
        assert_eq!(v, vec![(0, 1), (1, 1), (2, 1)]);
    }

    /// One 8 MiB kernel-capped call is 2048 pages: a 5000-page range is
    /// three calls.
    #[test]
    fn a_range_past_the_kernel_cap_is_three_calls() {
        let v: Vec<_> = ascending(0, 5000, 2048).collect();
        assert_eq!(v, vec![(0, 2048), (2048, 2048), (4096, 904)]);
    }
}
