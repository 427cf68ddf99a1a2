//! `outrider run [--policy P] [--budget B] [--history DB | --no-history]
//! [--app-key NAME] [--json-file FILE] -- CMD [ARGS...]`: run an unmodified
//! program, prefetching for its process tree with a core policy
//! (outrider-live's controller), and print a summary on stderr. The
//! program's exit code is passed through unchanged.
//!
//! History: unless `--no-history`, the store at `--history DB` (default
//! `/var/lib/outrider/history.db` for root, `$XDG_STATE_HOME/outrider/history.db`
//! — `~/.local/state/...` — for others). The run's lifecycle (tracing,
//! history load and save, the summary) is `outrider_live::lifecycle`.

use crate::usage;
use outrider_core::{build_policy, PolicyError};
use outrider_live::controller::{default_budget_bytes, ControllerOptions};
use outrider_live::lifecycle::{self, Ended, RunOptions};
use outrider_live::source::SourceChoice;
use std::ffi::OsString;
use std::path::PathBuf;

/// What `run` does, as `outrider help` and `outrider run --help` say it
/// (both `outrider` and `outrider-tools` declare the command).
pub const RUN_ABOUT: &str = "Run a program, prefetching for it live; exit code passed through";

/// `run --help` examples.
pub const RUN_EXAMPLES: &str = "\
Examples:
  sudo outrider run -- ./my-program args
  sudo outrider run --policy stride --json-file run.json -- sh -c 'grep -r foo src'
  sudo outrider run --app-key nightly-build --budget 512MiB -- make -j8
  outrider run --no-history -- python3 -c 'import numpy'

Policies (--policy): `outrider policies`. Budget (--budget): a size (512MiB, 1.5GiB) or a fraction (0.25).";

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
    /// Where the kernel's events come from: `ebpf` (programs on the
    /// tracepoints, the task filter in the kernel), `tracefs` (a tracing
    /// instance), or `auto`: eBPF, else tracefs (the summary says why).
    #[arg(long, value_name = "SOURCE", default_value = "auto")]
    pub event_source: SourceChoice,
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

pub(crate) fn budget_bytes(text: &str) -> anyhow::Result<u64> {
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

/// Said to a user who is not root: the kernel's page-cache events are
/// root's to read, so the program runs unprefetched; what would help.
pub const NOT_ROOT: &str = "outrider: not root, so the kernel's page-cache events cannot be traced and the program runs without prefetching. \
With the machine-wide daemon running (`sudo systemctl enable --now outrider`, see the README), `outrider run -- CMD` is served by it, \
and it prefetches every program's launch with no `outrider run` at all; `sudo outrider run -- CMD` prefetches for CMD and still runs it as you";

/// Run it; returns the child's exit code. Our own errors are returned
/// (the caller prints them and exits 2 for bad input, 1 otherwise).
pub fn run(a: RunArgs) -> anyhow::Result<u8> {
    // Security and outputs, before anything runs: who the program runs
    // as (outrider_sys::launch), and an unwritable --json is an error now
    // rather than a lost summary after the program ran.
    outrider_sys::launch::keep_root(a.as_root);
    if let Some(p) = &a.json {
        crate::outfile::check_writable(p)?;
    }
    let policy = build_policy(&a.policy).map_err(|e| match e {
        PolicyError::Help(t) => usage(t),
        e => usage(format!("--policy: {e}")),
    })?;
    outrider_live::controller::check_live(policy.as_ref())
        .map_err(|e| usage(format!("--policy: {e}")))?;
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        if let Some(conn) = outrider_daemon::clients::connect() {
            return crate::runclient::run(conn, &a);
        }
        outrider_sys::warnln!(
            "{NOT_ROOT} (no daemon answers at {})",
            outrider_daemon::clients::socket_path().display()
        );
    }
    let tracing = lifecycle::TracingSetup::start(policy.interests(), a.event_source)?;
    // Ours, before following the program into its cgroup: the history
    // saver goes back to it.
    let orig_cgroup = outrider_sys::cgroup_memory(None)
        .ok()
        .flatten()
        .map(|c| c.dir);
    let budget = budget_bytes(&a.budget)?;
    // flashy §IV-C: the maximum device throughput, measured once
    // (`outrider calibrate`'s store), for policies reading the device stream.
    let device_max_read = if policy.interests().device_requests {
        crate::calibrate::for_run(&a.cmd, a.quiet)
    } else {
        Vec::new()
    };
    let opts = RunOptions {
        cmd: a.cmd.clone(),
        policy_spec: a.policy.clone(),
        controller: ControllerOptions {
            budget_bytes: budget,
            workers: a.workers.max(1),
            device_max_read,
            ..ControllerOptions::default()
        },
        history: (!a.no_history).then(|| a.history.clone().unwrap_or_else(default_history_path)),
        app_key: a.app_key.clone(),
        metadata_walk: !a.no_metadata_walk,
        wait_for_save: a.wait_for_save,
        orig_cgroup,
        cwd: None,
    };
    let o = match lifecycle::run(&opts, policy, tracing)? {
        Ended::Ran(o) => o,
        Ended::Interrupted(code) => return Ok(code),
        Ended::CannotRun(e) => return Ok(cannot_run(&a.cmd, &e)),
    };
    if !a.quiet {
        // A closed stderr loses the summary, nothing else.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            o.summary(&a.cmd[0].to_string_lossy()).as_bytes(),
        );
    }
    if let Some(path) = &a.json {
        crate::outfile::write(path, &format!("{}\n", o.json(&a.cmd)))?;
    }
    if o.history.save == "background" {
        // Exit at once: the saver child holds the store's lock.
        std::process::exit(i32::from(o.code));
    }
    Ok(o.code)
}

/// A program that could not be started: say why, and end as `env` and
/// `timeout` do (127 not found, 126 not executable).
pub fn cannot_run(cmd: &[OsString], e: &std::io::Error) -> u8 {
    outrider_sys::warnln!("outrider: cannot run {}: {e}", cmd[0].to_string_lossy());
    outrider_sys::launch::spawn_failure_code(e)
}
