//! `readahead`: a model of Linux on-demand readahead (mm/readahead.c as of
//! Linux 6.11–6.15, order-0 folios), so that outrider's policies can be
//! compared with what the kernel would have done on the same trace.
//!
//! # What triggers it
//!
//! Reads only, per file. The kernel walks a read page by page
//! (`filemap_read` → `filemap_get_pages`) and calls into readahead at two
//! points, which this model reproduces in `Readahead::on_read`:
//!
//! - **a missing page** → `page_cache_sync_ra(index, req_count)` with
//!   `req_count` = pages from that page to the end of the read. It opens a
//!   new window at `index` when the miss is at page 0, the read is larger
//!   than the window limit, or the read starts where the previous one ended
//!   (`index - prev_index <= 1`); otherwise it looks for *context*: cached
//!   pages just below `index` (`page_cache_prev_miss`), the trail of a
//!   stream interleaved with others. No trail: a random read, read as is,
//!   state untouched.
//! - **a page tagged PG_readahead** (resident or still being read) →
//!   `page_cache_async_ra(index, req_count)`. If the tag is the one the
//!   current window planted (`index == start + size - async_size`), the
//!   window moves on to `start + size` and grows (`get_next_ra_size`); if
//!   not (another stream took the state over), the size is recovered from
//!   the cached run after the tag (`page_cache_next_miss`) and ramped up.
//!
//! # The numbers it keeps
//!
//! Per file, `struct file_ra_state`'s `start`, `size`, `async_size` and
//! `prev_pos` ([`kernel::FileRaState`]), plus the PG_readahead tags on pages
//! of that file ([`walk::Marks`]); per device `ra_pages` (default 32 pages,
//! 128 KiB) and `io_pages`. Windows grow 4 → 8 → 16 → 32 pages for 4 KiB
//! sequential reads; the tag sits `async_size` pages before a window's end
//! (at its first page once the stream is established), so the next window
//! is requested one whole window ahead of the reader.
//!
//! # How a read maps to prefetch requests
//!
//! In the kernel the sync window *includes* the pages the reader asked for:
//! one read I/O of `[start, start + size)` with `start = index`. Here the
//! driver reads the demand-missed pages itself, so the model issues only the
//! part of each window beyond the access: `[max(start, end), start + size)`,
//! one [`crate::WindowId`] per window that has such a part. The demand
//! part `[start, min(end, start + size))` is the driver's demand read and
//! is counted as missed blocks, not as prefetched ones; the kernel submits
//! both parts as one I/O, which a driver may merge back. Windows that lie
//! wholly inside the access (an oversized read chained by its own tags)
//! issue nothing but still move the state and plant tags, as in the kernel.
//! A random miss (`do_page_cache_ra(req_count, 0)`) issues nothing: the
//! kernel reads exactly the demand pages.
//!
//! # What is approximate
//!
//! - **Which pages missed.** The driver reports counts, not positions; the
//!   model assumes the resident pages (hits and in-flight) form a prefix of
//!   the access, so the first missing page is `page + hit + inflight`.
//!   Exact for one-page reads and for wholly missed or wholly hit reads,
//!   and the usual shape of a stream running off the end of its window.
//! - **PG_readahead tags.** The kernel tags pages; we keep the newest
//!   [`walk::Marks::CAPACITY`] tags per file. A tag is planted only when its
//!   page was not already cached (the kernel tags only folios it
//!   allocates), and dropped when an access finds its page missing (the
//!   flag left with the page). A tagged page evicted and re-read by another
//!   window without a tag keeps our tag: a rare spurious async readahead.
//! - **State per file, not per open file.** The kernel's `file_ra_state`
//!   lives in `struct file`; two processes reading one file have two. The
//!   model keys the state by [`crate::FileId`] (and device for
//!   [`crate::FileId::RAW`]), so such readers share one state and rely on
//!   context readahead, like threads sharing one descriptor do.
//! - **No folio orders.** Windows are read as order-0 pages. Linux 6.16+
//!   also ramps a folio order in `page_cache_async_ra` and trims each async
//!   window to end on an order-aligned page (by our reading of its source
//!   the 4 KiB ramp becomes 4, 8, 4, 8, 8, 16, 16, 32 pages); that is not
//!   modelled: this is the 6.11–6.15 ramp 4, 8, 16, 32.
//! - **No mmap read-around** (`mmap_miss`, `do_sync_mmap_readahead`), no
//!   `FMODE_RANDOM`/`POSIX_FADV_SEQUENTIAL`, no `i_size` clipping (the
//!   driver may drop pages past the end of a file), no cgroup congestion.
//! - Writes and non-demand accesses are ignored: `filemap_read` is the only
//!   caller modelled, and the page cache a write fills is seen through
//!   [`crate::Sink::is_page_cached`] when context readahead looks for
//!   history.

