//! `outrider stat|warm|evict` (issue 7 "Commands"): vmtouch-like page-cache
//! inspection and control.
//!
//! - residency comes from `cachestat(2)` (the truth even for files the
//!   caller does not own, unlike `mincore`, which since Linux 5.0 reports
//!   such files fully resident);
//! - warm issues `WILLNEED` in chunks no larger than the device's readahead
//!   cap from a bounded worker pool ([`outrider_sys::Pool`]);
//! - evict issues `DONTNEED` (drops only clean, unmapped pages).
//!
//! Directory walks stream: one directory handle is open at a time, files
//! are processed as they are listed, and only the paths of directories still
//! to visit are kept. With the pool's queue bound (lowered to fit the
//! descriptor limit), at most `threads + queue_bound + 2` descriptors are
//! open at once, so 10^6 files need neither 10^6 descriptors nor a list of
//! 10^6 names (measured: `bench/results/live-files.md`, `ulimit -n 64`). Symbolic links
//! are not followed inside a walk.

use crate::files::open_readonly;
use outrider_sys::{Advice, Fetch, Pool};
use std::fs;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
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
    /// Resident pages (for warm/evict: before the action).
    pub resident_pages: u64,
}

/// Totals over a walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Regular files processed.
    pub files: u64,
    /// Directories visited.
    pub dirs: u64,
    /// Bytes of those files.
    pub size_bytes: u64,
    /// Pages of those files.
    pub pages: u64,
    /// Resident pages (for warm/evict: before the action).
    pub resident_pages: u64,
    /// Entries that could not be opened or examined.
    pub errors: u64,
    /// Bytes for which WILLNEED/DONTNEED was issued.
    pub advised_bytes: u64,
}

/// Options of a walk.
#[derive(Clone, Debug)]
pub struct WalkOptions {
    /// Descend into directories.
    pub recursive: bool,
    /// Worker threads for warm (default 2).
    pub threads: usize,
    /// Pool queue bound (default 64).
    pub queue_bound: usize,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            recursive: false,
            threads: 2,
            queue_bound: 64,
        }
    }
}

/// A path given on the command line is a directory but `recursive` is off,
/// or does not exist.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A directory without `-r`.
    #[error("{0}: is a directory (use -r to walk it)")]
    IsDirectory(PathBuf),
    /// A path that cannot be examined.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The soft `RLIMIT_NOFILE` (1024 when it cannot be read).
pub(crate) fn nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        r.rlim_cur
    } else {
        1024
    }
}

/// Resident pages of a whole open file.
pub fn resident_pages(fd: &OwnedFd) -> io::Result<u64> {
    Ok(outrider_sys::cachestat(fd.as_fd(), 0, 0)?.cache)
}

/// Walk `roots`, apply `action` to every regular file and call `each` with
/// its report as it goes. Errors on entries inside a walk are counted, not
/// fatal; a missing root or a directory root without `recursive` is an
/// error.
pub fn walk(
    roots: &[PathBuf],
    action: Action,
    opts: &WalkOptions,
    mut each: impl FnMut(&FileReport),
) -> Result<Totals, WalkError> {
    // Check every root first so bad input fails before any work.
    for r in roots {
        let md = fs::metadata(r).map_err(|source| WalkError::Io {
            path: r.clone(),
            source,
        })?;
        if md.is_dir() && !opts.recursive {
            return Err(WalkError::IsDirectory(r.clone()));
        }
    }
    // Every queued warm job holds a descriptor: keep the queue within the
    // descriptor limit (minus stdio, the directory handle and slack).
    let queue_bound = opts
        .queue_bound
        .min(nofile_limit().saturating_sub(16 + opts.threads as u64) as usize)
        .max(1);
    let pool = (action == Action::Warm).then(|| Pool::new(opts.threads, queue_bound));
    let advised = Arc::new(AtomicU64::new(0));
    let mut totals = Totals::default();
    let mut stack: Vec<PathBuf> = Vec::new();
    for r in roots {
        if fs::metadata(r).is_ok_and(|m| m.is_dir()) {
            stack.push(r.clone());
        } else {
            do_file(r, action, pool.as_ref(), &advised, &mut totals, &mut each);
        }
        while let Some(dir) = stack.pop() {
            totals.dirs += 1;
            let Ok(rd) = fs::read_dir(&dir) else {
                totals.errors += 1;
                continue;
            };
            for entry in rd {
                let Ok(entry) = entry else {
                    totals.errors += 1;
                    continue;
                };
                let Ok(ft) = entry.file_type() else {
                    totals.errors += 1;
                    continue;
                };
                if ft.is_dir() {
                    stack.push(entry.path());
                } else if ft.is_file() {
                    do_file(
                        &entry.path(),
                        action,
                        pool.as_ref(),
                        &advised,
                        &mut totals,
                        &mut each,
                    );
                }
            }
        }
    }
    if let Some(p) = &pool {
        let _ = p.wait();
    }
    totals.advised_bytes = advised.load(Ordering::Relaxed);
    Ok(totals)
}

