//! `outrider run [--policy P] [--budget B] [--history DB | --no-history]
//! [--app-key NAME] [--json-file FILE] -- CMD [ARGS...]`: run an unmodified
//! program, prefetching for its process tree with a core policy
//! (outrider-live's controller), and print a summary on stderr. The
//! program's exit code is passed through unchanged.
//!
//! History: unless `--no-history`, the store at `--history
//! DB` (default `/var/lib/outrider/history.db` for root,
//! `$XDG_STATE_HOME/outrider/history.db` — `~/.local/state/...` — for
//! others) is read before the run: the files the application's last run
//! touched (those changed or deleted since are dropped) are registered
//! under their saved ids, and the policy loads its own saved blob
//! ([`outrider_core::Policy::load_history`]). After the run, the files and
//! the policy's blob are written in one transaction. The application
//! is the executable, arguments and working directory; `--app-key NAME`
//! groups runs under one name instead. A store that cannot be used is a
//! warning, never a failure; a run whose tracing failed saves nothing.

use crate::usage;
use outrider_core::{build_policy, PolicyError, BLOCK_SIZE};
use outrider_live::controller::{default_budget_bytes, Controller, ControllerOptions};
use outrider_live::history;
use outrider_live::metawalk::{self, MetaWalk};
use outrider_live::session::{exit_code, install_signal_handlers, run_traced_on, signalled};
use outrider_live::tracefs::{Instance, InstanceOptions};
use outrider_store::Store;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::Path;
use std::path::PathBuf;

/// Default policy of `run`: `auto` — history replay when the store has
/// this application's history, forward, reverse and strided streams
/// otherwise (`outrider policies` describes it).
pub const DEFAULT_POLICY: &str = "auto";

/// `outrider run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Policy NAME[:k=v,...] run on the live stream.
    #[arg(long, default_value = DEFAULT_POLICY)]
    pub policy: String,
    /// Memory budget for prefetched-but-unused data: a size (512MiB) or a
    /// fraction of MemAvailable and of the program's cgroup room (0.25).
    #[arg(long, default_value = "0.25")]
    pub budget: String,
    /// I/O worker threads (1 to 256).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_WORKERS))]
    pub workers: usize,
    /// History store (SQLite). Default: /var/lib/outrider/history.db for
    /// root, $XDG_STATE_HOME/outrider/history.db otherwise.
    #[arg(long, conflicts_with = "no_history")]
    pub history: Option<PathBuf>,
    /// Neither read nor write history.
    #[arg(long)]
    pub no_history: bool,
    /// Keep this run's history under NAME instead of the executable,
    /// arguments and working directory (groups similar runs).
    #[arg(long, value_name = "NAME")]
    pub app_key: Option<String>,
    /// Write the summary as a JSON object to FILE (`--json` elsewhere
    /// prints JSON on stdout; here stdout is the program's).
    #[arg(long = "json-file", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Do not walk the history's directories and files ahead of the
    /// program (metadata prefetch through the file system; on by default
    /// when a policy history was loaded).
    #[arg(long)]
    pub no_metadata_walk: bool,
    /// Save the history before exiting. By default a background process
    /// saves it after outrider has exited with the program's code (the
    /// next run that reads the store waits for it).
    #[arg(long)]
    pub wait_for_save: bool,
    /// Under sudo, run the program as root instead of as the invoking
    /// user (SUDO_UID/SUDO_GID).
    #[arg(long)]
    pub as_root: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub cmd: Vec<OsString>,
}

/// Most I/O worker threads: beyond a device's queue depth more only cost
/// memory, and thousands of threads abort on some systems.
pub const MAX_WORKERS: u64 = 256;

fn budget_bytes(text: &str) -> anyhow::Result<u64> {
    if let Ok(f) = text.parse::<f64>() {
        if text.contains('.') {
            if !(f > 0.0 && f <= 1.0) {
                return Err(usage(format!(
                    "--budget {text}: a fraction must be in (0, 1]"
                )));
            }
            return Ok(default_budget_bytes(None, f));
        }
    }
    outrider_core::size::parse_size(text).map_err(|e| usage(format!("--budget: {e}")))
}

fn mib(pages: u64) -> f64 {
    (pages * BLOCK_SIZE) as f64 / (1u64 << 20) as f64
}

/// The default store: `/var/lib/outrider/history.db` for root, else
/// `$XDG_STATE_HOME/outrider/history.db` (`$HOME/.local/state/...`).
pub fn default_history_path() -> PathBuf {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/outrider/history.db");
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("outrider/history.db")
}

