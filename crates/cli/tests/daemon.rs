//! `outrider daemon` against the real kernel: a program launched twice
//! with every cache dropped between has its launch set recorded at the
//! first launch and replayed at the second, which then misses far less; a
//! `kill -9` of the daemon keeps the saved sets; the boot set replays on
//! demand and drops a changed file; `status`, `apps` and `forget` show
//! and remove what it keeps; bad configurations exit 2. Tracing
//! needs root: without it only the configuration checks run.

mod common;

use common::daemon::{
    cold_lock, drop_caches, events, evict, finished_launch, python, python_and_data, python_ran,
    resident_pct, rewritten, saved_launch, status, wait_for, watching_python, write_config, Daemon,
};
use common::{is_root, outrider, stderr};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Four 8 MiB data files in `dir`, not in the cache, and a script that
/// waits 0.5 s and then reads them all.
fn program(dir: &Path) -> PathBuf {
    for i in 0..4 {
        let data = dir.join(format!("data{i}"));
        std::fs::write(&data, vec![i as u8 + 1; 8 << 20]).unwrap();
        evict(&data);
    }
    let script = dir.join("prog.py");
    std::fs::write(
        &script,
        format!(
            "import time\ntime.sleep(0.5)\nfor i in range(4):\n    \
             with open('{}/data%d' % i, 'rb') as f:\n        while f.read(1 << 20): pass\n",
            dir.display()
        ),
    )
    .unwrap();
    script
}

#[test]
fn a_launch_is_recorded_then_replayed_and_survives_kill_9() {
    let Some(py) = python().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return;
    };
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let script = program(dir.path());
    let (cfg, state) = write_config(dir.path(), &format!("watch = [\"{}\"]\n", py.display()));
    let launch = |state: &Path| {
        drop_caches();
        let mut c = Command::new(&py).arg(&script).spawn().unwrap();
        let pid = c.id();
        assert!(c.wait().unwrap().success());
        saved_launch(state, pid)
    };
    let mut d = Daemon::start(&cfg, &state);
    let l1 = launch(&state);
    // kill -9: the saved launch set stays.
    d.signal(libc::SIGKILL);
    let d = Daemon::start(&cfg, &state);
    let s = status(&state).unwrap();
    assert_eq!(s["launch_sets_stored"], 1, "{s}");
    let l2 = launch(&state);
    let config = cfg.display().to_string();
    let json = |args: &[&str]| -> Value {
        let o = outrider(&[args, &["--json", "--config", &config]].concat());
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // The application: python3.11 started by that name, with a script.
    let name = format!("{} [python3.11 <file>]", py.display());
    let st = json(&["status"]);
    assert_eq!(st["running"], true, "{st}");
    assert!(st["rss_bytes"].as_u64().unwrap() > 0, "{st}");
    let app = &st["apps"][0];
    assert_eq!(app["exe"], name, "{st}");
    assert_eq!(
        (app["launches"].as_u64(), app["replayed"].as_u64()),
        (Some(1), Some(1)),
        "the launch after the restart: {st}"
    );
    drop(d);
    assert_eq!(json(&["status"])["running"], false);
    let apps = json(&["apps"]);
    assert_eq!(apps[0]["exe"], name, "{apps}");
    assert!(apps[0]["files"].as_u64().unwrap() >= 5, "{apps}");
    assert_eq!(json(&["forget", name.as_str()])["forgotten"], 1);
    assert_eq!(json(&["apps"]), Value::Array(vec![]));
    let again = outrider(&["forget", name.as_str(), "--config", &config]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("no launch set of"),
        "{}",
        stderr(&again)
    );
    assert_eq!(l1["known"], false, "{l1}");
    assert_eq!(l1["exe"], name, "{l1}");
    let recorded = l1["recorded_pages"].as_u64().unwrap();
    let missed1 = l1["missed_pages"].as_u64().unwrap();
    // 32 MiB of data (8192 pages), all read cold, plus the interpreter.
    assert!(recorded >= 8192 && missed1 >= 8192, "{l1}");
    assert_eq!(l2["known"], true, "{l2}");
    let r = &l2["replay"];
    assert!(
        r["files_kept"].as_u64().unwrap() >= 5,
        "python and 4 data files: {l2}"
    );
    // The whole set, but the data file the launch was seen reading in
    // order, left to the readahead its read started.
    let left = r["pages_left_to_readahead"].as_u64().unwrap();
    assert!(left <= 2048, "one 8 MiB file at most: {l2}");
    assert_eq!(
        r["pages_requested"].as_u64().unwrap() + left,
        recorded,
        "the whole set replayed: {l2}"
    );
    // The second launch found its pages in the cache, but that file's:
    // it brought in less than half of what the first did.
    let missed2 = l2["missed_pages"].as_u64().unwrap();
    assert!(missed2 * 2 < missed1, "launch 1 {l1}\nlaunch 2 {l2}");
    assert!(l2["read_pages"].as_u64().unwrap() >= 8192, "{l2}");
    // Delay accounting: the cold launch waited for the disk, unless the
    // kernel's glitch made its one task's total no measurement (a
    // quarter of the time, see `plausible_wait`), which is then said.
    let wait1 = l1["io_wait_s"].as_f64().expect("delay accounting");
    assert!(wait1 > 0.0 || l1["io_wait_glitch"] == true, "{l1}");
    assert!(l2["io_wait_s"].as_f64().is_some(), "{l2}");
}

