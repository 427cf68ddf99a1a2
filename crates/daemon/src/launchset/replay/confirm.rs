//! Data-file confirmation: a data file the launch read here and there
//! ([`sparse_files`]) is asked for only once the launch is seen to read
//! its first recorded page, as a set keyed by the executable and its
//! arguments' shape may hold another run's data.

use super::{Replayer, PAGE};
use outrider_core::FileId;
use outrider_store::AccessRecord;
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::AsFd;

/// A file read through `read(2)` with at least this many pages in a
/// set (1 MiB) may be a data file read here and there ([`sparse_files`]).
pub const SPARSE_MIN_PAGES: u64 = 256;

/// ... when its recorded accesses average at most this many pages.
pub const SPARSE_RUN_PAGES: u64 = 4;

/// The data files of a set, each with its first-touched page: files
/// read through `read(2)`, not `mapped`, with at least
/// [`SPARSE_MIN_PAGES`] in the set in accesses of at most
/// [`SPARSE_RUN_PAGES`] on average. Their pages are the launch's data,
/// not the program's: a set is keyed by the executable and the shape of
/// its first arguments, so it may hold what another run read, the data
/// named nowhere on the command line (the module `roots` leaves out
/// what is). Python reading every other 4 KiB block of a 64 MiB file
/// given on its standard input, its set learnt from the same command
/// over a 256 MiB file, ran at 0.46x of its time with no daemon (medians
/// of 6-8, alternated, one sitting each): its replay asked for 34 500
/// pages of the other file, one at a time, and the launch's reads
/// waited behind them. Stopping the replay once the launch's reads were
/// seen to miss the set (tried, not kept) came 0.48-0.52 s after the
/// exec, the replay done by then: the launch, waiting behind it, read
/// little to judge by. So such a file waits for its first page to be
/// read ([`ReplayOptions::confirm_sparse`]): that run then took 1.13x of
/// its stock time, against 0.47x with the file asked for at once; the
/// same read over its own set's file 2.75x against 1.71x, and `sqlite3`'s
/// index scan 5.00x against 4.66x (medians of 6, alternated, one sitting
/// each: a program's own start no longer waits behind its data's
/// thousands of one-page requests). The program-start sets of
/// `node`, `java`, `rustc`, `gcc`, `gdb`, `emacs` and `git` hold no such
/// file: theirs are mapped, in accesses of 7-26 pages on average.
pub fn sparse_files(accesses: &[AccessRecord], mapped: &FxHashSet<u32>) -> FxHashMap<u32, u64> {
    // Per file: its first page, its pages and its accesses.
    let mut files: FxHashMap<u32, (u64, u64, u64)> = FxHashMap::default();
    for a in accesses.iter().filter(|a| !mapped.contains(&a.file)) {
        let f = files.entry(a.file).or_insert((a.page, 0, 0));
        (f.1, f.2) = (f.1 + u64::from(a.pages), f.2 + 1);
    }
    (files.into_iter())
        .filter(|&(_, (_, pages, n))| pages >= SPARSE_MIN_PAGES && pages <= SPARSE_RUN_PAGES * n)
        .map(|(file, (first, _, _))| (file, first))
        .collect()
}

/// How long a replay done with the rest waits for its launch to read
/// the first page of a held-back data file ([`sparse_files`]), at most:
/// `python3` reading its data file reads it 30-50 ms after its exec.
const CONFIRM_WAIT_NS: u64 = 2_000_000_000;

/// How often it looks meanwhile.
const CONFIRM_LOOK: std::time::Duration = std::time::Duration::from_millis(2);

impl Replayer {
    /// Ask for the held-back ranges of the data files whose first page
    /// the launch has now read (found in the cache).
    pub(super) fn fetch_confirmed(&mut self, since: &dyn Fn() -> f64) {
        if self.pending.is_empty() {
            return;
        }
        let mut read: FxHashSet<u32> = FxHashSet::default();
        for (&file, &first) in &self.sparse {
            // Not verified yet: not asked for yet either.
            let Some(&at) = self.table_of.get(&file) else {
                continue;
            };
            // cachestat(2), which reads nothing: a look with RWF_NOWAIT
            // starts the kernel's readahead of a page it misses, and finds
            // it there at the next look.
            let f = self.tables[at].open_known(FileId(u64::from(file)));
            let cached = |fd| outrider_sys::cachestat(fd, first * PAGE, PAGE);
            if f.is_some_and(|f| cached(f.fd.as_fd()).is_ok_and(|c| c.cache > 0)) {
                read.insert(file);
            }
        }
        if read.is_empty() {
            return;
        }
        self.sparse.retain(|f, _| !read.contains(f));
        let (now, later) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|r| read.contains(&r.0));
        self.pending = later;
        self.fetch_ranges(now, since);
    }

    /// Once the rest is asked for: ask for the held-back ranges as their
    /// files' first pages are read, looking every [`CONFIRM_LOOK`], until
    /// none is left, the replay stops or the launcher exits, or
    /// [`CONFIRM_WAIT_NS`] passed; what is left is not asked for.
    pub(super) fn wait_confirmed(&mut self, since: &dyn Fn() -> f64) {
        let deadline = outrider_sys::monotonic_ns() + CONFIRM_WAIT_NS;
        loop {
            self.fetch_confirmed(since);
            let gone = self.launcher_exited();
            self.st.stopped_at_exit |= gone && !self.pending.is_empty();
            if self.pending.is_empty() || self.stopped() || outrider_sys::monotonic_ns() > deadline
            {
                break;
            }
            std::thread::sleep(CONFIRM_LOOK);
        }
        let left: u64 = self.pending.drain(..).map(|r| r.2).sum();
        self.st.pages_unconfirmed += left;
        self.st.pages_skipped += left;
    }
}
