//! History store live: the files one `outrider run` of an application
//! touched, saved for the next run of the same application beside the
//! policy's own history blob, and restored so the blob's file ids name the
//! same files again.
//!
//! * **Key** ([`app_key`]): the executable (resolved through `PATH` and
//!   canonicalised), the arguments and the working directory —
//!   `run:EXE\x1fARG\x1f...\x1f@CWD`. Runs that should share a history (a
//!   test suite run with varying arguments, a build in different
//!   checkouts) pass a name instead (`--app-key NAME` → `name:NAME`).
//! * **What is saved** ([`collect`]): per file the run touched (dev, ino,
//!   `name_to_handle_at` handle, path, size, mtime), plus the policy's own
//!   [`outrider_core::Policy::save_history`] blob — in one transaction at
//!   the end of the run ([`outrider_store::Store::save_run`]). What a
//!   policy learned is its own business (`auto` records its access list
//!   itself); this module knows files only.
//! * **What is restored** ([`restore`]): each file is reopened — by handle
//!   (`open_by_handle_at`, which fails with `ESTALE` for a deleted file
//!   even if its inode number was reused) where permitted, else by path —
//!   and kept only if (dev, ino, size, mtime) are unchanged. The kept files
//!   are registered in the controller's [`FileTable`] under their saved ids
//!   (so ids, and thus the policy blobs that name them, stay the same from
//!   run to run) with their FIEMAP extents; a request for a dropped file's
//!   id is not translated.

use crate::files::{FileInfo, FileTable};
use outrider_core::FileId;
use outrider_store::{AppHistory, FileRecord};
use outrider_sys::{handle, open_regular, Follow};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The key of a run: `name:NAME` for an explicit group, else
/// `run:EXE\x1fARGS...\x1f@CWD` (EXE resolved through `PATH`).
pub fn app_key(argv: &[OsString], cwd: &Path, name: Option<&str>) -> String {
    if let Some(n) = name {
        return format!("name:{n}");
    }
    let mut k = String::from("run:");
    if let Some((exe, args)) = argv.split_first() {
        k.push_str(&resolve_exe(exe).to_string_lossy());
        for a in args {
            k.push('\x1f');
            k.push_str(&a.to_string_lossy());
        }
    }
    k.push_str("\x1f@");
    k.push_str(&cwd.to_string_lossy());
    k
}

/// `exe` as `execvp` finds it, canonicalised; unchanged when not found.
pub fn resolve_exe(exe: &OsString) -> PathBuf {
    let p = Path::new(exe);
    let found = if p.components().count() > 1 {
        Some(p.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(p))
                .find(|c| c.is_file())
        })
    };
    found
        .and_then(|f| std::fs::canonicalize(f).ok())
        .unwrap_or_else(|| p.to_path_buf())
}

/// What [`restore`] made of a saved history.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Restored {
    /// Files kept.
    pub files_kept: u64,
    /// Files dropped: changed (size, mtime or inode) or deleted.
    pub files_dropped: u64,
    /// Of the kept files, how many were verified by handle.
    pub by_handle: u64,
    /// ... and how many by path.
    pub by_path: u64,
    /// Runs saved before under this key.
    pub runs_before: u64,
    /// Of the kept files, how many were registered unverified (a history
    /// of more than [`EAGER_FILES`] files): each is checked — handle,
    /// identity, size and mtime — when an I/O worker opens it to prefetch,
    /// and skipped if it changed.
    pub deferred: u64,
}

fn mtime_ns(md: &std::fs::Metadata) -> i64 {
    md.mtime() * 1_000_000_000 + md.mtime_nsec()
}

