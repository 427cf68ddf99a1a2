//! Metadata prefetch through the file system.
//!
//! The block device cannot be opened here (EPERM, see
//! `bench/results/live-metadata.md`), so directory blocks and inode tables
//! cannot be read by block number. They can be read through the file
//! system: listing a directory reads its blocks, and `fstatat` of a name
//! reads the inode (ext4 also reads ahead in the inode table). With a
//! history, the files a run will open are known, in first-access order,
//! and the directories it opened (`outrider_sys::dirwatch`, saved as the
//! history blob `#dirs`), in opening order.
//! A [`MetaWalk`] goes through them on [`WALK_THREADS`] threads of its own
//! ahead of the program: each new parent directory is listed to its end,
//! then its files are `fstatat`'d in it. The program's path lookups and outrider's own
//! opens by handle then find directory blocks and inodes in memory.
//!
//! Why it matters: with the file data replayed, a cold `grep -r` over the
//! kernel tree (79k files) still waited on metadata — run 2 took 2.65 s
//! against 1.58 s with the tree's metadata resident; a cold `du -s` of the
//! tree (5 100 directories, no file read) went from 0.93 s to 0.58 s and
//! `find -name` from 0.63 s to 0.35 s once the directories were walked
//! too (medians of 5 and 7, cold, arms alternated). Without history
//! nothing is walked. Read-only: directories are opened
//! `O_RDONLY|O_DIRECTORY|O_CLOEXEC` and nothing is written. For a program
//! that runs as another user (sudo, a client of the daemon) the threads
//! walk with that user's file-system identity
//! ([`outrider_sys::access::become_user`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a walk did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WalkStats {
    /// Directories listed.
    pub dirs: u64,
    /// Directory entries read while listing them.
    pub entries: u64,
    /// Files `fstatat`'d.
    pub stats: u64,
    /// Directories or files that could not be read (moved, deleted).
    pub errors: u64,
}

#[derive(Default)]
struct Counters {
    dirs: AtomicU64,
    entries: AtomicU64,
    stats: AtomicU64,
    errors: AtomicU64,
}

/// Threads of a walk: each reads synchronously (one directory block or
/// inode-table read at a time), so several keep the disk busier; they take
/// the directories in turn, so all move through the order together.
pub const WALK_THREADS: usize = 4;
/// Directories each walk thread takes at least: a small walk runs on
/// fewer threads (each started while the program starts, on a machine
/// that may have two cores), a tree's on [`WALK_THREADS`].
pub const DIRS_PER_THREAD: usize = 16;

/// A running walk; [`MetaWalk::finish`] stops and joins it.
pub struct MetaWalk {
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<()>>,
}

impl MetaWalk {
    /// Walk `dirs` (directories the program opened, in that order) and
    /// `files` (absolute paths, in the order the program will open them)
    /// on up to [`WALK_THREADS`] new threads (one per [`DIRS_PER_THREAD`]): the directories in their order,
    /// each with the files in it, then the directories of the other files
    /// in the files' order. `None` for nothing to walk or when no thread
    /// could be started.
    pub fn start(dirs: Vec<PathBuf>, files: Vec<PathBuf>) -> Option<MetaWalk> {
        // Walking for another user (sudo, a client of the daemon), walk
        // as that user: a directory it cannot search is not listed.
        let user = outrider_sys::launch::program_credentials().ok().flatten();
        MetaWalk::start_as(dirs, files, user)
    }

    /// [`MetaWalk::start`] with the file-system identity of `user` (root's
    /// own when `None`; a thread that cannot take it walks nothing).
    pub fn start_as(
        dirs: Vec<PathBuf>,
        files: Vec<PathBuf>,
        user: Option<outrider_sys::launch::Credentials>,
    ) -> Option<MetaWalk> {
        let groups = group(dirs, files);
        if groups.is_empty() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let groups = Arc::new(groups);
        let n = groups
            .len()
            .div_ceil(DIRS_PER_THREAD)
            .clamp(1, WALK_THREADS);
        let threads: Vec<JoinHandle<()>> = (0..n)
            .filter_map(|i| {
                let (s, c, g, user) = (
                    Arc::clone(&stop),
                    Arc::clone(&counters),
                    Arc::clone(&groups),
                    user.clone(),
                );
                std::thread::Builder::new()
                    .name(format!("outrider-meta-{i}"))
                    .spawn(move || {
                        if user.is_some_and(|c| outrider_sys::access::become_user(&c).is_err()) {
                            return;
                        }
                        for (dir, files) in g.iter().skip(i).step_by(n) {
                            walk_dir(dir, files, &s, &c);
                        }
                    })
                    .ok()
            })
            .collect();
        if threads.is_empty() {
            return None;
        }
        Some(MetaWalk {
            stop,
            counters,
            threads,
        })
    }

    /// Whether every thread is done.
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Stop (after the directory or file in hand) and wait for the threads.
    pub fn finish(mut self) -> WalkStats {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let c = &self.counters;
        WalkStats {
            dirs: c.dirs.load(Ordering::Relaxed),
            entries: c.entries.load(Ordering::Relaxed),
            stats: c.stats.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
        }
    }
}

