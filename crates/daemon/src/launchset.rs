//! Recording a launch set (or the boot set) from events, and replaying one.
//! The set's key, the application a launch belongs to, is named from its
//! executable and command line ([`app_name`], module `name`).
//!
//! A [`Recorder`] takes the page ranges a process tree read (`GetPages`
//! and `Fault` events: cache hits included, so a launch that was served by
//! a replay is recorded as fully as a cold one) in first-touch order, each
//! page once, up to its cap; files are identified through the live
//! runtime's [`FileTable`](outrider_live::files::FileTable) (opened by
//! inode as root, so a file the program already closed is still found).
//! [`Recorder::finish`] turns it into an
//! [`AppHistory`](outrider_store::AppHistory) for `outrider_store`
//! (module `recorder`).
//!
//! [`replay`] verifies the saved files (handle, then path; dev, ino, size
//! and mtime unchanged — [`outrider_live::history::restore`]) and, for a
//! launch by a user other than root, that this user may open each by its
//! path (checked with the user's own file-system identity), merges each
//! file's ranges, and asks for them with `POSIX_FADV_WILLNEED` in physical
//! order (FIEMAP), stopping at the byte budget.
//!
//! How early it must start, for a short launch: a process asking for
//! `go version`'s set (2 186 pages of a 15 MB static binary, 29 ms cold)
//! with `WILLNEED` from the program's start took it to 1.32x of stock,
//! in first-touch order or in this module's reorder buffers alike
//! (1.34x); the same requests 3 ms later, 1.02x and 1.03x (medians of 11
//! shuffled cold runs in one sitting); why 3 ms undo it was not
//! measured (the program's own faults, each read around in the disk's
//! readahead window, may hold the disk by then). The daemon's replay of
//! it starts 0.4-2 ms after the exec (`started_s`), and following the
//! launch in the kernel costs it about what that late replay gains
//! (with no set to replay, it ran 0.94x of stock, medians of 9, each
//! run's own ratio 0.7-1.3x): `go version` ran 0.95-1.06x of stock in
//! four sittings. What remains for it is a set read before its exec
//! (`successor_prefetch`).

mod around;
mod evidence;
mod idle;
mod name;
mod recorder;
mod replay;
pub use evidence::{
    LaunchReads, Verdict, EVIDENCE_PAGES, MISS_SHARE, OTHERS_QUIET_NS, RESIDENT_PROBES,
};
pub use name::{app_name, names_a_path, INLINE_PROGRAM_OPTIONS, WHERE_OPTIONS_MAX};
pub use recorder::{PagesRead, Recorder};
#[cfg(test)]
use replay::{asked_from_memory, batches, merged_ranges, runs_from_start, uncovered};
pub use replay::{
    data_files, replay, sequential_files, Backoff, EventsRead, Holders, ReplayOptions, ReplayStats,
    DATA_MIN_PAGES, EXIT_EVERY_PAGES, HOLDERS_MAX, PRESSURE_EVERY_PAGES, READAHEAD_PAGES,
    WALK_DIRS_MIN,
};

/// Bytes per page in the access lists.
pub const PAGE: u64 = 4096;

