//! `outrider calibrate`: measures, stores, reuses; bad input exits 2.

mod common;
use common::*;

use std::process::{Command, Output};

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn measures_once_then_reuses_until_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, vec![7u8; 8 << 20]).unwrap();
    let state = dir.path().join("state");
    let (f, s) = (file.to_str().unwrap(), state.to_str().unwrap());
    let base = [
        "calibrate",
        f,
        "--bytes",
        "4MiB",
        "--block",
        "64KiB",
        "--state-dir",
        s,
        "--json",
    ];
    let first = json(&outrider(&base));
    assert_eq!(first["bytes_read"], 4 << 20);
    assert_eq!(first["reused"], false);
    assert!(first["bytes_per_s"].as_u64().unwrap() > 0);
    let again = json(&outrider(&base));
    assert_eq!(again["reused"], true);
    assert_eq!(again["bytes_per_s"], first["bytes_per_s"]);
    let mut forced = base.to_vec();
    forced.push("--force");
    assert_eq!(json(&outrider(&forced))["reused"], false);
    let stored = std::fs::read_to_string(state.join("calibration.tsv")).unwrap();
    // One line for the path, one for its device (what `run` looks up).
    let lines: Vec<&str> = stored.lines().collect();
    assert_eq!(lines.len(), 2, "{stored}");
    assert!(lines.iter().any(|l| l.starts_with("dev:")), "{stored}");
}

#[test]
fn bad_input_is_a_clear_error_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().to_str().unwrap();
    let o = outrider(&["calibrate", "/no/such/device", "--state-dir", s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/device"));
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let o = outrider(&["calibrate", empty.to_str().unwrap(), "--state-dir", s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 4 KiB"));
    let o = outrider(&["calibrate", empty.to_str().unwrap(), "--block", "1000"]);
    assert_eq!(o.status.code(), Some(2));
}

fn outrider_in(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outrider"))
        .env("OUTRIDER_STATE_DIR", state)
        .args(args)
        .output()
        .expect("the outrider binary runs")
}

const SIM: [&str; 7] = [
    "sim",
    "--policy",
    "none",
    "--workload",
    "seq:size=1MiB",
    "--json",
    "--device",
];

#[test]
fn sim_without_a_calibration_says_to_run_calibrate_and_exits_2() {
    let state = tempfile::tempdir().unwrap();
    let mut args = SIM.to_vec();
    args.push("calibrated");
    let o = outrider_in(state.path(), &args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("outrider calibrate"), "{err}");
    assert!(err.contains("device-model.tsv"), "{err}");
}

/// A stored model (written as calibrate writes it) is what `--device
/// calibrated` simulates: 1 MiB of 4 KiB sequential reads, none
/// prefetched, one at a time = 256 × (100 µs + 4096 B at 409.6 MB/s =
/// 10 µs) = 28.16 ms.
#[test]
fn sim_uses_the_stored_model_most_recent_first_or_by_path() {
    let state = tempfile::tempdir().unwrap();
    let data = state.path().join("data");
    std::fs::write(&data, b"x").unwrap();
    let canon = std::fs::canonicalize(&data).unwrap();
    let lines = format!(
        "dev:8:1\t50000\t409600000\t800000000\t4\t4\t1000\t1\n{}\t100000\t409600000\t800000000\t4\t4\t1000\t2\n",
        canon.display()
    );
    std::fs::write(state.path().join("device-model.tsv"), lines).unwrap();
    let mut args = SIM.to_vec();
    args.push("calibrated");
    let v = json(&outrider_in(state.path(), &args));
    assert_eq!(
        v["device"],
        "calibrated:latency_ns=100000,transfer_bytes_per_s=409600000,bandwidth_bytes_per_s=800000000,depth=4"
    );
    assert!(
        (v["elapsed_s"].as_f64().unwrap() - 0.02816).abs() < 1e-9,
        "{v}"
    );
    let by_path = format!("calibrated:{}", data.display());
    let mut args = SIM.to_vec();
    args.push(&by_path);
    let v = json(&outrider_in(state.path(), &args));
    assert!(v["device"].as_str().unwrap().contains("latency_ns=100000"));
    let missing = format!("calibrated:{}", state.path().join("nope").display());
    let mut args = SIM.to_vec();
    args.push(&missing);
    assert_eq!(outrider_in(state.path(), &args).status.code(), Some(2));
}