pub mod kernel;
pub mod walk;

#[cfg(test)]
mod tests;

use crate::event::{Access, FileId, Op, Origin, Outcome, Target};
use crate::policy::{BoxedPolicy, Interests, Policy, RunInfo, Sink};
use kernel::{FileRaState, Limits, Ra, PAGE_SHIFT};
use rustc_hash::FxHashMap;
use walk::{Covered, Marks};

/// Registered name.
pub const NAME: &str = "readahead";
/// One-line description.
pub const SUMMARY: &str = "Linux on-demand readahead (mm/readahead.c model, 6.11-6.15, order-0)";

/// Upper bound on `ra_pages` and `io_pages` (4 GiB), so that every window
/// fits a request's `u32` length. Larger settings are clamped.
pub const MAX_WINDOW_PAGES: u64 = 1 << 20;

/// Bound on readahead calls during one access (each reads at least one new
/// page, so only a read of more than this many pages can reach it; the rest
/// of such a read is left to the demand path).
pub const MAX_STEPS_PER_ACCESS: u32 = 1 << 16;

crate::params! {
    /// Readahead parameters: the block device's queue settings.
    pub struct ReadaheadParams {
        /// largest readahead window in 4 KiB pages: bdi->ra_pages = read_ahead_kb/4 (VM_READAHEAD_PAGES = 32 = 128 KiB); 0 disables readahead
        ra_pages: u64 = kernel::VM_READAHEAD_PAGES,
        /// device's optimal I/O size in 4 KiB pages: bdi->io_pages = max_sectors_kb/4 (bdi default 32); a read larger than ra_pages may be read ahead up to this
        io_pages: u64 = kernel::VM_READAHEAD_PAGES,
        /// context readahead: on a non-sequential miss, look for cached pages just below it (an interleaved stream's trail); off = treat as random (pre-2.6.31)
        context: bool = true,
    }
}

/// State key: the file, and the device for [`FileId::RAW`] (each device is
/// its own "file").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileKey {
    file: FileId,
    dev: u32,
}

/// Everything kept for one file.
#[derive(Clone, Copy, Debug, Default)]
struct FileEntry {
    ra: FileRaState,
    marks: Marks,
}

/// The Linux readahead model.
#[derive(Clone, Debug)]
pub struct Readahead {
    lim: Limits,
    files: FxHashMap<FileKey, FileEntry>,
}

/// One access as the walk sees it: where it is and which of its pages were
/// resident when it arrived.
struct Read {
    key: FileKey,
    index: u64,
    end: u64,
    /// First page the access missed (`end` if none): pages `[index,
    /// first_miss)` were resident or in flight.
    first_miss: u64,
}

impl Read {
    /// Is `page` in the page cache (resident or being read) at this point
    /// of the walk?
    fn cached(&self, page: u64, covered: &Covered, sink: &Sink<'_>) -> bool {
        if covered.contains(page) {
            return true;
        }
        if page >= self.index && page < self.end {
            return page < self.first_miss;
        }
        if self.key.file == FileId::RAW {
            sink.is_cached(self.key.dev, page)
        } else {
            sink.is_page_cached(self.key.file, page)
        }
    }

    fn target(&self, page: u64) -> Target {
        if self.key.file == FileId::RAW {
            Target::Block {
                dev: self.key.dev,
                lbn: page,
            }
        } else {
            Target::File {
                file: self.key.file,
                page,
            }
        }
    }
}

impl Readahead {
    /// Build from parameters (`ra_pages`, `io_pages` clamped to
    /// [`MAX_WINDOW_PAGES`]).
    pub fn new(p: ReadaheadParams) -> Self {
        Readahead {
            lim: Limits {
                ra_pages: p.ra_pages.min(MAX_WINDOW_PAGES),
                io_pages: p.io_pages.min(MAX_WINDOW_PAGES),
                context: p.context,
            },
            files: FxHashMap::default(),
        }
    }

