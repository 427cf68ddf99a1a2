//! `outrider run [--policy P] [--budget B] [--json FILE] -- CMD [ARGS...]`:
//! run an unmodified program, prefetching for its process tree with a core
//! policy (outrider-live's controller), and print a summary on stderr. The
//! program's exit code is passed through unchanged.

use crate::usage;
use outrider_core::{build_policy, PolicyError, BLOCK_SIZE};
use outrider_live::controller::{default_budget_bytes, Controller, ControllerOptions};
use outrider_live::session::{exit_code, run_traced};
use outrider_live::tracefs::InstanceOptions;
use std::ffi::OsString;
use std::path::PathBuf;

/// Default policy of `run` until `auto` exists: `stride` (forward, reverse
/// and strided streams), the one measured to help unmodified programs
/// (`bench/results/live.md`); `readahead` would only repeat the kernel's.
pub const DEFAULT_POLICY: &str = "stride";

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
    /// I/O worker threads.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Write the summary as a JSON object to FILE.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Print no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub cmd: Vec<OsString>,
}

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

/// Run it; returns the child's exit code. Our own errors are returned
/// (the caller prints them and exits 2 for bad input, 1 otherwise).
pub fn run(a: RunArgs) -> anyhow::Result<u8> {
    let policy = build_policy(&a.policy).map_err(|e| match e {
        PolicyError::Help(t) => usage(t),
        e => usage(format!("--policy: {e}")),
    })?;
    // flashy §IV-C: the maximum device throughput, measured once
    // (`outrider calibrate`'s store), for policies reading the device stream.
    let device_max_read = if policy.wants_device_requests() {
        crate::calibrate::for_run(&a.cmd, a.quiet)
    } else {
        Vec::new()
    };
    let opts = ControllerOptions {
        budget_bytes: budget_bytes(&a.budget)?,
        workers: a.workers.max(1),
        device_max_read,
        ..ControllerOptions::default()
    };
    let mut ctl = Controller::new(policy, opts);
    let out = run_traced(
        &a.cmd,
        &InstanceOptions {
            follow_pid: Some(std::process::id()),
            ..InstanceOptions::default()
        },
        &mut ctl,
    )
    .map_err(|e| usage(format!("cannot run {}: {e}", a.cmd[0].to_string_lossy())))?;
    let code = exit_code(&out.status);
    let s = &ctl.stats;
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
            "outrider: coverage {:.3}, cost {:.3}, accuracy {:.3}; skipped (cached) {:.1} MiB, dropped {:.1} MiB (budget {:.0} MiB), throttled {} requests; events {}, lost events {}",
            s.coverage(),
            s.cost(),
            s.accuracy(),
            mib(s.skipped_cached_pages),
            mib(s.dropped_budget_pages + s.dropped_queue_pages),
            ctl.budget_bytes() as f64 / (1u64 << 20) as f64,
            s.throttled_requests,
            out.source.events,
            out.source.lost_events
        );
    }
    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "command": a.cmd.iter().map(|c| c.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "policy": ctl.policy_name(),
            "exit_code": code,
            "elapsed_s": out.elapsed_s,
            "budget_bytes": ctl.budget_bytes(),
            "stats": s,
            "coverage": s.coverage(),
            "cost": s.cost(),
            "prefetch_accuracy": s.accuracy(),
            "events": out.source.events,
            "lost_events": out.source.lost_events,
            "tasks": out.tasks,
            "cgroup_joins": ctl.cgroup_joins(),
            "disabled": ctl.disabled(),
            "warnings": out.warnings,
        });
        std::fs::write(path, format!("{v}\n"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    Ok(code)
}
