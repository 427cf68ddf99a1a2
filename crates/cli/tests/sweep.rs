//! `outrider sweep`: a TOML grid with flags on top, the output files, the
//! rows matching `outrider sim --json`, resuming, bad input exits 2.

mod common;
use common::*;

use std::process::Output;

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_toml_grid_gives_one_row_per_cell_with_the_sim_metrics_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("g.toml");
    std::fs::write(
        &grid,
        r#"
        workloads = ["seq:size=8MiB", "reversed:size=8MiB"]
        policies = ["none", "diskseen"]
        cache = ["1MiB"]
        [params.diskseen]
        k = [4, 8]
        "#,
    )
    .unwrap();
    let out = dir.path().join("r.parquet");
    let (g, o) = (grid.to_str().unwrap(), out.to_str().unwrap());
    let text = ok(&outrider(&["sweep", g, "--device", "ssd", "--out", o]));
    assert!(text.starts_with("6 cells: 6 run, 0 already"), "{text}");
    assert!(out.exists());
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(csv.lines().count(), 7);

    // The sweep's row for a cell holds what `sim --json` prints for it.
    let sim = ok(&outrider(&[
        "sim",
        "--policy",
        "diskseen:k=8",
        "--workload",
        "reversed:size=8MiB",
        "--cache",
        "1MiB",
        "--device",
        "ssd",
        "--json",
    ]));
    let sim: serde_json::Value = serde_json::from_str(&sim).unwrap();
    let line = csv
        .lines()
        .find(|l| l.starts_with("reversed:size=8MiB|diskseen:k=8|"))
        .expect("the cell's row");
    let row: std::collections::HashMap<&str, &str> =
        header.iter().copied().zip(line.split(',')).collect();
    for m in [
        "hit_ratio",
        "coverage",
        "cost",
        "elapsed_s",
        "io_wait_s",
        "lead_time",
    ] {
        let want = sim[m].as_f64().unwrap();
        assert_eq!(row[m].parse::<f64>().unwrap(), want, "{m}");
    }
    assert_eq!(row["device"], "ssd");

    // Again with one more cache size: only the new cells run.
    let text = ok(&outrider(&[
        "sweep",
        g,
        "--device",
        "ssd",
        "--cache",
        "1MiB,64MiB",
        "--out",
        o,
    ]));
    assert!(text.starts_with("12 cells: 6 run, 6 already"), "{text}");
}

#[test]
fn a_bad_grid_exits_2_naming_the_mistake() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("bad.toml");
    std::fs::write(&grid, "workloads = [\"seq\"]\npolices = [\"none\"]\n").unwrap();
    let o = outrider(&["sweep", grid.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml") && err.contains("polices"), "{err}");
    for args in [
        &["sweep", "--workload", "seq", "--cache", "lots"][..],
        &["sweep", "--workload", "seq", "--param", "diskseen"],
        &["sweep", "--workload", "seq", "--engine", "spark"],
    ] {
        let o = outrider(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}
