//! Data-file confirmation: the data files of a set ([`data_files`]) are
//! asked for only once the launch is seen to read one of them, as a set
//! keyed by the executable and its arguments' shape may hold another
//! run's data.

use super::{Replayer, PAGE};
use outrider_core::FileId;
use outrider_live::files::FileTable;
use outrider_store::AccessRecord;
use rustc_hash::{FxHashMap, FxHashSet};
use std::os::fd::AsFd;

/// A file read through `read(2)` with at least this many pages in a set
/// (1 MiB) is taken for a data file ([`data_files`]).
pub const DATA_MIN_PAGES: u64 = 256;

/// The data files of a set, each with its first-touched page: files
/// read through `read(2)`, not `mapped`, with at least
/// [`DATA_MIN_PAGES`] in the set. Their pages are the launch's data, not
/// the program's (its executable, libraries and modules are mapped, or
/// smaller: the program-start sets of `node`, `java`, `rustc`, `gcc`,
/// `gdb`, `emacs` and `git` hold no such file). A set is keyed by the
/// executable and the shape of its first arguments, so it may hold what
/// another run read, the data named nowhere on the command line (the
/// module `roots` leaves out what is). So they wait until the launch is
/// seen to read the first recorded page of one of them
/// ([`super::ReplayOptions::confirm_data`]); then all of them are asked for, as
/// a launch reading its set's data reads the rest of it too (`sha256sum`
/// of a directory reads file after file, and the replay stays ahead).
///
/// Measured (medians of 6-10, alternated with no daemon, one sitting
/// each), first with files read here and there (accesses of 4 pages or
/// fewer on average) alone held:
/// - Python reading every other 4 KiB block of a 64 MiB file given on
///   its standard input, its set learnt from the same command over a
///   256 MiB file: 0.46x of its time with no daemon, its replay asking
///   for 34 500 pages of the other file one at a time, the launch's
///   reads waiting behind them; held, 1.13x. Stopping the replay once the
///   launch's reads were seen to miss the set (tried, not kept) came
///   0.48-0.52 s after the exec, the replay done by then.
/// - The same read over its own set's file 2.75x against 1.71x, and
///   `sqlite3`'s index scan 5.00x against 4.66x: a program's own start
///   no longer waits behind its data's one-page requests.
///
/// Then with every such file held: `wc -l` of a 6 MiB file given on its
/// standard input ran 0.80-0.83x with its own set's file asked for at
/// once (the replay races the kernel's readahead for the one file the
/// launch reads from its start: its first pages come with the whole
/// request, not the first window), 0.70-0.79x with another file's; held,
/// 0.99-1.02x and 1.05x (10 each). `cat` of eight 6 MiB files named on
/// its command line, its own set: 0.76x asked for at once, 0.94-0.97x
/// held (8-10); `sha256sum` of them 0.88x and 0.98x (8). Leaving such
/// files to readahead as well when read from start to end (as
/// [`super::sequential_files`] leaves those over 8 MiB) made no
/// difference measured beside this then (0.97x and 0.98x, 8-10 each);
/// on a faster day held `wc` was 0.74-0.78x, and the file the launch is
/// seen reading is now left to readahead when the set read it so
/// ([`Replayer::fetch_confirmed`]).
pub fn data_files(accesses: &[AccessRecord], mapped: &FxHashSet<u32>) -> FxHashMap<u32, u64> {
    // Per file: its first page and its pages.
    let mut files: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
    for a in accesses.iter().filter(|a| !mapped.contains(&a.file)) {
        files.entry(a.file).or_insert((a.page, 0)).1 += u64::from(a.pages);
    }
    (files.into_iter())
        .filter(|&(_, (_, pages))| pages >= DATA_MIN_PAGES)
        .map(|(file, (first, _))| (file, first))
        .collect()
}

/// How long a replay done with the rest waits for its launch to read
/// the first page of a held-back data file ([`data_files`]), at most:
/// `python3` reading its data file reads it 30-50 ms after its exec.
const CONFIRM_WAIT_NS: u64 = 2_000_000_000;

/// How often it looks meanwhile.
const CONFIRM_LOOK: std::time::Duration = std::time::Duration::from_millis(2);

impl Replayer {
    /// Ask for all the held-back ranges once the launch read the first
    /// page of one of their files (found in the cache), but those of a
    /// file it is seen reading that the set read from start to end: the
    /// readahead its read started serves it, and a replay asking for it
    /// only then can only race that. `wc -l` of a 6 MiB file given on
    /// its standard input ran at 0.74x and 0.78x of its time with no
    /// daemon, the file asked for at its first read (medians of 9,
    /// alternated, `bench/daemon/launch.sh`, two sittings): the replay's
    /// 1 MiB requests came 1.7 ms apart behind the kernel's 2 MiB
    /// readahead (`block_rq_issue`), and the file was read 4 ms later
    /// than with no daemon.
    pub(super) fn fetch_confirmed(&mut self, since: &dyn Fn() -> f64) {
        if self.pending.is_empty() {
            return;
        }
        let (table_of, tables) = (&self.table_of, &mut self.tables);
        let read: FxHashSet<u32> = (self.held_files.iter())
            .filter(|&(&file, &page)| cached(table_of, tables, file, page))
            .map(|(&file, _)| file)
            .collect();
        if read.is_empty() {
            return;
        }
        self.held_files.clear();
        // Its ranges in the buffers still to come are left too.
        (self.readahead).extend(read.into_iter().filter(|f| self.in_order.contains(f)));
        let (left, all): (Vec<_>, Vec<_>) = (std::mem::take(&mut self.pending).into_iter())
            .partition(|(file, ..)| self.readahead.contains(file));
        self.st.pages_left_to_readahead += left.iter().map(|r| r.2).sum::<u64>();
        self.fetch_ranges(all, since);
    }

    /// Once the rest is asked for: ask for the held-back ranges once one
    /// of their files' first pages is read, looking every [`CONFIRM_LOOK`], until
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

/// Is `file`'s `page` in the cache? cachestat(2), which reads nothing:
/// a look with RWF_NOWAIT starts the kernel's readahead of a page it
/// misses, and finds it there at the next look. A file not verified yet
/// (in none of `tables`) is not asked for yet either: not cached, as far
/// as this knows.
fn cached(
    table_of: &FxHashMap<u32, usize>,
    tables: &mut [FileTable],
    file: u32,
    page: u64,
) -> bool {
    let Some(&at) = table_of.get(&file) else {
        return false;
    };
    let f = tables[at].open_known(FileId(u64::from(file)));
    let look = |fd| outrider_sys::cachestat(fd, page * PAGE, PAGE);
    f.is_some_and(|f| look(f.fd.as_fd()).is_ok_and(|c| c.cache > 0))
}
