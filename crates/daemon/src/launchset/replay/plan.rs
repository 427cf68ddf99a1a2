//! What of its set a replay asks for, and in what pieces: the files
//! left to the kernel's readahead, the pages left to the replays of the
//! launches around it, the reorder buffers.

use outrider_live::ebpf::runs;
use outrider_store::{AccessRecord, AppHistory};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// A file read sequentially over more than this many pages (8 MiB, the
/// readahead window of this machine's virtio disk) is left to the
/// kernel's readahead.
pub const READAHEAD_PAGES: u64 = 2048;

/// The files of a launch set that the launch read from its first page
/// to its last in one ascending run, over more than [`READAHEAD_PAGES`]:
/// Linux readahead serves exactly that pattern, and a replay beside it
/// only races it for the disk. Measured: `wc -l` of a 256 MiB file with
/// its whole set replayed took 0.83x of stock (medians of 7, alternated,
/// `bench/daemon/launch.sh`). A file read through `read(2)` may skip
/// [`runs::HOLE_PAGES`] at a time, and 1 in `1 << `[`runs::HOLES_SHIFT`]
/// of its pages in all (a strided reader is no run: `os.pread` of every
/// other block gained 2.47x from its replay).
///
/// A file in `mapped` (read through page faults) may skip
/// [`READAHEAD_PAGES`] at a time and all but 1 in `1 << HOLES_SHIFT` of
/// its pages: a fault reads around itself the readahead window, and the
/// large folios that read makes are mapped whole with no record, so a
/// mapped scan from start to end is recorded with holes. `rg --mmap` of a
/// 256 MiB file was recorded as 16 pages of every 64 past its first
/// 44 MiB; with those replayed beside the kernel's read-around it took
/// 0.86x of its stock time (0.14 s, readahead alone) and left to
/// readahead 1.10x (medians of 8 and 10 runs, alternated in one sitting
/// each); one byte of every other page through `mmap`, 0.99x (10 runs)
/// where `bench/daemon/launch.sh` had measured 0.78x (5 runs).
/// A mapped library is no run: its first touch is near its end (the ELF
/// headers), then here and there.
///
/// `runs` is what [`runs_from_start`] found in the set.
pub fn sequential_files(runs: &FxHashMap<u32, u64>) -> FxHashSet<u32> {
    (runs.iter())
        .filter(|&(_, &end)| end > READAHEAD_PAGES)
        .map(|(&f, _)| f)
        .collect()
}

/// Each file the set read from its first page to its last in one
/// ascending run ([`sequential_files`] says what holes a run may have),
/// with the page after the run.
pub fn runs_from_start(accesses: &[AccessRecord], mapped: &FxHashSet<u32>) -> FxHashMap<u32, u64> {
    // Per file: where its run ends and the pages it skipped, or None
    // once it went back or skipped too far.
    let mut runs: FxHashMap<u32, Option<(u64, u64)>> = Default::default();
    // Per file: the longest hole, and the holes allowed in every
    // HOLES_SHARE pages of the run.
    let bounds = |f| match mapped.contains(&f) {
        true => (READAHEAD_PAGES, HOLES_SHARE - 1),
        false => (HOLE_PAGES, 1),
    };
    for a in accesses {
        let run = runs.entry(a.file).or_insert(Some((0, 0)));
        *run = run.and_then(|(end, holes)| {
            let hole = a.page.checked_sub(end)?;
            (hole <= bounds(a.file).0).then_some((a.page + u64::from(a.pages), holes + hole))
        });
    }
    runs.into_iter()
        .filter_map(|(f, run)| {
            let (end, holes) = run?;
            (holes * HOLES_SHARE <= end * bounds(f).1).then_some((f, end))
        })
        .collect()
}

/// Pages a sequential run may skip at a time and still be one run. Linux
/// (6.18 here) serves a small read that lies in one cached folio without
/// `filemap_get_pages`, whose tracepoint the recording sees, so a file
/// read from start to end is recorded with holes: `wc -l` of a 256 MiB
/// file, 16 KiB a read, was recorded with 1-3 pages missing every
/// 256-1024 (tracefs showed the same holes), its file taken for no run
/// and replayed whole beside the kernel's readahead. A folio is at most
/// 2 MiB. The same bounds as the eBPF programs', which stop sending a
/// followed thread's run once it is surely one of these.
const HOLE_PAGES: u64 = runs::HOLE_PAGES as u64;
/// A run skips at most one in this many of its pages.
const HOLES_SHARE: u64 = 1 << runs::HOLES_SHIFT;
// The programs send a run's first pages, enough to be seen as one here.
const _: () = assert!(runs::SENT_PAGES as u64 > READAHEAD_PAGES);

