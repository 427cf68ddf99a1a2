//! Saving a run's history: in one transaction, from a background child
//! that outlives the run, serialised with the next load by a lock.

use super::STORE_WARM_BYTES;
use crate::controller::Controller;
use crate::history;
use crate::metawalk;
use outrider_store::Store;
use outrider_sys::dirwatch::{DirOpen, DirWatch};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::Path;

/// One run's history, to save at its end.
pub(super) struct SaveJob<'a> {
    pub(super) key: &'a str,
    pub(super) policy: &'a str,
    pub(super) cmd: &'a [OsString],
    pub(super) cwd: &'a Path,
    /// The files of the history loaded (sorted by id) and its run count:
    /// when this run's files are the same, their rows are left alone.
    /// The application's benefit gate after this run.
    pub(super) gate: outrider_driver::benefit::Gate,
    pub(super) loaded_files: Option<(Vec<outrider_store::FileRecord>, u64)>,
    /// The directories the program opened, and the watch that saw them
    /// (which turns their handles into paths).
    pub(super) dirs: Option<(&'a DirWatch, &'a [DirOpen])>,
}

impl SaveJob<'_> {
    /// Write the history in one transaction, then merge the store's shared
    /// history in another; a failure is a warning.
    pub(super) fn save(&self, mut st: Store, ctl: &mut Controller) {
        let h = history::collect(ctl.files_mut(), self.cmd, self.cwd);
        let gate_name = super::gate_name(self.policy);
        let mut blobs: Vec<(&str, Vec<u8>)> = (ctl.policy().save_history())
            .map(|b| (self.policy, b))
            .into_iter()
            .collect();
        blobs.push((&gate_name, self.gate.encode()));
        if let Some((watch, opened)) = self.dirs {
            blobs.push((
                super::DIRS_BLOB,
                metawalk::encode_dirs(&watch.paths_of(opened)),
            ));
        }
        let same_files = self.loaded_files.as_ref().and_then(|(old, runs)| {
            let mut new: Vec<&outrider_store::FileRecord> = h.files.iter().collect();
            new.sort_unstable_by_key(|f| f.id);
            (new.len() == old.len() && new.iter().zip(old).all(|(a, b)| *a == b)).then_some(*runs)
        });
        let saved = match same_files {
            Some(runs) => st.save_run_same_files(self.key, &h, &blobs, runs),
            None => st.save_run(self.key, &h, &blobs),
        };
        if let Err(e) = saved {
            outrider_sys::warnln!("outrider: warning: {e}; history not saved");
        }
        // The store's shared history, merged into what other runs saved
        // since this one loaded (one transaction of its own).
        if let Err(e) = st.merge_shared_from(ctl.policy()) {
            outrider_sys::warnln!("outrider: warning: {e}; shared history not saved");
        }
    }
}

/// Save the history from a child process that outlives us, so the
/// program's caller does not wait for it (the save of a run over 78 000
/// files took 0.15-0.4 s). Returns false when no child could be started.
///
/// The caller holds the store's exclusive [`HistoryLock`]; the child
/// inherits it and releases it when it exits, so the next run's load
/// waits for the save. The caller is single-threaded here (workers
/// stopped, tracing thread joined), so the child may run ordinary code.
/// The child leaves our session (Ctrl-C for the next foreground job does
/// not reach it), lets go of our stdin and stdout (and of stderr unless it
/// is a terminal, so a caller reading our output to its end is not kept
/// waiting; a save warning then goes nowhere), returns to outrider's own
/// memory cgroup (the program's may be removed once it is done), runs at
/// a lower CPU priority, and opens its own connection to the store.
pub(super) fn save_in_background(
    db: &Path,
    job: &SaveJob<'_>,
    ctl: &mut Controller,
    orig_cgroup: Option<&Path>,
) -> bool {
    // SAFETY: fork in a process that is single-threaded at this point;
    // the child runs ordinary Rust code and ends with _exit, never
    // returning into the caller's stack.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return false;
    }
    if pid > 0 {
        return true;
    }
    // The child.
    // SAFETY: setsid, open, dup2, close, isatty, setpriority and _exit
    // have no memory-safety preconditions beyond valid pointers.
    unsafe {
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            if libc::isatty(2) == 0 {
                libc::dup2(null, 2);
            }
            if null > 2 {
                libc::close(null);
            }
        }
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
    if let Some(dir) = orig_cgroup {
        let now = outrider_sys::memory::cgroup_memory_dir(None).ok().flatten();
        if now.is_some_and(|d| d != dir) {
            let _ = std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string());
        }
    }
    if let Ok(st) = Store::open(db) {
        job.save(st, ctl);
    } else {
        outrider_sys::warnln!(
            "outrider: warning: {}: cannot open the history store; history not saved",
            db.display()
        );
    }
    // SAFETY: ends the child without running the parent's destructors
    // twice.
    unsafe { libc::_exit(0) }
}

/// An advisory lock (flock) on `<store>.lock`, serialising a run's save
/// with the next run's load.
pub(super) struct HistoryLock {
    _file: std::fs::File,
}

impl HistoryLock {
    /// Block until the lock is held (`LOCK_SH` to load, `LOCK_EX` to
    /// save); `None` when the lock file cannot be opened (a read-only
    /// directory): then nothing waits.
    pub(super) fn take(db: &Path, how: libc::c_int) -> Option<HistoryLock> {
        // Private, never through a symbolic link (outrider_store::private).
        let f = outrider_store::open_lock(db).ok()?;
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), how) } == 0 {
                return Some(HistoryLock { _file: f });
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
    }
}

/// Open the store at `path`; when `warm` says so of the open store, read
/// it through first.
pub(super) fn open_store(path: &Path, warm: impl FnOnce(&Store) -> bool) -> Option<Store> {
    match Store::open(path) {
        Ok(s) => {
            if warm(&s) {
                warm_store(path);
            }
            Some(s)
        }
        Err(e) => {
            outrider_sys::warnln!("outrider: warning: {e}; running without history");
            None
        }
    }
}

/// Our own database is read at random by SQLite; on a cold cache that was
/// most of a large history's load time. Read it (and its WAL) through
/// once, sequentially — up to STORE_WARM_BYTES each.
fn warm_store(path: &Path) {
    for p in [path.to_path_buf(), path.with_extension("db-wal")] {
        if let Ok(mut f) = outrider_sys::open_regular(&p, outrider_sys::Follow::Never) {
            if f.metadata().is_ok_and(|m| m.len() <= STORE_WARM_BYTES) {
                let _ = outrider_sys::advise(f.as_fd(), 0, 0, outrider_sys::Advice::Sequential);
                let mut buf = vec![0u8; 1 << 20];
                while matches!(std::io::Read::read(&mut f, &mut buf), Ok(n) if n > 0) {}
            }
        }
    }
}

/// CPU seconds (user + system) outrider itself used so far, all its
/// threads, not the program's.
pub fn own_cpu_s() -> f64 {
    // SAFETY: getrusage writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
