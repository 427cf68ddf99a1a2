//! The `outrider` command line (DESIGN.md "Command line"): every command,
//! as the `outrider-tools` executable, which `outrider` ([`front`](../front.rs))
//! runs in its place for all but `run`.
//!
//! Exit codes: 0 success; 2 bad input (an argument, a trace record, a
//! policy or workload specification) with a message naming what was wrong;
//! 1 anything else.

mod cachecmd;
mod calibrate;
mod daemoncmd;
mod devmodel;
mod docs;
mod errors;
mod history;
mod input;
mod mrccmd;
mod outfile;
mod output;
mod recordcmd;
mod report;
mod runclient;
mod runcmd;
mod simcmd;
mod sweepcmd;
mod tracecmd;

use clap::{Parser, Subcommand};
pub use errors::{error_exit, usage, Usage};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "outrider",
    version,
    about = "Prefetching for Linux storage: simulate, compare and run the DiskSeen, EPCM, libprefetch and flashy policies",
    after_help = "Start with:  outrider compare --workload paper-suite\n\
                  Exit codes: 0 success, 2 bad input (the message names the file, record and what was expected), 1 anything else."
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate one policy over a trace or a built-in workload.
    #[command(after_help = docs::SIM_EXAMPLES)]
    Sim(simcmd::SimArgs),
    /// Simulate several policies over the same input, side by side.
    #[command(after_help = docs::COMPARE_EXAMPLES)]
    Compare(simcmd::CompareArgs),
    /// Run a grid of simulations (inputs x policies x parameters x cache
    /// sizes x devices x runs) on all cores or on Ray; one row per cell
    /// to Parquet and CSV, resumable.
    Sweep(sweepcmd::SweepArgs),
    /// LRU miss-ratio curve of a trace in one pass (stack distances).
    Mrc(mrccmd::MrcArgs),
    /// Inspect or convert traces.
    Trace {
        #[command(subcommand)]
        cmd: tracecmd::TraceCmd,
    },
    #[command(about = runcmd::RUN_ABOUT, after_help = runcmd::RUN_EXAMPLES)]
    Run(runcmd::RunArgs),
    /// Machine-wide prefetching: record each program's launch set and
    /// replay it at its next launch (and the boot set at start); runs in
    /// the foreground (dist/outrider.service).
    #[command(after_help = docs::DAEMON_EXAMPLES)]
    Daemon(daemoncmd::DaemonArgs),
    /// Whether the daemon runs, what it watches, its memory and CPU, and
    /// per application what its recent launches read and had replayed.
    #[command(after_help = docs::DAEMON_EXAMPLES)]
    Status(daemoncmd::QueryArgs),
    /// The applications whose launch sets the daemon keeps.
    #[command(after_help = docs::DAEMON_EXAMPLES)]
    Apps(daemoncmd::QueryArgs),
    /// Forget an application's launch set (or every one, and the history
    /// every program shares, with --all).
    #[command(after_help = docs::DAEMON_EXAMPLES)]
    Forget(daemoncmd::ForgetArgs),
    /// Run a program and write what it read as a native trace.
    #[command(after_help = docs::RECORD_EXAMPLES)]
    Record(recordcmd::RecordArgs),
    /// Page-cache residency of files (cachestat), like vmtouch.
    #[command(after_help = docs::CACHE_EXAMPLES)]
    Stat(cachecmd::CacheArgs),
    /// Bring files into the page cache (chunked WILLNEED).
    #[command(after_help = docs::CACHE_EXAMPLES)]
    Warm(cachecmd::CacheArgs),
    /// Drop files' clean pages from the page cache (DONTNEED).
    #[command(after_help = docs::CACHE_EXAMPLES)]
    Evict(cachecmd::CacheArgs),
    /// List the policies and their parameters.
    #[command(after_help = "Example:  outrider policies; outrider sim --policy diskseen:help")]
    Policies,
    /// List the built-in workloads, their parameters, and the suites.
    #[command(
        after_help = "Example:  outrider workloads; outrider sim --policy obl --workload seq:help"
    )]
    Workloads,
    /// Measure a device: its maximum read throughput (flashy's cap) and a
    /// fitted device model (`sim --device calibrated`); store both.
    #[command(after_help = docs::CALIBRATE_EXAMPLES)]
    Calibrate(calibrate::CalibrateArgs),
    /// Write man pages (outrider.1 and one per subcommand) into DIR.
    #[command(after_help = "Example:  outrider man target/man && man target/man/outrider-sim.1")]
    Man {
        /// Directory to write the pages into (created if missing).
        dir: std::path::PathBuf,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Example:  outrider completions bash > ~/.local/share/bash-completion/completions/outrider"
    )]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.cmd, Cmd::Run(_) | Cmd::Record(_) | Cmd::Daemon(_)) {
        die_quietly_on_closed_pipe();
    }
    let result = match cli.cmd {
        Cmd::Run(a) => return runcmd::run(a).map_or_else(error_exit, ExitCode::from),
        Cmd::Record(a) => return recordcmd::run(a).map_or_else(error_exit, ExitCode::from),
        Cmd::Daemon(a) => daemoncmd::run(a),
        Cmd::Status(a) => daemoncmd::status(a),
        Cmd::Apps(a) => daemoncmd::apps(a),
        Cmd::Forget(a) => daemoncmd::forget(a),
        Cmd::Sim(a) => simcmd::sim(a),
        Cmd::Compare(a) => simcmd::compare(a),
        Cmd::Sweep(a) => sweepcmd::run(a),
        Cmd::Mrc(a) => mrccmd::run(a),
        Cmd::Trace { cmd } => tracecmd::run(cmd),
        Cmd::Stat(a) => cachecmd::run(outrider_live::cachetool::Action::Stat, a),
        Cmd::Warm(a) => cachecmd::run(outrider_live::cachetool::Action::Warm, a),
        Cmd::Evict(a) => cachecmd::run(outrider_live::cachetool::Action::Evict, a),
        Cmd::Calibrate(a) => calibrate::run(a),
        Cmd::Policies => docs::policies(),
        Cmd::Workloads => docs::workloads(),
        Cmd::Man { dir } => docs::man_pages(&dir),
        Cmd::Completions { shell } => docs::completions(shell),
    };
    result.map_or_else(error_exit, |()| ExitCode::SUCCESS)
}

/// Printing commands end like other Unix filters when their reader goes
/// away (`outrider workloads | head -3`): killed by SIGPIPE, silently,
/// instead of a panic in `println!` (Rust ignores SIGPIPE by default).
/// `run` and `record` keep the default: their program's output is not
/// ours, and they must outlive a closed pipe to pass its exit code on;
/// so does `daemon`, which must not stop prefetching (or lose what it
/// recorded) when its log reader goes away.
fn die_quietly_on_closed_pipe() {
    // SAFETY: restoring the default disposition of one signal before any
    // thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