/// One run's history, to save at its end.
struct SaveJob<'a> {
    key: &'a str,
    policy: &'a str,
    cmd: &'a [OsString],
    cwd: &'a Path,
    /// The files of the history loaded (sorted by id) and its run count:
    /// when this run's files are the same, their rows are left alone.
    loaded_files: Option<(Vec<outrider_store::FileRecord>, u64)>,
}

impl SaveJob<'_> {
    /// Write the history in one transaction; a failure is a warning.
    fn save(&self, mut st: Store, ctl: &Controller) {
        let h = history::collect(ctl.files(), self.cmd, self.cwd);
        let blobs: Vec<_> = (ctl.policy().save_history())
            .map(|b| (self.policy, b))
            .into_iter()
            .collect();
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
            eprintln!("outrider: warning: {e}; history not saved");
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
fn save_in_background(
    db: &Path,
    job: &SaveJob<'_>,
    ctl: &Controller,
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
        let now = outrider_sys::cgroup_memory(None).ok().flatten();
        if now.is_some_and(|c| c.dir != dir) {
            let _ = std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string());
        }
    }
    if let Ok(st) = Store::open(db) {
        job.save(st, ctl);
    } else {
        eprintln!(
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
struct HistoryLock {
    _file: std::fs::File,
}

impl HistoryLock {
    /// Block until the lock is held (`LOCK_SH` to load, `LOCK_EX` to
    /// save); `None` when the lock file cannot be opened (a read-only
    /// directory): then nothing waits.
    fn take(db: &Path, how: libc::c_int) -> Option<HistoryLock> {
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

fn open_store(path: &Path) -> Option<Store> {
    // Our own database is read at random by SQLite; on a cold cache that
    // was most of a large history's load time. Read it (and its WAL)
    // through once, sequentially, first — up to STORE_WARM_BYTES each.
    for p in [path.to_path_buf(), path.with_extension("db-wal")] {
        if let Ok(mut f) = outrider_sys::open_regular(&p, outrider_sys::Follow::Never) {
            if f.metadata().is_ok_and(|m| m.len() <= STORE_WARM_BYTES) {
                let _ = outrider_sys::advise(f.as_fd(), 0, 0, outrider_sys::Advice::Sequential);
                let mut buf = vec![0u8; 1 << 20];
                while matches!(std::io::Read::read(&mut f, &mut buf), Ok(n) if n > 0) {}
            }
        }
    }
    match Store::open(path) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("outrider: warning: {e}; running without history");
            None
        }
    }
}

/// Load the policy's saved blob of `key` (saved under the policy spec as
/// given); a blob that does not fit is a warning and a fresh policy.
fn load_policy_history(st: &Store, key: &str, spec: &str, ctl: &mut Controller) -> bool {
    match st.load_into(key, spec, ctl.policy_mut().as_mut()) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("outrider: warning: {e}; starting fresh");
            false
        }
    }
}