/// Each file of set `h` by its id: its (device, inode), which name it
/// across sets (each set numbers its files its own way).
pub fn file_keys(h: &outrider_store::AppHistory) -> rustc_hash::FxHashMap<u32, (u64, u64)> {
    h.files.iter().map(|f| (f.id, (f.dev, f.ino))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use outrider_store::{AccessRecord, AppHistory};
    use outrider_sys::launch::Credentials;
    use std::os::unix::fs::MetadataExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// `pages` pages from `index` of the file of `md`, read by `read(2)`.
    pub(crate) fn read_of(md: &std::fs::Metadata, index: u64, pages: u64) -> PagesRead {
        PagesRead {
            dev: md.dev(),
            ino: md.ino(),
            index,
            pages,
            mapped: false,
        }
    }

    /// A file of `file_pages` pages in a directory of its own and the set
    /// of its `reads` (first page, pages), in that order; `None` unless
    /// root (files are found by inode).
    fn one_file_set(
        file_pages: usize,
        reads: impl Iterator<Item = (u64, u64)>,
    ) -> Option<(tempfile::TempDir, std::path::PathBuf, AppHistory)> {
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; file_pages * 4096]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let mut r = Recorder::new(64 << 20, 8192);
        for (page, pages) in reads {
            r.read(std::process::id(), read_of(&md, page, pages));
        }
        Some((dir, p, r.finish("/bin/x")))
    }

    /// Probes fall on pages spread over the set: a large access among
    /// many small ones is looked at, the last access first.
    /// A replay's requests found their pages in memory while its thread
    /// read at most one page in 32 of them from storage.
    #[test]
    fn a_replay_asked_from_memory_read_one_page_in_32_at_most() {
        assert!(asked_from_memory(0, 0));
        assert!(asked_from_memory(PAGE, 32));
        assert!(!asked_from_memory(2 * PAGE, 32));
        assert!(asked_from_memory(2 * PAGE, 64));
        assert!(!asked_from_memory(PAGE, 0));
    }

    #[test]
    fn probes_are_spread_over_pages_not_accesses() {
        let a = |file, pages| AccessRecord {
            file,
            page: 0,
            pages,
        };
        let mut list: Vec<AccessRecord> = (0..100).map(|f| a(f, 1)).collect();
        list.insert(50, a(1000, 2048));
        list.push(a(2000, 1));
        let files: Vec<u32> = evidence::probes(&list).iter().map(|p| p.file).collect();
        assert!(files.contains(&1000), "{files:?}");
        assert!(files.len() <= RESIDENT_PROBES, "{files:?}");
        let one: Vec<u32> = evidence::probes(&[a(7, 3)])
            .iter()
            .map(|p| p.file)
            .collect();
        assert_eq!(one, vec![7]);
        assert!(evidence::probes(&[]).is_empty());
        let even: Vec<AccessRecord> = (0..64).map(|f| a(f, 1)).collect();
        let even: Vec<u32> = evidence::probes(&even).iter().map(|p| p.file).collect();
        assert_eq!(even.first(), Some(&62), "the last probe first: {even:?}");
    }

    /// A probe reads its first and last pages and at most 8 in all.
    #[test]
    fn a_probe_reads_pages_spread_over_it() {
        assert_eq!(evidence::spread(10, 1), vec![10]);
        assert_eq!(evidence::spread(0, 3), vec![0, 1, 2]);
        let many = evidence::spread(5, 100);
        assert_eq!(many.len() as u64, evidence::PAGES_PER_PROBE);
        assert_eq!((many[0], many[many.len() - 1]), (5, 104));
        assert!(many.windows(2).all(|w| w[0] < w[1]), "{many:?}");
        assert!(evidence::spread(0, 0).is_empty());
    }

    /// A wrapper's set holds its program's pages: the program's replay
    /// leaves out each access that one range of a set around it holds
    /// whole (matched by device and inode, not by the sets' own ids),
    /// keeps one that sticks out or that no set around it holds, and
    /// counts the pages it left out.
    #[test]
    fn a_launch_leaves_to_the_replays_around_it_the_pages_their_sets_hold() {
        let file = |id, ino| outrider_store::FileRecord {
            id,
            dev: 1,
            ino,
            ..Default::default()
        };
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let wrapper = Arc::new(AppHistory {
            files: vec![file(1, 50), file(2, 60)],
            accesses: vec![a(1, 0, 10), a(2, 0, 4), a(1, 10, 10)],
            ..AppHistory::default()
        });
        let program = AppHistory {
            files: vec![file(7, 60), file(8, 50), file(9, 70)],
            accesses: vec![a(8, 0, 20), a(7, 2, 2), a(7, 3, 2), a(9, 0, 1), a(8, 19, 2)],
            ..AppHistory::default()
        };
        let (left, out) = uncovered(&program, &[Arc::clone(&wrapper)]);
        let left = left.expect("some accesses left out");
        assert_eq!(out, 22);
        assert_eq!(left.accesses, vec![a(7, 3, 2), a(9, 0, 1), a(8, 19, 2)]);
        assert_eq!(left.files, program.files, "the files stay");
        // With no set around it, or none that holds any of it: unchanged.
        assert_eq!(uncovered(&program, &[]), (None, 0));
        let other = Arc::new(AppHistory {
            files: vec![file(1, 99)],
            accesses: vec![a(1, 0, 100)],
            ..AppHistory::default()
        });
        assert_eq!(uncovered(&program, &[other]), (None, 0));
    }

    #[test]
    fn reorder_buffers_start_at_1_mib_and_double_to_16() {
        let a = |pages| AccessRecord {
            file: 0,
            page: 0,
            pages,
        };
        let list: Vec<AccessRecord> = [200, 100, 512, 1, 4096, 5000, 3].map(a).to_vec();
        let sizes: Vec<usize> = batches(&list).iter().map(|b| b.len()).collect();
        // 256 pages reached at the 2nd entry, 512 at the 3rd, 1024 at the
        // 5th, 2048 at the 6th, then the rest.
        assert_eq!(sizes, vec![2, 1, 2, 1, 1]);
        assert_eq!(batches(&list).concat(), list, "every entry once, in order");
        assert!(batches(&[]).is_empty());
    }

    #[test]
    fn long_sequential_files_are_left_to_readahead() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let seq = sequential_files(&runs_from_start(
            &[
                a(1, 0, 1024),
                a(2, 0, 4096),
                a(1, 1024, 1025),
                a(3, 0, 2048),    // exactly 8 MiB: kept
                a(2, 4099, 1),    // a hole of 3 pages (a read the tracepoint missed)
                a(4, 1000, 4000), // not from near the first page
                a(5, 0, 4096),
                a(5, 4000, 100), // back
                a(6, 0, 1024),
                a(6, 1024 + 513, 4096), // a hole of more than a folio
                a(7, 0, 1024),
                a(7, 1024 + 500, 2048), // skipped more than 1 page in 16
            ],
            &Default::default(),
        ));
        let mut seq: Vec<u32> = seq.into_iter().collect();
        seq.sort_unstable();
        assert_eq!(seq, vec![1, 2]);
    }

    /// A mapped scan is recorded with the holes its read-around and
    /// large folios leave (`rg --mmap` of a 256 MiB file: 16 pages of
    /// every 64); a mapped library is first touched near its end.
    #[test]
    fn mapped_scans_with_holes_are_left_to_readahead() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let mut scan: Vec<_> = (0..1024).map(|i| a(1, i * 64, 16)).collect();
        scan.extend((0..64).map(|i| a(2, i * 2246, 200))); // holes of 2 046: a run
        scan.extend((0..64).map(|i| a(3, i * 2249, 200))); // of 2 049: none
        scan.extend((0..64).map(|i| a(4, i * 64, 3))); // 3 pages in 64: none
        scan.extend([a(5, 8000, 1), a(5, 0, 16)]); // headers near its end
        scan.extend((0..64).map(|i| a(5, 16 + i * 64, 16)));
        let mapped = [1, 2, 3, 4, 5].into_iter().collect();
        let mut seq: Vec<u32> = sequential_files(&runs_from_start(&scan, &mapped))
            .into_iter()
            .collect();
        seq.sort_unstable();
        assert_eq!(seq, vec![1, 2]);
        // File 1's holes in a file read through read(2): a strided reader.
        let read: Vec<_> = (0..1024).map(|i| a(1, i * 64, 16)).collect();
        assert!(sequential_files(&runs_from_start(&read, &Default::default())).is_empty());
    }

    /// A data file is one read through read(2) with DATA_MIN_PAGES or
    /// more of it in the set, however it was read, each with its
    /// first-touched page; a mapped file or a smaller one is not.
    #[test]
    fn data_files_are_the_large_files_read() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let n = DATA_MIN_PAGES;
        let mut set: Vec<_> = (0..n).map(|i| a(1, 4 * n - i * 2, 1)).collect();
        set.extend((0..n - 1).map(|i| a(2, i * 2, 1))); // one page too few
        set.extend((0..n / 64).map(|i| a(3, 8 + i * 64, 64))); // in order, 64 a piece
        set.extend((0..n).map(|i| a(5, i * 2, 1))); // mapped
        let mapped = [5].into_iter().collect();
        let mut data: Vec<(u32, u64)> = data_files(&set, &mapped).into_iter().collect();
        data.sort_unstable();
        assert_eq!(data, vec![(1, 4 * n), (3, 8)]);
    }

    /// Two files of `pages` pages each and the set of their reads of
    /// `step.1` pages every `step.0`, the first file's first; `None`
    /// unless root (files are found by inode).
    fn two_data_files(
        pages: u64,
        step: (u64, u64),
    ) -> Option<(tempfile::TempDir, [std::path::PathBuf; 2], AppHistory)> {
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let files = [dir.path().join("data"), dir.path().join("more")];
        let mut r = Recorder::new(64 << 20, 8192);
        for f in &files {
            std::fs::write(f, vec![1u8; pages as usize * 4096]).unwrap();
            let md = std::fs::metadata(f).unwrap();
            for page in (0..pages).step_by(step.0 as usize) {
                r.read(std::process::id(), read_of(&md, page, step.1));
            }
        }
        Some((dir, files, r.finish("/bin/x")))
    }

    /// The data files' pages are asked for once the launch read the first
    /// recorded page of one of them, not before: with the launcher alive
    /// and neither page cached, nothing of them until the launcher exits;
    /// with the second file's cached, all of both; `confirm_data = false`
    /// or no launcher, at once.
    #[test]
    fn data_files_wait_for_the_launch_to_read_one() {
        let Some((_dir, [p, q], h)) = two_data_files(1024, (2, 1)) else {
            return;
        };
        let mut child = sleeping("0.3");
        let with = |launcher, confirm_data| ReplayOptions {
            budget_bytes: 64 << 20,
            launcher,
            confirm_data,
            ..opts(None)
        };
        let drop_both = || [&p, &q].into_iter().for_each(|f| drop_cached(f));
        drop_both();
        let st = replay(&h, &with(Some(child.id()), true));
        assert_eq!(
            (st.pages_requested, st.pages_unconfirmed),
            (0, 1024),
            "{st:?}"
        );
        assert!(
            st.stopped_at_exit,
            "it waited for the launcher's exit: {st:?}"
        );
        child.wait().unwrap();
        let cached = outrider_sys::cachestat::cachestat;
        let (f, g) = (
            std::fs::File::open(&p).unwrap(),
            std::fs::File::open(&q).unwrap(),
        );
        use std::os::fd::AsFd;
        // The first pages were not read by the replay's looks at them (its
        // look for the set in memory may read a probe's page).
        for (name, f, first) in [("data", &f, 0), ("more", &g, 0)] {
            let c = cached(f.as_fd(), first, PAGE).unwrap().cache;
            assert_eq!(c, 0, "{name}: its first recorded page not read");
        }
        // The second file's first page read (by the launch, here by the test).
        let mut child = sleeping("5");
        drop_both();
        std::os::unix::fs::FileExt::read_at(&g, &mut [0u8; 1], 0).unwrap();
        let st = replay(&h, &with(Some(child.id()), true));
        assert_eq!(
            (st.pages_requested, st.pages_unconfirmed),
            (1024, 0),
            "{st:?}"
        );
        for o in [with(Some(child.id()), false), with(None, true)] {
            drop_both();
            let st = replay(&h, &o);
            assert_eq!(
                (st.pages_requested, st.pages_unconfirmed),
                (1024, 0),
                "{st:?}"
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Of the data files, the one the launch is seen reading, which the
    /// set read from start to end, is left to the readahead its read
    /// started; the others are asked for.
    #[test]
    fn the_data_file_a_launch_reads_in_order_is_left_to_readahead() {
        let Some((_dir, [p, q], h)) = two_data_files(512, (32, 32)) else {
            return;
        };
        let mut child = sleeping("5");
        [&p, &q].into_iter().for_each(|f| drop_cached(f));
        let first = std::fs::File::open(&p).unwrap();
        std::os::unix::fs::FileExt::read_at(&first, &mut [0u8; 1], 0).unwrap();
        let o = ReplayOptions {
            budget_bytes: 64 << 20,
            launcher: Some(child.id()),
            ..opts(None)
        };
        let st = replay(&h, &o);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            (st.pages_requested, st.pages_left_to_readahead),
            (512, 512),
            "{st:?}"
        );
    }

    #[test]
    fn ranges_of_a_file_merge() {
        let a = |file, page, pages| AccessRecord { file, page, pages };
        let m = merged_ranges(&[
            a(2, 10, 5),
            a(1, 0, 2),
            a(2, 0, 3),
            a(2, 12, 10),
            a(1, 2, 1),
        ]);
        assert_eq!(m, vec![(1, 0, 3), (2, 0, 3), (2, 10, 12)]);
    }

    /// A launcher that lives `secs` seconds.
    fn sleeping(secs: &str) -> std::process::Child {
        std::process::Command::new("sleep")
            .arg(secs)
            .spawn()
            .unwrap()
    }

    fn opts(user: Option<Credentials>) -> ReplayOptions {
        ReplayOptions {
            budget_bytes: 1 << 20,
            user,
            pressure_max_pct: 100.0,
            launcher: None,
            exec_ns: 0,
            ahead: false,
            launched: Default::default(),
            read_around: false,
            confirm_data: true,
            walk_dirs: Default::default(),
            storage_read_ns: Default::default(),
            launch_reads: Default::default(),
            found_resident: Default::default(),
            stop_following: None,
            covered: Vec::new(),
            holders: Default::default(),
        }
    }

    /// Drop file `p`'s pages from the page cache. Pages still being read
    /// (a replay's WILLNEED just before) are not dropped: asked again
    /// until none is cached, for up to a second.
    fn drop_cached(p: &std::path::Path) {
        use std::os::fd::{AsFd, AsRawFd};
        let f = std::fs::File::open(p).unwrap();
        f.sync_all().unwrap();
        for _ in 0..100 {
            // SAFETY: a valid descriptor; advice only.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            let cached = outrider_sys::cachestat::cachestat(f.as_fd(), 0, 0).map(|c| c.cache);
            if cached.is_ok_and(|c| c == 0) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// A file read from start to end is left to the kernel's readahead
    /// when the launch runs, and asked for ahead of it.
    #[test]
    fn a_replay_ahead_of_its_launch_asks_for_sequential_files_too() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("seq");
        let pages = READAHEAD_PAGES + 7;
        std::fs::write(&p, vec![3u8; (pages * PAGE) as usize]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let mut r = Recorder::new(64 << 20, 8192);
        r.read(std::process::id(), read_of(&md, 0, pages));
        let h = r.finish("/bin/seq");
        let big = ReplayOptions {
            budget_bytes: 64 << 20,
            ..opts(None)
        };
        let st = replay(&h, &big);
        assert_eq!((st.pages_requested, st.pages_left_to_readahead), (0, pages));
        // Out of memory, or ahead of its launch it is found there. Ahead,
        // each piece waits for an idle disk, half a second at most in all;
        // under CI's other tests the disk may stay busy that long, and the
        // replay then rightly asks for nothing; and a drop that did not
        // end within its second leaves the set in memory: tried again.
        let ahead = ReplayOptions { ahead: true, ..big };
        let st = (0..20)
            .map(|_| {
                drop_cached(&p);
                replay(&h, &ahead)
            })
            .find(|st| !st.stopped_busy && !st.rest_resident)
            .expect("the file out of memory and the disk idle in one of 20 tries");
        assert_eq!(
            (st.pages_requested, st.pages_left_to_readahead),
            (pages, 0),
            "{st:?}"
        );
    }

    /// A replay ahead of its launch stops once the launch started (the
    /// flag the daemon sets at its exec): it asks for nothing more, and
    /// says why.
    #[test]
    fn a_replay_ahead_stops_once_its_launch_started() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("set");
        std::fs::write(&p, vec![5u8; 64 * PAGE as usize]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let mut r = Recorder::new(64 << 20, 8192);
        r.read(std::process::id(), read_of(&md, 0, 64));
        let h = r.finish("/bin/set");
        let ahead = ReplayOptions {
            ahead: true,
            ..opts(None)
        };
        ahead
            .launched
            .store(true, std::sync::atomic::Ordering::Relaxed);
        drop_cached(&p);
        let st = replay(&h, &ahead);
        assert!(st.stopped_launched && !st.stopped_busy, "{st:?}");
        assert_eq!(st.pages_requested, 0, "{st:?}");
    }

    /// A file the launch read through page faults is saved as mapped, and
    /// with `read_around` replayed whole where the window allows (this
    /// disk's, or the kernel's default 32 pages): the 16-page file here;
    /// a file read with `read(2)` stays as recorded.
    #[test]
    fn a_small_mapped_file_is_replayed_whole() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let (m, r) = (dir.path().join("mapped"), dir.path().join("read"));
        std::fs::write(&m, vec![1u8; 16 * 4096]).unwrap();
        std::fs::write(&r, vec![1u8; 16 * 4096]).unwrap();
        let (mmd, rmd) = (
            std::fs::metadata(&m).unwrap(),
            std::fs::metadata(&r).unwrap(),
        );
        let me = std::process::id();
        let mut rec = Recorder::new(1 << 20, 8192);
        let faulted = PagesRead {
            mapped: true,
            ..read_of(&mmd, 3, 1)
        };
        rec.read(me, faulted);
        rec.read(me, read_of(&rmd, 5, 1));
        rec.read(me, read_of(&mmd, 9, 2));
        let h = rec.finish("/bin/x");
        let mapped: Vec<(String, bool)> = (h.files.iter())
            .map(|f| (f.path.rsplit('/').next().unwrap().to_string(), f.mapped))
            .collect();
        assert!(mapped.contains(&("mapped".into(), true)), "{mapped:?}");
        assert!(mapped.contains(&("read".into(), false)), "{mapped:?}");
        assert_eq!(replay(&h, &opts(None)).pages_requested, 4);
        let around = ReplayOptions {
            read_around: true,
            confirm_data: true,
            ..opts(None)
        };
        let window = around::Windows::default().pages(mmd.dev());
        let want = if window >= 32 { 16 + 1 } else { 4 };
        assert_eq!(replay(&h, &around).pages_requested, want);
    }

    /// A read is traced with the pages it asked for; those past the end
    /// of the file are neither recorded nor, from a set that holds them,
    /// asked for. A file that grew is looked at again. A set holds
    /// `files_max` files, and a replay verifies only the files its budget
    /// reaches.
    #[test]
    fn a_set_holds_only_pages_and_files_a_replay_can_use() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 10 << 10]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let me = std::process::id();
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 16)); // a 64 KiB read of 10 KiB
        assert_eq!((r.pages, r.dropped_pages), (3, 0));
        r.read(me, read_of(&md, 8, 4));
        assert_eq!(r.pages, 3, "a read wholly past the end adds nothing");
        let mut h = r.finish("/bin/x");
        assert_eq!(replay(&h, &opts(None)).pages_requested, 3);
        // A set recorded with such pages: only the file's are asked for.
        h.accesses.push(AccessRecord {
            file: h.accesses[0].file,
            page: 3,
            pages: 13,
        });
        assert_eq!(replay(&h, &opts(None)).pages_requested, 3);
        // A set holds `files_max` files: the next file is not recorded,
        // and the set is full.
        let mut r = Recorder::new(1 << 20, 1);
        r.read(me, read_of(&md, 0, 1));
        assert!(r.is_full());
        let g = dir.path().join("g");
        std::fs::write(&g, vec![1u8; 4096]).unwrap();
        r.read(me, read_of(&std::fs::metadata(&g).unwrap(), 0, 1));
        assert_eq!((r.pages, r.dropped_pages), (1, 1));
        // A replay verifies only the files of what its budget lets it ask
        // for: here the first file's page.
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 1));
        r.read(me, read_of(&std::fs::metadata(&g).unwrap(), 0, 1));
        let one_page = ReplayOptions {
            budget_bytes: PAGE,
            ..opts(None)
        };
        let st = replay(&r.finish("/bin/x"), &one_page);
        assert_eq!((st.files_kept, st.pages_requested), (1, 1));
        // Grown while it was read: its new pages count.
        let mut r = Recorder::new(1 << 20, 8192);
        r.read(me, read_of(&md, 0, 16));
        std::fs::write(&p, vec![1u8; 20 << 10]).unwrap();
        r.read(me, read_of(&md, 0, 16));
        assert_eq!(r.pages, 5);
    }

    /// A set whose probed pages (of its first reorder buffer and of the
    /// rest) are all cached is not asked for at all, once its launch's
    /// own reads came from memory and no other replay read from storage
    /// lately; the same set dropped from the cache is asked for whole,
    /// and its reads noted for the others.
    #[test]
    fn a_set_found_in_memory_is_not_asked_for() {
        // Every other page, then the rest: 1024 one-page accesses, of
        // which the first buffer holds 256.
        let pages = (0..1024).step_by(2).chain((1..1024).step_by(2));
        let Some((_dir, p, h)) = one_file_set(1024, pages.map(|page| (page, 1))) else {
            return;
        };
        let reads = LaunchReads::default();
        reads
            .read
            .store(evidence::EVIDENCE_PAGES, Ordering::Relaxed);
        let big = ReplayOptions {
            budget_bytes: 64 << 20,
            launch_reads: Arc::new(reads),
            ..opts(None)
        };
        let st = replay(&h, &big);
        assert!(st.rest_resident, "{st:?}");
        assert_eq!(big.found_resident.get(), Some(true));
        assert_eq!((st.pages_requested, st.pages_skipped), (0, 1024));
        // Its launch's own reads not yet seen to come from memory, or
        // another replay read from storage just now: no look.
        let unseen = ReplayOptions {
            launch_reads: Arc::default(),
            found_resident: Arc::default(),
            ..big.clone()
        };
        let now = outrider_sys::monotonic_ns();
        let beside = ReplayOptions {
            storage_read_ns: Arc::new(AtomicU64::new(now)),
            found_resident: Arc::default(),
            ..big.clone()
        };
        for o in [&unseen, &beside] {
            let st = replay(&h, o);
            assert!(!st.rest_resident, "{st:?}");
            assert_eq!(o.found_resident.get(), Some(false));
            assert_eq!(st.pages_requested, 1024, "{st:?}");
        }
        // Ahead of its launch there are no launch reads: the probes decide.
        let ahead = ReplayOptions {
            ahead: true,
            ..unseen.clone()
        };
        let st = replay(&h, &ahead);
        assert!(st.rest_resident, "{st:?}");
        assert_eq!((st.pages_requested, st.pages_skipped), (0, 1024));
        drop_cached(&p);
        let before = outrider_sys::monotonic_ns();
        let st = replay(&h, &big);
        assert!(!st.rest_resident, "{st:?}");
        assert_eq!(st.pages_requested, 1024, "{st:?}");
        let noted = big.storage_read_ns.load(Ordering::Relaxed);
        assert!(
            noted >= before,
            "its reads from storage noted for the others"
        );
        // Noted on this thread, by a replay that ended: the next replay
        // here (a launch's successors run after its own) still looks.
        std::fs::read(&p).unwrap();
        let st = replay(&h, &big);
        assert!(st.rest_resident, "{st:?}");
        assert_eq!(big.storage_read_ns.load(Ordering::Relaxed), noted);
    }

    /// Pages are recorded once, in first-touch order, up to the cap; the
    #[test]
    fn a_recorder_keeps_first_touches_up_to_its_cap() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 16 * 4096]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let me = std::process::id();
        let mut r = Recorder::new(6 * PAGE, 8192);
        r.read(me, read_of(&md, 4, 2));
        r.read(me, read_of(&md, 0, 2));
        r.read(me, read_of(&md, 4, 3)); // 4, 5 again; 6 new
        r.read(me, read_of(&md, 10, 4)); // over the cap after 1
        assert_eq!((r.pages, r.dropped_pages), (6, 3));
        assert!(r.is_full());
        // Once full, a file read for the first time is not even resolved:
        // it is not in the history below.
        let g = dir.path().join("g");
        std::fs::write(&g, vec![1u8; 4096]).unwrap();
        let gmd = std::fs::metadata(&g).unwrap();
        r.read(me, read_of(&gmd, 0, 1));
        assert_eq!((r.pages, r.dropped_pages), (6, 4));
        let mut r2 = Recorder::new(1 << 20, 8192);
        r2.read(me, read_of(&md, 5, 3)); // 5, 6 in the first set; 7 not
        let h = r.finish("/bin/x");
        assert_eq!(r2.overlap(&h), 2);
        let pages: Vec<(u64, u32)> = h.accesses.iter().map(|a| (a.page, a.pages)).collect();
        assert_eq!(pages, vec![(4, 2), (0, 2), (6, 1), (10, 1)]);
        assert_eq!(h.files.len(), 1);
        let st = replay(&h, &opts(None));
        assert_eq!((st.files_kept, st.pages_requested), (1, 6));
        // For a launch by `nobody`, who cannot search the 0700 directory:
        // nothing; once the directory is searchable, all of it.
        let nobody = Credentials {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let st = replay(&h, &opts(Some(nobody.clone())));
        assert_eq!(
            (st.files_kept, st.files_dropped, st.pages_requested),
            (0, 1, 0)
        );
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let st = replay(&h, &opts(Some(nobody)));
        assert_eq!((st.files_kept, st.pages_requested), (1, 6));
        // Under memory pressure (here: any, with a limit below zero) no
        // replay starts, where the kernel reports PSI.
        if outrider_sys::memory_pressure().is_some() {
            let st = replay(
                &h,
                &ReplayOptions {
                    pressure_max_pct: -1.0,
                    ..opts(None)
                },
            );
            assert!(st.stopped_by_pressure && st.pages_requested == 0, "{st:?}");
        }
        // For a launcher that has exited: nothing.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        let st = replay(
            &h,
            &ReplayOptions {
                launcher: Some(gone_pid),
                ..opts(None)
            },
        );
        gone.wait().unwrap();
        let st2 = replay(
            &h,
            &ReplayOptions {
                launcher: Some(gone_pid),
                ..opts(None)
            },
        );
        assert!(
            st2.stopped_at_exit && st2.pages_requested == 0,
            "{st:?} {st2:?}"
        );
        // For a launch judged to read from memory, its replay having read
        // nothing from storage (the file, just written, is in memory):
        // nothing.
        let hot = Arc::new(LaunchReads::default());
        hot.judge_hot();
        let st = replay(
            &h,
            &ReplayOptions {
                launch_reads: hot,
                ..opts(None)
            },
        );
        assert!(st.stopped_hot && st.pages_requested == 0, "{st:?}");
        // Changed since: nothing is replayed.
        std::fs::write(&p, vec![2u8; 4096]).unwrap();
        let st = replay(&h, &opts(None));
        assert_eq!((st.files_dropped, st.pages_requested), (1, 0));
    }

    /// Program `prog` started with argument `arg`.
    fn spawn(prog: &str, arg: &str) -> std::process::Child {
        let mut c = std::process::Command::new(prog);
        c.arg(arg).spawn().unwrap()
    }

    /// A wrapper that does not wait for its program (`setsid -f`) exits
    /// first: its replay goes on while the program it covers runs, then
    /// stops; once stopped short of its set, no launch may hold it.
    #[test]
    fn a_covered_launch_holds_the_replay_around_it_past_its_launchers_exit() {
        let Some((_dir, _, h)) = one_file_set(16, [(0, 6)].into_iter()) else {
            return;
        };
        let mut wrapper = spawn("true", "");
        wrapper.wait().unwrap();
        let mut program = spawn("sleep", "30");
        let holders = Arc::new(Holders::default());
        assert!(holders.hold(program.id()));
        let o = ReplayOptions {
            launcher: Some(wrapper.id()),
            holders: Arc::clone(&holders),
            ..opts(None)
        };
        let st = replay(&h, &o);
        assert!(!st.stopped_at_exit && st.pages_requested == 6, "{st:?}");
        assert!(holders.hold(program.id()), "a finished replay may be held");
        program.kill().unwrap();
        program.wait().unwrap();
        let st = replay(&h, &o);
        assert!(st.stopped_at_exit && st.pages_requested == 0, "{st:?}");
        let mut late = spawn("sleep", "30");
        assert!(
            !holders.hold(late.id()),
            "it stopped: the launch asks itself"
        );
        // Closed otherwise: over the budget.
        let holders = Arc::new(Holders::default());
        let small = ReplayOptions {
            budget_bytes: 2 * PAGE,
            holders: Arc::clone(&holders),
            ..opts(None)
        };
        let st = replay(&h, &small);
        assert!(st.pages_skipped > 0, "{st:?}");
        assert!(!holders.hold(late.id()));
        late.kill().unwrap();
        late.wait().unwrap();
        // At most HOLDERS_MAX running processes, each once, and none that
        // is gone; one that exited makes room.
        let holders = Holders::default();
        let mut many: Vec<_> = (0..=HOLDERS_MAX).map(|_| spawn("sleep", "30")).collect();
        assert!(many[..HOLDERS_MAX].iter().all(|c| holders.hold(c.id())));
        assert!(holders.hold(many[0].id()), "held already");
        assert!(!holders.hold(many[HOLDERS_MAX].id()), "one too many");
        many[0].kill().unwrap();
        many[0].wait().unwrap();
        assert!(!holders.hold(many[0].id()), "{} is gone", many[0].id());
        assert!(holders.hold(many[HOLDERS_MAX].id()));
        for c in &mut many[1..] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// The event loop holds a child at its fork event, which it may read
    /// after the replay saw the child's launcher exit (the loop behind on
    /// a busy machine): a replay held by none waits for the loop to read
    /// that far before it stops, so the child forked before the exit
    /// holds it; with the loop stalled, it stops once it waited long
    /// enough.
    #[test]
    fn a_replay_waits_for_the_event_loop_before_it_stops_at_its_launchers_exit() {
        let Some((_dir, _, h)) = one_file_set(16, [(0, 6)].into_iter()) else {
            return;
        };
        let mut launcher = spawn("true", "");
        launcher.wait().unwrap();
        let mut child = spawn("sleep", "30");
        let events = Arc::new(EventsRead::default());
        let holders = Arc::new(Holders::fed_by(&events));
        let o = Arc::new(ReplayOptions {
            launcher: Some(launcher.id()),
            holders: Arc::clone(&holders),
            ..opts(None)
        });
        let (h, o2) = (Arc::new(h), Arc::clone(&o));
        let h2 = Arc::clone(&h);
        let replaying = std::thread::spawn(move || replay(&h2, &o2));
        // The loop reads the fork a moment later, then catches up.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(holders.hold(child.id()), "not closed before the loop read");
        events.caught_up(outrider_sys::monotonic_ns());
        let st = replaying.join().unwrap();
        assert!(!st.stopped_at_exit && st.pages_requested == 6, "{st:?}");
        // The child gone and the loop stalled: it stops all the same.
        child.kill().unwrap();
        child.wait().unwrap();
        let st = replay(&h, &o);
        assert!(st.stopped_at_exit && st.pages_requested == 0, "{st:?}");
        let mut late = spawn("sleep", "30");
        assert!(!holders.hold(late.id()), "it stopped");
        late.kill().unwrap();
        late.wait().unwrap();
    }
}
