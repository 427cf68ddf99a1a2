//! `outrider run`, `record`, `stat|warm|evict` against the real kernel.
//! Tracing needs root; without it these tests only check what does not
//! (argument errors, the exit code passed through with prefetching
//! disabled).

mod common;
use common::daemon::cold_lock;
use common::*;

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

/// No tracing instance named `pid_prefix...` exists, or it disappears
/// within 2 s (`outrider run` removes it from a detached process).
fn no_instance_of(pid_prefix: &str) -> bool {
    for _ in 0..200 {
        let Ok(rd) = std::fs::read_dir("/sys/kernel/tracing/instances") else {
            return true;
        };
        if rd
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(pid_prefix))
        {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// The traced program's exit code reaches our caller unchanged, also when
/// it is killed by a signal (128 + signal, as a shell reports it).
#[test]
fn run_passes_the_exit_code_through() {
    let o = outrider(&["run", "-q", "--no-history", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]);
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
}

#[test]
fn run_argument_errors_exit_2_with_a_message() {
    let o = outrider(&["run", "--policy", "nosuch", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown policy 'nosuch'"),
        "{}",
        stderr(&o)
    );
    let o = outrider(&["run", "--budget", "1.5", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("fraction must be in (0, 1]"),
        "{}",
        stderr(&o)
    );
    // Not found: 127, as env and timeout report it.
    let o = outrider(&["run", "--no-history", "--", "/nonexistent/program"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(
        stderr(&o).contains("cannot run /nonexistent/program"),
        "{}",
        stderr(&o)
    );
    let o = outrider(&["record", "--level", "page", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected 'file' or 'block'"),
        "{}",
        stderr(&o)
    );
}

/// Wait until the background history save of `db` is done: it holds the
/// store's lock (`<db>.lock`) until then.
fn wait_for_save(db: &Path) {
    let lock = std::fs::File::open(format!("{}.lock", db.display())).unwrap();
    // SAFETY: flock on a descriptor we own; released when it is closed.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
}

/// A backward reader under `--policy stride`: after eviction, outrider
/// prefetches below the reader and the program's reads use those pages.
/// Asserts counts, not time: prefetched > 0, used > 0, exit 0, no lost
/// events, instance removed.
#[test]
fn run_stride_prefetches_for_a_backward_reader() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 2048); // 8 MiB
    let fs = f.display().to_string();
    let o = outrider(&["evict", &fs]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = dir.path().join("run.json");
    // One process reading 4 KiB blocks from the end, started through sh
    // so that the reader is a forked child of the traced root.
    let script = format!(
        "python3 -c \"import os\nfd = os.open('{fs}', os.O_RDONLY)\nfor b in range(2047, -1, -1): os.pread(fd, 4096, b * 4096)\""
    );
    let child = Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args([
            "run",
            "--no-history",
            "--policy",
            "stride",
            "--json-file",
            &json.display().to_string(),
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &v["stats"];
    assert_eq!(v["policy"], "stride");
    assert_eq!(v["lost_events"], 0, "{v}");
    // python3 is a child of sh: followed through the fork event.
    assert!(v["tasks"].as_u64().unwrap() > 1, "{v}");
    assert!(s["demand_pages"].as_u64().unwrap() >= 2048, "{v}");
    assert!(s["prefetched_pages"].as_u64().unwrap() > 0, "{v}");
    assert!(s["used_pages"].as_u64().unwrap() > 0, "{v}");
}

/// record writes a native trace whose records are the program's reads of
/// the file; `outrider trace info` reads it back.
#[test]
fn record_writes_a_trace_sim_can_read() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 64);
    let out = dir.path().join("t.trace");
    let o = outrider(&[
        "record",
        "--out",
        &out.display().to_string(),
        "--",
        "cat",
        &f.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = outrider(&["trace", "info", &out.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("reads:"), "{text}");
    let o = outrider(&[
        "sim",
        "--policy",
        "stride",
        "--trace",
        &out.display().to_string(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A read asking for more than the file holds is recorded as what the
/// file holds: 20 one-page files read by `cat` (128 KiB reads, as grep's
/// 96 KiB buffer on small files) give 20 one-page reads, not 32-page ones.
#[test]
fn record_clips_reads_to_the_file_size() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut args = vec!["record".to_string(), "--out".into()];
    let out = dir.path().join("t.otr");
    args.push(out.display().to_string());
    args.extend(["--".into(), "cat".into()]);
    for i in 0..20 {
        let f = dir.path().join(format!("f{i}"));
        make_file(&f, 1);
        args.push(f.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = outrider(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = outrider(&["trace", "info", &out.display().to_string()]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let blocks: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("block accesses:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("block accesses in {text}"));
    // The 20 data pages and the few that cat's start reads (the loader's
    // 832-byte ELF header reads, clipped too): far below 20 x 32.
    assert!((20..80).contains(&blocks), "{text}");
}

/// stat/warm/evict on a real file: exact page counts.
#[test]
fn stat_warm_evict_json_counts() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 32);
    let fs = f.display().to_string();
    let stat = || -> serde_json::Value {
        let o = outrider(&["stat", "--json", &fs]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert!(outrider(&["evict", &fs]).status.success());
    let v = stat();
    assert_eq!(
        (v["pages"].as_u64(), v["resident_pages"].as_u64()),
        (Some(32), Some(0))
    );
    assert!(outrider(&["warm", &fs]).status.success());
    assert_eq!(stat()["resident_pages"].as_u64(), Some(32));
    // A directory is walked (like vmtouch), no -r needed.
    let o = outrider(&["stat", "--json", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["files"].as_u64(), v["resident_pages"].as_u64()),
        (Some(1), Some(32))
    );
}

/// SIGTERM sent to outrider reaches the program; outrider waits for it,
/// stops its tracing instance (parked for the next run, its pid filter
/// emptied) and passes the status on (128 + 15).
#[test]
fn sigterm_is_forwarded_and_the_instance_stopped() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let child = sleep_under_outrider("tracefs");
    let pid = child.id();
    let mut inst = None;
    for _ in 0..200 {
        inst = instance_following(pid);
        if inst.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let inst = inst.expect("an instance follows outrider's pid");
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(128 + 15));
    let text = |f: &str| std::fs::read_to_string(inst.join(f)).unwrap_or_default();
    assert!(
        !inst.exists() || text("tracing_on").trim() == "0",
        "instance stopped"
    );
    assert!(
        no_instance_of(&format!("outrider-{pid}")),
        "no instance named after it"
    );
}

/// The same with the eBPF source: the status is passed on.
#[test]
fn sigterm_is_forwarded_with_the_ebpf_source() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let child = sleep_under_outrider("ebpf");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(128 + 15));
}

/// `outrider run` of `sleep 30` with this event source, started.
fn sleep_under_outrider(source: &str) -> std::process::Child {
    let args = [
        "run",
        "-q",
        "--no-history",
        "--event-source",
        source,
        "--",
        "sleep",
        "30",
    ];
    Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(args)
        .spawn()
        .unwrap()
}

/// The tracing instance whose pid filter lists `pid`.
fn instance_following(pid: u32) -> Option<std::path::PathBuf> {
    let rd = std::fs::read_dir("/sys/kernel/tracing/instances").ok()?;
    rd.flatten().map(|e| e.path()).find(|p| {
        std::fs::read_to_string(p.join("set_event_pid"))
            .is_ok_and(|t| t.lines().any(|l| l.trim() == pid.to_string()))
    })
}

/// `outrider run` (default policy `auto`) twice on 200 small files read in
/// a fixed random order, cold each time, with one file rewritten between
/// the runs. Run 1 has no history and saves one; run 2 loads it (the
/// rewritten file dropped, the others reopened) and prefetches the files
/// from it before the program reads them. Counts only, no timing.
#[test]
fn run_auto_twice_replays_history() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let tree = dir.path().join("t");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..200 {
        make_file(&tree.join(format!("f{i}")), 4);
    }
    let db = dir.path().join("h.db");
    let script = format!(
        "import random\nn = [f'{}/f{{i}}' for i in range(200)]\nrandom.Random(7).shuffle(n)\nfor p in n:\n    open(p, 'rb').read()",
        tree.display()
    );
    let run = |i: u32, flags: &[&str]| {
        let o = outrider(&["evict", "-r", &tree.display().to_string()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let json = dir.path().join(format!("r{i}.json"));
        let db = db.display().to_string();
        let json_arg = json.display().to_string();
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&[
            "--history",
            &db,
            "--app-key",
            "auto-test",
            "--json-file",
            &json_arg,
            "--",
            "python3",
            "-c",
            &script,
        ]);
        let o = outrider(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json_of(&json);
        assert!(v["disabled"].is_null(), "invariants held: {v}");
        v
    };
    let r1 = run(1, &[]);
    assert_eq!(r1["policy"], "auto");
    assert_eq!(r1["app_key"], "name:auto-test");
    assert_eq!(r1["history_policy_loaded"], false, "{r1}");
    assert!(r1["history_saved_files"].as_u64().unwrap() >= 200, "{r1}");
    // Saved by a background process after outrider exited; run 2, started
    // at once, waits for it through the store's lock.
    assert_eq!(r1["history_save"], "background", "{r1}");
    // One data file changes between the runs, once the history is saved:
    // the files the program read are stamped (size, mtime) by the save.
    wait_for_save(&db);
    make_file(&tree.join("f13"), 5);
    let r2 = run(2, &[]);
    let h = &r2["history"];
    assert_eq!(r2["history_policy_loaded"], true, "{r2}");
    assert_eq!(h["runs_before"], 1, "{r2}");
    assert!(h["files_dropped"].as_u64().unwrap() >= 1, "{r2}");
    assert!(h["files_kept"].as_u64().unwrap() >= 199, "{r2}");
    let s = &r2["stats"];
    // The 199 unchanged files (4 pages each) were requested from history
    // (prefetched, or found cached by then).
    let asked =
        s["prefetched_pages"].as_u64().unwrap() + s["skipped_cached_pages"].as_u64().unwrap();
    assert!(asked >= 199 * 4, "{r2}");
    assert!(s["used_pages"].as_u64().unwrap() > 0, "{r2}");
    assert_eq!(r2["lost_events"], 0, "{r2}");
    // Run 2 walked the history's directory and files ahead of the program
    // (metadata prefetch); run 1 had nothing to walk.
    assert!(r1["metadata_walk"].is_null(), "{r1}");
    let walk = &r2["metadata_walk"];
    assert!(walk["dirs"].as_u64().unwrap() >= 1, "{r2}");
    assert!(walk["stats"].as_u64().unwrap() >= 199, "{r2}");
    // --wait-for-save: saved before exiting, so nobody holds the lock;
    // --no-metadata-walk: no walk.
    let r3 = run(3, &["--wait-for-save", "--no-metadata-walk"]);
    assert_eq!(r3["history_save"], "foreground", "{r3}");
    assert!(r3["metadata_walk"].is_null(), "--no-metadata-walk: {r3}");
    assert_eq!(r3["history"]["runs_before"], 2, "{r3}");
    let lock = std::fs::File::open(format!("{}.lock", db.display())).unwrap();
    // SAFETY: flock on a descriptor we own.
    let free = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&lock),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(free, 0, "no saver left holding the store's lock");
    // Benefit gating: a fresh application starts at full; each run's level
    // is the one the previous run's verdict chose, stored with the history.
    assert_eq!(r1["gate"]["level"], "full", "{r1}");
    assert_eq!(r2["gate"]["level"], r1["gate"]["next"], "{r1}\n{r2}");
    assert_eq!(r3["gate"]["level"], r2["gate"]["next"], "{r2}\n{r3}");
    let used = r2["stats"]["used_pages"].as_u64().unwrap();
    assert_eq!(r2["gate"]["after"]["last"]["used_pages"], used, "{r2}");
    assert!(r2["cpu_per_event_us"].as_f64().unwrap() > 0.0, "{r2}");
    // eBPF where it starts (this machine), else tracefs and the reason.
    let fell_back = r2["event_source"] == "tracefs" && r2["event_source_fallback"].is_string();
    assert!(r2["event_source"] == "ebpf" || fell_back, "{r2}");
}

/// A metadata walk (`find` over 40 directories, no file read): run 1
/// records the directories the program opened (fanotify) and saves them
/// with the history; run 2 lists them ahead of the program. Counts only.
#[test]
fn run_lists_the_directories_its_last_run_opened() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and fanotify");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let tree = dir.path().join("t");
    for i in 0..40 {
        let d = tree.join(format!("d{}/e{i}", i % 5));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("f"), b"x").unwrap();
    }
    let (db, tree_arg) = (dir.path().join("h.db"), tree.display().to_string());
    let run = |i: u32| {
        let json = dir.path().join(format!("r{i}.json"));
        let (db, json_arg) = (db.display().to_string(), json.display().to_string());
        let o = outrider(&[
            "run",
            "--history",
            &db,
            "--app-key",
            "dirs-test",
            "--wait-for-save",
            "--json-file",
            &json_arg,
            "--",
            "find",
            &tree_arg,
            "-name",
            "nothing",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        json_of(&json)
    };
    let r1 = run(1);
    assert!(r1["metadata_walk"].is_null(), "nothing to walk yet: {r1}");
    let r2 = run(2);
    let walk = &r2["metadata_walk"];
    // The tree's root, its 5 d* and 40 e* directories, and the
    // directories of the files `find` itself read (its libraries).
    let files = r2["history"]["files_kept"].as_u64().unwrap();
    let dirs = walk["dirs"].as_u64().unwrap();
    assert!(dirs >= 46 && dirs <= 46 + files, "{r2}");
    assert_eq!(walk["errors"].as_u64(), Some(0), "{r2}");
    assert!(walk["entries"].as_u64().unwrap() >= 5 + 40 + 40, "{r2}");
}

/// Remove a test cgroup, retrying for up to 2 s: outrider's detached
/// tracing-instance remover (forked after outrider joined the cgroup)
/// stays in it for ~0.1 s after outrider exits.
fn remove_cgroup(cg: &Path) {
    for _ in 0..200 {
        if std::fs::remove_dir(cg).is_ok() || !cg.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{} still busy after 2 s", cg.display());
}

/// A new v1 memory cgroup `PREFIX<our pid>` limited to `limit` bytes, or
/// `None` (with a message) without root or the v1 memory controller.
fn memory_cgroup(prefix: &str, limit: u64) -> Option<std::path::PathBuf> {
    let cg_root = Path::new("/sys/fs/cgroup/memory");
    if !is_root() || !cg_root.join("cgroup.procs").exists() {
        eprintln!("skipped: needs root and the cgroup v1 memory controller");
        return None;
    }
    let cg = cg_root.join(format!("{prefix}{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
    Some(cg)
}

/// Memory safety: a program that moves itself into a memory cgroup as it
/// starts (as cgexec does) has outrider follow it there, so prefetching is
/// charged to the program's cgroup and bounded by its limit: outrider joins
/// once, its budget shrinks to a quarter of the cgroup's room, and after a
/// backward read of a file twice the limit, what is resident of that file
/// fits the limit (the prefetches did not escape to the root cgroup).
#[test]
fn run_follows_the_program_into_its_memory_cgroup() {
    let limit: u64 = 32 << 20;
    let Some(cg) = memory_cgroup("outrider-test-", limit) else {
        return;
    };
    // What is resident is measured: no other test may drop caches meanwhile.
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 16384); // 64 MiB: twice the limit
    let fs = f.display().to_string();
    assert!(outrider(&["evict", &fs]).status.success());
    let json = dir.path().join("run.json");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec python3 -c \"import os\nfd = os.open('{fs}', os.O_RDONLY)\nfor b in range(16383, -1, -1): os.pread(fd, 4096, b * 4096)\"",
        cg.display()
    );
    let o = outrider(&[
        "run",
        "--policy",
        "stride",
        "--json-file",
        &json.display().to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stat = outrider(&["stat", "--json", &fs]);
    remove_cgroup(&cg);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["cgroup_joins"], 1, "{v}");
    assert!(v["budget_bytes"].as_u64().unwrap() <= limit / 4, "{v}");
    assert!(v["stats"]["prefetched_pages"].as_u64().unwrap() > 0, "{v}");
    let s: serde_json::Value = serde_json::from_slice(&stat.stdout).unwrap();
    let resident = s["resident_pages"].as_u64().unwrap();
    assert!(
        resident * 4096 <= limit,
        "{resident} pages resident exceed the {limit}-byte limit: {v}"
    );
}

/// Memory safety with history: `auto` replays a recorded history from
/// the program's first instant, before the program moves itself into its
/// memory cgroup. What was brought in before the move was charged to
/// outrider's old cgroup; at the join it is dropped again and fetched
/// anew under the program's cgroup, and the replay's distance ahead
/// shrinks to the new budget. After run 2 (history of run 1), what is
/// resident of the file still fits the limit.
#[test]
fn a_history_replay_started_before_the_cgroup_join_stays_within_the_limit() {
    let limit: u64 = 32 << 20;
    let Some(cg) = memory_cgroup("outrider-test-hist-", limit) else {
        return;
    };
    // What is resident is measured: no other test may drop caches meanwhile.
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 32768); // 128 MiB: four times the limit
    let fs = f.display().to_string();
    let db = dir.path().join("history.db").display().to_string();
    // The shell sleeps before it joins, so the replay is well under way.
    let script = format!(
        "sleep 0.3; echo $$ > {}/cgroup.procs && exec python3 -c \"import os\nfd = os.open('{fs}', os.O_RDONLY)\nfor b in range(32768): os.pread(fd, 4096, b * 4096)\"",
        cg.display()
    );
    let mut runs = Vec::new();
    for run in 1..=2 {
        assert!(outrider(&["evict", &fs]).status.success());
        let json = dir.path().join(format!("run{run}.json"));
        let o = outrider(&[
            "run",
            "--history",
            &db,
            "--json-file",
            &json.display().to_string(),
            "--",
            "sh",
            "-c",
            &script,
        ]);
        let stat = outrider(&["stat", "--json", &fs]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let s: serde_json::Value = serde_json::from_slice(&stat.stdout).unwrap();
        runs.push((v, s["resident_pages"].as_u64().unwrap()));
    }
    remove_cgroup(&cg);
    let (v2, resident2) = &runs[1];
    assert_eq!(v2["cgroup_joins"], 1, "{v2}");
    // The replay ran before the join, was dropped at it and went on after.
    assert!(v2["stats"]["recharged_pages"].as_u64().unwrap() > 0, "{v2}");
    assert!(v2["stats"]["used_pages"].as_u64().unwrap() > 0, "{v2}");
    for (v, resident) in &runs {
        assert!(
            resident * 4096 <= limit,
            "{resident} pages resident exceed the {limit}-byte limit: {v}"
        );
    }
    assert!(*resident2 > 0);
}

/// Read-only: every descriptor outrider holds on the
/// traced program's file is `O_RDONLY|O_CLOEXEC|O_NOATIME` (root may use
/// O_NOATIME), seen from outside in `/proc/<outrider>/fdinfo` while the
/// program runs — not just what the open helper asks for.
#[test]
fn run_holds_the_programs_files_read_only_close_on_exec() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    make_file(&f, 256);
    let fs = f.display().to_string();
    let script = format!(
        "python3 -c \"import os, time\nfd = os.open('{fs}', os.O_RDONLY)\nfor b in range(255, -1, -1): os.pread(fd, 4096, b * 4096)\ntime.sleep(2)\""
    );
    let child = Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(["run", "-q", "--policy", "stride", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut flags = Vec::new();
    for _ in 0..300 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            break;
        };
        for e in rd.flatten() {
            if std::fs::read_link(e.path()).ok().as_deref() == Some(f.as_path()) {
                let info = std::fs::read_to_string(format!(
                    "/proc/{pid}/fdinfo/{}",
                    e.file_name().to_string_lossy()
                ))
                .unwrap_or_default();
                if let Some(l) = info.lines().find(|l| l.starts_with("flags:")) {
                    flags.push(i32::from_str_radix(l[6..].trim(), 8).unwrap());
                }
            }
        }
        if !flags.is_empty() {
            break;
        }
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!flags.is_empty(), "outrider opened the program's file");
    for fl in flags {
        assert_eq!(fl & libc::O_ACCMODE, libc::O_RDONLY, "flags {fl:o}");
        assert_eq!(fl & libc::O_CLOEXEC, libc::O_CLOEXEC, "flags {fl:o}");
        assert_eq!(fl & libc::O_NOATIME, libc::O_NOATIME, "flags {fl:o}");
    }
}
