//! The lifecycle of one live run (`outrider run`): tracing set up, the
//! program started and the application's history loaded as it starts
//! ([`starting`]), the program run under a [`Controller`], the history
//! saved after it (in a background child, so the program's caller does
//! not wait), and the summary.
//!
//! History: the store at [`RunOptions::history`] is read as the run starts:
//! the files the application's last run touched (those changed or deleted
//! since are dropped) are registered under their saved ids, and the policy
//! loads its own saved blob ([`outrider_core::Policy::load_history`]).
//! After the run, the files and the policy's blob are written in one
//! transaction. The application is the executable, arguments and working
//! directory; [`RunOptions::app_key`] groups runs under one name instead.
//! A store that cannot be used is a warning, never a failure; a run whose
//! tracing failed saves nothing. A save and the next load are serialised
//! by an advisory lock beside the store.

use crate::controller::{Controller, ControllerOptions, LiveStats};
use crate::history;
use crate::metawalk::{MetaWalk, WalkStats};
use crate::session::{
    exit_code, install_signal_handlers, run_program as run_program_traced, signalled, Program,
};
use crate::source::{EventSource, Opened, SourceChoice, SourceError};
use crate::tracefs::{AtEnd, InstanceOptions};
use outrider_core::metrics::Report;
use outrider_core::{BoxedPolicy, Interests, BLOCK_SIZE};
use outrider_driver::benefit::{Evidence, Gate, Level};
use outrider_store::{FileRecord, Store};
use outrider_sys::dirwatch::DirWatch;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to run and how.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The program and its arguments.
    pub cmd: Vec<OsString>,
    /// The policy specification as given (the key of its saved blob).
    pub policy_spec: String,
    /// The controller's settings.
    pub controller: ControllerOptions,
    /// The history store; `None`: no history.
    pub history: Option<PathBuf>,
    /// The application's name in the store (default: the command line
    /// and working directory).
    pub app_key: Option<String>,
    /// Walk the history's files' metadata ahead of the program
    /// ([`crate::metawalk`]).
    pub metadata_walk: bool,
    /// Save the history before returning instead of in a background child.
    pub wait_for_save: bool,
    /// Outrider's own memory cgroup at the start (the background saver
    /// returns to it).
    pub orig_cgroup: Option<PathBuf>,
    /// The program's working directory (default: ours).
    pub cwd: Option<PathBuf>,
}

/// How a run ended.
pub enum Ended {
    /// The program ran.
    Ran(Box<RunOutcome>),
    /// A signal arrived before the program started: exit with this code.
    Interrupted(u8),
    /// The program could not be started.
    CannotRun(std::io::Error),
}

/// What happened to the history.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HistoryOutcome {
    /// The store, when history was on.
    pub db: Option<PathBuf>,
    /// The application's key.
    pub app_key: String,
    /// What the restore kept and dropped.
    pub restored: history::Restored,
    /// The policy's blob was loaded.
    pub policy_loaded: bool,
    /// The history of the whole store was loaded into the policy
    /// ([`outrider_core::Policy::shared_history_name`]: DiskSeen's one
    /// block table), whether or not the application had history.
    pub shared_loaded: bool,
    /// Files saved.
    pub saved_files: usize,
    /// `none`, `foreground` or `background`.
    pub save: &'static str,
    /// Seconds loading, restoring and saving.
    pub load_s: f64,
    /// Seconds registering the loaded files.
    pub restore_s: f64,
    /// Seconds saving (the hand-off, for a background save).
    pub save_s: f64,
}

/// Benefit gating of one run ([`outrider_driver::benefit`]).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct GateOutcome {
    /// The level this run had.
    pub level: Level,
    /// The level the next run gets.
    pub next: Level,
    /// The gate after this run (its verdict, evidence, and the level the
    /// next run gets).
    pub after: Gate,
}