#[test]
fn a_launch_still_reading_after_its_window_is_followed_with_auto() {
    let Some(py) = python().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return;
    };
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let script = program(dir.path());
    let (cfg, state) = write_config(dir.path(), &format!("watch = [\"{}\"]\n", py.display()));
    let d = Daemon::start(&cfg, &state);
    // Reads 32 MiB in its window (3 s), then runs 2 s past it.
    let mut c = Command::new(&py)
        .args([
            "-c",
            &format!(
                "exec(open('{}').read()); import time; time.sleep(5)",
                script.display()
            ),
        ])
        .spawn()
        .unwrap();
    let pid = c.id();
    let s = wait_for(&state, "the launch followed", |s| s["following"] == 1);
    assert_eq!(s["followed"], 1, "{s}");
    assert!(c.wait().unwrap().success());
    let s = wait_for(&state, "the follower done", |s| s["following"] == 0);
    drop(d);
    let l = s["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["pid"] == pid)
        .unwrap();
    assert_eq!(l["followed"], true, "{l}");
    // Its history, under root's store, as `outrider run` keeps one.
    assert!(state.join("users/0.db").exists(), "{s}");
}

/// A launch that fills its set may read the rest of a replay after its
/// cap: what it did not record is not judged wasted. The first launch
/// reads a 160 MiB file forward from 16 MiB, the second backward from
/// its end: the 64 MiB cap fills before either reaches the other's pages.
#[test]
fn a_launch_that_filled_its_set_is_not_judged_by_what_it_did_not_record() {
    let Some((py, _dir, state, data, _cold, d)) = python_and_data("launch_cap_mib = 64\n", 160)
    else {
        return;
    };
    let launch = |order: &str| {
        drop_caches();
        let read = format!(
            "import os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n\
             for i in {order}: os.pread(fd, 1 << 20, i << 20)\n"
        );
        let mut c = Command::new(&py)
            .args(["-c", &read])
            .arg(&data)
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(c.wait().unwrap().success());
        saved_launch(&state, pid)
    };
    launch("range(16, 160)");
    let second = launch("reversed(range(160))");
    drop(d);
    assert_eq!(second["recorded_pages"], 16384, "{second}");
    assert!(
        second["replay"]["pages_requested"].as_u64().unwrap() > 8192,
        "{second}"
    );
    assert_eq!(second["verdict"], "paid", "{second}");
}

