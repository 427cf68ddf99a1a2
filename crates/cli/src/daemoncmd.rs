//! `outrider daemon`: the machine-wide prefetching daemon
//! ([`outrider_daemon`]), its config check and its boot replay.

use clap::Args;
use outrider_daemon::{query, Config, ConfigError, Daemon, DEFAULT_CONFIG};
use std::io::Write;
use std::path::PathBuf;

/// `outrider daemon` options.
#[derive(Args)]
pub struct DaemonArgs {
    /// The TOML configuration (every key optional; see dist/daemon.toml).
    #[arg(long, default_value = DEFAULT_CONFIG)]
    config: PathBuf,
    /// Check the configuration and exit: 0 when usable, else 2 with a
    /// message naming the file, key and what was expected.
    #[arg(long)]
    check_config: bool,
    /// Replay the recorded boot set now, print what was done (JSON) and exit.
    #[arg(long, conflicts_with = "check_config")]
    replay_boot: bool,
    /// Serve the client connected on standard input (the daemon starts
    /// one such helper per client of its socket).
    #[arg(long, hide = true, conflicts_with_all = ["check_config", "replay_boot"])]
    serve_client: bool,
    /// Follow process PID with the `auto` policy until it exits (the
    /// daemon starts one such helper per long launch).
    #[arg(long, hide = true, value_name = "PID",
          conflicts_with_all = ["check_config", "replay_boot", "serve_client"])]
    follow: Option<u32>,
}

/// Run the subcommand.
pub fn run(a: DaemonArgs) -> anyhow::Result<()> {
    let cfg = load(&a.config)?;
    if a.check_config {
        let _ = writeln!(std::io::stdout(), "{}: ok", a.config.display());
        return Ok(());
    }
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("the daemon needs root (tracefs, open by handle); run it as a service");
    }
    if a.replay_boot {
        let st = outrider_daemon::replay_boot(&cfg).map_err(anyhow::Error::msg)?;
        let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(&st)?);
        return Ok(());
    }
    if a.serve_client {
        return outrider_daemon::helper::serve(&cfg)
            .map_err(|e| anyhow::Error::msg(format!("outrider daemon: {e}")));
    }
    if let Some(pid) = a.follow {
        return outrider_daemon::helper::follow(&cfg, pid)
            .map_err(|e| anyhow::Error::msg(format!("outrider daemon: follow: {e}")));
    }
    Daemon::new(cfg, a.config)
        .and_then(Daemon::run)
        .map_err(anyhow::Error::msg)
}

