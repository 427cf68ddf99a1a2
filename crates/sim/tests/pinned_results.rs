//! Pinned simulation results: the cache model's data structures (hash
//! slots, victim prefetching, the slab) are tuned for speed, and such
//! tuning must never change what a simulation computes. These counters
//! were produced by the simulator before that tuning (`outrider sim
//! --json` on the same inputs) and must stay exactly equal: hit blocks,
//! prefetched blocks, windows, mis-prefetched windows, unused prefetches
//! and the modelled time to the nanosecond.

use outrider_core::build_policy;
use outrider_sim::{simulate, CacheModel, SimConfig};
use outrider_trace::{read_trace, Format, ReadOptions};
use std::path::PathBuf;

fn cloud_physics() -> outrider_trace::Trace {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/cloudPhysicsIO.csv");
    assert!(p.exists(), "sample trace {} is missing", p.display());
    let opts = ReadOptions {
        format: Some(Format::LcsCsv),
        ..ReadOptions::default()
    };
    read_trace(&p, &opts).expect("sample reads").0
}

/// (hit, prefetched, windows, mis-prefetched windows, unused, elapsed ns)
fn counters(policy: &str, model: CacheModel, device: &str, cache_blocks: u64) -> [u64; 6] {
    let trace = cloud_physics();
    let cfg = SimConfig {
        cache_blocks,
        cache_model: model,
        device: device.into(),
        ..SimConfig::default()
    };
    let mut p = build_policy(policy).unwrap();
    let res = simulate(&trace, &mut p, policy, &cfg, &mut |_| {}).unwrap();
    let c = &res.counters[0];
    assert_eq!(c.demand_blocks, 1_141_869);
    [
        c.hit_blocks,
        c.prefetched_blocks,
        c.windows,
        c.mis_prefetched_windows,
        c.prefetched_unused_blocks,
        c.elapsed_ns,
    ]
}

#[test]
fn lru_without_prefetching_at_1_percent_is_unchanged() {
    assert_eq!(
        counters("none", CacheModel::Lru, "none", 2692),
        [117_762, 0, 0, 0, 0, 7_200_000_000_000]
    );
}

#[test]
fn lru_obl_on_the_hdd_model_at_10_percent_is_unchanged() {
    assert_eq!(
        counters("obl", CacheModel::Lru, "hdd", 26_921),
        [161_089, 58_815, 58_815, 5_770, 5_770, 7_459_106_031_505]
    );
}

#[test]
fn diskseen_in_the_split_cache_at_10_percent_is_unchanged() {
    assert_eq!(
        counters("diskseen", CacheModel::Split, "hdd", 26_921),
        [219_918, 147_090, 22_725, 3_659, 26_057, 7_313_325_155_393]
    );
}