/// One finished run.
pub struct RunOutcome {
    /// The program's exit code.
    pub code: u8,
    /// The program's wall time, seconds.
    pub elapsed_s: f64,
    /// The controller's counters, with the driver's decisions.
    pub stats: LiveStats,
    /// DESIGN.md's metrics of the run.
    pub report: Report,
    /// Events read and lost, tasks traced, warnings.
    pub events: u64,
    /// Events the kernel dropped.
    pub lost_events: u64,
    /// The event source that ran (`"ebpf"` or `"tracefs"`; `None`: none
    /// started).
    pub event_source: Option<&'static str>,
    /// Why eBPF was not used, when `auto` fell back to tracefs.
    pub event_source_fallback: Option<String>,
    /// Tasks traced.
    pub tasks: u64,
    /// Warnings (tracing unavailable, ...).
    pub warnings: Vec<String>,
    /// The history's fate.
    pub history: HistoryOutcome,
    /// The metadata walk's counts.
    pub metadata_walk: Option<WalkStats>,
    /// CPU seconds outrider used (all its threads, not the program's).
    pub outrider_cpu_s: f64,
    /// Benefit gating: this run's level, its verdict, the next level.
    pub gate: GateOutcome,
    policy_name: String,
    budget_bytes: u64,
    cgroup_joins: u64,
    disabled: Option<String>,
    reopened: (u64, u64),
}

/// The largest history database (and WAL) fetched whole before it is
/// read: 256 MiB.
const STORE_WARM_BYTES: u64 = 256 << 20;

/// Run `opts.cmd` under a controller running `policy`. Our own failures
/// before the program starts are errors.
pub fn run(
    opts: &RunOptions,
    policy: BoxedPolicy,
    tracing: TracingSetup,
) -> std::io::Result<Ended> {
    run_program(opts, policy, tracing, Program::Spawn(&opts.cmd))
}

/// [`run`] for a program started here or elsewhere (a client of the
/// daemon: `opts.cmd` then only names it).
pub fn run_program(
    opts: &RunOptions,
    policy: BoxedPolicy,
    tracing: TracingSetup,
    program: Program<'_>,
) -> std::io::Result<Ended> {
    let shared = policy.shared_history_name().map(str::to_string);
    let mut ctl = Controller::new(policy, opts.controller.clone());
    let cwd = (opts.cwd.clone()).unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let db = opts.history.as_deref();
    let loading = db.and_then(|d| starting::start_loading(d, opts, &cwd, shared));
    let mut dirs = (db.is_some() && opts.metadata_walk)
        .then(|| {
            DirWatch::start(
                watched_file_systems(&opts.cmd, &cwd)
                    .iter()
                    .map(PathBuf::as_path),
            )
        })
        .flatten();
    let opened = tracing.finish()?;
    let mut starting = Starting::new(&mut ctl, loading, &opts.policy_spec);
    starting.wait_loading(starting::LOAD_WAIT);
    if let Some(sig) = signalled() {
        // Interrupted before the program started: remove the instance
        // and end as the program would have.
        drop(opened);
        starting.finish_loading();
        return Ok(Ended::Interrupted((128 + sig) as u8));
    }
    let out = run_program_traced(program, opened, &mut starting);
    // The load's end (a program that could not start never let it in).
    starting.finish_loading();
    let (mut loaded, mut store) = (std::mem::take(&mut starting.loaded), starting.store.take());
    let key = std::mem::take(&mut starting.key);
    let out = match out {
        Ok(out) => out,
        Err(e) => return Ok(Ended::CannotRun(e)),
    };
    let walked = loaded.walk.take().map(MetaWalk::finish);
    let opened_dirs = dirs.as_mut().map(|w| {
        let mut d = w.finish();
        d.retain(|d| out.tree.contains(d.pid));
        d
    });
    let mut h = HistoryOutcome {
        db: db.map(Path::to_path_buf),
        app_key: key.clone(),
        restored: std::mem::take(&mut loaded.restored),
        policy_loaded: loaded.policy_loaded,
        shared_loaded: loaded.shared_loaded,
        save: "none",
        load_s: loaded.load_s,
        restore_s: loaded.restore_s,
        ..HistoryOutcome::default()
    };
    let stats = ctl.stats();
    let after = loaded.gate.after(Evidence {
        used_pages: stats.used_pages,
        wasted_pages: stats.wasted_pages,
        cpu_s: own_cpu_s(),
        elapsed_s: out.elapsed_s,
    });
    let gate = GateOutcome {
        level: loaded.gate.level_now(),
        next: after.level_now(),
        after,
    };
    let t_save = std::time::Instant::now();
    if let (Some(st), Some(dbp)) = (store.take(), db) {
        if ctl.disabled().is_none() && ctl.stats().accesses > 0 {
            h.saved_files = ctl.files().len();
            let job = SaveJob {
                key: &key,
                policy: &opts.policy_spec,
                cmd: &opts.cmd,
                cwd: &cwd,
                loaded_files: loaded.files.take(),
                gate: gate.after,
                dirs: dirs.as_ref().zip(opened_dirs.as_deref()),
            };
            h.save = save(st, dbp, &job, &mut ctl, opts);
        }
    }
    h.save_s = t_save.elapsed().as_secs_f64();
    let report = stats.report(ctl.policy_name(), out.elapsed_s);
    let outcome = RunOutcome {
        code: exit_code(&out.status),
        elapsed_s: out.elapsed_s,
        report,
        stats,
        events: out.source.events,
        lost_events: out.source.lost_events,
        event_source: out.source_name,
        event_source_fallback: out.fallback,
        tasks: out.tasks as u64,
        warnings: out.warnings,
        history: h,
        metadata_walk: walked,
        outrider_cpu_s: own_cpu_s(),
        gate,
        policy_name: ctl.policy_name().to_string(),
        budget_bytes: ctl.budget_bytes(),
        cgroup_joins: ctl.cgroup_joins(),
        disabled: ctl.disabled().map(str::to_string),
        reopened: (ctl.files().reopened_by_handle, ctl.files().reopened_by_path),
    };
    if h_background(&outcome) {
        // The controller's tables are not freed: every page the frees
        // would touch is shared with the saver since the fork and would be
        // copied first (the caller exits soon after).
        std::mem::forget(ctl);
    }
    Ok(Ended::Ran(Box::new(outcome)))
}