/// A launch of python3 that reads `data` one page at a time, pausing
/// for a second after its first 2 MiB (the daemon takes its events
/// every 5 ms while it records, so what it does about the first part is
/// done before the rest is read): its saved launch and the events the
/// daemon decoded meanwhile (counted in status files written after each
/// end: one read at any moment may be a second old, and miss the last
/// of them).
fn read_by_pages(py: &Path, state: &Path, data: &Path) -> (Value, u64) {
    let read = format!(
        "import time\nf = open('{}', 'rb', buffering=0)\n\
         for _ in range(512): f.read(4096)\n\
         time.sleep(1)\nwhile f.read(4096): pass\n",
        data.display()
    );
    let before = events(&rewritten(state));
    let mut c = Command::new(py).args(["-c", &read]).spawn().unwrap();
    let pid = c.id();
    assert!(c.wait().unwrap().success());
    let l = saved_launch(state, pid);
    (l, events(&rewritten(state)) - before)
}

/// Python code that waits `wait_s`, then reads every other page of
/// `data` (32 MiB): 4 096 reads, none joining the one before in the
/// kernel, so a followed reader sends a record for each.
fn strided_after(wait_s: f64, data: &Path) -> String {
    format!(
        "import os, time\ntime.sleep({wait_s})\nf = os.open({:?}, os.O_RDONLY)\n\
         for o in range(0, 32 << 20, 8192): os.pread(f, 4096, o)\n",
        data.display().to_string()
    )
}

/// An unwatched program is followed only until the daemon reads its exec,
/// and a watched launch only for its window: reads after either cost no
/// events. The daemon watches a copy of python3, so this binary's other
/// tests, which run python3 meanwhile, are not followed by it (counted
/// from a freshly written status file, the first version of this test
/// saw them: 1 973 events in one `.ci/run`). But every exec of the
/// machine is followed until the daemon reads it, so it runs under the
/// lock the other tests here take while they run their programs (without
/// it, a `.ci/run` counted 1 350 events in the late reader's run, with
/// the other tests of this file running beside it); what
/// remains is the execs and exits of the machine, a few each.
#[test]
fn programs_it_does_not_follow_cost_it_no_events() {
    let Some(py) = python().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return;
    };
    let _alone = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let watched = dir.path().join("python3-watched");
    std::fs::copy(&py, &watched).unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 32 << 20]).unwrap();
    let cfg = format!("watch = [\"{}\"]\n", watched.display());
    let (cfg, state) = write_config(dir.path(), &cfg);
    let d = Daemon::start(&cfg, &state);
    if status(&state).unwrap()["event_source"] != "ebpf" {
        eprintln!("skipped: no eBPF here");
        return;
    }
    // Its exec is read within the 0.3 s it waits.
    let before = events(&rewritten(&state));
    python_ran(&py, &strided_after(0.3, &data));
    let unwatched = events(&rewritten(&state)) - before;
    assert!(
        unwatched < 1000,
        "4096 reads of an unwatched program: {unwatched} events"
    );
    // Its window (3 s) ended 2 s before it reads. Its image read from
    // the disk: a launch reading from memory is let go at once.
    evict(&watched);
    let mut c = Command::new(&watched)
        .args(["-c", &strided_after(5.0, &data)])
        .spawn()
        .unwrap();
    let l = finished_launch(&state, c.id());
    let before = events(&rewritten(&state));
    assert!(c.wait().unwrap().success());
    let late = events(&rewritten(&state)) - before;
    drop(d);
    assert!(
        l["missed_pages"].as_u64().unwrap() > 0 && l["hot"] == false,
        "its start was followed: {l}"
    );
    assert!(
        late < 1000,
        "4096 reads after its window: {late} events; {l}"
    );
}

