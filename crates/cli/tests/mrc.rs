//! `outrider mrc`: one pass of LRU stack distances must give, at every
//! size, exactly what a single-size LRU simulation without prefetching
//! gives on the same 4 KiB page stream.

mod common;
use common::{outrider, sample, stderr, stdout};

fn json_lines(o: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", stderr(o));
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn mrc_agrees_exactly_with_single_size_lru_runs() {
    let sizes = ["1%", "5%", "10%", "37%", "100%", "64MiB"];
    for name in [
        "cloudPhysicsIO.csv",
        "mqsim_tpcc-small.trace",
        "lirs_multi2.trc",
    ] {
        let trace = sample(name).display().to_string();
        let curve = json_lines(&outrider(&[
            "mrc",
            &trace,
            "--json",
            "--sizes",
            &sizes.join(","),
        ]));
        assert_eq!(curve.len(), sizes.len());
        for (size, point) in sizes.iter().zip(&curve) {
            let sim = json_lines(&outrider(&[
                "sim",
                "--policy",
                "none",
                "--device",
                "none",
                "--split-pages",
                "--cache",
                size,
                "--trace",
                &trace,
                "--json",
            ]));
            let sim = &sim[0];
            assert_eq!(point["cache_bytes"], sim["cache_bytes"], "{name} {size}");
            assert_eq!(point["accesses"], sim["demand_blocks"], "{name} {size}");
            assert_eq!(point["hit_ratio"], sim["hit_ratio"], "{name} {size}");
        }
        // The curve never falls as the cache grows.
        let ratios: Vec<f64> = curve[..5]
            .iter()
            .map(|p| p["hit_ratio"].as_f64().unwrap())
            .collect();
        assert!(
            ratios.windows(2).all(|w| w[0] <= w[1]),
            "{name}: {ratios:?}"
        );
    }
}

#[test]
fn mrc_prints_a_hundred_points_by_default_and_rejects_bad_sizes() {
    let trace = sample("lirs_cs.trc").display().to_string();
    let curve = json_lines(&outrider(&["mrc", &trace, "--json"]));
    assert_eq!(curve.len(), 100);
    // 100% of the 1,409 distinct blocks holds every block: only cold misses.
    let last = &curve[99];
    assert_eq!(last["cache_blocks"], 1_409);
    assert_eq!(last["hits"].as_u64().unwrap(), 6_781 - 1_409);
    let o = outrider(&["mrc", &trace, "--sizes", "12 parsecs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sizes"), "{}", stderr(&o));
}