/// Reopen a saved file; `Ok((file, by_handle))` when it is the same,
/// unchanged file.
fn verify(
    f: &FileRecord,
    mounts: &mut handle::Mounts,
) -> Result<(std::fs::File, bool), &'static str> {
    let mut by_handle = false;
    let file = match &f.handle {
        Some((kind, bytes, mount)) => match handle::open_by_handle(mounts, *mount, *kind, bytes) {
            Ok(file) => {
                by_handle = true;
                Some(file)
            }
            // The handle names a file that no longer exists.
            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => return Err("deleted"),
            Err(_) => None,
        },
        None => None,
    };
    let file = match file {
        Some(f) => f,
        None => open_regular(Path::new(&f.path), Follow::Never).map_err(|_| "gone")?,
    };
    let md = file.metadata().map_err(|_| "gone")?;
    if md.dev() != f.dev || md.ino() != f.ino {
        return Err("replaced");
    }
    if md.size() != f.size || mtime_ns(&md) != f.mtime_ns {
        return Err("changed");
    }
    Ok((file, by_handle))
}

/// Threads verifying a history's files at the start of a run, at most.
const RESTORE_THREADS: usize = 8;
/// Files each verify thread takes at least: a history of no more is
/// verified in the calling thread, no thread started. At the daemon's
/// launch of `make --version` (3 ms cold), eight threads per
/// verification, started and ended while the program ran, kept it off
/// the CPU 1 ms in all on a 2-core machine (sched_switch tracepoints);
/// verified in the replay's own thread, `make` went from 0.64x to 0.70x
/// of stock and `xz --version` from 0.77x to 0.85x, `curl`, `gdb` and
/// `cmake` unchanged within 0.04x (`/tmp` A/B, caches dropped before
/// each, medians of 9 in one sitting).
const FILES_PER_RESTORE_THREAD: usize = 16;
/// Histories of at most this many files are verified before the replay
/// starts (every file opened, checked and its extents mapped); larger
/// ones register their files with a handle unverified and check each
/// when it is opened to be prefetched. Verifying 10^5 small files took
/// half a second of the program's cold start; deferred, those opens run on
/// the I/O workers ahead of the program. Their entries have no physical
/// position until a worker opened them.
pub const EAGER_FILES: usize = 4096;

/// Validate `h`'s files and register the unchanged ones in `table` under
/// their saved ids. Call before the run starts (the table must not have
/// allocated ids yet).
pub fn restore(h: &AppHistory, table: &mut FileTable) -> Restored {
    restore_with(h, table, EAGER_FILES)
}

/// [`restore`], verifying before the start only when `h` has at most
/// `eager_files` files.
pub fn restore_with(h: &AppHistory, table: &mut FileTable, eager_files: usize) -> Restored {
    seed(h, verify_files(h, eager_files), table)
}

/// A file kept: its index in the history, its extents, whether a handle
/// opened it.
type Kept = (usize, Vec<outrider_sys::Extent>, bool);

/// What [`verify_files`] found, by index into the history's files: the
/// files kept with their extents and whether a handle opened them, in id
/// order, and how many were dropped. Owned, so a history can be verified
/// on another thread while the program starts.
#[derive(Debug, Default)]
pub struct Verification {
    kept: Vec<Kept>,
    dropped: u64,
    deferred: u64,
}

/// Open and check `h`'s files (every one when there are at most
/// `eager_files`, else only those without a handle; the rest are kept
/// unverified, checked when a worker opens them to prefetch).
pub fn verify_files(h: &AppHistory, eager_files: usize) -> Verification {
    let lazy = h.files.len() > eager_files;
    // Verified in inode order: the inode-table reads of a cold cache then
    // go up the disk (and ext4's inode-table readahead serves the next
    // ones); seeded in id order afterwards. RESTORE_THREADS threads take a
    // contiguous share each, so a cold history of many files keeps several
    // inode and extent reads in flight instead of one.
    let mut files: Vec<usize> = (0..h.files.len())
        .filter(|&i| !lazy || h.files[i].handle.is_none())
        .collect();
    files.sort_by_key(|&i| (h.files[i].dev, h.files[i].ino));
    // Each descriptor is closed at once so a history of many files needs
    // no more than one per thread.
    let share = (files.len().div_ceil(RESTORE_THREADS)).max(FILES_PER_RESTORE_THREAD);
    let results: Vec<(Vec<Kept>, u64)> = if files.len() <= share {
        vec![verify_part(h, &files, &mut |_| true)]
    } else {
        std::thread::scope(|sc| {
            let workers: Vec<_> = files
                .chunks(share)
                .map(|part| sc.spawn(move || verify_part(h, part, &mut |_| true)))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a verify thread does not panic"))
                .collect()
        })
    };
    let mut v = Verification::default();
    for (ok, dropped) in results {
        v.kept.extend(ok);
        v.dropped += dropped;
    }
    // Deferred files: registered as saved, checked when opened.
    if lazy {
        let deferred: Vec<usize> = (0..h.files.len())
            .filter(|&i| h.files[i].handle.is_some())
            .collect();
        v.deferred = deferred.len() as u64;
        v.kept
            .extend(deferred.into_iter().map(|i| (i, Vec::new(), true)));
    }
    v.kept.sort_by_key(|k| h.files[k.0].id);
    v
}

