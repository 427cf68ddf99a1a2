//! `outrider calibrate`: measures, stores, reuses; bad input exits 2.

use std::process::{Command, Output};

fn outrider(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(args)
        .output()
        .expect("the outrider binary runs")
}

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
