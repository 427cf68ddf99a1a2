//! `outrider stat|warm|evict`: vmtouch-like page-cache
//! inspection and control.
//!
//! - residency comes from `cachestat(2)`, with its dirty, writeback and
//!   evicted counts. The kernel answers it only for a file the caller owns
//!   or could write (or for root); otherwise it says `EPERM`, and the
//!   residency is reported **unknown, with that reason** — never a number:
//!   `mincore` on a read-only mapping of such a file claims every page
//!   resident (Linux 5.2+), and a `preadv2(RWF_NOWAIT)` probe starts
//!   readahead on a miss, changing what it measures;
//! - warm issues `WILLNEED` in chunks no larger than the device's readahead
//!   cap from a bounded worker pool ([`outrider_sys::Pool`]) and, by
//!   default ([`WalkOptions::wait`]), then reads each chunk, so that when
//!   warm returns the data is in memory, as after `vmtouch -t`;
//! - evict issues `DONTNEED` (drops only clean, unmapped pages).
//!
//! Under sudo ([`WalkOptions::as_user`]) directories are listed and files
//! opened with the invoking user's file-system ids
//! ([`outrider_sys::access::AsUser`]), so `sudo outrider stat` cannot
//! reveal what lies in a directory the user cannot read; only
//! `cachestat`, `WILLNEED` and `DONTNEED` run with root's rights.
//!
//! Directories are walked recursively, like vmtouch; symbolic links inside
//! a walk are not followed (a link named on the command line is), files
//! with several hard links are counted once, `one_file_system` stays on the
//! roots' file systems, and include/exclude patterns (`fnmatch`, on the
//! name) select files. Every file is opened by
//! [`outrider_sys::open_regular`] (a FIFO or device is refused, never
//! waited on).
//!
//! Directory walks stream: one directory handle is open at a time, files
//! are processed as they are listed, and only the paths of directories still
//! to visit are kept. With the pool's queue bound (lowered to fit the
//! descriptor limit), at most `threads + queue_bound + 2` descriptors are
//! open at once, so 10^6 files need neither 10^6 descriptors nor a list of
//! 10^6 names (measured: `bench/results/live-files.md`, `ulimit -n 64`).

use outrider_sys::access::AsUser;
use outrider_sys::launch::Credentials;
use outrider_sys::{Advice, CacheStat, Fetch, Follow, Pool};
use rustc_hash::FxHashSet;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What to do to each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Count resident pages.
    Stat,
    /// Bring every page in (`WILLNEED`).
    Warm,
    /// Drop every clean, unmapped page (`DONTNEED`).
    Evict,
}

/// One file's residency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReport {
    /// The path.
    pub path: PathBuf,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Pages of the file (size rounded up to 4 KiB).
    pub pages: u64,
    /// Residency (for warm/evict: before the action), or why the kernel
    /// would not tell.
    pub residency: Result<CacheStat, String>,
}

impl FileReport {
    /// Resident pages, when known.
    pub fn resident_pages(&self) -> Option<u64> {
        self.residency.as_ref().ok().map(|c| c.cache)
    }
}

/// Totals over a walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Regular files processed (each inode once).
    pub files: u64,
    /// Directories visited.
    pub dirs: u64,
    /// Further names of an inode already counted (hard links).
    pub links_skipped: u64,
    /// Entries left out by the include/exclude patterns.
    pub excluded: u64,
    /// Directories on another file system, not entered (`one_file_system`).
    pub other_fs: u64,
    /// Bytes of those files.
    pub size_bytes: u64,
    /// Pages of those files.
    pub pages: u64,
    /// Of the files whose residency is known: pages.
    pub known_pages: u64,
    /// Resident pages (for warm/evict: before the action).
    pub resident_pages: u64,
    /// Resident pages that are dirty.
    pub dirty_pages: u64,
    /// Pages under writeback.
    pub writeback_pages: u64,
    /// Pages evicted (the kernel still remembers them).
    pub evicted_pages: u64,
    /// Of those, recently evicted.
    pub recently_evicted_pages: u64,
    /// Files whose residency the kernel would not tell.
    pub unknown_files: u64,
    /// Entries that could not be opened or examined.
    pub errors: u64,
    /// Bytes for which WILLNEED/DONTNEED was issued.
    pub advised_bytes: u64,
}

