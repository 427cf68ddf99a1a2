//! `outrider daemon`'s metadata walk against the real kernel: the
//! directories a launch opens are saved with its launch set and listed
//! at its next launch (`metadata_walk`). Needs root; skipped otherwise.

mod common;

use common::daemon::{
    cold_lock, drop_caches, finished_launch, saved_launch, watching_python, Daemon,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `tree` with `10 * per` directories (`d0/s0` .. `d9/s{per - 1}`), a
/// small file in each.
fn tree_of_dirs(tree: &Path, per: usize) {
    for i in 0..10 {
        for j in 0..per {
            let d = tree.join(format!("d{i}/s{j}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("f"), b"x").unwrap();
        }
    }
}

/// A launch that walks a tree has the directories it opened recorded
/// with its set (those another process opened meanwhile are not), and
/// the next launch's replay lists them beside the set; with
/// `metadata_walk = false`, neither. A short walk starts after the
/// replay's first request, a long one (8 directories under each of the
/// tree's 10) before it.
#[test]
fn the_directories_a_launch_opened_are_walked_at_its_next_launch() {
    for (walk, per) in [(true, 3), (true, 8), (false, 3)] {
        let Some((py, dir, cfg, state)) = watching_python(&format!("metadata_walk = {walk}\n"))
        else {
            return;
        };
        let _cold = cold_lock();
        let (tree, other) = (dir.path().join("tree"), dir.path().join("other"));
        tree_of_dirs(&tree, per);
        tree_of_dirs(&other, 3);
        let d = Daemon::start(&cfg, &state);
        let launch = || {
            drop_caches();
            let script = "import os, sys, time\ntime.sleep(0.3)\n\
                          for _ in os.walk(sys.argv[1]): pass\n";
            let mut c = Command::new(&py)
                .args(["-c", script])
                .arg(&tree)
                .spawn()
                .unwrap();
            // Another process walks another tree meanwhile.
            for e in walkdir(&other) {
                assert!(e.is_dir());
            }
            let pid = c.id();
            assert!(c.wait().unwrap().success());
            saved_launch(&state, pid)
        };
        let first = launch();
        let second = launch();
        drop(d);
        let opened = first["dirs_opened"].as_u64().unwrap();
        let walked = second["replay"]["dirs_walked"].as_u64().unwrap();
        if !walk {
            assert_eq!((opened, walked), (0, 0), "{first}\n{second}");
            continue;
        }
        // The tree's (31 with 3 per directory) and the interpreter's own
        // (its module search path), not the other tree's 41.
        let tree = 10 * per as u64 + 1;
        assert!((tree..tree + 41).contains(&opened), "{first}");
        // Each directory opened listed, and those of the set's files.
        assert!(walked >= opened, "{second}");
        // A walk of fewer than 64 directories (WALK_FIRST_DIRS) starts
        // once the first reorder buffer is asked for, a longer one before.
        let r = &second["replay"];
        let (walk_s, first_s) = (r["walk_started_s"].as_f64(), r["first_request_s"].as_f64());
        let (walk_s, first_s) = (walk_s.unwrap(), first_s.unwrap());
        assert!(walk_s > 0.0 && first_s > 0.0, "{second}");
        assert_eq!(walk_s >= first_s, opened < 64, "{second}");
        assert_eq!(opened < 64, per == 3, "{first}");
        assert!(
            second["replay"]["files_walked"].as_u64() > Some(0),
            "{second}"
        );
    }
}

/// A launch seen opening its directories only in part (the file system
/// is marked once a launch is seen to read from storage, here before
/// its walk) saves with its set the directories of the set before it
/// too, when it ran with the same roots; with other roots, its own only.
#[test]
fn a_launch_seen_in_part_keeps_the_directories_of_the_set_before() {
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    let _cold = cold_lock();
    let (tree, other) = (dir.path().join("tree"), dir.path().join("other"));
    tree_of_dirs(&tree, 3);
    tree_of_dirs(&other, 3);
    let d = Daemon::start(&cfg, &state);
    // Walks `root`, or with `only`, that directory of it.
    let launch = |root: &Path, only: &str| {
        drop_caches();
        let script = "import os, sys, time\ntime.sleep(0.3)\n\
                      top = os.path.join(sys.argv[1], os.environ['ONLY'])\n\
                      for _ in os.walk(top): pass\n";
        let mut c = Command::new(&py)
            .args(["-c", script])
            .arg(root)
            .env("ONLY", only)
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(c.wait().unwrap().success());
        saved_launch(&state, pid)
    };
    let whole = launch(&tree, "");
    let part = launch(&tree, "d0");
    let elsewhere = launch(&other, "d0");
    drop(d);
    let n = |l: &serde_json::Value, k: &str| l[k].as_u64().unwrap();
    let opened = n(&whole, "dirs_opened");
    assert!(opened >= 31, "{whole}");
    assert!(n(&part, "dirs_opened") < opened, "{part}");
    assert!(n(&part, "dirs_saved") >= opened, "{whole}\n{part}");
    let own = n(&elsewhere, "dirs_opened");
    assert_eq!(n(&elsewhere, "dirs_saved"), own, "{elsewhere}");
}

/// Whether the daemon `pid`'s fanotify group holds a file-system mark
/// (its `fdinfo` lists one `fanotify sdev:` line per mark).
fn holds_a_mark(pid: u32) -> bool {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap();
    fds.flatten().any(|fd| {
        let fanotify =
            std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("fanotify"));
        let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
        fanotify && std::fs::read_to_string(info).is_ok_and(|t| t.contains("fanotify sdev:"))
    })
}

/// Whether `pred` holds within `secs` seconds (looked at every 20 ms).
fn within(secs: f64, mut pred: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    while std::time::Instant::now() < end {
        if pred() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pred()
}

/// The file system is marked only while a launch records: not with none,
/// from a watched launch's exec to the end of its window, not after; not
/// for the window of a launch whose replay found its set in memory; not
/// once a launch's launcher exited.
#[test]
fn the_file_system_is_marked_only_while_a_launch_records() {
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    // The other test's daemon watches python too: one at a time.
    let _one = cold_lock();
    let d = Daemon::start(&cfg, &state);
    assert!(
        within(3.0, || !holds_a_mark(d.pid())),
        "marked with no launch"
    );
    // It reads 16 MiB first: a launch is found in memory by its own first
    // MiB (the replay's EVIDENCE_PAGES), which python's start alone may
    // not read in time.
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 16 << 20]).unwrap();
    let script = "import sys, time; open(sys.argv[1], 'rb').read(); time.sleep(2.5)";
    let sleeper = || {
        Command::new(&py)
            .args(["-c", script])
            .arg(&data)
            .spawn()
            .unwrap()
    };
    drop_caches();
    let mut c = sleeper();
    assert!(
        within(0.7, || holds_a_mark(d.pid())),
        "not marked in a launch"
    );
    assert!(c.wait().unwrap().success());
    saved_launch(&state, c.id());
    // The window: 3 s from the exec (common::daemon::write_config).
    assert!(
        within(5.0, || !holds_a_mark(d.pid())),
        "marked after the window"
    );
    // Its set is in memory now: the next launch's replay finds it there
    // and records nothing, so the mark goes well inside its window. The
    // page cache here loses pages in the background (DAMON): up to three
    // tries for a launch found in memory.
    let found = (0..3).find_map(|_| {
        let mut c = sleeper();
        let unmarked = within(1.5, || !holds_a_mark(d.pid()));
        let running = c.try_wait().unwrap().is_none();
        assert!(c.wait().unwrap().success());
        let l = finished_launch(&state, c.id());
        (l["hot"] == true).then_some((unmarked, running, l))
    });
    let (unmarked, running, l) = found.expect("one of three launches found its set in memory");
    assert!(
        unmarked && running,
        "marked through a launch found in memory: {l}"
    );
    // A new application's launch (`-B -c`: another shape of arguments),
    // cold, records, but only while its launcher runs: the mark goes at
    // its exit, well inside its window. (In memory, it would follow the
    // first application's set, in memory, and record nothing.)
    drop_caches();
    let mut c = (Command::new(&py).args(["-B", "-c", "import time; time.sleep(1)"]))
        .spawn()
        .unwrap();
    assert!(
        within(0.8, || holds_a_mark(d.pid())),
        "not marked in a launch"
    );
    assert!(c.wait().unwrap().success());
    let exited = std::time::Instant::now();
    assert!(
        within(1.5, || !holds_a_mark(d.pid())),
        "marked after the launcher exited"
    );
    assert!(exited.elapsed().as_secs_f64() < 1.5);
    drop(d);
}

/// A launch with no set of its own, reading from memory, never holds the
/// mark: it is not seen to read from storage (its reads stay held, none
/// committed), so it records no directories, and every open and read on
/// the file system would pay the mark for nothing.
#[test]
fn a_new_application_reading_from_memory_is_never_marked() {
    let Some((py, _dir, cfg, state)) = watching_python("") else {
        return;
    };
    let _one = cold_lock();
    let script = "import os, time\nfor _ in range(20):\n    os.listdir('/usr/lib')\n    \
                  time.sleep(0.05)\n";
    let run = || Command::new(&py).args(["-c", script]).spawn().unwrap();
    // The interpreter's files in memory, before the daemon: no set is
    // saved that this launch could follow.
    assert!(run().wait().unwrap().success());
    let d = Daemon::start(&cfg, &state);
    assert!(
        within(3.0, || !holds_a_mark(d.pid())),
        "marked with no launch"
    );
    let mut c = run();
    let mut marked = 0;
    while c.try_wait().unwrap().is_none() {
        marked += holds_a_mark(d.pid()) as u32;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let l = finished_launch(&state, c.id());
    drop(d);
    assert_eq!(l["known"], false, "{l}");
    assert!(
        l["missed_pages"].as_u64() < Some(256),
        "not from memory: {l}"
    );
    assert_eq!(marked, 0, "marked in a launch from memory: {l}");
}

/// Every directory under `root`, itself included, each opened and listed.
fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let subdirs: Vec<PathBuf> = std::fs::read_dir(&out[i])
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        out.extend(subdirs);
        i += 1;
    }
    out
}
