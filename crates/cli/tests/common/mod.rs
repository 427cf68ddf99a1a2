//! Helpers shared by the command-line test files.
#![allow(dead_code)]

pub mod daemon;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `outrider ARGS`.
pub fn outrider(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(args)
        .output()
        .expect("the outrider binary runs")
}

/// Its standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A shared sample trace (the repository sits beside `shared/`).
pub fn sample(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the repository must sit beside shared/",
        dir.display()
    );
    dir.join(name)
}

/// Every shared sample trace.
pub const SAMPLE_NAMES: [&str; 6] = [
    "cloudPhysicsIO.csv",
    "cloudPhysicsIO.oracleGeneral.bin",
    "mqsim_wsrch-small.trace",
    "mqsim_tpcc-small.trace",
    "lirs_cs.trc",
    "lirs_multi2.trc",
];

/// Do the tests run as root (tracefs, drop_caches, cgroups)?
pub fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The JSON in file `path`.
pub fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A file of `pages` pages at `path`, each page's bytes its number,
/// written to the disk.
pub fn make_file(path: &Path, pages: usize) {
    let data: Vec<u8> = (0..pages * 4096).map(|i| (i / 4096) as u8).collect();
    std::fs::write(path, data).unwrap();
    std::fs::File::open(path).unwrap().sync_all().unwrap();
}