fn h_background(o: &RunOutcome) -> bool {
    o.history.save == "background"
}

/// The tracing instance being set up on its own thread, while the caller
/// probes the machine and [`run`] loads the history: the program starts
/// when both are done. Dropped unfinished (an error before the run), it
/// waits for the set-up and ends the instance.
pub struct TracingSetup(Option<std::thread::JoinHandle<Result<Opened, SourceError>>>);

impl TracingSetup {
    /// Start setting up tracing for a policy with these interests, from
    /// the event source `choice` names. Call it first: the set-up is most
    /// of what a run adds before the program starts.
    pub fn start(interests: Interests, choice: SourceChoice) -> std::io::Result<TracingSetup> {
        TracingSetup::following(interests, choice, std::process::id())
    }

    /// [`TracingSetup::start`] following the tasks `pid` forks from now on
    /// (outrider's own pid when it starts the program; a client's when the
    /// client starts it).
    pub fn following(
        interests: Interests,
        choice: SourceChoice,
        pid: u32,
    ) -> std::io::Result<TracingSetup> {
        // Before the tracing instance exists, so Ctrl-C or SIGTERM during
        // the set-up still ends with the instance removed.
        install_signal_handlers();
        let wants_dev = interests.device_requests;
        let handle = std::thread::Builder::new()
            .name("outrider-tracing".into())
            .spawn(move || EventSource::open(&instance_options(wants_dev, pid), choice))?;
        Ok(TracingSetup(Some(handle)))
    }

    fn finish(mut self) -> std::io::Result<Result<Opened, SourceError>> {
        let handle = self.0.take().expect("finished once");
        handle
            .join()
            .map_err(|_| std::io::Error::other("setting up tracing panicked"))
    }
}

