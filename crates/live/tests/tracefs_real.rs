//! Against the real kernel: a file read shows up as `mm_filemap_get_pages`
//! events with its device and inode, stamped with CLOCK_MONOTONIC (the
//! instance's own clock converted through its markers). Skipped (passes vacuously, with a
//! note) when not root or tracefs is unavailable.

use outrider_live::tracefs::{AtEnd, EventKind, Instance, InstanceOptions, CLOCK_RESYNC_NS};
use outrider_sys::monotonic_ns;
use std::io::Read;
use std::os::unix::fs::MetadataExt;

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn reading_a_file_yields_its_get_pages_events_and_instance_is_removed() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![7u8; 64 * 4096]).unwrap();
    let md = std::fs::metadata(&path).unwrap();
    // A stale instance of a dead outrider (4194304 = PID_MAX_LIMIT, never a
    // live pid) is removed by the next open (in a detached process).
    let stale = std::path::Path::new("/sys/kernel/tracing/instances/outrider-4194304");
    let _ = std::fs::create_dir(stale);
    let opts = InstanceOptions {
        name: format!("outrider-{}-test", std::process::id()),
        ..InstanceOptions::default()
    };
    let mut inst = match Instance::open(&opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let ipath = inst.path().to_path_buf();
    let t = std::time::Instant::now();
    while stale.exists() && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!stale.exists(), "stale instance removed");
    assert!(ipath.is_dir());
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut events = Vec::new();
    // Twice: at once, and after the clock offset was measured again.
    for round in 0..2u64 {
        let before = monotonic_ns();
        for _ in 0..32 {
            f.read_exact(&mut buf).unwrap();
        }
        let after = monotonic_ns();
        events.clear();
        let deadline = monotonic_ns()
            + if round == 0 {
                250_000_000
            } else {
                CLOCK_RESYNC_NS + 250_000_000
            };
        while monotonic_ns() < deadline {
            inst.poll(&mut events, 10_000).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut pages = Vec::new();
        for e in &events {
            if let EventKind::GetPages {
                dev,
                ino,
                index,
                last_index,
            } = e.kind
            {
                if ino == md.ino() && e.pid == tid {
                    assert_eq!(dev, md.dev(), "user-space dev_t");
                    pages.extend(index..=last_index);
                    // The conversion is exact to the width of the marker's
                    // write; 1 ms of slack.
                    assert!(
                        e.ts_ns + 1_000_000 >= before && e.ts_ns <= after + 1_000_000,
                        "round {round}: event at {} outside [{before}, {after}]",
                        e.ts_ns
                    );
                }
            }
        }
        pages.sort_unstable();
        pages.dedup();
        assert_eq!(pages, (round * 32..round * 32 + 32).collect::<Vec<u64>>());
        if round == 0 {
            // Wait past the resync so round 1 is stamped with a new offset.
            std::thread::sleep(std::time::Duration::from_nanos(CLOCK_RESYNC_NS));
            inst.poll(&mut events, 10_000).unwrap();
        }
    }
    assert_eq!(inst.stats.lost_events, 0);
    drop(inst);
    assert!(!ipath.exists(), "instance removed on drop");
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Nobody holds `dir`'s flock (taken and released at once).
fn lockable(dir: &std::path::Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(dir) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; released when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

fn eventually(mut what: impl FnMut() -> bool) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(5) {
        if what() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// A parked instance is left stopped with its pid filter emptied, claimed
/// by the next open (which still sees its own reads), not shared with a
/// second user at the same time, and removed once its linger passes
/// unclaimed.
#[test]
fn a_parked_instance_is_claimed_by_the_next_run_and_removed_after_its_linger() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    // Instances parked by earlier tests (outrider run's linger is 10 s)
    // are gone first: their removers could take ours (a missed reuse).
    let parked = || {
        std::fs::read_dir("/sys/kernel/tracing/instances").is_ok_and(|rd| {
            rd.flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("outrider-park-")
            })
        })
    };
    let t = std::time::Instant::now();
    while parked() && t.elapsed() < std::time::Duration::from_secs(15) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let opts = InstanceOptions {
        follow_pid: Some(tid),
        at_end: AtEnd::Park { linger_ms: 1500 },
        ..InstanceOptions::default()
    };
    let first = match Instance::open(&opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let path = first.path().to_path_buf();
    assert!(path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("outrider-park-"));
    assert_eq!(read(&path.join("set_event_pid")).trim(), tid.to_string());
    drop(first);
    assert!(path.is_dir(), "parked, not removed");
    assert_eq!(read(&path.join("tracing_on")).trim(), "0", "parked stopped");
    assert!(
        eventually(|| read(&path.join("set_event_pid")).trim().is_empty()),
        "the parked instance's pid filter is emptied"
    );
    assert!(eventually(|| lockable(&path)), "and its parker lets go");
    let mut second = Instance::open(&opts).unwrap();
    assert!(second.reused(), "the parked instance is claimed");
    let other = Instance::open(&opts).unwrap();
    assert_ne!(
        other.path(),
        second.path(),
        "a claimed instance is not shared"
    );
    drop(other);
    // The claimed instance still traces this thread's reads.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("f");
    std::fs::write(&f, vec![1u8; 8 * 4096]).unwrap();
    let ino = std::fs::metadata(&f).unwrap().ino();
    std::fs::read(&f).unwrap();
    let mut events = Vec::new();
    assert!(eventually(|| {
        second.poll(&mut events, 1000).unwrap();
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::GetPages { ino: i, .. } if i == ino))
    }));
    let claimed = second.path().to_path_buf();
    drop(second);
    assert!(claimed.is_dir(), "parked again");
    assert!(eventually(|| !claimed.exists()), "removed after its linger");
}
