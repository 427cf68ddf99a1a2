//! `outrider sim --history DB`: the model learned in one process is used by
//! the next; a bad store is a warning (exit 0), never a failure.

use std::process::Command;

fn sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_outrider"))
        .arg("sim")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn prefetched(json: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    v["prefetched_blocks"].as_u64().unwrap()
}

#[test]
fn history_carries_the_model_to_the_next_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let base = ["--workload", "build", "--policy", "epcm", "--json"];
    // Fresh: a first run predicts nothing.
    let (rc, out, _) = sim(&base);
    assert_eq!(rc, 0);
    assert_eq!(prefetched(&out), 0);
    // Train once into the store, then a new process starts from it.
    let (rc, _, err) = sim(&[&base[..], &["--history", db]].concat());
    assert_eq!((rc, err.as_str()), (0, ""));
    let (rc, out, _) = sim(&[&base[..], &["--history", db]].concat());
    assert_eq!(rc, 0);
    assert!(prefetched(&out) > 0, "{out}");
    // Another key has no history.
    let (_, out, _) = sim(&[&base[..], &["--history", db, "--history-key", "other"]].concat());
    assert_eq!(prefetched(&out), 0);
}

#[test]
fn a_bad_store_is_a_warning_and_a_fresh_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("junk.db");
    std::fs::write(&db, "not a database at all, definitely not SQLite........").unwrap();
    let (rc, out, err) = sim(&[
        "--workload",
        "build",
        "--policy",
        "epcm",
        "--json",
        "--history",
        db.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0);
    assert!(err.contains("warning") && err.contains("junk.db"), "{err}");
    assert_eq!(prefetched(&out), 0);
}
