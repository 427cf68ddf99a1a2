//! The pure parts of one prefetching round (libprefetch §3.5, §4.5–4.7):
//! K unique pages, C-LOOK order and infill merge (both from
//! [`crate::mechanism`]), and the AIMD controller.
//! Shared by the simulator policy ([`super::Directed`]) and the live
//! library (`outrider-directed`), one implementation each.

use crate::mechanism::{clook, infill};
use rustc_hash::{FxHashMap, FxHashSet};

/// One page of a file with where it lives on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Page {
    /// The caller's file identity (sim: `FileId.0`; live: a client handle).
    pub file: u64,
    /// Page index within the file (4 KiB pages).
    pub page: u64,
    /// Device number (pages of different devices are never merged).
    pub dev: u32,
    /// Physical position on the device in 4 KiB blocks (live: FIEMAP
    /// physical offset / 4096; sim: the block number).
    pub phys: u64,
}

/// A run of pages to read with one request: logically and physically
/// contiguous (`pages` pages of `file` from `page`, at `phys` on `dev`).
/// Infill pages (not in the round's set) are included in the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// File.
    pub file: u64,
    /// First page.
    pub page: u64,
    /// Device.
    pub dev: u32,
    /// First physical block.
    pub phys: u64,
    /// Length in pages.
    pub pages: u64,
}

/// Sort `pages` into C-LOOK order starting at the head position
/// `(head_dev, head_phys)` (§3.1; [`clook::order`]): ascending physical
/// position from the first page at or after the head, then wrap to the
/// lowest and continue.
pub fn clook_order(pages: &mut [Page], head_dev: u32, head_phys: u64) {
    clook::order(
        pages,
        |p| (p.dev, p.phys, p.file, p.page),
        (head_dev, head_phys, 0, 0),
    );
}

/// Merge C-LOOK-ordered pages into runs (§3.3, §4.7; [`infill::merge`]):
/// two neighbours join when they are on the same device and file, the
/// second starts at or after the end of the first, the physical gap is at
/// most `infill_pages`, and the gap is the same logically and physically
/// (one read of the file range covers it: the merge key holds the file's
/// logical-to-physical offset). Gap 0 (adjacent pages) always merges.
/// Duplicate pages are dropped. A wrap of the C-LOOK sweep (a backward
/// step) ends a run.
pub fn merge_infill(ordered: &[Page], infill_pages: u64) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let pieces = ordered.iter().map(|p| infill::Span {
        key: (p.dev, p.file, p.page.wrapping_sub(p.phys)),
        start: p.phys,
        end: p.phys + 1,
    });
    infill::merge(
        pieces,
        infill_pages,
        |_, _, _| true,
        |s| {
            let (dev, file, offset) = s.key;
            runs.push(Run {
                file,
                page: s.start.wrapping_add(offset),
                dev,
                phys: s.start,
                pages: s.end - s.start,
            });
        },
    );
    runs
}

/// Pages read by `runs` (requested plus infill).
pub fn run_pages(runs: &[Run]) -> u64 {
    runs.iter().map(|r| r.pages).sum()
}

/// One planned round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Access-list entries the round covers, from the position it was
    /// planned at (every entry before this offset has its page in `pages`).
    pub entries: usize,
    /// The round's unique pages, in access order.
    pub pages: Vec<Page>,
    /// What to read: C-LOOK ordered runs after infill.
    pub runs: Vec<Run>,
}

impl Round {
    /// Is the round read page after page in file order — every page the
    /// first of its file in the round or the one after the last page read
    /// of that file (files may interleave: readahead state is per open
    /// file)? Such a round is what the kernel's sequential readahead already
    /// serves; fetching it as well only adds work (measured live: a 1 GiB
    /// file read in order took 0.75–1.06 s fetched by rounds against
    /// 0.53–0.66 s with readahead alone, this machine).
    pub fn in_file_order(&self) -> bool {
        let mut last: FxHashMap<u64, u64> = FxHashMap::default();
        self.pages
            .iter()
            .all(|p| match last.insert(p.file, p.page) {
                Some(prev) => p.page == prev + 1,
                None => true,
            })
    }
}