    /// The readahead state of `file` (and device `dev` for RAW), if it has
    /// been read.
    pub fn file_ra_state(&self, file: FileId, dev: u32) -> Option<FileRaState> {
        self.files.get(&key(file, dev)).map(|e| e.ra)
    }

    /// Pages of `file` currently tagged PG_readahead, lowest first.
    pub fn readahead_marks(&self, file: FileId, dev: u32) -> Vec<u64> {
        self.files
            .get(&key(file, dev))
            .map(|e| e.marks.pages())
            .unwrap_or_default()
    }

    /// `filemap_read` for one access: walk it from its first page, running
    /// sync readahead at each page not yet in the cache and async readahead
    /// at each tagged page, in page order, then record `prev_pos`.
    fn on_read(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        let lim = self.lim;
        let k = key(a.file, a.dev);
        let entry = self.files.entry(k).or_default();
        let blocks = u64::from(a.blocks.max(1));
        let index = a.page;
        let end = index.saturating_add(blocks);
        let resident = u64::from(o.hit_blocks.saturating_add(o.inflight_blocks)).min(blocks);
        let first_miss = if o.miss_blocks > 0 {
            index + resident
        } else {
            end
        };
        let rd = Read {
            key: k,
            index,
            end,
            first_miss,
        };
        // Tags on pages this access missed left the cache with the pages.
        entry.marks.clear_range(first_miss, end);

        let mut covered = Covered::default();
        let mut pos = index;
        for _ in 0..MAX_STEPS_PER_ACCESS {
            let gap = if first_miss < end {
                Some(covered.skip(pos.max(first_miss))).filter(|&g| g < end)
            } else {
                None
            };
            let mark = entry.marks.first_in(pos, end);
            match (gap, mark) {
                (Some(g), m) if m.is_none_or(|(_, m)| g <= m) => {
                    // filemap_get_pages: page g is not in the cache.
                    let ra = kernel::page_cache_sync_ra(&mut entry.ra, lim, g, end - g, |p| {
                        rd.cached(p, &covered, sink)
                    });
                    if ra == Ra::Window {
                        issue(entry, &rd, &mut covered, sink);
                    } else {
                        // Read just the request (the driver's demand read).
                        covered.add(g, end);
                    }
                    pos = g;
                }
                (_, Some((slot, m))) => {
                    // filemap_readahead: page m carries PG_readahead.
                    entry.marks.clear_slot(slot);
                    let ra = kernel::page_cache_async_ra(&mut entry.ra, lim, m, end - m, |p| {
                        rd.cached(p, &covered, sink)
                    });
                    if ra == Ra::Window {
                        issue(entry, &rd, &mut covered, sink);
                    }
                    pos = m + 1;
                }
                _ => break,
            }
        }
        entry.ra.prev_pos = end << PAGE_SHIFT;
    }
}

fn key(file: FileId, dev: u32) -> FileKey {
    FileKey {
        file,
        dev: if file == FileId::RAW { dev } else { 0 },
    }
}

/// `readit`: read the window `[ra.start, ra.end())`, tagging its mark page
/// if that page is newly brought in. Only the part beyond the access is a
/// prefetch request; the rest is the demand read.
fn issue(entry: &mut FileEntry, rd: &Read, covered: &mut Covered, sink: &mut Sink<'_>) {
    let ra = entry.ra;
    debug_assert!(ra.size >= 1, "a window reads at least one page");
    if let Some(mark) = ra.mark() {
        if !rd.cached(mark, covered, sink) {
            entry.marks.set(mark);
        }
    }
    covered.add(ra.start, ra.end());
    let from = ra.start.max(rd.end);
    if from < ra.end() {
        let w = sink.new_window();
        // Window sizes are bounded by MAX_WINDOW_PAGES, so this fits.
        let nr = (ra.end() - from) as u32;
        sink.prefetch(rd.target(from), nr, w);
    }
}

impl Policy for Readahead {
    fn name(&self) -> &str {
        NAME
    }

    fn interests(&self) -> Interests {
        Interests::ACCESSES_ONLY
    }

    fn on_access(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        if a.op == Op::Read && a.origin == Origin::Demand {
            self.on_read(a, o, sink);
        }
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        if info.budget_changed {
            return;
        }
        // The page cache was emptied: no window, tag or previous read
        // survives. (Keep the map's allocation.)
        self.files.clear();
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.files.capacity()
                * (std::mem::size_of::<FileKey>() + std::mem::size_of::<FileEntry>() + 1)
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}
