//! `outrider trace info|convert`.

use crate::input::parse_format;
use crate::usage;
use outrider_trace::{ReadOptions, ReadReport, TraceStats};
use std::path::{Path, PathBuf};

/// Most records `trace convert --repeat` writes (40 GiB in memory).
const MAX_REPEATED_RECORDS: u64 = 1 << 30;

/// Trace subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TraceCmd {
    /// Requests, reads, writes, distinct 4 KiB blocks, footprint, duration,
    /// reuse distances and popularity. zstd and gzip files are read
    /// transparently.
    #[command(after_help = "Examples:\n  \
        outrider trace info ../shared/traces/*.csv ../shared/traces/*.trc\n  \
        outrider trace info --format msr --json hm_0.csv")]
    Info {
        /// Trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Format: auto (detect), native, lcs-csv, oracle, oracle-pages,
        /// disksim, spc, msr, blkparse, lines, strace, or csv:MAPPING for any
        /// delimited text.
        #[arg(long, default_value = "auto")]
        format: String,
        /// Skip malformed records, reporting how many.
        #[arg(long)]
        lenient: bool,
        /// One JSON object per file.
        #[arg(long)]
        json: bool,
    },
    /// Convert a trace to another format (native by default).
    #[command(after_help = "Examples:\n  \
        outrider trace convert ../shared/traces/mqsim_tpcc-small.trace tpcc.otr --zstd\n  \
        outrider trace convert ../shared/traces/cloudPhysicsIO.csv big.otr --split-pages --repeat 9\n  \
        outrider trace convert prog.otr prog.csv --to lcs-csv\n  \
        outrider trace convert ../shared/traces/cloudPhysicsIO.csv pages.bin --split-pages --to oracle-pages")]
    Convert {
        /// Input trace.
        input: PathBuf,
        /// Output file.
        output: PathBuf,
        /// Input format: auto (detect), native, lcs-csv, oracle, oracle-pages,
        /// disksim, spc, msr, blkparse, lines, strace.
        #[arg(long, default_value = "auto")]
        from: String,
        /// Output format: native, lcs-csv, or oracle-pages (libCacheSim's
        /// oracleGeneral with obj_id in 4 KiB pages; needs --split-pages or a
        /// trace of single pages).
        #[arg(long, default_value = "native")]
        to: String,
        /// Compress the native record section with zstd.
        #[arg(long)]
        zstd: bool,
        /// Skip malformed records, reporting how many.
        #[arg(long)]
        lenient: bool,
        /// Split every request into single 4 KiB-page requests first.
        #[arg(long)]
        split_pages: bool,
        /// Write N copies of the trace back to back (each starting 1 s after
        /// the previous one ends), e.g. to build a long benchmark input; at
        /// most 2^30 records in all.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
    },
}

/// Run a trace subcommand.
pub fn run(cmd: TraceCmd) -> anyhow::Result<()> {
    match cmd {
        TraceCmd::Info {
            files,
            format,
            lenient,
            json,
        } => {
            let format = parse_format(&format)?;
            for f in files {
                let (trace, rep) = outrider_trace::read_trace(
                    &f,
                    &ReadOptions {
                        format,
                        lenient,
                        ..ReadOptions::default()
                    },
                )
                .map_err(|e| usage(e.to_string()))?;
                let stats = TraceStats::of(&trace);
                if json {
                    println!("{}", info_json(&f, &rep, &stats));
                } else {
                    println!("{} ({})", f.display(), format_name(&rep));
                    println!("{stats}");
                    if rep.skipped > 0 {
                        println!("  skipped records: {}", rep.skipped);
                    }
                }
            }
            Ok(())
        }
        TraceCmd::Convert {
            input,
            output,
            from,
            to,
            zstd,
            lenient,
            split_pages,
            repeat,
        } => {
            let format = parse_format(&from)?;
            let to = parse_format(&to)?
                .ok_or_else(|| usage("--to: expected a format name, not auto"))?;
            if repeat == 0 {
                return Err(usage("--repeat must be at least 1"));
            }
            let (mut trace, rep) = outrider_trace::read_trace(
                &input,
                &ReadOptions {
                    format,
                    lenient,
                    ..ReadOptions::default()
                },
            )
            .map_err(|e| usage(e.to_string()))?;
            if split_pages {
                trace = trace.split_pages();
            }
            if repeat > 1 {
                trace = repeated(&trace, repeat)?;
            }
            outrider_trace::write_trace(&output, &trace, to, zstd)
                .map_err(|e| usage(e.to_string()))?;
            println!(
                "{} ({}) -> {} ({}): {} requests{}",
                input.display(),
                rep.format.name(),
                output.display(),
                to.name(),
                trace.records.len(),
                if rep.skipped > 0 {
                    format!(", {} skipped", rep.skipped)
                } else {
                    String::new()
                }
            );
            Ok(())
        }
    }
}

/// The format read, with the compression around it (`oracle in zstd`).
fn format_name(rep: &ReadReport) -> String {
    match rep.compression {
        Some(c) => format!("{} in {}", rep.format.name(), c.name()),
        None => rep.format.name().to_string(),
    }
}

/// `trace info --json`: one object per file.
fn info_json(file: &Path, rep: &ReadReport, s: &TraceStats) -> serde_json::Value {
    let (r, p) = (&s.reuse, &s.popularity);
    serde_json::json!({
        "file": file.display().to_string(),
        "format": rep.format.name(),
        "compression": rep.compression.map(|c| c.name()),
        "requests": s.requests,
        "reads": s.reads,
        "writes": s.writes,
        "block_accesses": s.block_accesses,
        "distinct_blocks": s.distinct_blocks,
        "footprint_bytes": s.footprint_bytes,
        "duration_s": s.duration_ns as f64 / 1e9,
        "skipped": rep.skipped,
        "one_hit_blocks": r.one_hit_blocks,
        "reuses": r.reuses,
        "reuse_distance_p50": r.distance_p50,
        "reuse_distance_p90": r.distance_p90,
        "reuse_distance_p99": r.distance_p99,
        "reuse_time_p50_s": r.time_p50_ns as f64 / 1e9,
        "reuse_time_p90_s": r.time_p90_ns as f64 / 1e9,
        "reuse_time_p99_s": r.time_p99_ns as f64 / 1e9,
        "top1_share": p.top1_share,
        "top10_share": p.top10_share,
        "max_block_accesses": p.max_accesses,
        "zipf_alpha": p.zipf_alpha,
    })
}

/// `n` copies of `trace` back to back in time: at most
/// [`MAX_REPEATED_RECORDS`], every time below 2^64 ns.
fn repeated(trace: &outrider_trace::Trace, n: u32) -> anyhow::Result<outrider_trace::Trace> {
    let recs: &[outrider_trace::Record] = &trace.records;
    let total = recs.len() as u64 * u64::from(n);
    if total > MAX_REPEATED_RECORDS {
        return Err(usage(format!(
            "--repeat {n}: {} records × {n} = {total} records, more than the {MAX_REPEATED_RECORDS} allowed",
            recs.len()
        )));
    }
    let first = recs.iter().map(|r| r.time_ns).min().unwrap_or(0);
    let last = recs.iter().map(|r| r.time_ns).max().unwrap_or(0);
    let too_long = || {
        usage(format!(
            "--repeat {n}: {n} copies of a {:.3} s trace, 1 s apart, do not fit in 2^64 ns (584 years)",
            (last - first) as f64 * 1e-9
        ))
    };
    let span = (last - first)
        .checked_add(1_000_000_000)
        .ok_or_else(too_long)?;
    span.checked_mul(u64::from(n - 1))
        .and_then(|t| t.checked_add(last - first))
        .ok_or_else(too_long)?;
    let mut out = Vec::new();
    out.try_reserve_exact(total as usize)
        .map_err(|_| anyhow::anyhow!("--repeat {n}: not enough memory for {total} records"))?;
    for i in 0..u64::from(n) {
        out.extend(recs.iter().map(|r| outrider_trace::Record {
            time_ns: r.time_ns - first + i * span,
            ..*r
        }));
    }
    Ok(outrider_trace::Trace::new(trace.meta.clone(), out))
}
