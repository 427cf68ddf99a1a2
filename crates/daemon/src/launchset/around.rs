//! What the kernel reads around a mapped file's faulting page, and a
//! launch set's ranges widened to it so that none of the launch's faults
//! starts such a read of its own ([`super::ReplayOptions::read_around`]).
//!
//! A page fault on a mapped file that misses the cache reads its
//! read-around window, `ra_pages` pages starting `ra_pages / 2` before
//! the faulting page (`mm/filemap.c`, `do_sync_mmap_readahead`), where
//! `ra_pages` is the disk's `read_ahead_kb`. So a stock launch reads
//! every mapped file no larger than half that window whole, at its
//! first fault (an executable's at the exec). A launch set holds only
//! the pages the launch touched (faults, and the pages mapped around
//! them). In the day in miniature (block tracepoints) a predicted
//! launch's set, read ahead 1 MiB at a time, had cached the first 34
//! pages of `/usr/bin/perl` (3.7 MiB, this machine's window 8 MiB) when
//! `perl` exec'd: the exec read nothing, and `perl`'s first fault past
//! them read the other 3.4 MiB 2 ms later, its next reads queued behind.
//! Widened, such a file is one sequential read, as stock reads it.
//!
//! Off by default, as measured (`/tmp` A/Bs, medians of 7-9 in one
//! sitting each, arms rotated, daemon / stock):
//!
//! - cold starts of programs outside the suite, caches dropped before
//!   each (widened / as recorded): `gdb --version` 1.18x / 1.41x,
//!   `cmake --version` 1.44x / 2.01x, `convert -version` 1.66x / 2.44x,
//!   `npm`, `pip3`, `vim`, `man`, `sqlite3`, `perl`, `python3 -c pass`
//!   within 0.03x of each other. A set replayed as recorded caches every
//!   page the launch faults on before it does, so no read-around starts
//!   and the launch reads far less than stock; widened, it reads as much
//!   as stock.
//! - the day's `file`, `perl`, `python3 -c pass`, `git status`, `gcc`
//!   back to back after one drop, three sittings: `perl` 0.93x / 0.79x,
//!   0.92x / 0.78x and 0.77x / 0.75x; `git status` 1.23-1.41x /
//!   1.15x; `file` 1.04-1.53x / 1.29-1.69x.
//!
//! Larger mapped files stay as recorded: where their faults land
//! decides what the kernel reads. Widening them to every fault's window
//! too made `rustc -O` 1.04x and `node -e` 0.99x of stock, against 2.20x
//! and 1.23x (`bench/daemon/launch.sh`, one run each).

use outrider_store::{AccessRecord, AppHistory};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::path::Path;

/// The kernel's readahead window when sysfs gives none (its default
/// `VM_READAHEAD_PAGES`, 128 KiB), in pages.
const DEFAULT_WINDOW_PAGES: u64 = 32;

/// Read-around windows by device number, each read from sysfs once.
#[derive(Default)]
pub(super) struct Windows(FxHashMap<u64, u64>);

impl Windows {
    /// The read-around window of files on device `dev`, in pages.
    pub(super) fn pages(&mut self, dev: u64) -> u64 {
        *self.0.entry(dev).or_insert_with(|| {
            super::idle::disk_dir(dev)
                .and_then(|d| read_ahead_kb(&d.join("queue/read_ahead_kb")))
                .map_or(DEFAULT_WINDOW_PAGES, |kb| kb / 4)
        })
    }
}

/// A `read_ahead_kb` file's value.
fn read_ahead_kb(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `h`'s access list with every mapped file no larger than half its
/// device's read-around window (`window` of a device number, in pages)
/// read whole, at its first access, in place of its recorded ranges; the
/// list itself when there is none.
pub(super) fn widened(
    h: &AppHistory,
    mut window: impl FnMut(u64) -> u64,
) -> Cow<'_, [AccessRecord]> {
    let whole: FxHashMap<u32, u64> = (h.files.iter())
        .filter(|f| f.mapped && f.size > 0)
        .map(|f| (f.id, f.size.div_ceil(super::PAGE), f.dev))
        .filter(|&(_, pages, dev)| pages <= window(dev) / 2 && pages <= u64::from(u32::MAX))
        .map(|(id, pages, _)| (id, pages))
        .collect();
    if whole.is_empty() {
        return Cow::Borrowed(&h.accesses);
    }
    let mut first = FxHashSet::default();
    let list = (h.accesses.iter())
        .filter_map(|a| match whole.get(&a.file) {
            None => Some(*a),
            Some(&pages) => first.insert(a.file).then_some(AccessRecord {
                file: a.file,
                page: 0,
                pages: pages as u32,
            }),
        })
        .collect();
    Cow::Owned(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrider_store::FileRecord;

    fn file(id: u32, pages: u64, mapped: bool) -> FileRecord {
        FileRecord {
            id,
            dev: 7,
            ino: u64::from(id),
            size: pages * super::super::PAGE - 100,
            mapped,
            ..FileRecord::default()
        }
    }

    fn at(file: u32, page: u64, pages: u32) -> AccessRecord {
        AccessRecord { file, page, pages }
    }

    /// With a 64-page window: the mapped 32-page file is read whole where
    /// it was first touched, once; the mapped 33-page file and the
    /// 8-page file read with `read(2)` stay as recorded.
    #[test]
    fn a_mapped_file_within_half_the_window_is_read_whole() {
        let h = AppHistory {
            files: vec![file(1, 32, true), file(2, 33, true), file(3, 8, false)],
            accesses: vec![
                at(3, 2, 1),
                at(1, 5, 2),
                at(2, 30, 1),
                at(1, 20, 1),
                at(1, 0, 1),
            ],
            ..AppHistory::default()
        };
        let mut asked = Vec::new();
        let got = widened(&h, |dev| {
            asked.push(dev);
            64
        });
        assert_eq!(got.as_ref(), &[at(3, 2, 1), at(1, 0, 32), at(2, 30, 1)]);
        assert!(asked.iter().all(|&d| d == 7));
        let small = widened(&h, |_| 63);
        assert!(matches!(small, Cow::Borrowed(_)), "31 pages: none fits");
        assert_eq!(small.as_ref(), h.accesses.as_slice());
    }

    /// A device sysfs does not know gets the kernel's default window.
    #[test]
    fn an_unknown_device_has_the_default_window() {
        let mut w = Windows::default();
        assert_eq!(w.pages(u64::MAX), DEFAULT_WINDOW_PAGES);
    }
}