/// CPU seconds (user + system) outrider itself used so far, all its
/// threads, not the program's.
fn own_cpu_s() -> f64 {
    // SAFETY: getrusage writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The largest history database (and WAL) fetched whole before it is
/// read: 256 MiB.
const STORE_WARM_BYTES: u64 = 256 << 20;

/// Run it; returns the child's exit code. Our own errors are returned
/// (the caller prints them and exits 2 for bad input, 1 otherwise).
pub fn run(a: RunArgs) -> anyhow::Result<u8> {
    // Before the tracing instance exists, so Ctrl-C or SIGTERM during the
    // set-up still ends with the instance removed.
    install_signal_handlers();
    // Security and outputs, before anything runs: who the program runs
    // as (outrider_sys::launch), and an unwritable --json is an error now
    // rather than a lost summary after the program ran.
    outrider_sys::launch::keep_root(a.as_root);
    if let Some(p) = &a.json {
        crate::outfile::check_writable(p)?;
    }
    // Ours, before following the program into its cgroup: the history
    // saver goes back to it.
    let orig_cgroup = outrider_sys::cgroup_memory(None)
        .ok()
        .flatten()
        .map(|c| c.dir);
    let budget = budget_bytes(&a.budget)?;
    let policy = build_policy(&a.policy).map_err(|e| match e {
        PolicyError::Help(t) => usage(t),
        e => usage(format!("--policy: {e}")),
    })?;
    outrider_live::controller::check_live(policy.as_ref())
        .map_err(|e| usage(format!("--policy: {e}")))?;
    // flashy §IV-C: the maximum device throughput, measured once
    // (`outrider calibrate`'s store), for policies reading the device stream.
    let wants_dev = policy.interests().device_requests;
    let device_max_read = if wants_dev {
        crate::calibrate::for_run(&a.cmd, a.quiet)
    } else {
        Vec::new()
    };
    let opts = ControllerOptions {
        budget_bytes: budget,
        workers: a.workers.max(1),
        device_max_read,
        ..ControllerOptions::default()
    };
    let mut ctl = Controller::new(policy, opts);
    // The tracing instance is set up on another thread while the history
    // loads (both before the program starts).
    let instance_opts = InstanceOptions {
        follow_pid: Some(std::process::id()),
        detach_removal: true,
        // The block layer's events only for a policy that reads the
        // device stream: for the others they were a third of the
        // events of a random-read program, all for nothing.
        events: outrider_live::tracefs::EVENTS
            .iter()
            .filter(|(sys, _)| wants_dev || *sys != "block")
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect(),
        ..InstanceOptions::default()
    };
    let opening = std::thread::Builder::new()
        .name("outrider-tracefs".into())
        .spawn(move || Instance::open(&instance_opts))?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let key = history::app_key(&a.cmd, &cwd, a.app_key.as_deref());
    let db = (!a.no_history).then(|| a.history.clone().unwrap_or_else(default_history_path));
    let mut load_s = 0.0;
    // The files of the history loaded, by id: when this run's are the same,
    // the save leaves their rows alone.
    let mut loaded_files: Option<(Vec<outrider_store::FileRecord>, u64)> = None;
    let t_load = std::time::Instant::now();
    // Wait for a previous run's background save of this store to finish.
    let load_lock = db
        .as_deref()
        .and_then(|d| HistoryLock::take(d, libc::LOCK_SH));
    let mut store = db.as_deref().and_then(open_store);
    let mut restored = history::Restored::default();
    let mut restore_s = 0.0;
    let mut policy_loaded = false;
    // Metadata prefetch ahead of the program (see `outrider_live::metawalk`).
    let mut walk: Option<MetaWalk> = None;
    if let Some(st) = &store {
        let loaded = st.load_run(&key);
        load_s = t_load.elapsed().as_secs_f64();
        match loaded {
            Ok(Some(h)) => {
                let t = std::time::Instant::now();
                restored = history::restore(&h, ctl.files_mut());
                restore_s = t.elapsed().as_secs_f64();
                policy_loaded = load_policy_history(st, &key, &a.policy, &mut ctl);
                // The files in the previous run's first-touch (id) order.
                if policy_loaded && !a.no_metadata_walk && !h.files.is_empty() {
                    walk = MetaWalk::start(metawalk::walk_order(
                        h.files.iter().map(|f| Path::new(&f.path)),
                    ));
                }
                let runs = h.runs;
                let mut files = h.files;
                files.sort_unstable_by_key(|f| f.id);
                loaded_files = Some((files, runs));
            }
            Ok(None) => {}
            Err(e) => eprintln!("outrider: warning: {e}; starting without history"),
        }
    }
    let opened = opening
        .join()
        .map_err(|_| anyhow::anyhow!("setting up tracing panicked"))?;
    if let Some(sig) = signalled() {
        // Interrupted before the program started: remove the instance
        // and end as the program would have.
        drop(opened);
        return Ok((128 + sig) as u8);
    }
    drop(load_lock);
    let out = match run_traced_on(&a.cmd, opened, &mut ctl) {
        Ok(out) => out,
        Err(e) => return Ok(crate::recordcmd::cannot_run(&a.cmd, &e)),
    };
    let code = exit_code(&out.status);
    let walked = walk.map(MetaWalk::finish);
    // Save: one transaction, only when tracing worked (a partial list would
    // replace a good one).
    let mut saved_files = 0usize;
    let mut save_mode = "none";
    let t_save = std::time::Instant::now();
    if let (Some(st), Some(dbp)) = (store.take(), db.as_deref()) {
        if ctl.disabled().is_none() && ctl.stats.accesses > 0 {
            saved_files = ctl.files().len();
            let job = SaveJob {
                key: &key,
                policy: &a.policy,
                cmd: &a.cmd,
                cwd: &cwd,
                loaded_files,
            };
            let lock = HistoryLock::take(dbp, libc::LOCK_EX);
            if a.wait_for_save {
                save_mode = "foreground";
                job.save(st, &ctl);
            } else {
                // The saver must not inherit other threads' locks, nor
                // our connection (SQLite's locks are not inherited).
                // Closing the last connection would checkpoint the WAL
                // here (a run-1 save of 78k files writes ~23 MB to it):
                // left to the saver's connection.
                ctl.stop_workers();
                let _ = st.skip_checkpoint_on_close();
                drop(st);
                save_mode = if save_in_background(dbp, &job, &ctl, orig_cgroup.as_deref()) {
                    "background"
                } else {
                    if let Some(st) = open_store(dbp) {
                        job.save(st, &ctl);
                    }
                    "foreground"
                };
            }
            // The background saver holds the same lock until it is done.
            drop(lock);
        }
    }
    let save_s = t_save.elapsed().as_secs_f64();
    let s = &ctl.stats;
    let report = s.report(ctl.policy_name(), out.elapsed_s);
    if !a.quiet {
        eprintln!(
            "outrider: {} ran {:.3} s (exit {code}), policy {}{}",
            a.cmd[0].to_string_lossy(),
            out.elapsed_s,
            ctl.policy_name(),
            ctl.disabled()
                .map(|w| format!(" — prefetching disabled: {w}"))
                .unwrap_or_default()
        );
        eprintln!(
            "outrider: demand {:.1} MiB ({} accesses, {:.1} MiB missed), prefetched {:.1} MiB, used {:.1} MiB, wasted {:.1} MiB",
            mib(s.demand_pages),
            s.accesses,
            mib(s.miss_pages),
            mib(s.prefetched_pages),
            mib(s.used_pages),
            mib(s.wasted_pages)
        );
        eprintln!(
            "outrider: coverage {:.3}, cost {:.3}, accuracy {:.3}, hit ratio {:.3}, lead time {:.3} s; skipped (cached) {:.1} MiB, dropped {:.1} MiB (budget {:.0} MiB), throttled {} requests; events {}, lost events {}",
            report.coverage,
            report.cost,
            report.prefetch_accuracy,
            report.hit_ratio,
            report.lead_time,
            mib(s.skipped_cached_pages),
            mib(s.dropped_budget_pages + s.dropped_queue_pages),
            ctl.budget_bytes() as f64 / (1u64 << 20) as f64,
            s.throttled_requests,
            out.source.events,
            out.source.lost_events
        );
        if let Some(db) = &db {
            eprintln!(
                "outrider: history {}: {} ({} runs before; files kept {}, dropped {}), {} files saved{}",
                db.display(),
                if policy_loaded { "policy history loaded" } else { "no policy history" },
                restored.runs_before,
                restored.files_kept,
                restored.files_dropped,
                saved_files,
                if save_mode == "background" { " (in the background)" } else { "" }
            );
        }
    }
    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "command": a.cmd.iter().map(|c| c.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "policy": ctl.policy_name(),
            "exit_code": code,
            "elapsed_s": out.elapsed_s,
            "budget_bytes": ctl.budget_bytes(),
            "stats": s,
            // DESIGN.md's metrics, named as `sim --json` names them.
            "requests": report.requests,
            "demand_blocks": report.demand_blocks,
            "prefetched_blocks": report.prefetched_blocks,
            "hit_ratio": report.hit_ratio,
            "coverage": report.coverage,
            "cost": report.cost,
            "prefetch_accuracy": report.prefetch_accuracy,
            "lead_time": report.lead_time,
            "prefetched_unused_blocks": report.prefetched_unused_blocks,
            "events": out.source.events,
            "lost_events": out.source.lost_events,
            "tasks": out.tasks,
            "cgroup_joins": ctl.cgroup_joins(),
            "disabled": ctl.disabled(),
            "warnings": out.warnings,
            "history_db": db,
            "app_key": key,
            "history": restored,
            "history_policy_loaded": policy_loaded,
            "history_saved_files": saved_files,
            "history_save": save_mode,
            "metadata_walk": walked,
            "history_load_s": load_s,
            "history_restore_s": restore_s,
            "history_save_s": save_s,
            "outrider_cpu_s": own_cpu_s(),
            "reopened_by_handle": ctl.files().reopened_by_handle,
            "reopened_by_path": ctl.files().reopened_by_path,
        });
        crate::outfile::write(path, &format!("{v}\n"))?;
    }
    if save_mode == "background" {
        // Exit without freeing the controller's tables: every page our
        // frees would touch is shared with the saver since the fork and
        // would be copied first.
        std::process::exit(i32::from(code));
    }
    Ok(code)
}