/// `h` less its accesses that lie within the pages of `by` (the sets of
/// the launches around its launch, [`super::ReplayOptions::covered`]), and how
/// many pages that left out; `None` when it left out none. A launch's
/// set holds what its whole process tree read, so the set of a wrapper
/// (`setpriv` → `env` → `rg`, `sudo`, `sh -c`) is its program's, and each
/// of their replays asked for it all: `rg` over a source tree, run
/// through `setpriv` and `env` as `nobody`, had three replays checking,
/// walking and asking for the same 31 500 files, and took 0.72-0.80x of
/// its stock time (3 runs each, alternated). An access is left out only
/// when one range of `by` holds all its pages.
pub fn uncovered(h: &AppHistory, by: &[Arc<AppHistory>]) -> (Option<AppHistory>, u64) {
    if by.is_empty() {
        return (None, 0);
    }
    let mut ranges: FxHashMap<(u64, u64), Vec<(u64, u64)>> = FxHashMap::default();
    for set in by {
        let keys = crate::launchset::file_keys(set);
        for (file, page, pages) in merged_ranges(&set.accesses) {
            if let Some(k) = keys.get(&file) {
                ranges.entry(*k).or_default().push((page, page + pages));
            }
        }
    }
    for r in ranges.values_mut() {
        r.sort_unstable();
    }
    let keys = crate::launchset::file_keys(h);
    let within = |a: &AccessRecord| {
        let Some(r) = keys.get(&a.file).and_then(|k| ranges.get(k)) else {
            return false;
        };
        let end = a.page + u64::from(a.pages);
        // Ranges of several sets may overlap: any that holds it will do.
        r[..r.partition_point(|&(s, _)| s <= a.page)]
            .iter()
            .any(|&(_, e)| e >= end)
    };
    let (out, kept): (Vec<&AccessRecord>, Vec<&AccessRecord>) =
        h.accesses.iter().partition(|a| within(a));
    if out.is_empty() {
        return (None, 0);
    }
    let left = out.iter().map(|a| u64::from(a.pages)).sum();
    let set = AppHistory {
        accesses: kept.into_iter().cloned().collect(),
        ..h.clone()
    };
    (Some(set), left)
}

/// The first reorder buffer's pages: 1 MiB, each next one twice the last
/// up to [`MAX_BATCH_PAGES`].
const FIRST_BATCH_PAGES: u64 = 256;
/// The largest reorder buffer: 16 MiB.
const MAX_BATCH_PAGES: u64 = 4096;

/// How many of `accesses`, from the first, start within `budget` pages:
/// the files of the rest are not even verified (each a cold inode and
/// extent read).
pub(super) fn within(accesses: &[AccessRecord], budget: u64) -> usize {
    let mut pages = 0u64;
    (accesses.iter())
        .take_while(|a| {
            let before = pages;
            pages += u64::from(a.pages);
            before < budget
        })
        .count()
}

/// The access list cut into reorder buffers, in first-touch order.
pub(crate) fn batches(accesses: &[AccessRecord]) -> Vec<&[AccessRecord]> {
    let (mut out, mut start, mut size, mut pages) = (Vec::new(), 0, FIRST_BATCH_PAGES, 0);
    for (i, a) in accesses.iter().enumerate() {
        pages += u64::from(a.pages);
        if pages >= size {
            out.push(&accesses[start..=i]);
            (start, pages, size) = (i + 1, 0, (size * 2).min(MAX_BATCH_PAGES));
        }
    }
    if start < accesses.len() {
        out.push(&accesses[start..]);
    }
    out
}

/// Each file's recorded pages as sorted, merged (file, first page, pages).
pub(crate) fn merged_ranges(accesses: &[AccessRecord]) -> Vec<(u32, u64, u64)> {
    let mut v: Vec<(u32, u64, u64)> = accesses
        .iter()
        .map(|a| (a.file, a.page, u64::from(a.pages)))
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u32, u64, u64)> = Vec::with_capacity(v.len());
    for (f, p, n) in v {
        match out.last_mut() {
            Some((lf, lp, ln)) if *lf == f && *lp + *ln >= p => *ln = (*ln).max(p + n - *lp),
            _ => out.push((f, p, n)),
        }
    }
    out
}