#[test]
fn a_launch_whose_set_is_full_is_no_longer_followed() {
    let Some((py, _dir, state, data, _cold, d)) = python_and_data("launch_cap_mib = 1\n", 32)
    else {
        return;
    };
    if status(&state).unwrap()["event_source"] != "ebpf" {
        eprintln!("skipped: no eBPF here");
        return;
    }
    // 8192 single-page reads in its window; the set holds 256 pages,
    // full within the first 512 reads.
    let (l, seen) = read_by_pages(&py, &state, &data);
    drop(d);
    assert_eq!(l["recorded_pages"], 256, "{l}");
    assert!(
        seen < 4000,
        "reads after the set was full were not followed: {seen} events; {l}"
    );
}

#[test]
fn the_boot_set_replays_on_demand_and_drops_changed_files() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs and drop_caches");
        return;
    }
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (cfg, state) = write_config(
        dir.path(),
        "watch = [\"/nonexistent\"]\nboot_prefetch = true\nboot_window_s = 2\n",
    );
    let file = dir.path().join("boot-data");
    std::fs::write(&file, vec![3u8; 4 << 20]).unwrap();
    let d = Daemon::start(&cfg, &state);
    drop_caches();
    let read = std::fs::read(&file).unwrap();
    assert_eq!(read.len(), 4 << 20);
    let s = wait_for(&state, "the boot set saved", |s| s["boot"]["saved"] == true);
    drop(d);
    assert!(s["boot"]["recorded_pages"].as_u64().unwrap() >= 1024, "{s}");
    let replay = |what: &str| -> Value {
        let o = outrider(&[
            "daemon",
            "--replay-boot",
            "--config",
            &cfg.display().to_string(),
        ]);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let r1 = replay("unchanged");
    assert!(r1["pages_requested"].as_u64().unwrap() >= 1024, "{r1}");
    std::fs::write(&file, vec![4u8; 1 << 20]).unwrap();
    let r2 = replay("changed");
    assert_eq!(
        r2["files_dropped"].as_u64().unwrap(),
        r1["files_dropped"].as_u64().unwrap() + 1,
        "{r1}\n{r2}"
    );
    assert!(
        r2["pages_requested"].as_u64().unwrap() + 1024 <= r1["pages_requested"].as_u64().unwrap(),
        "{r1}\n{r2}"
    );
}

#[test]
fn bad_configurations_exit_2_naming_the_file_and_key() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let check = |text: &str| {
        let p = dir.path().join("d.toml");
        std::fs::write(&p, text).unwrap();
        let o = outrider(&[
            "daemon",
            "--check-config",
            "--config",
            &p.display().to_string(),
        ]);
        (o.status.code(), stderr(&o), p.display().to_string())
    };
    let (code, err, p) = check("launch_cap_mib = 0\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&p) && err.contains("`launch_cap_mib`: expected a positive"),
        "{err}"
    );
    let (code, err, _) = check("boot_prefetch = \"yes\"\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("boot_prefetch") && err.contains("expected a boolean"),
        "{err}"
    );
    let (code, err, _) = check("watched = []\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown field `watched`"), "{err}");
    let (code, err, _) = check(include_str!("../../../dist/daemon.toml"));
    assert_eq!(code, Some(0), "{err}");
    let o = outrider(&[
        "daemon",
        "--check-config",
        "--config",
        "/nonexistent/d.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/d.toml: cannot read"),
        "{}",
        stderr(&o)
    );
}