/// [`restore`] in the calling thread, in inode order, asking `go(dev)`
/// before each [`PACED_FILES`] files (of device `dev`, the next one's):
/// on a refusal the files left are not registered. For a replay that
/// runs only in the disk's idle time: the inode and extent reads of a
/// verification are reads too.
pub fn restore_paced(
    h: &AppHistory,
    table: &mut FileTable,
    go: &mut dyn FnMut(u64) -> bool,
) -> Restored {
    let mut files: Vec<usize> = (0..h.files.len()).collect();
    files.sort_by_key(|&i| (h.files[i].dev, h.files[i].ino));
    let (mut kept, dropped) = verify_part(h, &files, go);
    kept.sort_by_key(|k| h.files[k.0].id);
    let v = Verification {
        kept,
        dropped,
        deferred: 0,
    };
    seed(h, v, table)
}

/// Files verified between two looks of [`restore_paced`]: ext4 keeps 16
/// inodes of 256 bytes in a 4 KiB block of its inode table.
pub const PACED_FILES: usize = 16;

/// One verify thread's share: (index, extents, by handle) of the files
/// kept, and how many were dropped; before each [`PACED_FILES`] files,
/// stops unless `go` (given the next file's device) says to go on.
fn verify_part(
    h: &AppHistory,
    part: &[usize],
    go: &mut dyn FnMut(u64) -> bool,
) -> (Vec<Kept>, u64) {
    let mut mounts = handle::Mounts::default();
    let mut ok = Vec::with_capacity(part.len());
    let mut dropped = 0u64;
    for (n, &i) in part.iter().enumerate() {
        if n % PACED_FILES == 0 && !go(h.files[i].dev) {
            break;
        }
        match verify(&h.files[i], &mut mounts) {
            Ok((file, by_handle)) => {
                let ex = outrider_sys::fiemap(file.as_fd()).unwrap_or_default();
                ok.push((i, ex, by_handle));
            }
            Err(_) => dropped += 1,
        }
    }
    (ok, dropped)
}

/// Register the files `v` kept in `table` under their saved ids. Call
/// before the run's first event reaches the table (it must not have
/// allocated ids yet).
pub fn seed(h: &AppHistory, v: Verification, table: &mut FileTable) -> Restored {
    let mut r = Restored {
        runs_before: h.runs,
        files_dropped: v.dropped,
        deferred: v.deferred,
        ..Restored::default()
    };
    let files = v.kept.iter().map(|k| &h.files[k.0]);
    table.check_access(files.map(|f| (PathBuf::from(&f.path), f.dev, f.ino)));
    for (i, ex, by_handle) in v.kept {
        let f = &h.files[i];
        let info = FileInfo {
            dev: f.dev,
            ino: f.ino,
            handle: f.handle.clone(),
            path: PathBuf::from(&f.path),
            size: f.size,
            mtime_ns: f.mtime_ns,
        };
        if !table.seed(FileId(u64::from(f.id)), info) {
            r.files_dropped += 1;
            continue;
        }
        if !ex.is_empty() {
            table.seed_extents(FileId(u64::from(f.id)), ex);
        }
        r.files_kept += 1;
        if by_handle {
            r.by_handle += 1;
        } else {
            r.by_path += 1;
        }
    }
    r
}

