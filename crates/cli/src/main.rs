//! The `outrider` command line (DESIGN.md "Command line").
//!
//! Exit codes: 0 success; 2 bad input (an argument, a trace record, a
//! policy or workload specification) with a message naming what was wrong;
//! 1 anything else.

mod cachecmd;
mod calibrate;
mod history;
mod input;
mod mrccmd;
mod output;
mod recordcmd;
mod report;
mod runcmd;
mod simcmd;
mod tracecmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// A user-input error: printed and turned into exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Shorthand: a user-input error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

#[derive(Parser)]
#[command(
    name = "outrider",
    version,
    about = "Prefetching for Linux storage: simulate, compare and run the DiskSeen, EPCM, libprefetch and flashy policies",
    after_help = "Start with:  outrider compare --workload paper-suite"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate one policy over a trace or a built-in workload.
    Sim(simcmd::SimArgs),
    /// Simulate several policies over the same input, side by side.
    Compare(simcmd::CompareArgs),
    /// LRU miss-ratio curve of a trace in one pass (stack distances).
    Mrc(mrccmd::MrcArgs),
    /// Inspect or convert traces.
    Trace {
        #[command(subcommand)]
        cmd: tracecmd::TraceCmd,
    },
    /// Run a program, prefetching for it live; exit code passed through.
    Run(runcmd::RunArgs),
    /// Run a program and write what it read as a native trace.
    Record(recordcmd::RecordArgs),
    /// Page-cache residency of files (cachestat), like vmtouch.
    Stat(cachecmd::CacheArgs),
    /// Bring files into the page cache (chunked WILLNEED).
    Warm(cachecmd::CacheArgs),
    /// Drop files' clean pages from the page cache (DONTNEED).
    Evict(cachecmd::CacheArgs),
    /// List the policies and their parameters.
    Policies,
    /// List the built-in workloads and their parameters.
    Workloads,
    /// Measure a device's maximum read throughput (flashy's cap) and store it.
    Calibrate(calibrate::CalibrateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Run(a) => return runcmd::run(a).map_or_else(error_exit, ExitCode::from),
        Cmd::Record(a) => return recordcmd::run(a).map_or_else(error_exit, ExitCode::from),
        Cmd::Sim(a) => simcmd::sim(a),
        Cmd::Compare(a) => simcmd::compare(a),
        Cmd::Mrc(a) => mrccmd::run(a),
        Cmd::Trace { cmd } => tracecmd::run(cmd),
        Cmd::Stat(a) => cachecmd::run(outrider_live::cachetool::Action::Stat, a),
        Cmd::Warm(a) => cachecmd::run(outrider_live::cachetool::Action::Warm, a),
        Cmd::Evict(a) => cachecmd::run(outrider_live::cachetool::Action::Evict, a),
        Cmd::Calibrate(a) => calibrate::run(a),
        Cmd::Policies => {
            for e in outrider_core::policies::REGISTRY {
                print!(
                    "{}",
                    outrider_core::policy_help(e.name).expect("registered")
                );
                println!();
            }
            Ok(())
        }
        Cmd::Workloads => {
            for name in outrider_trace::workloads::WORKLOAD_NAMES {
                match outrider_trace::workloads::workload_help(name) {
                    Ok(h) => println!("{h}"),
                    Err(e) => println!("{name}: {e}"),
                }
            }
            Ok(())
        }
    };
    result.map_or_else(error_exit, |()| ExitCode::SUCCESS)
}

/// One of our own errors: its message on stderr, exit code 2 for bad input
/// ([`Usage`]), 1 for anything else.
fn error_exit(e: anyhow::Error) -> ExitCode {
    eprintln!("outrider: {e:#}");
    if e.downcast_ref::<Usage>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}
