//! `outrider daemon` against the real kernel: a launch that reads from
//! memory is not recorded, whether the daemon's count, the kernel's (which
//! takes in the repeats it drops) or its replay judges it so; a launch
//! following another application's set included. Needs root; skipped
//! otherwise.

mod common;

use common::daemon::{
    cold_lock, drop_caches, evict, evict_first, finished_launch, python_ran, saved_launch, status,
    watching_python, Daemon,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A script reading the first 1 024 pages of `data` (4 MiB) 20 times, a
/// page at a time: the kernel sends each page once and counts 20 480.
/// It waits 0.3 s first: the kernel counts only the reads made once the
/// daemon attached its program of page reads, at the exec's record
/// (`outrider_live::ebpf`, module `reads`), which a daemon kept off the
/// CPU reads late (8-57 ms beside a busy loop on each core).
fn repeated_preads(data: &Path) -> String {
    format!(
        "import os, time\ntime.sleep(0.3)\nfd = os.open({:?}, os.O_RDONLY)\n\
         for _ in range(20):\n    for i in range(1024): os.pread(fd, 1, i * 4096)",
        data.display().to_string()
    )
}

/// A launch that reads from memory is not recorded: with no set of its
/// own, once its first 64 MiB came from the cache; with a set, once its
/// replay found the set in memory. The same program reading from the
/// disk is recorded.
#[test]
fn a_launch_that_reads_from_memory_is_not_recorded() {
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    let _cold = cold_lock();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 96 << 20]).unwrap();
    let read = format!("open({:?}, 'rb').read()", data.display().to_string());
    let run = || python_ran(&py, &read);
    run(); // python3 and the data in memory, before the daemon
    let d = Daemon::start(&cfg, &state);
    let l = finished_launch(&state, run());
    assert_eq!(
        (l["hot"].clone(), l["known"].clone()),
        (true.into(), false.into()),
        "{l}"
    );
    // Its reads were held until it was judged, none of its files opened.
    assert_eq!(l["recorded_pages"], 0, "{l}");
    evict(&data);
    let l = saved_launch(&state, run());
    assert_eq!(l["hot"], false, "{l}");
    assert!(l["recorded_pages"].as_u64().unwrap() >= 8192, "{l}");
    // Its set is known now, and in memory (read once more): the replay
    // finds it there, and the launch is not recorded. The page cache here
    // loses pages in the background (DAMON), python's own among them,
    // which a launch then reads from the disk: up to three tries (one
    // that found pages missing may still be judged hot at 64 MiB).
    let mut tries = Vec::new();
    let hot = (0..3).find_map(|_| {
        assert_eq!(std::fs::read(&data).unwrap().len(), 96 << 20);
        let l = finished_launch(&state, run());
        tries.push((l["replay"]["pages_requested"].clone(), l["hot"] == true));
        (l["replay"]["rest_resident"] == true).then_some(l)
    });
    let l = hot.unwrap_or_else(|| panic!("no launch of 3 found its set in memory: {tries:?}"));
    let s = status(&state).unwrap();
    drop(d);
    assert_eq!(
        (l["hot"].clone(), l["known"].clone()),
        (true.into(), true.into()),
        "{l}"
    );
    assert_eq!(l["replay"]["rest_resident"], true, "{l}");
    // The first launch, and each try judged hot.
    let hot_launches = 1 + tries.iter().filter(|(_, hot)| *hot).count();
    assert_eq!(
        (l["saved"].clone(), s["launches_hot"].clone()),
        (false.into(), hot_launches.into()),
        "{s}"
    );
}