/// The history of this run: every file of `table` whose identity is known
/// (size and mtime as opened; see the body), in id order.
pub fn collect(table: &mut FileTable, argv: &[OsString], cwd: &Path) -> AppHistory {
    table.complete_identities();
    let mut files = Vec::new();
    for id in (1..=table.len() as u64).map(FileId) {
        let Some(info) = table.info(id) else {
            continue;
        };
        if id.0 > u64::from(u32::MAX) {
            break;
        }
        // Size and mtime as the file was opened during the run (a file
        // changed since is dropped by the next run's check). Looked up
        // again only for a file without a handle, found by path alone: if
        // the path is gone (a deleted temporary file) there is nothing to
        // replay next time. (A stat per file here was half of a 10^5-file
        // save.)
        let (mut size, mut mtime) = (info.size, info.mtime_ns);
        if info.handle.is_none() {
            match std::fs::metadata(&info.path) {
                Ok(md) if md.dev() == info.dev && md.ino() == info.ino => {
                    size = md.size();
                    mtime = mtime_ns(&md);
                }
                Err(_) => continue,
                Ok(_) => {}
            }
        }
        files.push(FileRecord {
            id: id.0 as u32,
            dev: info.dev,
            ino: info.ino,
            handle: info.handle.clone(),
            path: info.path.to_string_lossy().into_owned(),
            size,
            mtime_ns: mtime,
            // Which reads were faults is the caller's to say (the daemon's
            // launch sets, `outrider_daemon::launchset`).
            mapped: false,
        });
    }
    let (exe, args) = match argv.split_first() {
        Some((e, a)) => (
            resolve_exe(e).to_string_lossy().into_owned(),
            a.iter()
                .map(|x| x.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        None => (String::new(), String::new()),
    };
    AppHistory {
        exe,
        args,
        cwd: cwd.to_string_lossy().into_owned(),
        runs: 0,
        files,
        accesses: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::FileTableOptions;
    use std::fs;

    /// Files a, b, c of 3 pages each in a fresh directory, opened in a
    /// new table: (directory, table, their ids).
    fn three_files() -> (tempfile::TempDir, FileTable, Vec<FileId>) {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut t = table();
        let mut ids = Vec::new();
        for name in ["a", "b", "c"] {
            let p = dir.path().join(name);
            fs::write(&p, vec![7u8; 3 * 4096]).unwrap();
            ids.push(t.insert_file(fs::File::open(&p).unwrap(), p).unwrap());
        }
        (dir, t, ids)
    }

    fn table() -> FileTable {
        FileTable::new(FileTableOptions::default())
    }

    /// Three files read in one run; before the next, one is rewritten
    /// (size changes), one is deleted, one is untouched: only the
    /// untouched one comes back, under its saved id, and the table reopens
    /// it (by handle as root, else by path).
    #[test]
    fn changed_and_deleted_files_are_dropped() {
        let (dir, mut t, ids) = three_files();
        let h = collect(&mut t, &["prog".into()], dir.path());
        assert_eq!(h.files.len(), 3);
        assert_eq!(
            h.files.iter().map(|f| u64::from(f.id)).collect::<Vec<_>>(),
            ids.iter().map(|f| f.0).collect::<Vec<_>>()
        );
        drop(t);
        // b changes size, c is deleted; a is unchanged.
        fs::write(dir.path().join("b"), vec![1u8; 4096]).unwrap();
        fs::remove_file(dir.path().join("c")).unwrap();
        let mut t2 = table();
        let r = restore(&h, &mut t2);
        assert_eq!((r.files_kept, r.files_dropped), (1, 2));
        assert!(t2.is_known(ids[0]) && !t2.is_known(ids[1]) && !t2.is_known(ids[2]));
        // Unchanged files are reopened by handle when permitted.
        // SAFETY: no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            assert_eq!(r.by_handle, 1);
        }
        assert!(t2.open_known(ids[0]).is_some());
        assert_eq!(t2.reopened_by_handle + t2.reopened_by_path, 1);
        // A new file gets an id after the saved ones.
        let p = dir.path().join("d");
        fs::write(&p, b"x").unwrap();
        let id = t2.insert_file(fs::File::open(&p).unwrap(), p).unwrap();
        assert_eq!((ids[0], id), (FileId(1), FileId(2)));
    }

    /// A paced verification asks before each [`PACED_FILES`] files, with
    /// their device; a refusal leaves the files after it out.
    #[test]
    fn a_paced_verification_stops_when_told() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut t = table();
        for n in 0..PACED_FILES + 4 {
            let p = dir.path().join(n.to_string());
            fs::write(&p, b"x").unwrap();
            t.insert_file(fs::File::open(&p).unwrap(), p).unwrap();
        }
        let h = collect(&mut t, &["prog".into()], dir.path());
        let dev = h.files[0].dev;
        let asked = std::cell::RefCell::new(Vec::new());
        let mut once = |d| {
            asked.borrow_mut().push(d);
            asked.borrow().len() == 1
        };
        let r = restore_paced(&h, &mut table(), &mut once);
        assert_eq!(
            (r.files_kept, asked.into_inner()),
            (PACED_FILES as u64, vec![dev, dev])
        );
        let r = restore_paced(&h, &mut table(), &mut |_| true);
        assert_eq!(r.files_kept, PACED_FILES as u64 + 4);
    }

    /// A file replaced by another at the same path (new inode) is dropped
    /// even though the path opens.
    /// A large history (here: any, `eager_files` 0) registers its files
    /// with a handle unverified; the check happens when a worker opens a
    /// file: the unchanged one opens, the resized and the deleted ones do
    /// not. Their extents are not known before that.
    #[test]
    fn a_large_history_defers_the_check_to_the_open() {
        let (dir, mut t, ids) = three_files();
        let h = collect(&mut t, &["prog".into()], dir.path());
        drop(t);
        fs::write(dir.path().join("b"), vec![1u8; 4096]).unwrap();
        fs::remove_file(dir.path().join("c")).unwrap();
        let mut t2 = table();
        let r = restore_with(&h, &mut t2, 0);
        assert!(h.files.iter().all(|f| f.handle.is_some()));
        assert_eq!((r.files_kept, r.files_dropped, r.deferred), (3, 0, 3));
        assert!(ids.iter().all(|&id| t2.known_extents(id).is_none()));
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let opens: Vec<bool> = ids
                .iter()
                .map(|&id| t2.open_spec(id).unwrap().open().is_some())
                .collect();
            assert_eq!(opens, vec![true, false, false]);
        }
    }

    #[test]
    fn a_replaced_file_is_dropped() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("a");
        fs::write(&p, vec![7u8; 4096]).unwrap();
        let mut t = table();
        let id = t
            .insert_file(fs::File::open(&p).unwrap(), p.clone())
            .unwrap();
        let mut h = collect(&mut t, &["prog".into()], dir.path());
        assert_eq!(h.files[0].id as u64, id.0);
        // Same size and mtime, other inode: renamed over.
        let q = dir.path().join("a.new");
        fs::write(&q, vec![7u8; 4096]).unwrap();
        let keep = fs::File::open(&p).unwrap(); // keeps the old inode alive
        fs::rename(&q, &p).unwrap();
        let md = fs::metadata(&p).unwrap();
        h.files[0].size = md.size();
        h.files[0].mtime_ns = mtime_ns(&md);
        h.files[0].handle = None; // by path only
        let r = restore(&h, &mut table());
        assert_eq!((r.files_kept, r.files_dropped), (0, 1));
        drop(keep);
    }

    #[test]
    fn app_keys_name_executable_arguments_and_directory() {
        let k = app_key(
            &["sh".into(), "-c".into(), "x".into()],
            Path::new("/w"),
            None,
        );
        assert!(k.starts_with("run:/"), "{k}");
        assert!(k.ends_with("\x1f-c\x1fx\x1f@/w"), "{k}");
        assert_eq!(
            app_key(&["sh".into()], Path::new("/w"), Some("build")),
            "name:build"
        );
    }
}
