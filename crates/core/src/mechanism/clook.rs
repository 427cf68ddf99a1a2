//! C-LOOK ordering of a batch of prefetches (libprefetch §3.1, §3.5).
//!
//! libprefetch §3.1: forward seeks under about 1 MB are cheaper than
//! backward ones (Fig. 1), so a batch is read in one ascending sweep from
//! the head — "scan forward servicing requests until there are no requests
//! past the head position, then return to the request with the lowest
//! offset and repeat". §3.5: the reorder buffer's pages are prefetched "in
//! disk order". With `k` uniformly random pages of an `n`-page file in the
//! buffer, the sweep's average seek is 2N(K−1)/(K(K+1)) pages
//! ([`expected_seek_pages`]).
//!
//! The order is by a key that starts with the physical position (the
//! device, then the block); the head is a key too. A caller that does not
//! know the head passes the lowest key: the sweep then starts at the
//! device's start.

/// Sort `items` by `key` ascending, then rotate so the sweep starts at the
/// first item whose key is at or after `head` (the items before it wrap to
/// the end).
///
/// Example: positions 5, 40, 12, 90 with the head at 30 are read as
/// 40, 90, 5, 12.
pub fn order<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K, head: K) {
    items.sort_unstable_by_key(&key);
    let first = items.partition_point(|t| key(t) < head);
    items.rotate_left(first);
}

/// Expected average seek distance, in pages, of C-LOOK over a reorder
/// buffer of `k` uniformly random pages of an `n`-page file (libprefetch
/// §3.5): 2N(K−1)/(K(K+1)).
pub fn expected_seek_pages(n: f64, k: f64) -> f64 {
    2.0 * n * (k - 1.0) / (k * (k + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_starts_at_the_head_and_wraps_to_the_lowest() {
        let mut v = vec![5u64, 40, 12, 90];
        order(&mut v, |&p| p, 30);
        assert_eq!(v, vec![40, 90, 5, 12]);
    }

    #[test]
    fn an_item_at_the_head_is_read_first() {
        let mut v = vec![5u64, 30, 12];
        order(&mut v, |&p| p, 30);
        assert_eq!(v, vec![30, 5, 12]);
    }

    #[test]
    fn the_lowest_head_is_one_ascending_sweep() {
        let mut v = vec![(1u32, 7u64), (0, 9), (1, 2), (0, 3)];
        order(&mut v, |&x| x, (0, 0));
        assert_eq!(v, vec![(0, 3), (0, 9), (1, 2), (1, 7)]);
    }

    /// A head past every item wraps the whole batch: plain ascending order.
    #[test]
    fn a_head_past_every_item_reads_ascending() {
        let mut v = vec![9u64, 3, 6];
        order(&mut v, |&p| p, 100);
        assert_eq!(v, vec![3, 6, 9]);
    }

    /// §3.5's formula: 64 random pages of a 65 536-page (256 MiB) file
    /// are 2·65536·63/(64·65) ≈ 1984.98 pages (7.75 MiB) apart on average;
    /// a buffer of one page seeks nowhere within the buffer.
    #[test]
    fn expected_seek_follows_section_3_5() {
        let s = expected_seek_pages(65536.0, 64.0);
        assert!((s - 2.0 * 65536.0 * 63.0 / (64.0 * 65.0)).abs() < 1e-9);
        assert_eq!(s.floor(), 1984.0);
        assert_eq!(expected_seek_pages(65536.0, 1.0), 0.0);
    }
}