impl Drop for MetaWalk {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Directories in order, each with its files: `dirs` first, then the
/// parents of `files` not among them, in first-appearance order.
fn group(dirs: Vec<PathBuf>, files: Vec<PathBuf>) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut groups: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    let mut group_of: std::collections::HashMap<PathBuf, usize> = Default::default();
    for d in dirs {
        group_of.entry(d.clone()).or_insert_with(|| {
            groups.push((d, Vec::new()));
            groups.len() - 1
        });
    }
    for f in files {
        let Some(dir) = f.parent() else { continue };
        let g = *group_of.entry(dir.to_path_buf()).or_insert_with(|| {
            groups.push((dir.to_path_buf(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(f);
    }
    groups
}

/// A list of directories as a history blob: absolute paths, each ended by
/// a NUL (a path cannot hold one).
pub fn encode_dirs(dirs: &[PathBuf]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for d in dirs {
        out.extend_from_slice(d.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// The directories of an [`encode_dirs`] blob; anything but an absolute
/// path is skipped.
pub fn decode_dirs(blob: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    blob.split(|&b| b == 0)
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .filter(|p| p.is_absolute())
        .collect()
}

/// The order of a walk: the files' paths as given, without repeats.
pub fn walk_order<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    paths
        .into_iter()
        .filter(|p| p.is_absolute() && seen.insert(p.to_path_buf()))
        .map(Path::to_path_buf)
        .collect()
}

/// List `dir` to its end, then `fstatat` each of `files` (its entries)
/// in it.
fn walk_dir(dir: &Path, files: &[PathBuf], stop: &AtomicBool, c: &Counters) {
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            c.dirs.fetch_add(1, Ordering::Relaxed);
            for _ in rd {
                c.entries.fetch_add(1, Ordering::Relaxed);
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }
        }
        Err(_) => {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    if files.is_empty() {
        return;
    }
    let Some(dfd) = open_dir(dir) else {
        c.errors.fetch_add(files.len() as u64, Ordering::Relaxed);
        return;
    };
    for f in files {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let ok = f.file_name().is_some_and(|name| fstatat(&dfd, name));
        let n = if ok { &c.stats } else { &c.errors };
        n.fetch_add(1, Ordering::Relaxed);
    }
}

fn open_dir(dir: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .ok()
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: reads the inode; true when
/// it exists.
fn fstatat(dir: &std::fs::File, name: &std::ffi::OsStr) -> bool {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(name.as_bytes()) else {
        return false;
    };
    // SAFETY: valid descriptor, NUL-terminated name, a stat buffer we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_each_directory_once_and_stats_every_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        for i in 0..5 {
            std::fs::write(a.join(format!("f{i}")), b"x").unwrap();
        }
        std::fs::write(b.join("g"), b"y").unwrap();
        let files: Vec<PathBuf> = vec![
            a.join("f0"),
            b.join("g"),
            a.join("f1"),
            a.join("f0"),
            a.join("gone"),
        ];
        let order = walk_order(files.iter().map(PathBuf::as_path));
        assert_eq!(order.len(), 4, "the repeated f0 once");
        let w = MetaWalk::start(Vec::new(), order).unwrap();
        // The walk is short; finish waits for it only if it is done (it
        // stops early otherwise), so wait for its thread to end first.
        while !w.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let s = w.finish();
        assert_eq!(s.dirs, 2, "a and b listed once each");
        assert_eq!(s.entries, 6, "a's five entries and b's one");
        assert_eq!(s.stats, 3, "f0, g, f1");
        assert_eq!(s.errors, 1, "the missing file");
    }

    #[test]
    fn nothing_to_walk_starts_nothing() {
        assert!(MetaWalk::start(Vec::new(), Vec::new()).is_none());
        assert!(walk_order([Path::new("relative/path")]).is_empty());
    }

    #[test]
    fn opened_directories_come_first_and_gather_their_files() {
        let p = |s: &str| PathBuf::from(s);
        let g = group(
            vec![p("/t/b"), p("/t/a"), p("/t/b")],
            vec![p("/t/a/1"), p("/u/x"), p("/t/b/2"), p("/t/a/3")],
        );
        let want = vec![
            (p("/t/b"), vec![p("/t/b/2")]),
            (p("/t/a"), vec![p("/t/a/1"), p("/t/a/3")]),
            (p("/u"), vec![p("/u/x")]),
        ];
        assert_eq!(g, want);
    }

    #[test]
    fn directory_lists_round_trip_and_skip_relative_paths() {
        let dirs = vec![PathBuf::from("/a b/c"), PathBuf::from("/\u{e9}t\u{e9}")];
        assert_eq!(decode_dirs(&encode_dirs(&dirs)), dirs);
        assert_eq!(decode_dirs(b"rel\0/abs\0\0"), vec![PathBuf::from("/abs")]);
    }

    #[test]
    fn a_walk_of_opened_directories_lists_them() {
        let root =
            std::env::temp_dir().join(format!("outrider-metawalk-dirs-{}", std::process::id()));
        let (a, b) = (root.join("a"), root.join("a/b"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("f"), b"x").unwrap();
        let w = MetaWalk::start(vec![a.clone(), b.clone(), root.join("gone")], Vec::new()).unwrap();
        while !w.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let s = w.finish();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            (s.dirs, s.entries, s.stats, s.errors),
            (2, 2, 0, 1),
            "{s:?}"
        );
    }
}
