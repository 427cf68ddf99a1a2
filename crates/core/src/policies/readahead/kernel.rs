//! The readahead algorithm proper: `struct file_ra_state`, the sizing helpers
//! and the two entry points of mm/readahead.c (`page_cache_sync_ra`,
//! `page_cache_async_ra`, Linux 6.11–6.15 shape) for order-0 folios.
//!
//! Everything here is pure arithmetic over one file's state plus a
//! page-cache probe (`cached`). The caller (`super::walk`) decides when each
//! entry point runs and turns the resulting window into prefetch requests.
//! Names follow the kernel so the two can be read side by side; the code is
//! our own.

/// `PAGE_SHIFT`: pages are 4 KiB ([`crate::BLOCK_SIZE`]).
pub const PAGE_SHIFT: u32 = 12;

/// `VM_READAHEAD_PAGES`: the default `ra_pages`, 128 KiB in 4 KiB pages.
pub const VM_READAHEAD_PAGES: u64 = 32;

/// The kernel's `ULONG_MAX` as returned by `page_cache_prev_miss` when the
/// scan ran off the start of the file (every page `0..=index` cached).
pub const ULONG_MAX: u64 = u64::MAX;

/// `struct file_ra_state` minus two fields: `ra_pages` is a parameter here,
/// the same for every file ([`Limits::ra_pages`]), and `mmap_miss` belongs
/// to mmap read-around, which this model does not have (no fault events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRaState {
    /// First page of the current readahead window.
    pub start: u64,
    /// Pages in the current window.
    pub size: u64,
    /// Pages at the window's tail: the PG_readahead marker sits on page
    /// `start + size - async_size`, and reaching it starts the next window.
    /// 0 means no marker.
    pub async_size: u64,
    /// Byte position just past the previous read (`ra->prev_pos`), or
    /// `u64::MAX` (the kernel's `-1` from `file_ra_state_init`) before any.
    pub prev_pos: u64,
}

impl Default for FileRaState {
    /// `file_ra_state_init`: empty window, no previous read.
    fn default() -> Self {
        FileRaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev_pos: u64::MAX,
        }
    }
}

impl FileRaState {
    /// The page that `page_cache_ra_unbounded` tags PG_readahead for the
    /// current window (`start + size - async_size`), if any.
    pub fn mark(&self) -> Option<u64> {
        (self.async_size > 0 && self.async_size <= self.size)
            .then(|| self.start + self.size - self.async_size)
    }

    /// One past the window's last page.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }
}

/// The per-device numbers readahead runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `ra->ra_pages` (from `bdi->ra_pages`, i.e. `read_ahead_kb / 4`).
    pub ra_pages: u64,
    /// `bdi->io_pages` (the queue's `max_sectors_kb / 4`).
    pub io_pages: u64,
    /// Context readahead on a non-sequential miss (always on in the kernel).
    pub context: bool,
}

/// Set the initial window size: round the request up to a power of two,
/// then ×4 when small (≤ max/32), ×2 when medium (≤ max/4), else the
/// maximum. With `max` = 32: 1–2 pages → 4 (16 KiB), 3–4 → 8 (32 KiB),
/// 5–8 → 16 (64 KiB), more → 32 (128 KiB).
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// Size of the next window: ×4 while under `max/16`, ×2 up to `max/2`, then
/// `max`. With `max` = 32: 1 → 4, 4 → 8, 8 → 16, 16 → 32, 32 → 32.
pub fn get_next_ra_size(ra: &FileRaState, max: u64) -> u64 {
    let cur = ra.size;
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// The window limit for a request of `req_size` pages: `ra_pages`, except
/// that a request larger than it may be read ahead up to the device's
/// optimal I/O size `io_pages`.
pub fn ractl_max_pages(lim: Limits, req_size: u64) -> u64 {
    let mut max_pages = lim.ra_pages;
    if req_size > max_pages && lim.io_pages > max_pages {
        max_pages = req_size.min(lim.io_pages);
    }
    max_pages
}

/// `page_cache_prev_miss`: scanning down from `index` over at most
/// `max_scan` pages, the first page not cached. If none, `index - max_scan`
/// (outside the scanned range), or [`ULONG_MAX`] when the scan ran past
/// page 0 (the file is cached from its start).
pub fn page_cache_prev_miss(cached: impl Fn(u64) -> bool, index: u64, max_scan: u64) -> u64 {
    for i in 0..max_scan {
        let Some(p) = index.checked_sub(i) else {
            return ULONG_MAX;
        };
        if !cached(p) {
            return p;
        }
    }
    // Not found: one below the scanned range, which wraps to ULONG_MAX
    // when the range reached page 0.
    index.wrapping_sub(max_scan)
}

/// `page_cache_next_miss`: scanning up from `index` over at most `max_scan`
/// pages, the first page not cached; if none, `index + max_scan`.
pub fn page_cache_next_miss(cached: impl Fn(u64) -> bool, index: u64, max_scan: u64) -> u64 {
    for i in 0..max_scan {
        let p = index.wrapping_add(i);
        if !cached(p) {
            return p;
        }
    }
    index.wrapping_add(max_scan)
}

/// What an entry point decided, for the caller to carry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ra {
    /// `readit`: read the window `[ra.start, ra.end())` and tag
    /// `ra.mark()` PG_readahead.
    Window,
    /// `do_page_cache_ra(ractl, req_count, 0)` (a standalone random read)
    /// or the one-page forced read when `ra_pages` is 0: read only the
    /// request; the state is untouched.
    RequestOnly,
    /// Nothing is read (async readahead gave up or is disabled).
    Nothing,
}

