//! `outrider`, the command users type. `outrider run`, the one command on
//! a program's critical path, is served here from a small executable; any
//! other command is `outrider-tools` (installed beside it), executed in its
//! place with the same arguments.
//!
//! Why two executables: a cold `outrider run` reads its whole executable
//! before the program starts (a mapped file is read in readahead windows,
//! 8 MiB on the virtio disk here). With the simulator, sweeps, Parquet and
//! report code it was 8.2 MB; alone, 3.1 MB: cold `outrider run
//! --no-history -- true` 27 -> 22 ms, `/bin/true` 7 ms (medians of 11,
//! caches dropped before each). Other commands pay an exec more (cold
//! `--version` 19 -> 22 ms). The modules below are the tools' own files, so
//! `run` has one implementation.

#[allow(dead_code)]
#[path = "calibrate.rs"]
mod calibrate;
#[allow(dead_code)]
#[path = "devmodel.rs"]
mod devmodel;
#[path = "errors.rs"]
mod errors;
#[allow(dead_code)]
#[path = "outfile.rs"]
mod outfile;
#[path = "runclient.rs"]
mod runclient;
#[path = "runcmd.rs"]
mod runcmd;

use clap::{Parser, Subcommand};
pub use errors::{error_exit, usage, Usage};
use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

/// The executable holding every other command, beside this one.
const TOOLS: &str = "outrider-tools";

#[derive(Parser)]
#[command(name = "outrider", version)]
struct Front {
    #[command(subcommand)]
    cmd: FrontCmd,
}

#[derive(Subcommand)]
enum FrontCmd {
    #[command(about = runcmd::RUN_ABOUT, after_help = runcmd::RUN_EXAMPLES)]
    Run(runcmd::RunArgs),
}

fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() != Some(OsStr::new("run")) {
        return exec_tools();
    }
    let Front {
        cmd: FrontCmd::Run(a),
    } = Front::parse();
    runcmd::run(a).map_or_else(error_exit, ExitCode::from)
}

/// Become `outrider-tools` with our arguments; returns only on failure.
fn exec_tools() -> ExitCode {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.to_path_buf()))
        .unwrap_or_default();
    let tools = dir.join(TOOLS);
    let e = std::process::Command::new(&tools)
        .arg0("outrider")
        .args(std::env::args_os().skip(1))
        .exec();
    outrider_sys::warnln!(
        "outrider: cannot run {} ({e}): every command but `run` is in it; install it beside `outrider` (`cargo install --path crates/cli` installs both)",
        tools.display()
    );
    ExitCode::from(1)
}
