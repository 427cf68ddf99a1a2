//! Compile `examples/c/scan.c` against `include/outrider.h` and
//! `liboutrider_directed.so` with the system C compiler and run it.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn c_example_compiles_links_and_runs() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let include = manifest.join("../../include");
    // The test runs from target/<profile>/deps, where cargo also puts the
    // freshly built cdylib (target/<profile>/liboutrider_directed.so is only
    // refreshed by `cargo build`).
    let exe = std::env::current_exe().unwrap();
    let libdir = exe.parent().unwrap().to_path_buf();
    let so = libdir.join("liboutrider_directed.so");
    assert!(
        so.exists(),
        "{so:?} missing: the cdylib is built with the tests"
    );
    // The library names itself, so a program linked against it depends on
    // `liboutrider_directed.so`, not on a path (where readelf is installed).
    if let Ok(elf) = Command::new("readelf").arg("-d").arg(&so).output() {
        let dynamic = String::from_utf8_lossy(&elf.stdout);
        assert!(
            dynamic.contains("(SONAME)") && dynamic.contains("[liboutrider_directed.so]"),
            "{dynamic}"
        );
    }
    let dir = std::env::temp_dir().join(format!("outrider-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("scan");
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(manifest.join("examples/c/scan.c"))
        .arg("-L")
        .arg(&libdir)
        .args(["-loutrider_directed", "-o"])
        .arg(&bin)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = dir.join("data");
    std::fs::write(&data, vec![3u8; 512 * 4096]).unwrap();
    let run = Command::new(&bin)
        .arg(&data)
        .arg("512")
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        run.status.success(),
        "scan failed: {stdout} {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("pages=512 "), "{stdout}");
    // Two strays: the early read of the last page (the callback restarts
    // the list there), then the next planned page, no longer on that list
    // (the callback restarts it at that page).
    assert!(stdout.contains("stray_calls=2 "), "{stdout}");
}
