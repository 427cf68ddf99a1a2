//! `outrider daemon`: the machine-wide prefetching daemon
//! ([`outrider_daemon`]), its config check and its boot replay.

use clap::Args;
use outrider_daemon::{Config, ConfigError, Daemon, DEFAULT_CONFIG};
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
    Daemon::new(cfg)
        .and_then(Daemon::run)
        .map_err(anyhow::Error::msg)
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