fn do_file(
    path: &Path,
    action: Action,
    pool: Option<&Pool>,
    advised: &Arc<AtomicU64>,
    totals: &mut Totals,
    each: &mut impl FnMut(&FileReport),
) {
    let file = match open_readonly(path) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
            // Out of descriptors: let the queued jobs finish, retry once.
            if let Some(p) = pool {
                let _ = p.wait();
            }
            match open_readonly(path) {
                Ok(f) => f,
                Err(_) => {
                    totals.errors += 1;
                    return;
                }
            }
        }
        Err(_) => {
            totals.errors += 1;
            return;
        }
    };
    let Ok(md) = file.metadata() else {
        totals.errors += 1;
        return;
    };
    let fd = OwnedFd::from(file);
    let size = md.len();
    let pages = size.div_ceil(outrider_sys::PAGE_SIZE);
    let resident = match resident_pages(&fd) {
        Ok(n) => n,
        Err(_) => {
            totals.errors += 1;
            0
        }
    };
    let report = FileReport {
        path: path.to_path_buf(),
        size_bytes: size,
        pages,
        resident_pages: resident,
    };
    totals.files += 1;
    totals.size_bytes += size;
    totals.pages += pages;
    totals.resident_pages += resident;
    match action {
        Action::Stat => {}
        Action::Warm => {
            if resident < pages {
                let cap = outrider_sys::ra_cap_bytes(fd.as_fd());
                let fd = Arc::new(fd);
                let adv = Arc::clone(advised);
                for (o, n) in outrider_sys::chunks(0, size, cap) {
                    let fd = Arc::clone(&fd);
                    let adv = Arc::clone(&adv);
                    pool.expect("warm has a pool").submit(move || {
                        adv.fetch_add(n, Ordering::Relaxed);
                        outrider_sys::fetch_chunks(fd.as_fd(), o, n, n, Fetch::WillNeed)
                    });
                }
            }
        }
        Action::Evict => {
            if resident > 0 && outrider_sys::advise(fd.as_fd(), 0, 0, Advice::DontNeed).is_ok() {
                advised.fetch_add(size, Ordering::Relaxed);
            }
        }
    }
    each(&report);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_without_recursive_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let e = walk(
            &[d.path().to_path_buf()],
            Action::Stat,
            &WalkOptions::default(),
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("is a directory (use -r to walk it)"), "{e}");
        let e = walk(
            &[d.path().join("missing")],
            Action::Stat,
            &WalkOptions::default(),
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing") && e.contains("No such file"), "{e}");
    }

    /// stat → evict → stat → warm → stat on a real file on disk: the counts
    /// follow the actions (exact: 16 pages, all resident after writing,
    /// none after DONTNEED of clean pages, all after WILLNEED completes).
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
        let opts = WalkOptions {
            recursive: true,
            ..WalkOptions::default()
        };
        let t = walk(&roots, Action::Evict, &opts, |_| {}).unwrap();
        assert_eq!((t.files, t.dirs, t.pages), (2, 3, 16));
        let t = walk(&roots, Action::Stat, &opts, |_| {}).unwrap();
        assert_eq!(t.resident_pages, 0);
        walk(&roots, Action::Warm, &opts, |_| {}).unwrap();
        // WILLNEED inserts the pages before their read completes, so
        // cachestat counts them at once.
        let mut seen = Vec::new();
        let t = walk(&roots, Action::Stat, &opts, |r| seen.push(r.clone())).unwrap();
        assert_eq!(t.resident_pages, 16);
        assert!(seen.iter().any(|r| r.path == p && r.pages == 16));
    }
}
