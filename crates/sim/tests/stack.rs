//! The stack operator (`upper+lower`) inside the simulator: a pass-through
//! lower policy changes nothing, and a lower policy can translate the upper
//! policy's file-page requests to blocks through the driver's layout.

use outrider_core::policies::build_policy;
use outrider_core::policies::stack::Stack;
use outrider_core::{Access, BoxedPolicy, Outcome, Policy, PrefetchRequest, Sink, Target};
use outrider_sim::{simulate, CacheModel, SimConfig};
use outrider_trace::workloads::generate;

fn config() -> SimConfig {
    SimConfig {
        cache_blocks: 4096,
        cache_model: CacheModel::Split,
        device: "hdd".into(),
        runs: 2,
        ..SimConfig::default()
    }
}

fn run(workload: &str, mut policy: BoxedPolicy) -> Vec<(u64, u64, u64, f64)> {
    let trace = generate(workload).unwrap();
    let r = simulate(&trace, &mut policy, "p", &config(), &mut |_| {}).unwrap();
    r.reports
        .iter()
        .map(|r| (r.demand_blocks, r.prefetched_blocks, r.windows, r.elapsed_s))
        .collect()
}

/// Regression guard for the stack operator: `readahead+none` must simulate
/// exactly like `readahead` (same prefetches, windows and modelled time).
#[test]
fn readahead_over_none_simulates_exactly_like_readahead() {
    for w in ["seq", "tree-scan", "interleaved"] {
        let alone = run(w, build_policy("readahead").unwrap());
        let stacked = run(w, build_policy("readahead+none").unwrap());
        assert!(alone[0].1 > 0, "{w}: readahead prefetched nothing");
        assert_eq!(alone, stacked, "{w}");
    }
}

/// Translates every file-page request of the upper policy into block
/// requests through [`Sink::block_of`], page by page.
#[derive(Clone)]
struct ToBlocks;

impl Policy for ToBlocks {
    fn name(&self) -> &str {
        "to-blocks"
    }
    fn on_access(&mut self, _: &Access, _: &Outcome, _: &mut Sink<'_>) {}
    fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
        let Target::File { file, page } = request.target else {
            // Raw-device reads (inode blocks) are already in block space.
            sink.prefetch(request.target, request.blocks, request.window);
            return;
        };
        // Pages past the end of the file have no block (the driver clips
        // such requests too).
        for p in page..page + u64::from(request.blocks) {
            if let Some((dev, lbn)) = sink.block_of(file, p) {
                sink.prefetch(Target::Block { dev, lbn }, 1, request.window);
            }
        }
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[test]
fn lower_policy_translates_file_pages_to_blocks_through_the_layout() {
    let w = "tree-scan";
    let alone = run(w, build_policy("readahead").unwrap());
    let stacked = run(
        w,
        Box::new(Stack::new(
            build_policy("readahead").unwrap(),
            Box::new(ToBlocks),
        )),
    );
    // Same blocks fetched (one request per page instead of one per window,
    // so the modelled time may differ, but not what was read or accounted).
    assert!(alone[0].1 > 0);
    for (a, s) in alone.iter().zip(&stacked) {
        assert_eq!((a.0, a.1, a.2), (s.0, s.1, s.2));
    }
}

/// EPCM §1 / DiskSeen §3.2: file-level prediction above block-level
/// prefetching. On the Andrew-like `build` workload, after training runs the
/// stack prefetches what each part alone prefetches for it: it covers at
/// least as many demand blocks as either part alone.
#[test]
fn epcm_over_diskseen_covers_what_both_cover() {
    let cfg = SimConfig {
        runs: 4,
        ..config()
    };
    let coverage = |spec: &str| {
        let trace = generate("build").unwrap();
        let mut p = build_policy(spec).unwrap();
        let r = simulate(&trace, &mut p, spec, &cfg, &mut |_| {}).unwrap();
        r.reports.last().unwrap().coverage
    };
    let (epcm, diskseen, both) = (
        coverage("epcm"),
        coverage("diskseen"),
        coverage("epcm+diskseen"),
    );
    assert!(epcm > 0.0 && diskseen > 0.0, "{epcm} {diskseen}");
    assert!(
        both >= epcm.max(diskseen),
        "{both} < max({epcm}, {diskseen})"
    );
}
