//! `outrider daemon` against the real kernel, over process trees: a
//! launch holds what the launches it spawned read, ends once its tree
//! is gone, and its replay goes on while a program it started runs; a
//! program with no set of its own follows another application's set
//! once it reads that set's files in order. Tracing needs root: without
//! it these tests return at once.

mod common;

use common::daemon::{
    cold_lock, drop_caches, python_and_data, python_ran, saved_launch, write_config, Daemon,
};
use common::is_root;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn a_program_with_no_set_follows_another_that_read_its_files_in_order() {
    let (Ok(diff), Ok(cat)) = (
        std::fs::canonicalize("/usr/bin/diff"),
        std::fs::canonicalize("/usr/bin/cat"),
    ) else {
        eprintln!("skipped: needs diff and cat");
        return;
    };
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        for i in 0..8 {
            std::fs::write(d.join(format!("f{i}")), vec![b'x'; 1 << 20]).unwrap();
        }
    }
    let (cfg, state) = write_config(
        dir.path(),
        &format!("watch = [\"{}\", \"{}\"]\n", diff.display(), cat.display()),
    );
    let d = Daemon::start(&cfg, &state);
    let run = |exe: &Path, args: &[PathBuf]| {
        drop_caches();
        let mut c = Command::new(exe)
            .args(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = c.id();
        c.wait().unwrap();
        saved_launch(&state, pid)
    };
    // Yesterday: diff -r read a/ and b/ (in name order); today cat, new,
    // reads a/'s files in that order.
    run(&diff, &["-r".into(), a.clone(), b.clone()]);
    let files: Vec<PathBuf> = (0..8).map(|i| a.join(format!("f{i}"))).collect();
    let g = run(&cat, &files);
    drop(d);
    assert_eq!(g["known"], false, "{g}");
    assert!(
        g["shared_from"]
            .as_str()
            .is_some_and(|s| s.contains("diff")),
        "{g}"
    );
    assert!(g["replay"]["pages_requested"].as_u64().unwrap() > 0, "{g}");
    assert!(
        g["used_pages"].as_u64().unwrap() > 0,
        "cat read what was replayed: {g}"
    );
}

/// A launch's set holds what the launches it spawned read in its window
/// (`gcc`'s holds `cc1`'s, `as`'s and `ld`'s), so its replay asks for
/// them at its own exec. Here a python3 launch runs a child python3 of
/// another application (`python3 -I`) that reads a 32 MiB file the
/// parent never reads (backwards, 1 MiB at a time: a forward read is left
/// to the kernel's readahead, not replayed): the parent's set records the file (without the
/// children, its set was the interpreter's 2 000-odd pages), and its next
/// launch's replay asks for it.
#[test]
fn a_launch_records_what_the_launches_it_spawned_read() {
    let Some((py, dir, state, data, _cold, d)) = python_and_data("", 32) else {
        return;
    };
    let child = format!(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-I', '-c', \
         'import os, sys; fd = os.open(sys.argv[1], 0); \
         [os.pread(fd, 1 << 20, o) for o in range(31 << 20, -1, -(1 << 20))]', \
         '{}'], check=True)\n",
        data.display()
    );
    let launch = || {
        drop_caches();
        saved_launch(&state, python_ran(&py, &child))
    };
    let first = launch();
    let recorded = first["recorded_pages"].as_u64().unwrap();
    assert!(
        recorded >= 8192,
        "the child's file in the parent's set: {first}"
    );
    let second = launch();
    let requested = second["replay"]["pages_requested"].as_u64().unwrap();
    assert!(
        requested >= 8192,
        "the child's file replayed at the parent's exec: {second}"
    );
    drop((d, dir));
}

/// A launch ends once its process tree is gone, not at the end of its
/// window (60 s here), so its set is saved a moment after its run. A
/// launcher that exits before the program it started stays open until
/// that program's launch ends: its set holds the 8 MiB the child read a
/// second after the launcher exited.
#[test]
fn a_launch_ends_once_its_tree_is_gone() {
    let Some((py, dir, state, data, _cold, d)) = python_and_data("launch_window_s = 60\n", 8)
    else {
        return;
    };
    let launcher = format!(
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-I', '-c', \
         'import sys, time; time.sleep(1); open(sys.argv[1], \"rb\").read()', {:?}])\n\
         time.sleep(0.3)\n",
        data.display().to_string()
    );
    let l = saved_launch(&state, python_ran(&py, &launcher));
    drop((d, dir));
    assert!(
        l["recorded_pages"].as_u64().unwrap() >= 2048,
        "the child's reads after the launcher's exit: {l}"
    );
}

/// A launcher that exits at once, its child reading its data after it
/// (a script's background job): the launcher's replay, whose set holds
/// the child's 64 MiB and which the child's own replay leaves them to,
/// goes on past the launcher's exit while the child runs, and asks for
/// them all.
#[test]
fn a_launchers_replay_goes_on_while_the_program_it_started_runs() {
    let Some((py, dir, state, data, _cold, d)) = python_and_data("", 64) else {
        return;
    };
    let launcher = format!(
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-I', '-c', \
         'import os, sys, time; time.sleep(0.5); fd = os.open(sys.argv[1], 0); \
         [os.pread(fd, 1 << 20, o) for o in range(63 << 20, -1, -(1 << 20))]', {:?}])\n",
        data.display().to_string()
    );
    let launch = || {
        drop_caches();
        saved_launch(&state, python_ran(&py, &launcher))
    };
    let first = launch();
    assert!(
        first["recorded_pages"].as_u64().unwrap() >= 16384,
        "the child's reads in the launcher's set: {first}"
    );
    let second = launch();
    let requested = second["replay"]["pages_requested"].as_u64().unwrap();
    drop((d, dir));
    assert!(
        requested >= 16384,
        "the child's file asked for after the launcher exited: {second}"
    );
}