/// A launch with no set of its own that reads the same pages from memory
/// again and again is let go by the kernel, whose count takes in the
/// repeats it drops: the daemon, whose own count never reaches the
/// bound, learns it from the kernel, and neither records the launch nor
/// saves it.
#[test]
fn a_launch_let_go_in_the_kernel_is_not_recorded() {
    let Some((py, dir, cfg, state)) = watching_python("") else {
        return;
    };
    let _cold = cold_lock();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 4 << 20]).unwrap();
    // 20 × 1 024 pages read one at a time, 1 024 of them sent: the bound
    // is 16 384.
    let read = repeated_preads(&data);
    let run = || python_ran(&py, &read);
    run(); // python3 and the data in memory, before the daemon
    let d = Daemon::start(&cfg, &state);
    if status(&state).unwrap()["event_source"] != "ebpf" {
        eprintln!("skipped: no eBPF here");
        return;
    }
    let pid = run();
    let l = finished_launch(&state, pid);
    assert_eq!(l["hot"], true, "{l}");
    assert!(l["read_pages"].as_u64().unwrap() < 16384, "{l}");
    // Still not saved ten save intervals later.
    std::thread::sleep(Duration::from_secs(2));
    let s = status(&state).unwrap();
    drop(d);
    let l = (s["launches"].as_array().unwrap().iter())
        .find(|l| l["pid"] == pid)
        .unwrap();
    assert_eq!(
        (l["saved"].clone(), s["launch_sets_saved"].clone()),
        (false.into(), 0.into()),
        "{s}"
    );
}

/// The same for a launch following another application's set (shared
/// history): the kernel judges it as any launch with no set of its own,
/// and the daemon takes its verdict, even where that set's replay found
/// part of it missing and so did not judge the launch to read from
/// memory itself. Left recording, the launch held the directory watch's
/// mark to its exit and was saved at its window's end. The set is
/// replayed once the launch reads from storage: here its data's first
/// MiB (256 pages, fewer than one in 32 of the 16 384 it is judged at).
#[test]
fn a_launch_following_a_shared_set_let_go_in_the_kernel_is_not_recorded() {
    let Some((l, s)) = second_of_two_pythons(Some(1 << 20)) else {
        return;
    };
    assert!(l["shared_from"].as_str().is_some(), "{l}");
    assert_eq!(l["hot"], true, "{l}");
    assert_eq!(s["saved"], false, "{s}");
}

/// A launch that reads from memory has no other application's set
/// replayed, though it reads that set's files in its order: the same
/// launch as above, all of its data in memory.
#[test]
fn a_launch_reading_from_memory_follows_no_shared_set() {
    let Some((l, s)) = second_of_two_pythons(None) else {
        return;
    };
    assert_eq!(l["shared_from"], serde_json::Value::Null, "{l}");
    assert_eq!(l["hot"], true, "{l}");
    assert_eq!(s["saved"], false, "{s}");
}

/// `python3 -c` reading `data` (4 MiB) and `other` (16 MiB) cold, its
/// set saved; then `python3 -B -c`, another application, reading the
/// interpreter's files in the first one's order, then the data's 1 024
/// pages 20 times, one at a time (1 024 sent, 20 480 counted in the
/// kernel: the bound is 16 384), in memory but their first `cold`
/// bytes; the set's other file, which it never reads, is not. Its
/// status once finished and 2 s later (10 save intervals). `None` where
/// it cannot run.
fn second_of_two_pythons(cold: Option<i64>) -> Option<(serde_json::Value, serde_json::Value)> {
    let (py, dir, cfg, state) = watching_python("")?;
    let _cold = cold_lock();
    let (data, other) = (dir.path().join("data"), dir.path().join("other"));
    std::fs::write(&data, vec![7u8; 4 << 20]).unwrap();
    std::fs::write(&other, vec![8u8; 16 << 20]).unwrap();
    let d = Daemon::start(&cfg, &state);
    if status(&state).unwrap()["event_source"] != "ebpf" {
        eprintln!("skipped: no eBPF here");
        return None;
    }
    let first = format!(
        "open({:?}, 'rb').read(); open({:?}, 'rb').read()",
        data.display().to_string(),
        other.display().to_string()
    );
    drop_caches();
    saved_launch(&state, python_ran(&py, &first));
    evict(&other);
    if let Some(bytes) = cold {
        evict_first(&data, bytes);
    }
    let repeats = repeated_preads(&data);
    let mut c = (Command::new(&py).args(["-B", "-c", &repeats]))
        .spawn()
        .unwrap();
    assert!(c.wait().unwrap().success());
    let l = finished_launch(&state, c.id());
    std::thread::sleep(Duration::from_secs(2));
    let s = status(&state).unwrap();
    drop(d);
    let later = (s["launches"].as_array().unwrap().iter())
        .find(|l| l["pid"] == c.id())
        .unwrap()
        .clone();
    Some((l, later))
}
