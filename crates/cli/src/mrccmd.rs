//! `outrider mrc`: an LRU miss-ratio curve from one pass of stack distances.

use crate::input::{load, InputArgs};
use crate::simcmd::cache_blocks;
use crate::usage;
use outrider_core::size::ByteSize;
use outrider_core::BLOCK_SIZE;
use outrider_sim::StackDistances;
use std::path::PathBuf;

/// `outrider mrc`.
#[derive(clap::Args, Debug)]
pub struct MrcArgs {
    /// Trace file (zstd and gzip read transparently).
    pub trace: PathBuf,
    /// Trace format (auto detects).
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Skip malformed trace records (reporting how many) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Points on the curve: cache sizes k/N of the distinct blocks for
    /// k = 1..N (N = 100: the sizes of --cache 1% .. --cache 100%).
    #[arg(long, default_value_t = 100)]
    pub points: u32,
    /// Comma-separated cache sizes instead of --points (256MiB, 2GiB, 10%).
    #[arg(long, conflicts_with = "points")]
    pub sizes: Option<String>,
    /// One JSON object per point.
    #[arg(long)]
    pub json: bool,
}

/// One point of the curve.
#[derive(serde::Serialize)]
struct Point<'a> {
    input: &'a str,
    cache_blocks: u64,
    cache_bytes: u64,
    accesses: u64,
    hits: u64,
    hit_ratio: f64,
    miss_ratio: f64,
}

/// Run `outrider mrc`.
pub fn run(a: MrcArgs) -> anyhow::Result<()> {
    if a.points == 0 {
        return Err(usage("--points must be at least 1"));
    }
    let input = InputArgs {
        trace: Some(a.trace.clone()),
        format: a.format.clone(),
        lenient: a.lenient,
        workload: None,
        split_pages: false,
    };
    let named = load(&input)?.pop().expect("one trace");
    let started = std::time::Instant::now();
    let sd = StackDistances::of(&named.trace);
    let secs = started.elapsed().as_secs_f64();
    let distinct = sd.distinct_blocks();
    let sizes: Vec<u64> = match &a.sizes {
        Some(list) => list
            .split(',')
            .map(|s| cache_blocks("--sizes", s.trim(), || distinct))
            .collect::<anyhow::Result<_>>()?,
        None => (1..=a.points)
            .map(|k| {
                let pct = f64::from(k) * 100.0 / f64::from(a.points);
                ((distinct as f64 * pct / 100.0) as u64).max(1)
            })
            .collect(),
    };
    let hits = sd.hits_at(&sizes);
    let points: Vec<Point> = sizes
        .iter()
        .zip(&hits)
        .map(|(&blocks, &h)| {
            let ratio = if sd.accesses() == 0 {
                0.0
            } else {
                h as f64 / sd.accesses() as f64
            };
            Point {
                input: &named.name,
                cache_blocks: blocks,
                cache_bytes: blocks * BLOCK_SIZE,
                accesses: sd.accesses(),
                hits: h,
                hit_ratio: ratio,
                miss_ratio: 1.0 - ratio,
            }
        })
        .collect();
    if a.json {
        for p in &points {
            println!("{}", serde_json::to_string(p)?);
        }
        return Ok(());
    }
    println!(
        "{}  ({} block accesses, {} distinct blocks; LRU stack distances in {secs:.2} s)",
        named.name,
        sd.accesses(),
        distinct
    );
    println!(
        "  {:>12}  {:>10}  {:>9}  {:>10}",
        "cache", "blocks", "hit_ratio", "miss_ratio"
    );
    for p in &points {
        println!(
            "  {:>12}  {:>10}  {:>9.4}  {:>10.4}",
            ByteSize(p.cache_bytes).to_string(),
            p.cache_blocks,
            p.hit_ratio,
            p.miss_ratio
        );
    }
    Ok(())
}
