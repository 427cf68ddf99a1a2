//! Agreement with a peer simulator: outrider's `lru` cache model with the
//! `none` and `obl` policies must reproduce libCacheSim's LRU and LRU+OBL
//! miss ratios on the same page stream.
//!
//! Setup (issue "Foundation", Done when): `cloudPhysicsIO.csv` with every
//! request split into 4 KiB pages (all operations, each page one access),
//! cache sizes of 1% and 10% of the distinct pages. libCacheSim's cachesim
//! measured miss ratios of 0.897 / 0.874 (none / OBL) at 1% and
//! 0.236 / 0.225 at 10%. Time plays no part in libCacheSim, so the device
//! is the instantaneous `none` model: a prefetch is resident before the
//! next access, as in libCacheSim.

use outrider_core::build_policy;
use outrider_sim::{simulate, CacheModel, SimConfig};
use outrider_trace::{read_trace, Format, ReadOptions};
use std::collections::HashSet;
use std::path::PathBuf;

fn sample(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(name);
    assert!(
        p.exists(),
        "sample trace {} is missing: the repository must sit beside shared/",
        p.display()
    );
    p
}

fn miss_ratio(policy: &str, fraction: f64) -> f64 {
    let opts = ReadOptions {
        format: Some(Format::LcsCsv),
        ..ReadOptions::default()
    };
    let (trace, _) = read_trace(&sample("cloudPhysicsIO.csv"), &opts).expect("sample reads");
    let pages = trace.split_pages();
    let distinct: HashSet<u64> = pages.records.iter().map(|r| r.first_block()).collect();
    let cfg = SimConfig {
        cache_blocks: (distinct.len() as f64 * fraction) as u64,
        cache_model: CacheModel::Lru,
        device: "none".into(),
        ..SimConfig::default()
    };
    let mut p = build_policy(policy).unwrap();
    let res = simulate(&pages, &mut p, policy, &cfg, &mut |_| {}).unwrap();
    let r = &res.reports[0];
    assert_eq!(r.demand_blocks, pages.records.len() as u64);
    1.0 - r.hit_ratio
}

#[test]
fn lru_matches_libcachesim_at_1_and_10_percent() {
    let (m1, m10) = (miss_ratio("none", 0.01), miss_ratio("none", 0.10));
    assert!(
        (m1 - 0.897).abs() <= 0.005,
        "LRU at 1%: outrider {m1:.4}, libCacheSim 0.897"
    );
    assert!(
        (m10 - 0.874).abs() <= 0.005,
        "LRU at 10%: outrider {m10:.4}, libCacheSim 0.874"
    );
}

#[test]
fn lru_obl_matches_libcachesim_at_1_and_10_percent() {
    let (m1, m10) = (miss_ratio("obl", 0.01), miss_ratio("obl", 0.10));
    assert!(
        (m1 - 0.236).abs() <= 0.005,
        "LRU+OBL at 1%: outrider {m1:.4}, libCacheSim 0.236"
    );
    assert!(
        (m10 - 0.225).abs() <= 0.005,
        "LRU+OBL at 10%: outrider {m10:.4}, libCacheSim 0.225"
    );
}