/// `outrider status`, `outrider apps` and `outrider forget` options.
#[derive(Args)]
pub struct QueryArgs {
    /// The daemon's configuration (its state directory and store).
    #[arg(long, default_value = DEFAULT_CONFIG)]
    config: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `outrider forget` options.
#[derive(Args)]
pub struct ForgetArgs {
    /// The executable whose launch set to forget (as `outrider apps`
    /// lists it).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    exe: Option<String>,
    /// Forget every application's launch set, and the store's history
    /// shared by every program (DiskSeen's block table); the boot set
    /// stays.
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    q: QueryArgs,
}

/// `outrider status`: whether the daemon runs, what it watches, its
/// memory and CPU, and per application what its recent launches read.
pub fn status(a: QueryArgs) -> anyhow::Result<()> {
    let r = query::report(&load(&a.config)?, &a.config);
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    match (r.running, r.pid) {
        (true, Some(pid)) => writeln!(
            out,
            "outrider daemon: running, pid {pid}, {:.0} s; {:.1} MiB resident, {:.2} s of CPU ({:.2}% of a core)",
            r.uptime_s.unwrap_or(0.0),
            r.rss_bytes.unwrap_or(0) as f64 / 1048576.0,
            r.cpu_s.unwrap_or(0.0),
            100.0 * r.cpu_s.unwrap_or(0.0) / r.uptime_s.unwrap_or(1.0).max(1.0)
        )?,
        _ => writeln!(
            out,
            "outrider daemon: not running (start it with `sudo systemctl start outrider` or `sudo outrider daemon`)"
        )?,
    }
    writeln!(out, "watching: {}", r.watching.join(", "))?;
    writeln!(out, "history: {}", r.store)?;
    if r.status_root_only {
        writeln!(
            out,
            "its launches and applications: root's to read (they name every user's programs): run `sudo outrider status`"
        )?;
    }
    if let Some(s) = &r.status {
        writeln!(
            out,
            "launches seen {} (repeated {}; execs quieted {}, gone before read {}), replayed {}, launch sets saved {} (stored {}, forgotten {}); events {} (lost {}; reads' and faults' programs {}, detached {} times)",
            s.launches_seen,
            s.launches_repeated,
            s.execs_quieted,
            s.execs_gone,
            s.replays,
            s.launch_sets_saved,
            s.launch_sets_stored,
            s.launch_sets_forgotten,
            s.events,
            s.lost_events,
            if s.reads_attached { "attached" } else { "detached" },
            s.reads_detached
        )?;
        writeln!(
            out,
            "next launches predicted {} (right {}, wrong {}); their sets replayed {} ({:.1} MiB asked for, {} stopped by a busy disk)",
            s.successors.predicted,
            s.successors.hits,
            s.successors.misses,
            s.successor_replays,
            s.successor_pages as f64 * 4096.0 / 1048576.0,
            s.successor_busy
        )?;
    }
    if !r.apps.is_empty() {
        writeln!(
            out,
            "{:>8} {:>8} {:>10} {:>9} {:>9} {:>10} {:>8} {:>12} {:>9}  application (recent launches)",
            "launches",
            "replayed",
            "asked MiB",
            "used MiB",
            "read MiB",
            "missed MiB",
            "gate",
            "verdict",
            "saved s"
        )?;
        let mib = |p: u64| p as f64 * 4096.0 / 1048576.0;
        for app in &r.apps {
            writeln!(
                out,
                "{:>8} {:>8} {:>10.1} {:>9.1} {:>9.1} {:>10.1} {:>8} {:>12} {:>9}  {}",
                app.launches,
                app.replayed,
                mib(app.pages_requested),
                mib(app.pages_used),
                mib(app.pages_read),
                mib(app.pages_missed),
                app.gate,
                app.verdict,
                app.stall_saved_s.map_or("-".into(), |s| format!("{s:.3}")),
                app.exe
            )?;
        }
    }
    Ok(())
}

/// `outrider apps`: the launch sets in the daemon's store.
pub fn apps(a: QueryArgs) -> anyhow::Result<()> {
    let sets = query::launch_sets(&load(&a.config)?).map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&sets)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>6} {:>6} {:>9} {:>20}  application",
        "runs", "files", "MiB", "saved (UTC)"
    )?;
    for s in &sets {
        writeln!(
            out,
            "{:>6} {:>6} {:>9.1} {:>20}  {}",
            s.runs,
            s.files,
            s.pages as f64 * 4096.0 / 1048576.0,
            crate::output::utc_datetime(s.saved_unix),
            s.exe
        )?;
    }
    Ok(())
}

/// `outrider forget`: remove one application's launch set, or all.
pub fn forget(a: ForgetArgs) -> anyhow::Result<()> {
    let cfg = load(&a.q.config)?;
    let exe = if a.all { None } else { a.exe.as_deref() };
    let n = query::forget(&cfg, exe).map_err(crate::usage)?;
    let mut out = std::io::stdout().lock();
    if a.q.json {
        writeln!(out, "{}", serde_json::json!({ "forgotten": n }))?;
    } else {
        writeln!(
            out,
            "forgot {n} launch set{}",
            if n == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// The configuration at `path`; a missing default file means the defaults.
fn load(path: &std::path::Path) -> anyhow::Result<Config> {
    match Config::load(path) {
        Ok(c) => Ok(c),
        Err(ConfigError::Read { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound
                && path == std::path::Path::new(DEFAULT_CONFIG) =>
        {
            Ok(Config::default())
        }
        Err(e) => Err(crate::usage(e.to_string())),
    }
}
