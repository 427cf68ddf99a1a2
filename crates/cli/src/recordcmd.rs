//! `outrider record [--out TRACE] [--level file|block] -- CMD [ARGS...]`:
//! run a program under tracing and write what it read as a native trace
//! that `outrider sim --trace TRACE` replays.

use crate::usage;
use outrider_live::record::{Level, Recorder};
use outrider_live::session::{exit_code, run_traced};
use outrider_live::source::SourceChoice;
use outrider_live::tracefs::InstanceOptions;
use std::ffi::OsString;
use std::path::PathBuf;

/// `outrider record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Output trace (native format, `.otr`).
    #[arg(long, default_value = "outrider.otr")]
    pub out: PathBuf,
    /// file: the program's reads and faults with file and physical
    /// offsets; block: the device requests it submitted.
    #[arg(long, default_value = "file")]
    pub level: String,
    /// Most records kept (40 bytes each in memory); later ones are counted
    /// and dropped.
    #[arg(long, default_value_t = 50_000_000)]
    pub max_records: usize,
    /// Compress the record section with zstd (as `trace convert --zstd`).
    #[arg(long)]
    pub zstd: bool,
    /// Under sudo, run the program as root instead of as the invoking
    /// user (SUDO_UID/SUDO_GID).
    #[arg(long)]
    pub as_root: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub cmd: Vec<OsString>,
}

/// Run it; returns the child's exit code. Our own errors are returned
/// (the caller prints them and exits 2 for bad input, 1 otherwise).
pub fn run(a: RecordArgs) -> anyhow::Result<u8> {
    let level = match a.level.as_str() {
        "file" => Level::File,
        "block" => Level::Block,
        other => {
            return Err(usage(format!(
                "--level '{other}': expected 'file' or 'block'"
            )))
        }
    };
    outrider_sys::launch::keep_root(a.as_root);
    crate::outfile::check_writable(&a.out)?;
    let mut rec = Recorder::new(level, a.max_records);
    let out = run_traced(
        &a.cmd,
        &InstanceOptions {
            follow_pid: Some(std::process::id()),
            ..InstanceOptions::default()
        },
        SourceChoice::Auto,
        &mut rec,
    );
    let out = match out {
        Ok(out) => out,
        Err(e) => return Ok(crate::runcmd::cannot_run(&a.cmd, &e)),
    };
    let code = exit_code(&out.status);
    let dropped = rec.dropped;
    let n = rec.len();
    let source = a
        .cmd
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let trace = rec.into_trace(format!("outrider record -- {source}"));
    let files = trace.meta.files.len();
    outrider_trace::write_native(&a.out, &trace, a.zstd).map_err(|e| anyhow::anyhow!("{e}"))?;
    outrider_sys::warnln!(
        "outrider: recorded {n} records ({files} files, {} events read, {} lost{}) to {}",
        out.source.events,
        out.source.lost_events,
        if dropped > 0 {
            format!(", {dropped} dropped past --max-records")
        } else {
            String::new()
        },
        a.out.display()
    );
    if !out.warnings.is_empty() {
        outrider_sys::warnln!(
            "outrider: the trace is incomplete: {}",
            out.warnings.join("; ")
        );
    }
    Ok(code)
}