/// Plan a round (§4.5): walk `upcoming` (the access list from the current
/// position) until `budget_pages` unique pages are seen, extending over
/// following entries whose pages are already in the set; order them C-LOOK
/// from the head; merge with infill. With `charge_infill`, pages read as
/// infill count against the budget too (live, they occupy the page cache;
/// in the paper's kernel infill they did not): the round then takes the
/// longest prefix whose runs fit the budget.
pub fn plan_round(
    upcoming: impl IntoIterator<Item = Page>,
    budget_pages: u64,
    infill_pages: u64,
    charge_infill: bool,
    head: (u32, u64),
) -> Round {
    let budget = budget_pages.max(1) as usize;
    let mut seen: FxHashSet<(u64, u64)> = FxHashSet::default();
    let mut pages: Vec<Page> = Vec::new();
    // first_entry[i]: entry offset of the first occurrence of pages[i].
    let mut first_entry: Vec<usize> = Vec::new();
    let mut entries = 0usize;
    for (i, p) in upcoming.into_iter().enumerate() {
        if seen.contains(&(p.file, p.page)) {
            entries = i + 1;
            continue;
        }
        if pages.len() == budget {
            break;
        }
        seen.insert((p.file, p.page));
        pages.push(p);
        first_entry.push(i);
        entries = i + 1;
    }
    let plan = |n: usize| -> Vec<Run> {
        let mut v = pages[..n].to_vec();
        clook_order(&mut v, head.0, head.1);
        merge_infill(&v, infill_pages)
    };
    let mut runs = plan(pages.len());
    if charge_infill && infill_pages > 0 && run_pages(&runs) > budget as u64 {
        // Largest prefix n whose runs fit: cost is monotone in n.
        let (mut lo, mut hi) = (1usize, pages.len()); // lo fits, hi does not
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if run_pages(&plan(mid)) <= budget as u64 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        runs = plan(lo);
        entries = first_entry[lo];
        pages.truncate(lo);
    }
    Round {
        entries,
        pages,
        runs,
    }
}

/// The paper's infill default, 32 KiB in pages (§3.3: "Infill of 32KB
/// maximizes performance improvement"; between 32 KiB and 2 MiB it had no
/// further effect, beyond 2 MiB it hurt).
pub const PAPER_INFILL_PAGES: u64 = infill::limit_units(infill::LIBPREFETCH);

/// AIMD contention controller (§4.6): the reorder-buffer size in pages.
///
/// Starts at `cap` = 90 % of the memory available for the page cache (no
/// slow start), adds `step` = 10 % of that memory after a round consumed
/// without premature eviction (never above `cap`), halves on premature
/// eviction (never below `min_pages`). With `enabled == false` the size
/// stays at `cap` (the paper's "contention controller disabled" runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aimd {
    /// Current reorder-buffer size, pages.
    pub pages: u64,
    /// Upper bound: `cap_percent` of the available memory, pages.
    pub cap_pages: u64,
    /// Additive step: `step_percent` of the available memory, pages.
    pub step_pages: u64,
    /// Lower bound, pages.
    pub min_pages: u64,
    /// Adjust at all (`aimd=on`)?
    pub enabled: bool,
}

impl Aimd {
    /// The paper's fractions: cap 90 %, step 10 % (§4.6).
    pub const CAP_PERCENT: u64 = 90;
    /// Additive increase, percent of available memory (§4.6).
    pub const STEP_PERCENT: u64 = 10;

    /// A controller for `available_pages` of page-cache memory, starting at
    /// the cap.
    pub fn new(available_pages: u64, min_pages: u64, enabled: bool) -> Aimd {
        let mut a = Aimd {
            pages: 0,
            cap_pages: 0,
            step_pages: 0,
            min_pages: min_pages.max(1),
            enabled,
        };
        a.set_available(available_pages);
        a.pages = a.cap_pages;
        a
    }

    /// The memory available changed (live: cgroup limit, MemAvailable):
    /// recompute cap and step, clamp the current size.
    pub fn set_available(&mut self, available_pages: u64) {
        self.cap_pages = (available_pages * Self::CAP_PERCENT / 100).max(self.min_pages);
        self.step_pages = (available_pages * Self::STEP_PERCENT / 100).max(1);
        self.pages = self.pages.min(self.cap_pages);
        if !self.enabled {
            self.pages = self.cap_pages;
        }
    }

    /// A round ended: `premature` when some of its pages were evicted
    /// before use. Returns the new size.
    pub fn round_done(&mut self, premature: bool) -> u64 {
        if self.enabled {
            self.pages = if premature {
                (self.pages / 2).max(self.min_pages)
            } else {
                (self.pages + self.step_pages).min(self.cap_pages)
            };
        }
        self.pages
    }
}
