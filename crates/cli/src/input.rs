//! Turning `--trace`/`--workload` arguments into traces.

use crate::usage;
use outrider_trace::{Format, ReadOptions, Trace};
use std::path::PathBuf;

/// The simulation input: a trace file or built-in workload(s).
#[derive(clap::Args, Clone, Debug)]
pub struct InputArgs {
    /// Trace file to replay (this or --workload).
    #[arg(long, conflicts_with = "workload")]
    pub trace: Option<PathBuf>,
    /// Trace format: auto, native, lcs-csv, oracle, oracle-pages, disksim,
    /// spc, msr, blkparse, lines, strace, or csv:MAPPING (e.g.
    /// csv:time=1:us,op=3,lbn=5,size=4). zstd and gzip files are read
    /// transparently.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Skip malformed trace records (reporting how many) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Built-in workload NAME[:k=v,...] (see `outrider workloads`), or a suite:
    /// paper-suite, paper-suite-large (this or --trace).
    #[arg(long)]
    pub workload: Option<String>,
    /// Split every request into single 4 KiB-page requests (each page one
    /// access, as libCacheSim counts block traces).
    #[arg(long)]
    pub split_pages: bool,
}

/// One named input ready to simulate.
pub struct Named {
    /// What to call it in reports.
    pub name: String,
    /// The trace.
    pub trace: Trace,
}

/// Parse `--format`.
pub fn parse_format(text: &str) -> anyhow::Result<Option<Format>> {
    if text == "auto" {
        return Ok(None);
    }
    Format::from_name(text)
        .map(Some)
        .map_err(|e| usage(e.to_string()))
}

/// The help text when the input asked for it (`--workload NAME:help`).
pub fn help(args: &InputArgs) -> Option<String> {
    let spec = args.workload.as_deref()?;
    if spec.split_once(':').map(|(_, p)| p.trim()) != Some("help") {
        return None;
    }
    match outrider_trace::workloads::generate(spec) {
        Err(outrider_trace::workloads::WorkloadError::Help(text)) => Some(text),
        _ => None,
    }
}

/// Load the inputs named by the arguments (a suite expands to several).
pub fn load(args: &InputArgs) -> anyhow::Result<Vec<Named>> {
    let mut out = Vec::new();
    if let Some(path) = &args.trace {
        let opts = ReadOptions {
            format: parse_format(&args.format)?,
            lenient: args.lenient,
            ..ReadOptions::default()
        };
        let (mut trace, report) =
            outrider_trace::read_trace(path, &opts).map_err(|e| usage(e.to_string()))?;
        // Messages about this input name the file given, not the `source`
        // a native trace carries from where it was made.
        trace.meta.source = path.display().to_string();
        if report.skipped > 0 {
            eprintln!(
                "outrider: {}: skipped {} malformed or unsupported records",
                path.display(),
                report.skipped
            );
        }
        out.push(Named {
            name: path.display().to_string(),
            trace,
        });
    } else if let Some(spec) = &args.workload {
        let specs = outrider_trace::workloads::suite(spec).unwrap_or_else(|| vec![spec.clone()]);
        for s in specs {
            let trace =
                outrider_trace::workloads::generate(&s).map_err(|e| usage(e.to_string()))?;
            out.push(Named { name: s, trace });
        }
    } else {
        return Err(usage(
            "no input: give --trace FILE or --workload NAME (see `outrider workloads`)",
        ));
    }
    if args.split_pages {
        for n in &mut out {
            n.trace = n.trace.split_pages();
        }
    }
    Ok(out)
}