/// Options of a walk.
#[derive(Clone, Debug)]
pub struct WalkOptions {
    /// Worker threads for warm (default 2).
    pub threads: usize,
    /// Pool queue bound (default 64).
    pub queue_bound: usize,
    /// warm: return only once the data is in memory (default true: each
    /// chunk is read after its `WILLNEED`; `vmtouch -t` users expect the
    /// files to be in memory when the command ends — measured, reading
    /// right after an asynchronous warm was as slow as cold).
    pub wait: bool,
    /// Do not enter directories on another file system than their root's
    /// (`-F`, default false).
    pub one_file_system: bool,
    /// Only files whose name matches one of these `fnmatch` patterns
    /// (default: all).
    pub include: Vec<String>,
    /// Leave out files and directories whose name matches one of these
    /// (default: none).
    pub exclude: Vec<String>,
    /// List directories and open files as this user (default: the sudo
    /// user, [`outrider_sys::launch::program_credentials`]; `None`: as
    /// ourselves).
    pub as_user: Option<Credentials>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            threads: 2,
            queue_bound: 64,
            wait: true,
            one_file_system: false,
            include: Vec::new(),
            exclude: Vec::new(),
            as_user: outrider_sys::launch::program_credentials().ok().flatten(),
        }
    }
}

/// A path given on the command line that cannot be walked.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A path that cannot be examined, or is neither a regular file nor a
    /// directory.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The invoking user's identity could not be taken.
    #[error("cannot act as uid {uid}: {source}")]
    User {
        /// The user.
        uid: u32,
        /// The cause.
        source: io::Error,
    },
}

/// What the walk reports as it goes.
#[derive(Debug)]
pub enum Visit<'a> {
    /// A file was examined (and acted on).
    File(&'a FileReport),
    /// An entry could not be examined.
    Error(&'a Path, &'a io::Error),
}

/// Residency of a whole open file, or why it is unknown.
pub fn residency(file: &File) -> Result<CacheStat, String> {
    match outrider_sys::cachestat(file.as_fd(), 0, 0) {
        Ok(c) => Ok(c),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(
            "unknown: the kernel reports residency (cachestat) only to the file's owner, a \
             writer or root, and mincore would claim every page resident"
                .into(),
        ),
        Err(e) => Err(format!("unknown: cachestat: {e}")),
    }
}

/// Does `name` match one of `patterns` (`fnmatch`)?
fn matches_any(patterns: &[String], name: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(n) = std::ffi::CString::new(name.as_bytes()) else {
        return false;
    };
    patterns.iter().any(|p| {
        std::ffi::CString::new(p.as_bytes())
            // SAFETY: two NUL-terminated strings.
            .is_ok_and(|p| unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), 0) } == 0)
    })
}

/// Where a root is opened: through the link when the user named one.
fn root_target(r: &Path) -> Result<(PathBuf, fs::Metadata), WalkError> {
    let err = |source| WalkError::Io {
        path: r.to_path_buf(),
        source,
    };
    let lmd = fs::symlink_metadata(r).map_err(err)?;
    let target = if lmd.file_type().is_symlink() {
        fs::canonicalize(r).map_err(err)?
    } else {
        r.to_path_buf()
    };
    let md = fs::symlink_metadata(&target).map_err(err)?;
    if !md.is_dir() && !md.is_file() {
        return Err(err(outrider_sys::files::not_regular(md.mode())));
    }
    Ok((target, md))
}

/// Open a directory without following a final link and list it.
fn read_dir_nofollow(dir: &Path) -> io::Result<(File, fs::ReadDir)> {
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir)?;
    use std::os::fd::AsRawFd;
    let rd = fs::read_dir(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    Ok((f, rd))
}

/// State of one walk.
struct Walker<'o, F> {
    action: Action,
    opts: &'o WalkOptions,
    pool: Option<Pool>,
    advised: Arc<AtomicU64>,
    totals: Totals,
    /// (dev, ino) of files with more than one link, counted already.
    linked: FxHashSet<(u64, u64)>,
    /// The identity directories are listed and files opened with.
    user: Option<AsUser>,
    each: F,
}

