//! What `outrider daemon` leaves alone, against the real kernel: launches
//! while it is over its CPU cap on a busy machine, and a launch of an
//! application right after its last one (its name then quieted in the
//! kernel until the repeat window ends). Tracing needs root: without it
//! the tests return early.

mod common;

use common::daemon::{cold_lock, events, rewritten, status, wait_for, watching_python, Daemon};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[test]
fn over_its_cpu_cap_the_daemon_leaves_launches_alone() {
    // A cap its own start-up (loading its programs, reading its store)
    // is over; the machine counted busy always (`cpu_busy_pct = 0`).
    let s = launch_over_a_tiny_cap("cpu_busy_pct = 0\n");
    if s.is_null() {
        return;
    }
    assert_eq!(s["launches_over_cpu"], 1, "{s}");
    assert_eq!(s["launches"], Value::Array(vec![]), "{s}");
}

/// The cap holds only while the machine is busy: a machine that is
/// never (no task can wait for a CPU more than all of the time) leaves
/// the launch to the daemon however much CPU it used.
#[test]
fn over_its_cpu_cap_on_a_machine_not_busy_the_daemon_still_works() {
    let s = launch_over_a_tiny_cap("cpu_busy_pct = 100\n");
    if s.is_null() {
        return;
    }
    assert_eq!(s["launches_over_cpu"], 0, "{s}");
    assert_eq!(s["launches"].as_array().map(Vec::len), Some(1), "{s}");
}

/// A process whose exec is no launch (its executable not watched) is no
/// longer followed in the kernel, nor are the threads it started before
/// the daemon read its exec (here, while the daemon was stopped): the
/// kernel follows a thread from its fork, and each read of such a thread
/// cost it a record sent (a fresh `rg` excluded from watching had its
/// two searching threads followed to its end).
#[test]
fn threads_started_before_the_daemon_read_an_unwatched_exec_are_not_followed() {
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    let _cold = cold_lock();
    let other = dir.path().join("python3-not-watched");
    std::fs::copy(&py, &other).unwrap();
    let (data, go) = (dir.path().join("data"), dir.path().join("go"));
    std::fs::write(&data, vec![7u8; 32 << 20]).unwrap();
    let d = Daemon::start(&cfg, &state);
    let s = status(&state).unwrap();
    if s["event_source"] != "ebpf" {
        eprintln!("skipped: no eBPF here");
        return;
    }
    // Its thread starts at once, then waits for `go` to read every other
    // page (4096 reads, none joining the one before in the kernel).
    let script = format!(
        "import os, threading, time\n\
         def read():\n    while not os.path.exists({go:?}): time.sleep(0.01)\n    \
         f = os.open({data:?}, os.O_RDONLY)\n    \
         for o in range(0, 32 << 20, 8192): os.pread(f, 4096, o)\n\
         t = threading.Thread(target=read)\nt.start()\nt.join()\n",
        go = go.display().to_string(),
        data = data.display().to_string()
    );
    let signal = |sig| unsafe { libc::kill(d.pid() as i32, sig) };
    signal(libc::SIGSTOP);
    let mut c = Command::new(&other).args(["-c", &script]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let stopped = events(&status(&state).unwrap());
    signal(libc::SIGCONT);
    wait_for(&state, "the exec read", |s| events(s) > stopped);
    std::thread::sleep(Duration::from_millis(500));
    let before = events(&rewritten(&state));
    std::fs::write(&go, b"").unwrap();
    assert!(c.wait().unwrap().success());
    let late = events(&rewritten(&state)) - before;
    drop(d);
    assert!(
        late < 1000,
        "the 4096 reads of a thread of a process not watched were not followed: {late} events"
    );
}

/// The status once the daemon, with a CPU cap its start-up is over and
/// `extra`, saw one launch of python (`Null`: skipped, not root).
fn launch_over_a_tiny_cap(extra: &str) -> Value {
    let Some((py, _dir, cfg, state)) = watching_python(&format!("cpu_max_pct = 0.0001\n{extra}"))
    else {
        return Value::Null;
    };
    let _cold = cold_lock();
    let d = Daemon::start(&cfg, &state);
    std::thread::sleep(Duration::from_millis(2200));
    // Alive a while: an exec whose process is gone when the daemon reads
    // it is no launch (its executable can no longer be read), and a CI
    // run's daemon, at nice 19 on a loaded machine, read this one's after
    // `python3 -c pass` had exited, seeing no launch at all.
    let wait = "import time; time.sleep(0.5)";
    let ok = Command::new(&py).args(["-c", wait]).status().unwrap();
    assert!(ok.success());
    let s = wait_for(&state, "the launch seen", |s| s["launches_seen"] == 1);
    drop(d);
    s
}

/// `python3` once as a user starts it, alive 0.2 s: an exec whose process
/// is gone when the daemon reads it is no launch (see
/// [`launch_over_a_tiny_cap`]), and `python3 -c pass` was gone first in
/// one run of this file's tests in 8.
fn launch_python(py: &Path) {
    assert!(Command::new(py)
        .args(["-c", "import time; time.sleep(0.2)"])
        .status()
        .unwrap()
        .success());
}

/// The daemon watching Python with `repeat_window_s = window`: two
/// launches (the second repeated), then a third once the daemon saw the
/// repeat, which quiets the executable's name: that exec is dropped in
/// the kernel, never seen (the count is machine-wide: other tests' execs
/// of the name count too). The daemon, its state and its status then.
fn quieted_python(window: u32) -> Option<(PathBuf, tempfile::TempDir, Daemon, PathBuf, Value)> {
    let (py, dir, cfg, state) = watching_python(&format!("repeat_window_s = {window}\n"))?;
    let d = Daemon::start(&cfg, &state);
    launch_python(&py);
    launch_python(&py);
    wait_for(&state, "the second launch repeated", |s| {
        s["launches_repeated"] == 1
    });
    launch_python(&py);
    let s = wait_for(&state, "the third exec quieted", |s| {
        s["execs_quieted"].as_u64() >= Some(1)
    });
    Some((py, dir, d, state, s))
}

#[test]
fn a_launch_right_after_the_last_one_is_left_alone() {
    let _cold = cold_lock();
    let Some((_py, _dir, d, _state, s)) = quieted_python(30) else {
        return;
    };
    drop(d);
    assert_eq!(s["launches_seen"], 2, "{s}");
    assert_eq!(s["launches"].as_array().unwrap().len(), 1, "{s}");
}

/// A name is quiet until the repeat window of the launch that quieted
/// it ends; the next exec after it is a launch again.
#[test]
fn a_quiet_name_launches_again_after_the_repeat_window() {
    let _cold = cold_lock();
    let Some((py, _dir, d, state, _)) = quieted_python(1) else {
        return;
    };
    std::thread::sleep(std::time::Duration::from_millis(1100));
    launch_python(&py);
    let s = wait_for(&state, "a launch after the window", |s| {
        s["launches"].as_array().is_some_and(|l| l.len() == 2)
    });
    drop(d);
    assert_eq!(s["launches_repeated"], 1, "{s}");
}