/// A launch set whose replay the next launch does not use (a script
/// reading another 48 MiB of one file each time, backwards so readahead
/// cannot serve it: what it wastes outweighs the interpreter's pages it
/// uses; one application, `python3.11 <file>`) is judged harmed: the
/// next launch gets a quarter of the budget, and after a second harmed
/// replay none. The file is asked for at once (`confirm_data_files =
/// false`): held until the launch reads a page of it, as by default, the
/// other part is never asked for and the replay costs nothing to judge.
#[test]
fn replays_that_do_not_pay_are_throttled_then_stopped() {
    let Some(py) = python().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return;
    };
    let _cold = cold_lock();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let script = dir.path().join("back.py");
    // Read 48 MiB part argv[2] of the file named by argv[1], last MiB first;
    // then wait for the standard input to close (alive while its replay
    // runs). One file, read by every launch: its pages are replayed
    // (per file, the set is stable), and are each time the wrong ones.
    std::fs::write(
        &script,
        "import os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\nq = int(sys.argv[2])\n\
         for i in reversed(range(48)): os.pread(fd, 1 << 20, (q * 48 + i) << 20)\n\
         sys.stdin.read()\n",
    )
    .unwrap();
    let watch = format!(
        "watch = [\"{}\"]\nconfirm_data_files = false\n",
        py.display()
    );
    let (cfg, state) = write_config(dir.path(), &watch);
    let _d = Daemon::start(&cfg, &state);
    let f = dir.path().join("big");
    std::fs::write(&f, vec![1u8; 192 << 20]).unwrap();
    let mut seen = Vec::new();
    for i in 0..4 {
        drop_caches();
        let mut c = Command::new(&py)
            .arg(&script)
            .arg(&f)
            .arg(i.to_string())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = c.id();
        std::thread::sleep(Duration::from_millis(1000));
        drop(c.stdin.take());
        assert!(c.wait().unwrap().success());
        seen.push(saved_launch(&state, pid));
    }
    let gates: Vec<&str> = seen.iter().map(|l| l["gate"].as_str().unwrap()).collect();
    assert_eq!(gates, ["full", "full", "reduced", "off"], "{seen:?}");
    let verdicts: Vec<&str> = seen
        .iter()
        .map(|l| l["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts[1..3], ["harmed", "harmed"], "{seen:?}");
    assert!(
        seen[3]["replay"].is_null() && seen[3]["known"] == true,
        "{:?}",
        seen[3]
    );
    let used = seen[1]["used_pages"].as_u64().unwrap();
    let asked = seen[1]["replay"]["pages_requested"].as_u64().unwrap();
    assert!(asked >= 12288 && used * 4 < asked, "{:?}", seen[1]);
}

/// A routine (launch A, then B, then C) seen once: at A's next launch
/// the sets of B and C are replayed, so the files only B and only C
/// read are cached before B's exec; with `successor_prefetch = false`
/// they are not.
#[test]
fn the_next_launches_of_a_routine_are_read_before_their_execs() {
    let _cold = cold_lock();
    for (on, want_cached) in [(true, true), (false, false)] {
        let Some((py, dir, cfg, state)) = watching_python(&format!("successor_prefetch = {on}\n"))
        else {
            return;
        };
        let data = ["only-b-reads", "only-c-reads"].map(|f| dir.path().join(f));
        for f in &data {
            std::fs::write(f, vec![5u8; 8 << 20]).unwrap();
            evict(f);
        }
        let d = Daemon::start(&cfg, &state);
        let a = || {
            let ok = Command::new(&py)
                .args(["-c", "import time; time.sleep(0.6)"])
                .status();
            assert!(ok.unwrap().success());
        };
        // Told apart by their first argument (the key's shape). Each
        // stays 0.3 s after its read: a launch gone before the daemon read
        // its exec is no launch (its executable and arguments are read
        // from /proc), and under the other tests' load the daemon, at
        // nice 19, read the exec of one that ran 30 ms too late.
        let reads = |i: usize| {
            let read = format!(
                "import time; open({:?}, 'rb').read(); time.sleep(0.3)",
                data[i].display().to_string()
            );
            let ok = Command::new(&py)
                .args([["-B", "-s"][i], "-c", &read])
                .status();
            assert!(ok.unwrap().success());
        };
        a();
        reads(0);
        reads(1);
        // B and C may follow A's set as shared history: A's launch ends
        // at its exit, its set saved before theirs.
        let first = wait_for(&state, "the three sets saved", |s| {
            s["launch_sets_saved"] == 3
        });
        let replays_before = first["replays"].as_u64().unwrap();
        drop_caches();
        for f in &data {
            assert!(resident_pct(f) < 10.0);
        }
        a();
        let s = wait_for(&state, "A's launch seen", |s| s["launches_seen"] == 4);
        // The successors' sets are asked for in the disk's idle time, after
        // A's own, from a thread in the idle I/O class: under CI's other
        // tests they were still on their way when A's launch was seen (41%
        // and 50% of B's file cached), and 22% of it was after 10 s, all
        // of both sets asked for (`successor_pages` 5 881). mq-deadline
        // serves an idle-class request behind every other one until it
        // waited `prio_aging_expire` (10 s here), so up to 25 s for them;
        // with prefetching off, nothing is asked for and 5 s finds nothing.
        // A disk others keep busy for a replay's half second of waits
        // stops it with pages not asked for, by design (a loop of direct
        // reads beside this test: none asked for): it is counted, and its
        // pages are then not required to be cached.
        let wait = std::time::Duration::from_secs(if on { 25 } else { 5 });
        let deadline = std::time::Instant::now() + wait;
        let busy = || status(&state).is_some_and(|s| s["successor_busy"].as_u64() > Some(0));
        while data.iter().any(|f| resident_pct(f) <= 90.0)
            && !busy()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let busy = busy();
        for f in &data {
            let cached = resident_pct(f);
            assert!(
                cached > 90.0 && want_cached || cached <= 90.0 && (!want_cached || busy),
                "{cached}% of {} cached (busy disk: {busy}): {s}",
                f.display()
            );
        }
        assert_eq!(s["successor_replays"].as_u64() == Some(2), on, "{s}");
        // B and C then: read ahead of them, and replayed at their execs
        // all the same.
        reads(0);
        reads(1);
        let s = wait_for(&state, "C's launch seen", |s| s["launches_seen"] == 6);
        drop(d);
        assert_eq!(s["launches_read_ahead"].as_u64() == Some(2), on, "{s}");
        assert_eq!(s["replays"].as_u64().unwrap() - replays_before, 3, "{s}");
    }
}

/// A launch whose exec the daemon reads late (kept off the CPU: stopped
/// here) reads its file while the program of page reads is detached
/// (nothing was followed): what it brought in from the disk is recorded
/// all the same, from the cache insertions, and replayed at the next
/// launch, which never reads the file itself.
#[test]
fn a_launch_read_late_has_its_misses_recorded() {
    let _cold = cold_lock();
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    let data = dir.path().join("read-at-once");
    std::fs::write(&data, vec![6u8; 8 << 20]).unwrap();
    evict(&data);
    let mut d = Daemon::start(&cfg, &state);
    wait_for(&state, "the page reads' program detached", |s| {
        s["reads_attached"] == false
    });
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(d.pid() as i32, libc::SIGSTOP) };
    // One application both times (its program text is part of its
    // name): the file named in the environment, and read only then.
    let read = "import os, sys, time\np = os.environ.get('DATA')\n\
                p and open(p, 'rb').read(); print(flush=True); sys.stdin.read()\n\
                p or time.sleep(0.5)";
    let mut first = Command::new(&py)
        .args(["-c", read])
        .env("DATA", &data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(d.pid() as i32, libc::SIGCONT) };
    wait_for(&state, "its exec read", |s| s["launches_seen"] == 1);
    drop(first.stdin.take());
    assert!(first.wait().unwrap().success());
    let l = saved_launch(&state, first.id());
    assert!(l["recorded_pages"].as_u64() >= Some(2048), "{l}");
    drop_caches();
    assert!(resident_pct(&data) < 10.0);
    let mut second = (Command::new(&py).args(["-c", read]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(second.wait().unwrap().success());
    // Its replay had the file's 2 048 pages: asked for, or left to the
    // readahead of a launch seen reading it, or waiting for that.
    let r = &saved_launch(&state, second.id())["replay"];
    let pages = [
        "pages_requested",
        "pages_left_to_readahead",
        "pages_unconfirmed",
    ];
    let sum: u64 = pages.iter().map(|k| r[k].as_u64().unwrap()).sum();
    assert!(sum >= 2048, "{r}");
    d.signal(libc::SIGTERM);
}

/// An exec read after its process exited is no launch, and is counted
/// as gone: the daemon stopped across a whole `python3 -c pass`.
#[test]
fn an_exec_read_after_its_process_exited_is_counted_gone() {
    // Its `python3` is a launch to the other tests' daemons, which count
    // their own launches' sets saved.
    let _cold = cold_lock();
    let Some((py, _dir, cfg, state)) = watching_python("") else {
        return;
    };
    let mut d = Daemon::start(&cfg, &state);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(d.pid() as i32, libc::SIGSTOP) };
    let pid = python_ran(&py, "pass");
    // SAFETY: as above.
    unsafe { libc::kill(d.pid() as i32, libc::SIGCONT) };
    let s = wait_for(&state, "its exec read", |s| {
        s["execs_gone"].as_u64() >= Some(1)
    });
    let launches = s["launches"].as_array().unwrap();
    assert!(launches.iter().all(|l| l["pid"] != pid), "{s}");
    d.signal(libc::SIGTERM);
}

/// A file a launch mapped and touched one page of, no larger than half
/// the disk's readahead window, is asked for whole at its next launch's
/// exec (the kernel's read-around reads it whole at the first fault in
/// it): cached before the program maps it. With `read_around = false`
/// only the pages it touched are.
#[test]
fn a_small_mapped_file_is_read_whole_at_the_launch() {
    let _cold = cold_lock();
    for (on, want_whole) in [(true, true), (false, false)] {
        let Some((py, dir, cfg, state)) = watching_python(&format!("read_around = {on}\n")) else {
            return;
        };
        let data = dir.path().join("mapped");
        std::fs::write(&data, vec![3u8; 1 << 20]).unwrap();
        if read_ahead_kb(&data).is_none_or(|kb| kb < 2048) {
            eprintln!("skipped: needs a disk with a readahead window of 2 MiB or more");
            return;
        }
        let d = Daemon::start(&cfg, &state);
        // Sleeps first, then maps the file and touches one page.
        let touch = format!(
            "import mmap, time\ntime.sleep(1.0)\nf = open({:?}, 'rb')\n\
             m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nm[100 * 4096]\n",
            data.display().to_string()
        );
        let launch = || Command::new(&py).args(["-c", &touch]).spawn().unwrap();
        assert!(launch().wait().unwrap().success());
        wait_for(&state, "the set saved", |s| s["launch_sets_saved"] == 1);
        drop_caches();
        assert!(resident_pct(&data) < 10.0);
        let mut c = launch();
        std::thread::sleep(Duration::from_millis(600));
        let cached = resident_pct(&data);
        assert!(c.wait().unwrap().success());
        drop(d);
        assert_eq!(
            cached > 90.0,
            want_whole,
            "{cached}% cached, read_around = {on}"
        );
        if !on {
            assert!(cached > 0.0, "the page it touched is replayed");
        }
    }
}

/// The `read_ahead_kb` of the disk `path` is on (a partition's parent).
fn read_ahead_kb(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let dir =
        Path::new("/sys/dev/block").join(format!("{}:{}", libc::major(dev), libc::minor(dev)));
    let mut dir = std::fs::canonicalize(dir).ok()?;
    if dir.join("partition").exists() {
        dir.pop();
    }
    std::fs::read_to_string(dir.join("queue/read_ahead_kb"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