impl Drop for TracingSetup {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

/// How long `outrider run`'s instance stays parked for the next run.
const PARK_LINGER_MS: u64 = 10_000;

/// The tracing instance: the block layer's events only for a policy that
/// reads the device stream (for the others they were a third of the
/// events of a random-read program, all for nothing); parked at the end
/// for the next run ([`AtEnd::Park`]).
fn instance_options(wants_dev: bool, follow: u32) -> InstanceOptions {
    InstanceOptions {
        follow_pid: Some(follow),
        at_end: AtEnd::Park {
            linger_ms: PARK_LINGER_MS,
        },
        detached_home: outrider_sys::cgroup_memory(None)
            .ok()
            .flatten()
            .map(|c| c.dir.join("cgroup.procs")),
        events: crate::tracefs::EVENTS
            .iter()
            .filter(|(sys, _)| wants_dev || *sys != "block")
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect(),
        ..InstanceOptions::default()
    }
}

/// What loading the history gave.
#[derive(Default)]
struct Loaded {
    restored: history::Restored,
    policy_loaded: bool,
    shared_loaded: bool,
    /// The files of the history loaded (sorted by id) and its run count.
    files: Option<(Vec<FileRecord>, u64)>,
    walk: Option<MetaWalk>,
    /// The application's benefit gate (fresh when none was saved).
    gate: Gate,
    load_s: f64,
    restore_s: f64,
}

/// Save the history (one transaction, only when tracing worked: a partial
/// list would replace a good one). Returns how it was saved.
fn save(
    st: Store,
    db: &Path,
    job: &SaveJob<'_>,
    ctl: &mut Controller,
    opts: &RunOptions,
) -> &'static str {
    let lock = HistoryLock::take(db, libc::LOCK_EX);
    let mode = if opts.wait_for_save {
        job.save(st, ctl);
        "foreground"
    } else {
        // The saver must not inherit other threads' locks, nor our
        // connection (SQLite's locks are not inherited). Closing the last
        // connection would checkpoint the WAL here (a run-1 save of 78k
        // files writes ~23 MB to it): left to the saver's connection.
        ctl.stop_workers();
        let _ = st.skip_checkpoint_on_close();
        drop(st);
        if save_in_background(db, job, ctl, opts.orig_cgroup.as_deref()) {
            "background"
        } else {
            if let Some(st) = open_store(db, |_| false) {
                job.save(st, ctl);
            }
            "foreground"
        }
    };
    // The background saver holds the same lock until it is done.
    drop(lock);
    mode
}

/// The name the gate of `policy_spec` is stored under, beside the
/// policy's own blob (no policy name contains `#`).
/// The name of the history blob listing the directories an application
/// opened ([`crate::metawalk::encode_dirs`]); not a policy specification.
pub(crate) const DIRS_BLOB: &str = "#dirs";

/// The file systems whose directory opens a run watches: the root's, the
/// working directory's, and those of the program's arguments that name
/// existing paths (the trees a `du`, `find` or `tar` is pointed at).
fn watched_file_systems(cmd: &[OsString], cwd: &Path) -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from("/"), cwd.to_path_buf()];
    let args = cmd.iter().skip(1).take(MAX_WATCHED_ARGS);
    paths.extend(args.map(|a| cwd.join(a)).filter(|p| p.exists()));
    paths
}

/// Arguments looked at for [`watched_file_systems`].
const MAX_WATCHED_ARGS: usize = 16;

pub(crate) fn gate_name(policy_spec: &str) -> String {
    format!("{policy_spec}#gate")
}

fn mib(pages: u64) -> f64 {
    (pages * BLOCK_SIZE) as f64 / (1u64 << 20) as f64
}

