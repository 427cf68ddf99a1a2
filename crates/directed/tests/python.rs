//! Run the Python ctypes wrapper's test (`python/test_outrider_directed.py`)
//! against the freshly built `liboutrider_directed.so`, when `python3` is present.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn python_wrapper_test_passes() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 not found: Python wrapper test skipped");
        return;
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = manifest.join("../../python/test_outrider_directed.py");
    // The test runs from target/<profile>/deps, where cargo puts the cdylib.
    let exe = std::env::current_exe().unwrap();
    let so = exe.parent().unwrap().join("liboutrider_directed.so");
    assert!(
        so.exists(),
        "{so:?} missing: the cdylib is built with the tests"
    );
    let out = Command::new("python3")
        .arg(&script)
        .env("OUTRIDER_LIB", &so)
        .env_remove("OUTRIDER_DIRECTED")
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python test failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("python wrapper ok"));
}