/// Walk `roots`, apply `action` to every regular file and call `each` as
/// it goes. Errors on entries are reported through `each` and counted,
/// not fatal; a root that does not exist or is neither a file nor a
/// directory is an error before any work.
pub fn walk(
    roots: &[PathBuf],
    action: Action,
    opts: &WalkOptions,
    each: impl FnMut(Visit<'_>),
) -> Result<Totals, WalkError> {
    let user = match &opts.as_user {
        Some(c) => Some(AsUser::new(c).map_err(|source| WalkError::User { uid: c.uid, source })?),
        None => None,
    };
    let targets = roots
        .iter()
        .map(|r| match &user {
            Some(u) => u
                .run(|| Ok(root_target(r)))
                .map_err(|source| WalkError::Io {
                    path: r.clone(),
                    source,
                })?,
            None => root_target(r),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Every queued warm job holds a descriptor: keep the queue within the
    // descriptor limit (minus stdio, the directory handle and slack).
    let queue_bound = opts
        .queue_bound
        .min(outrider_sys::nofile_limit().saturating_sub(16 + opts.threads as u64) as usize)
        .max(1);
    let mut w = Walker {
        action,
        opts,
        pool: (action == Action::Warm).then(|| Pool::new(opts.threads, queue_bound)),
        advised: Arc::new(AtomicU64::new(0)),
        totals: Totals::default(),
        linked: FxHashSet::default(),
        user,
        each,
    };
    for (r, (target, md)) in roots.iter().zip(targets) {
        if md.is_dir() {
            w.tree(r, &target, md.dev());
        } else {
            w.file(r, &target);
        }
    }
    if let Some(p) = &w.pool {
        let _ = p.wait();
    }
    w.totals.advised_bytes = w.advised.load(Ordering::Relaxed);
    Ok(w.totals)
}

impl<F: FnMut(Visit<'_>)> Walker<'_, F> {
    /// `f` with the walk's identity.
    fn as_user<T>(&self, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        match &self.user {
            Some(u) => u.run(f),
            None => f(),
        }
    }

    fn error(&mut self, path: &Path, e: &io::Error) {
        self.totals.errors += 1;
        (self.each)(Visit::Error(path, e));
    }

    /// Walk the tree at `root` (shown as `shown`), depth first, keeping
    /// only the paths of directories still to visit.
    fn tree(&mut self, shown: &Path, root: &Path, root_dev: u64) {
        let mut stack: Vec<(PathBuf, PathBuf)> = vec![(shown.to_path_buf(), root.to_path_buf())];
        while let Some((shown, dir)) = stack.pop() {
            let (handle, rd) = match self.as_user(|| read_dir_nofollow(&dir)) {
                Ok(x) => x,
                Err(e) => {
                    self.error(&shown, &e);
                    continue;
                }
            };
            if self.opts.one_file_system && handle.metadata().is_ok_and(|m| m.dev() != root_dev) {
                self.totals.other_fs += 1;
                continue;
            }
            self.totals.dirs += 1;
            for entry in rd {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        self.error(&shown, &e);
                        continue;
                    }
                };
                let name = entry.file_name();
                let ft = match entry.file_type() {
                    Ok(t) => t,
                    Err(e) => {
                        self.error(&shown.join(&name), &e);
                        continue;
                    }
                };
                if !(ft.is_dir() || ft.is_file()) {
                    continue;
                }
                if matches_any(&self.opts.exclude, &name)
                    || (ft.is_file()
                        && !self.opts.include.is_empty()
                        && !matches_any(&self.opts.include, &name))
                {
                    self.totals.excluded += 1;
                    continue;
                }
                if ft.is_dir() {
                    stack.push((shown.join(&name), dir.join(&name)));
                } else {
                    self.file(&shown.join(&name), &dir.join(&name));
                }
            }
        }
    }

    /// Open a file (retrying once when out of descriptors).
    fn open(&mut self, path: &Path) -> io::Result<File> {
        let open = || outrider_sys::open_regular(path, Follow::Never);
        match self.as_user(open) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                // Out of descriptors: let the queued jobs finish, retry once.
                if let Some(p) = &self.pool {
                    let _ = p.wait();
                }
                self.as_user(open)
            }
            r => r,
        }
    }

    /// Examine and act on one file (`shown` is the name reported).
    fn file(&mut self, shown: &Path, path: &Path) {
        let file = match self.open(path) {
            Ok(f) => f,
            Err(e) => return self.error(shown, &e),
        };
        let md = match file.metadata() {
            Ok(m) => m,
            Err(e) => return self.error(shown, &e),
        };
        if md.nlink() > 1 && !self.linked.insert((md.dev(), md.ino())) {
            self.totals.links_skipped += 1;
            return;
        }
        let size = md.len();
        let report = FileReport {
            path: shown.to_path_buf(),
            size_bytes: size,
            pages: size.div_ceil(outrider_sys::PAGE_SIZE),
            residency: residency(&file),
        };
        self.count(&report);
        self.act(file, &report);
        (self.each)(Visit::File(&report));
    }

    fn count(&mut self, r: &FileReport) {
        let t = &mut self.totals;
        t.files += 1;
        t.size_bytes += r.size_bytes;
        t.pages += r.pages;
        match &r.residency {
            Ok(c) => {
                t.known_pages += r.pages;
                t.resident_pages += c.cache;
                t.dirty_pages += c.dirty;
                t.writeback_pages += c.writeback;
                t.evicted_pages += c.evicted;
                t.recently_evicted_pages += c.recently_evicted;
            }
            Err(_) => t.unknown_files += 1,
        }
    }

    fn act(&mut self, file: File, r: &FileReport) {
        let resident = r.resident_pages();
        match self.action {
            Action::Stat => {}
            Action::Warm if resident.is_none_or(|n| n < r.pages) => {
                let cap = outrider_sys::ra_cap_bytes(file.as_fd());
                let file = Arc::new(file);
                let wait = self.opts.wait;
                for (o, n) in outrider_sys::chunks(0, r.size_bytes, cap) {
                    let file = Arc::clone(&file);
                    let adv = Arc::clone(&self.advised);
                    self.pool
                        .as_ref()
                        .expect("warm has a pool")
                        .submit(move || {
                            adv.fetch_add(n, Ordering::Relaxed);
                            outrider_sys::fetch_chunks(file.as_fd(), o, n, n, Fetch::WillNeed)?;
                            if wait {
                                read_through(&file, o, n)?;
                            }
                            Ok(())
                        });
                }
            }
            Action::Warm => {}
            Action::Evict => {
                if resident != Some(0)
                    && outrider_sys::advise(file.as_fd(), 0, 0, Advice::DontNeed).is_ok()
                {
                    self.advised.fetch_add(r.size_bytes, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Read `[off, off + len)` of `file` and discard it: returns once those
/// pages are in memory (a read waits for the I/O `WILLNEED` started).
fn read_through(file: &File, off: u64, len: u64) -> io::Result<()> {
    let mut buf = vec![0u8; len.min(1 << 20) as usize];
    let end = off + len;
    let mut at = off;
    while at < end {
        let want = ((end - at) as usize).min(buf.len());
        match file.read_at(&mut buf[..want], at) {
            Ok(0) => break, // the file shrank
            Ok(n) => at += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(roots: &[PathBuf], action: Action, opts: &WalkOptions) -> Totals {
        walk(roots, action, opts, |_| {}).unwrap()
    }

    /// A FIFO named on the command line used to hang `stat` in `open`
    /// (waiting for a writer): it is refused at once, naming the path.
    #[test]
    fn a_fifo_or_missing_root_is_a_clear_error_not_a_hang() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p");
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = walk(
            std::slice::from_ref(&p),
            Action::Stat,
            &WalkOptions::default(),
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&p.display().to_string()) && e.contains("FIFO"),
            "{e}"
        );
        let e = walk(
            &[d.path().join("missing")],
            Action::Stat,
            &WalkOptions::default(),
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing") && e.contains("No such file"), "{e}");
        // Inside a walk, the FIFO is not a regular file: skipped, no hang.
        let t = totals(
            &[d.path().to_path_buf()],
            Action::Stat,
            &WalkOptions::default(),
        );
        assert_eq!((t.files, t.dirs, t.errors), (0, 1, 0));
    }

    /// vmtouch counts an inode once however many names it has; so do we
    /// (a tree of hard links used to count 7% more pages than vmtouch).
    #[test]
    fn hard_links_are_counted_once() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        fs::write(d.path().join("a"), vec![1u8; 3 * 4096]).unwrap();
        fs::hard_link(d.path().join("a"), d.path().join("b")).unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        fs::hard_link(d.path().join("a"), d.path().join("sub/c")).unwrap();
        let t = totals(
            &[d.path().to_path_buf()],
            Action::Stat,
            &WalkOptions::default(),
        );
        assert_eq!((t.files, t.pages, t.links_skipped, t.dirs), (1, 3, 2, 2));
    }

    #[test]
    fn include_and_exclude_patterns_select_by_name() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        fs::create_dir(d.path().join("skip")).unwrap();
        for f in ["x.log", "y.dat", "skip/z.log"] {
            fs::write(d.path().join(f), b"1").unwrap();
        }
        let root = [d.path().to_path_buf()];
        let inc = WalkOptions {
            include: vec!["*.log".into()],
            ..WalkOptions::default()
        };
        let mut seen = Vec::new();
        walk(&root, Action::Stat, &inc, |v| {
            if let Visit::File(r) = v {
                seen.push(r.path.strip_prefix(d.path()).unwrap().to_path_buf());
            }
        })
        .unwrap();
        seen.sort();
        assert_eq!(seen, [PathBuf::from("skip/z.log"), PathBuf::from("x.log")]);
        let exc = WalkOptions {
            exclude: vec!["skip".into(), "*.dat".into()],
            ..WalkOptions::default()
        };
        let t = totals(&root, Action::Stat, &exc);
        assert_eq!((t.files, t.dirs, t.excluded), (1, 1, 2));
    }

    /// `-F`: a file system mounted inside the tree is not entered (needs
    /// root to mount a tmpfs; skipped otherwise).
    #[test]
    fn one_file_system_does_not_cross_mounts() {
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a tmpfs needs root");
            return;
        }
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let m = d.path().join("mnt");
        fs::create_dir(&m).unwrap();
        fs::write(d.path().join("f"), b"1").unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "none"])
            .arg(&m)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mount -t tmpfs works as root");
        fs::write(m.join("g"), b"1").unwrap();
        let root = [d.path().to_path_buf()];
        let all = totals(&root, Action::Stat, &WalkOptions::default());
        let one = WalkOptions {
            one_file_system: true,
            ..WalkOptions::default()
        };
        let one = totals(&root, Action::Stat, &one);
        let _ = std::process::Command::new("umount").arg(&m).status();
        assert_eq!((all.files, all.dirs), (2, 2));
        assert_eq!((one.files, one.dirs, one.other_fs), (1, 1, 1));
    }

    /// `warm` used to return while its reads were still in flight
    /// (reading right after was as slow as cold): by default it returns
    /// once every page can be read without I/O (a `RWF_NOWAIT` read of a
    /// page still being read in fails with `EAGAIN`).
    #[test]
    fn warm_returns_once_the_data_is_in_memory() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = d.path().join("f");
        fs::write(&p, vec![3u8; 256 * 4096]).unwrap();
        fs::File::open(&p).unwrap().sync_all().unwrap();
        let roots = [p.clone()];
        totals(&roots, Action::Evict, &WalkOptions::default());
        totals(&roots, Action::Warm, &WalkOptions::default());
        let f = fs::File::open(&p).unwrap();
        let missing: Vec<u64> = (0..256)
            .filter(|i| !outrider_sys::page_cached_nowait(f.as_fd(), i * 4096).unwrap())
            .collect();
        assert!(missing.is_empty(), "pages not yet in memory: {missing:?}");
    }

    /// stat → evict → stat → warm → stat on a real file on disk: the counts
    /// follow the actions (exact: 16 pages, all resident after writing,
    /// none after DONTNEED of clean pages, all after warm waited).
    #[test]
    fn evict_then_warm_changes_residency() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let sub = d.path().join("a/b");
        fs::create_dir_all(&sub).unwrap();
        let p = sub.join("f");
        fs::write(&p, vec![1u8; 16 * 4096]).unwrap();
        fs::File::open(&p).unwrap().sync_all().unwrap();
        fs::write(d.path().join("g"), b"").unwrap();
        let roots = [d.path().to_path_buf()];
        let opts = WalkOptions::default();
        let t = totals(&roots, Action::Evict, &opts);
        assert_eq!((t.files, t.dirs, t.pages), (2, 3, 16));
        let t = totals(&roots, Action::Stat, &opts);
        assert_eq!((t.resident_pages, t.dirty_pages, t.known_pages), (0, 0, 16));
        let t = totals(&roots, Action::Warm, &opts);
        assert_eq!(t.advised_bytes, 16 * 4096);
        let mut seen = Vec::new();
        let t = walk(&roots, Action::Stat, &opts, |v| {
            if let Visit::File(r) = v {
                seen.push(r.clone());
            }
        })
        .unwrap();
        assert_eq!(t.resident_pages, 16);
        assert!(seen
            .iter()
            .any(|r| r.path == p && r.resident_pages() == Some(16)));
    }
}