impl RunOutcome {
    /// The summary `outrider run` prints on stderr.
    pub fn summary(&self, cmd0: &str) -> String {
        let (s, r, h) = (&self.stats, &self.report, &self.history);
        let mut out = format!(
            "outrider: {cmd0} ran {:.3} s (exit {}), policy {}{}\n",
            self.elapsed_s,
            self.code,
            self.policy_name,
            self.disabled
                .as_ref()
                .map(|w| format!(" — prefetching disabled: {w}"))
                .unwrap_or_default()
        );
        out += &format!(
            "outrider: demand {:.1} MiB ({} accesses, {:.1} MiB missed), prefetched {:.1} MiB, used {:.1} MiB, wasted {:.1} MiB\n",
            mib(s.demand_pages), s.accesses, mib(s.miss_pages), mib(s.prefetched_pages), mib(s.used_pages), mib(s.wasted_pages)
        );
        out += &format!(
            "outrider: coverage {:.3}, cost {:.3}, accuracy {:.3}, hit ratio {:.3}, lead time {:.3} s; skipped (cached) {:.1} MiB, dropped {:.1} MiB (budget {:.0} MiB), throttled {} requests; events {}, lost events {}\n",
            r.coverage, r.cost, r.prefetch_accuracy, r.hit_ratio, r.lead_time,
            mib(s.skipped_cached_pages),
            mib(s.dropped_budget_pages + s.dropped_queue_pages),
            self.budget_bytes as f64 / (1u64 << 20) as f64,
            s.throttled_requests, self.events, self.lost_events
        );
        if let Some(why) = &self.event_source_fallback {
            out += &format!("outrider: events from tracefs (eBPF unavailable: {why})\n");
        }
        let g = &self.gate;
        out += &format!(
            "outrider: benefit: this run {:?}; verdict {:?} (used {:.1} MiB, wasted {:.1} MiB, outrider CPU {:.3} s, {:.2} µs per event); next run {:?}\n",
            g.level,
            g.after.verdict,
            mib(g.after.last.used_pages),
            mib(g.after.last.wasted_pages),
            g.after.last.cpu_s,
            self.cpu_per_event_us(),
            g.next
        );
        if let Some(db) = &h.db {
            out += &format!(
                "outrider: history {}: {}{} ({} runs before; files kept {}, dropped {}), {} files saved{}\n",
                db.display(),
                if h.policy_loaded { "policy history loaded" } else { "no policy history" },
                if h.shared_loaded { ", shared history loaded" } else { "" },
                h.restored.runs_before,
                h.restored.files_kept,
                h.restored.files_dropped,
                h.saved_files,
                if h.save == "background" { " (in the background)" } else { "" }
            );
        }
        out
    }

    /// Outrider's CPU per traced event, µs (all its CPU: tracing, the
    /// controller, the I/O workers).
    pub fn cpu_per_event_us(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.outrider_cpu_s * 1e6 / self.events as f64
        }
    }

    /// The `--json-file` object (DESIGN.md's metrics named as `sim --json`
    /// names them, beside the live counters). The history's fields:
    /// `history_db`, `app_key`, `history` (files kept and dropped),
    /// `history_policy_loaded` (the application's policy blob was loaded),
    /// `history_shared_loaded` (the store's shared history was, e.g.
    /// DiskSeen's one block table: see [`HistoryOutcome`]),
    /// `history_saved_files`, `history_save` (`none`, `foreground`,
    /// `background`) and the seconds `history_load_s`, `history_restore_s`,
    /// `history_save_s`.
    pub fn json(&self, cmd: &[OsString]) -> serde_json::Value {
        let (r, h) = (&self.report, &self.history);
        serde_json::json!({
            "command": cmd.iter().map(|c| c.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "policy": self.policy_name,
            "exit_code": self.code,
            "elapsed_s": self.elapsed_s,
            "budget_bytes": self.budget_bytes,
            "stats": self.stats,
            "requests": r.requests,
            "demand_blocks": r.demand_blocks,
            "prefetched_blocks": r.prefetched_blocks,
            "hit_ratio": r.hit_ratio,
            "coverage": r.coverage,
            "cost": r.cost,
            "prefetch_accuracy": r.prefetch_accuracy,
            "lead_time": r.lead_time,
            "prefetched_unused_blocks": r.prefetched_unused_blocks,
            "events": self.events,
            "lost_events": self.lost_events,
            "tasks": self.tasks,
            "cgroup_joins": self.cgroup_joins,
            "disabled": self.disabled,
            "warnings": self.warnings,
            "history_db": h.db,
            "app_key": h.app_key,
            "history": h.restored,
            "history_policy_loaded": h.policy_loaded,
            "history_shared_loaded": h.shared_loaded,
            "history_saved_files": h.saved_files,
            "history_save": h.save,
            "metadata_walk": self.metadata_walk,
            "history_load_s": h.load_s,
            "history_restore_s": h.restore_s,
            "history_save_s": h.save_s,
            "outrider_cpu_s": self.outrider_cpu_s,
            "cpu_per_event_us": self.cpu_per_event_us(),
            "event_source": self.event_source,
            "event_source_fallback": self.event_source_fallback,
            "gate": self.gate,
            "reopened_by_handle": self.reopened.0,
            "reopened_by_path": self.reopened.1,
        })
    }
}

mod save;
mod starting;
pub use save::own_cpu_s;
use save::{open_store, save_in_background, HistoryLock, SaveJob};
use starting::Starting;