/// `page_cache_sync_ra`: the page at `index` was missing and the reader
/// wants `req_count` pages from it.
pub fn page_cache_sync_ra(
    ra: &mut FileRaState,
    lim: Limits,
    index: u64,
    req_count: u64,
    cached: impl Fn(u64) -> bool,
) -> Ra {
    // Readahead disabled: the kernel still reads the one page it needs
    // (force_page_cache_ra of 1 page); the state is left alone.
    if lim.ra_pages == 0 {
        return Ra::RequestOnly;
    }
    let max_pages = ractl_max_pages(lim, req_count);
    let prev_index = ra.prev_pos >> PAGE_SHIFT;

    // Start of file, oversized read, or a miss right where the previous
    // read ended (difference 1) or inside its last page (difference 0):
    // open a fresh window.
    if index == 0 || req_count > max_pages || index.wrapping_sub(prev_index) <= 1 {
        ra.start = index;
        ra.size = get_init_ra_size(req_count, max_pages);
        ra.async_size = if ra.size > req_count {
            ra.size - req_count
        } else {
            ra.size >> 1
        };
        return Ra::Window;
    }

    if !lim.context {
        return Ra::RequestOnly;
    }

    // Context readahead: the cached pages just below `index` are the trail
    // a sequential stream (interleaved with others) would leave.
    let miss = page_cache_prev_miss(&cached, index - 1, max_pages);
    let mut contig_count = index.wrapping_sub(miss).wrapping_sub(1);
    if contig_count <= req_count {
        // A standalone small random read: read as is, keep the state.
        return Ra::RequestOnly;
    }
    if miss == ULONG_MAX {
        // Cached from the start of the file: likely a whole-file read.
        contig_count *= 2;
    }
    ra.start = index;
    ra.size = (contig_count + req_count).min(max_pages);
    ra.async_size = 1;
    Ra::Window
}

/// `page_cache_async_ra`: the reader reached a page tagged PG_readahead at
/// `index` (the tag is already cleared by the caller) and wants `req_count`
/// pages from it.
pub fn page_cache_async_ra(
    ra: &mut FileRaState,
    lim: Limits,
    index: u64,
    req_count: u64,
    cached: impl Fn(u64) -> bool,
) -> Ra {
    if lim.ra_pages == 0 {
        return Ra::Nothing;
    }
    let max_pages = ractl_max_pages(lim, req_count);

    // The marker of our own window: sequential, push the window forward and
    // ramp it up. (The kernel rounds `expected` down to the folio size; with
    // order-0 folios that is a no-op.)
    let expected = ra.start + ra.size - ra.async_size;
    if index == expected {
        ra.start += ra.size;
        ra.size = get_next_ra_size(ra, max_pages);
        ra.async_size = ra.size;
        return Ra::Window;
    }

    // A marker without matching state, e.g. another stream interleaved in
    // this file took the state over. The cached run after the marker is
    // that stream's old async_size: ramp it up from there.
    let start = page_cache_next_miss(&cached, index + 1, max_pages);
    if start == 0 || start - index > max_pages {
        return Ra::Nothing;
    }
    ra.start = start;
    ra.size = start - index + req_count;
    ra.size = get_next_ra_size(ra, max_pages);
    ra.async_size = ra.size;
    Ra::Window
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_sizes_for_the_default_max() {
        // mm/readahead.c's own table for a 128 KiB max: 1-2 pages → 16 KiB,
        // 3-4 → 32 KiB, 5-8 → 64 KiB, more → 128 KiB (1 is ×4, 2 is ×2).
        let got: Vec<u64> = [1, 2, 3, 4, 5, 8, 9, 16, 64]
            .iter()
            .map(|&r| get_init_ra_size(r, 32))
            .collect();
        assert_eq!(got, vec![4, 4, 8, 8, 16, 16, 32, 32, 32]);
    }

    #[test]
    fn next_sizes_ramp_to_the_max() {
        let next = |size| {
            let ra = FileRaState {
                size,
                ..FileRaState::default()
            };
            get_next_ra_size(&ra, 32)
        };
        assert_eq!(
            [1, 4, 8, 16, 32].map(next),
            [4, 8, 16, 32, 32],
            "×4 below max/16, ×2 up to max/2, then max"
        );
    }

    #[test]
    fn max_pages_grows_only_for_oversized_requests() {
        let lim = Limits {
            ra_pages: 32,
            io_pages: 256,
            context: true,
        };
        assert_eq!(ractl_max_pages(lim, 16), 32);
        assert_eq!(ractl_max_pages(lim, 100), 100);
        assert_eq!(ractl_max_pages(lim, 1000), 256);
        let small_io = Limits { io_pages: 8, ..lim };
        assert_eq!(ractl_max_pages(small_io, 1000), 32);
    }

    #[test]
    fn miss_scans_follow_the_xarray_contract() {
        let cached = |p: u64| (5..=9).contains(&p);
        assert_eq!(page_cache_prev_miss(cached, 9, 32), 4);
        assert_eq!(page_cache_prev_miss(cached, 9, 3), 6, "9 - 3: not found");
        assert_eq!(page_cache_next_miss(cached, 5, 32), 10);
        assert_eq!(page_cache_next_miss(cached, 5, 3), 8, "5 + 3: not found");
        let all = |_p: u64| true;
        assert_eq!(page_cache_prev_miss(all, 9, 32), ULONG_MAX);
        assert_eq!(page_cache_prev_miss(all, 9, 10), ULONG_MAX);
        assert_eq!(page_cache_prev_miss(all, 9, 9), 0);
    }
}
