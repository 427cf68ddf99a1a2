//! Run one policy over a *sequence* of workloads, keeping its learned
//! history between them and emptying the cache before each: DiskSeen §4.5
//! Table I (grep and diff alternating over shared data, each leaving
//! history the other may match).
//!
//! ```text
//! cargo run --release -p outrider-sim --example diskseen_history -- \
//!     POLICY CACHE DEVICE CACHE_MODEL SPEC [SPEC...]
//! ```
//!
//! Prints one JSON object per step: `step`, `workload`, `elapsed_s`,
//! `prefetch_accuracy`, `hit_ratio`, `prefetched_blocks`.

use outrider_core::policies::build_policy;
use outrider_core::size::ByteSize;
use outrider_sim::{simulate, CacheModel, SimConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: diskseen_history POLICY CACHE DEVICE CACHE_MODEL SPEC [SPEC...]");
        return ExitCode::from(2);
    }
    let mut policy = match build_policy(&args[0]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("policy '{}': {e}", args[0]);
            return ExitCode::from(2);
        }
    };
    let cache: ByteSize = match args[1].parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cache '{}': {e}", args[1]);
            return ExitCode::from(2);
        }
    };
    let model = match CacheModel::parse(&args[3]) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let cfg = SimConfig {
        cache_blocks: cache.0 / outrider_core::BLOCK_SIZE,
        cache_model: model,
        device: args[2].clone(),
        runs: 1,
        ..SimConfig::default()
    };
    for (step, spec) in args[4..].iter().enumerate() {
        let trace = match outrider_trace::workloads::generate(spec) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("workload '{spec}': {e}");
                return ExitCode::from(2);
            }
        };
        let r = match simulate(&trace, &mut policy, &args[0], &cfg, &mut |_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let rep = &r.reports[0];
        println!(
            "{{\"step\":{},\"workload\":\"{}\",\"elapsed_s\":{},\"prefetch_accuracy\":{},\"hit_ratio\":{},\"prefetched_blocks\":{}}}",
            step + 1,
            spec,
            rep.elapsed_s,
            rep.prefetch_accuracy,
            rep.hit_ratio,
            rep.prefetched_blocks
        );
    }
    ExitCode::SUCCESS
}
