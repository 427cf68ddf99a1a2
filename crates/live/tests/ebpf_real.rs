//! Against the real kernel: the eBPF source sees a followed thread's file
//! reads (device, inode, pages, CLOCK_MONOTONIC times), follows the
//! processes it forks, and ignores every other task. Skipped (passes
//! vacuously, with a note) when not root.

mod common;

use common::*;
use outrider_live::ebpf::EbpfSource;
use outrider_live::tracefs::{EventKind, LiveEvent};
use outrider_sys::monotonic_ns;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

#[test]
fn a_followed_thread_and_its_children_are_seen_and_no_one_else() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let (_dir, path, md) = file_of_pages(64);
    // A thread started before the source, reading the same file, is not
    // followed (threads and processes forked afterwards are).
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let p2 = path.clone();
    let stranger = std::thread::spawn(move || {
        wait.recv().unwrap();
        let mut b = Vec::new();
        std::fs::File::open(&p2)
            .unwrap()
            .read_to_end(&mut b)
            .unwrap();
    });
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let mut src =
        EbpfSource::open(&events(), Some(tid), None, 0).expect("eBPF source starts as root");
    assert!(src.follows(tid));
    go.send(()).unwrap();
    stranger.join().unwrap();
    let before = monotonic_ns();
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 4096];
    for _ in 0..32 {
        f.read_exact(&mut buf).unwrap();
    }
    let after = monotonic_ns();
    let child = std::process::Command::new("cat")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(child.success());
    assert!(src.wait(None, Duration::from_millis(100)));
    let got = drain(&mut src);
    let mine: Vec<&LiveEvent> = got
        .iter()
        .filter(|e| {
            e.pid == tid
                && matches!(e.kind, EventKind::GetPages { ino, dev, .. }
                    if ino == md.ino() && dev == md.dev())
        })
        .collect();
    assert!(mine.len() >= 32, "one get_pages per read: {}", mine.len());
    for e in &mine {
        assert!(e.ts_ns >= before && e.ts_ns <= after, "monotonic time");
    }
    let forks: Vec<u32> = (got.iter())
        .filter_map(|e| match e.kind {
            EventKind::Fork { parent, child } if parent == tid => Some(child),
            _ => None,
        })
        .collect();
    assert_eq!(forks.len(), 1, "the cat was forked: {got:?}");
    let cat_read = got.iter().any(|e| {
        e.pid == forks[0] && matches!(e.kind, EventKind::GetPages { ino, .. } if ino == md.ino())
    });
    assert!(cat_read, "the forked cat's read of the file is seen");
    assert!(
        !src.follows(forks[0]),
        "the cat left the table when it exited"
    );
    let strangers = got.iter().filter(|e| e.pid != tid && e.pid != forks[0]);
    assert_eq!(strangers.count(), 0, "no other task's events");
    assert_eq!(src.stats.lost_events, 0);
    assert_eq!(src.stats.events, got.len() as u64);
}

#[test]
fn a_stopped_source_is_parked_and_the_next_one_claims_it_following_only_its_own_tasks() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let (_dir, path, md) = file_of_pages(16);
    // Events of a set no other test opens (the park name is per event set).
    let ev: Vec<(String, String)> = events().into_iter().filter(|(s, _)| s != "block").collect();
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let first = EbpfSource::open(&ev, Some(tid), None, 5_000).expect("eBPF source starts as root");
    drop(first);
    // The next source, on another thread: the first one's thread must no
    // longer be followed (the parked table was emptied).
    let p2 = path.clone();
    let (reused, got, other) = std::thread::spawn(move || {
        // SAFETY: no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        let mut src = EbpfSource::open(&ev, Some(me), None, 0).expect("claims or loads");
        let mut b = Vec::new();
        std::fs::File::open(&p2)
            .unwrap()
            .read_to_end(&mut b)
            .unwrap();
        assert!(src.wait(None, Duration::from_millis(100)));
        (src.reused(), drain(&mut src), me)
    })
    .join()
    .unwrap();
    assert!(reused, "the parked programs were claimed, not loaded again");
    assert!(
        got.iter().any(|e| e.pid == other
            && matches!(e.kind, EventKind::GetPages { ino, .. } if ino == md.ino())),
        "the claimer's read is seen: {got:?}"
    );
    assert!(
        got.iter().all(|e| e.pid == other),
        "only the claimer's thread: {got:?}"
    );
}

/// Run `exe` to its end; its pid.
fn run(exe: &std::path::Path) -> u32 {
    let mut c = std::process::Command::new(exe).spawn().unwrap();
    let pid = c.id();
    assert!(c.wait().unwrap().success());
    pid
}

/// The name hash of `pid`'s exec, if the source saw it (after waiting for
/// records a moment).
fn exec_of(src: &mut EbpfSource, pid: u32) -> Option<u64> {
    src.wait(None, Duration::from_millis(50));
    std::thread::sleep(Duration::from_millis(20));
    drain(src).iter().find_map(|e| match e.kind {
        EventKind::Exec { pid: p, name } if p == pid => Some(name),
        _ => None,
    })
}

#[test]
fn a_quiet_exec_name_is_dropped_in_the_kernel_until_its_time() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (a, b) = (dir.path().join("quiet-a"), dir.path().join("quiet-b"));
    std::fs::copy("/bin/true", &a).unwrap();
    std::fs::copy("/bin/true", &b).unwrap();
    let (_one, mut src) = execs_source();
    let name = exec_of(&mut src, run(&a)).expect("an exec is seen");
    assert_ne!(name, 0, "the exec carries its name's hash");
    assert_eq!(
        exec_of(&mut src, run(&a)),
        Some(name),
        "the same name, the same hash"
    );
    let name_b = exec_of(&mut src, run(&b)).expect("another exec is seen");
    assert_ne!(name_b, name, "another name, another hash");

    src.quiet(name, monotonic_ns() + 60_000_000_000);
    let quiet = run(&a);
    assert_eq!(
        exec_of(&mut src, quiet),
        None,
        "a quiet name's exec is dropped"
    );
    assert!(!src.follows(quiet));
    assert_eq!(src.quieted(), 1);
    assert_eq!(exec_of(&mut src, run(&b)), Some(name_b), "other names pass");

    src.quiet(name, monotonic_ns().saturating_sub(1));
    assert_eq!(
        exec_of(&mut src, run(&a)),
        Some(name),
        "past its time, it passes"
    );
    assert_eq!(src.quieted(), 1);
}

#[test]
fn a_launch_sends_a_page_it_read_again_once_per_cpu_and_the_next_launch_sends_it_again() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let (_dir, path, md) = file_of_pages(4);
    let (_one, mut src) = execs_source();
    // dash's `read` reads one byte per system call: 300 reads of page 0
    // per line, by one process.
    let script = format!(
        "for i in $(seq 300); do read x < {0}; done; dd if={0} bs=4096 skip=2 count=1 status=none",
        path.display()
    );
    let first = run_sh(&script);
    std::thread::sleep(Duration::from_millis(50));
    let got = reads_of(&drain(&mut src), md.ino());
    let page0 = got.iter().filter(|r| r.0 == first && r.1 == 0).count();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        (1..=cpus).contains(&page0),
        "page 0 sent once per CPU at most, not 300 times: {page0} ({got:?})"
    );
    assert!(
        got.iter().any(|&(_, first_page, _)| first_page == 2),
        "a page not read before is sent (dd, a child of the launch): {got:?}"
    );
    let second = run_sh(&script);
    std::thread::sleep(Duration::from_millis(50));
    let got = reads_of(&drain(&mut src), md.ino());
    assert!(
        got.iter().any(|r| r.0 == second && r.1 == 0),
        "another launch sends page 0 again: {got:?}"
    );
}

/// One `read` of 4 MiB is one record naming all of it: the kernel
/// reports it again from each batch of folios it fills, to the same last
/// page, and those are dropped (`Continuations`).
#[test]
fn one_large_read_is_one_record() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    // Written a page at a time, the file is held in small folios: a
    // batch is then far less than the read (one write of it all made
    // folios large enough for one batch).
    let (_dir, path, _) = file_of_pages(0);
    let mut f = std::fs::File::create(&path).unwrap();
    for _ in 0..1024 {
        f.write_all(&[7u8; 4096]).unwrap();
    }
    drop(f);
    let md = std::fs::metadata(&path).unwrap();
    let (_one, mut src) = execs_source();
    let script = format!(
        "dd if={} of=/dev/null bs=4M count=1 status=none",
        path.display()
    );
    run_sh(&script);
    std::thread::sleep(Duration::from_millis(50));
    let got = reads_of(&drain(&mut src), md.ino());
    assert_eq!(got.len(), 1, "one record: {got:?}");
    assert_eq!((got[0].1, got[0].2), (0, 1024), "{got:?}");
}

/// Run `sh -c script` to its end; its pid.
fn run_sh(script: &str) -> u32 {
    let mut c = (std::process::Command::new("/bin/sh").arg("-c").arg(script))
        .spawn()
        .unwrap();
    let pid = c.id();
    assert!(c.wait().unwrap().success());
    pid
}

#[test]
fn a_loop_of_quiet_execs_sends_the_pages_they_share_about_once() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let exe = dir.path().join("quiet-loop");
    std::fs::copy("/bin/true", &exe).unwrap();
    let (_one, mut src) = execs_source();
    let name = exec_of(&mut src, run(&exe)).expect("an exec is seen");
    src.quiet(name, monotonic_ns() + 60_000_000_000);
    let sh = run_sh(&format!("for i in $(seq 100); do {}; done", exe.display()));
    std::thread::sleep(Duration::from_millis(50));
    let got = drain(&mut src);
    let children: std::collections::HashSet<u32> = (got.iter())
        .filter_map(|e| match e.kind {
            EventKind::Fork { parent, child } if parent == sh => Some(child),
            _ => None,
        })
        .collect();
    assert!(
        children.len() > 100,
        "the loop's children (and seq) are followed"
    );
    let reads = (got.iter())
        .filter(|e| children.contains(&e.pid))
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::GetPages { .. } | EventKind::MapPages { .. } | EventKind::Fault { .. }
            )
        })
        .count();
    // Each child maps the same pages of the program, ld.so and libc
    // (~20 records each when every one is sent).
    assert!(
        (1..300).contains(&reads),
        "100 quiet runs of one program send its pages about once per CPU: {reads} records"
    );
}

/// The programs test a thread's bit before they look it up: a followed
/// thread's bit is set, and a thread no longer followed clears its own
/// at its next record (so an untracked program costs no hash lookup).
#[test]
fn a_followed_thread_has_its_bit_set_and_a_let_go_one_clears_it_itself() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let (_dir, path, md) = file_of_pages(4);
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let mut src = EbpfSource::open(&events(), Some(tid), None, 0).expect("eBPF as root");
    assert!(src.follows(tid) && src.looked_up(tid), "the opening thread");
    let mut sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("read x; cat {}", path.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = sh.id();
    assert!(src.follows(pid) && src.looked_up(pid), "a forked child");
    src.untrack(pid);
    assert!(!src.follows(pid), "untracked from user space");
    writeln!(sh.stdin.take().unwrap(), "go").unwrap();
    assert!(sh.wait().unwrap().success());
    assert!(!src.looked_up(pid), "cleared at its next record");
    let got = drain(&mut src);
    let cat_read = got
        .iter()
        .any(|e| matches!(e.kind, EventKind::GetPages { ino, .. } if ino == md.ino()));
    assert!(!cat_read, "the cat it forked since is not followed");
}

#[test]
fn an_untracker_stops_following_a_process_from_another_thread() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let (_one, mut src) = execs_source();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let followed = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        src.follows(pid)
    });
    let untracker = src.untracker().unwrap();
    std::thread::spawn(move || untracker.untrack_threads_of(pid))
        .join()
        .unwrap();
    let after = src.follows(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    drain(&mut src);
    assert!(followed, "an exec is followed from its start");
    assert!(!after, "and no longer once untracked");
}

/// Records other than execs do not wake the reader one by one, but the
/// record that fills the ring past an eighth does: a reader waiting long
/// between polls is woken by a program that reads fast.
#[test]
fn a_ring_filling_up_wakes_its_reader_with_no_exec() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let pages = 2 * outrider_live::ebpf::WAKE_BYTES / 64;
    let (_dir, path, _) = file_of_pages(pages);
    let (_one, mut src) = execs_source();
    // One exec, then a page per `read` (a record each) once a line comes.
    let (mut child, mut stdin, _) = reader_at_a_line(&mut src, &path, "");
    let go = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        use std::io::Write;
        stdin.write_all(b"go\n").unwrap();
        stdin
    });
    let timeout = Duration::from_secs(30);
    let t0 = std::time::Instant::now();
    let woken = src.wait(None, timeout);
    let waited = t0.elapsed();
    drop(go.join().unwrap());
    assert!(child.wait().unwrap().success());
    let got = drain(&mut src);
    assert!(woken && waited < timeout, "woken after {waited:?}");
    assert!(
        got.len() >= pages / 2,
        "the reads were sent: {} records",
        got.len()
    );
}

/// A launch still judged wakes its reader at the record that takes its
/// misses to `WAKE_MISSED` pages, though no record of a read does: a
/// reader polling slowly sees it turn to storage at once. Here it reads
/// a cold file after a line comes, then waits for another.
#[test]
fn a_launch_still_judged_wakes_its_reader_at_its_first_misses() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let pages = 4 * outrider_live::ebpf::WAKE_MISSED as usize;
    let (_dir, path, md) = file_of_pages(pages);
    evict(&path);
    let (_one, mut src) = execs_source();
    // A bound its start cannot reach: still judged when it reads the file.
    src.let_go_from_memory(1 << 20, 8).unwrap();
    let (mut child, mut stdin, start_missed) =
        reader_at_a_line(&mut src, &path, "sys.stdin.readline()\n");
    // Its start from memory: the wake, once per launch, is left for the file.
    assert!(
        start_missed < outrider_live::ebpf::WAKE_MISSED,
        "its start-up missed {start_missed} pages"
    );
    let stamp = src.stamp_of(child.id());
    let let_go = stamp.is_some_and(|s| src.let_go(s));
    stdin.write_all(b"go\n").unwrap();
    let timeout = Duration::from_secs(30);
    let t0 = std::time::Instant::now();
    let woken = src.wait(None, timeout);
    let waited = t0.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let got = drain(&mut src);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        woken && waited < timeout,
        "woken after {waited:?}; stamp {stamp:?}, let go {let_go}"
    );
    let missed: u64 = (got.iter())
        .filter_map(|e| match e.kind {
            EventKind::AddToCache { ino, order, .. } if ino == md.ino() => Some(1u64 << order),
            _ => None,
        })
        .sum();
    assert!(
        missed >= outrider_live::ebpf::WAKE_MISSED,
        "its misses were sent: {missed} pages"
    );
}

/// `python3` reading `path` 4 KiB at a time once a line comes to its
/// stdin, then running `then`; its records so far drained from `src`,
/// and the pages its start-up brought into the cache. The interpreter
/// is run once before, so that its start reads from memory though a
/// test before dropped it (one did: 739 pages missed, in every run of
/// the whole file on one day).
fn reader_at_a_line(
    src: &mut EbpfSource,
    path: &std::path::Path,
    then: &str,
) -> (std::process::Child, std::process::ChildStdin, u64) {
    let reader = format!(
        "import sys\nsys.stdin.readline()\nf = open({:?}, 'rb')\nwhile f.read(4096): pass\n{then}",
        path.display().to_string()
    );
    let warm = std::process::Command::new("python3")
        .args(["-c", "import sys"])
        .status();
    assert!(warm.unwrap().success());
    let mut child = std::process::Command::new("python3")
        .args(["-c", &reader])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let inserted = |e: &LiveEvent| match e.kind {
        EventKind::AddToCache { order, .. } if e.pid == child.id() => 1u64 << order,
        _ => 0,
    };
    let start_missed = drain(src).iter().map(inserted).sum();
    (child, stdin, start_missed)
}

/// Its first 8 192 pages read from memory, an exec'd image is no longer
/// followed (its reads past them are not sent); read from storage, or
/// kept by the reader, it is followed to its end.
#[test]
fn an_image_reading_from_memory_is_let_go_unless_it_misses_or_is_kept() {
    if !is_root() {
        eprintln!("skipped: needs root for eBPF");
        return;
    }
    let pages = 32 * 1024;
    let (_dir, path, md) = file_of_pages(pages);
    let (_one, mut src) = execs_source();
    src.let_go_from_memory(8192, 8).unwrap();
    // Backwards, 64 KiB at a time: a sequential read is cut short
    // (`ebpf_reads.rs`, `a_sequential_read_is_sent_up_to_its_bound`).
    let python = std::path::Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: needs /usr/bin/python3");
        return;
    }
    let backwards = |wait: bool| {
        let script = format!(
            "import os, sys\n{}f = os.open({:?}, os.O_RDONLY)\n\
             for o in range(os.fstat(f).st_size - 65536, -1, -65536): os.pread(f, 65536, o)\n",
            if wait { "sys.stdin.readline()\n" } else { "" },
            path.display().to_string()
        );
        (std::process::Command::new(python).args(["-c", &script]))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    std::fs::read(&path).unwrap();
    let hot = sent_while(&mut src, backwards(false), md.ino());
    evict(&path);
    let cold = sent_while(&mut src, backwards(false), md.ino());
    let all = pages as u64;
    assert!(
        hot > 0 && hot < all / 2,
        "from memory: {hot} of {all} pages sent"
    );
    assert!(
        cold >= all * 9 / 10,
        "from storage: {cold} of {all} pages sent"
    );
    // Kept: a reader that waits for a line before reading (no wrapper
    // that execs it: a `python3` shim would be the image kept).
    std::fs::read(&path).unwrap();
    let mut py = backwards(true);
    let followed = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(5));
        src.stamp_of(py.id()).is_some()
    });
    let kept = src.keep_following(py.id());
    {
        use std::io::Write;
        py.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    let kept_sent = sent_while(&mut src, py, md.ino());
    assert!(followed && kept, "the reader is followed, then kept");
    assert!(
        kept_sent >= all * 9 / 10,
        "kept: {kept_sent} of {all} pages sent"
    );
}

/// A launch reading the same cached pages over and over is let go once
/// they add up to the bound, though each page is sent once: its reads of
/// another file after that are not sent.
#[test]
fn a_launch_reading_its_cached_pages_again_is_let_go() {
    if !is_root() || !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs root for eBPF and /usr/bin/python3");
        return;
    }
    let (_a, again, _) = file_of_pages(16);
    let (_b, after, md) = file_of_pages(64);
    std::fs::read(&again).unwrap();
    let (_one, mut src) = execs_source();
    src.let_go_from_memory(8192, 8).unwrap();
    let script = format!(
        "import os\nf = os.open({:?}, os.O_RDONLY)\n\
         for i in range(1000):\n    for o in range(16): os.pread(f, 1, o * 4096)\n\
         g = os.open({:?}, os.O_RDONLY)\nfor o in range(64): os.pread(g, 4096, o * 4096)\n",
        again.display().to_string(),
        after.display().to_string()
    );
    let py = (std::process::Command::new("/usr/bin/python3").args(["-c", &script]))
        .spawn()
        .unwrap();
    let sent = sent_while(&mut src, py, md.ino());
    assert_eq!(sent, 0, "pages of the file read after 16 000 reads again");
}

/// A followed thread's exit is sent with its block-I/O wait; a thread not
/// followed sends none.
#[test]
fn a_followed_threads_exit_is_sent_with_its_io_wait() {
    if !is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("skipped: needs root for eBPF and the kernel's BTF");
        return;
    }
    let (_dir, path, _) = file_of_pages(4096);
    // Started before the source: not followed.
    let mut before = std::process::Command::new("sleep")
        .arg("0.5")
        .spawn()
        .unwrap();
    let (_one, mut src) = execs_source();
    assert!(src.sends_exit_waits(), "task_struct.delays in the BTF");
    let sysctl = "/proc/sys/kernel/task_delayacct";
    let was = std::fs::read_to_string(sysctl).unwrap();
    std::fs::write(sysctl, "1").unwrap();
    evict(&path);
    // Random 4 KiB reads of a file not in memory: each waits on the disk.
    let script = format!(
        "import os, random\nf = os.open({:?}, os.O_RDONLY)\n\
         for o in random.sample(range(4096), 256): os.pread(f, 4096, o * 4096)\n",
        path.display().to_string()
    );
    let py = (std::process::Command::new("/usr/bin/python3").args(["-c", &script]))
        .spawn()
        .unwrap();
    let pid = py.id();
    let got = gathered_while(&mut src, py);
    std::fs::write(sysctl, was.trim()).unwrap();
    let exits: Vec<u64> = (got.iter())
        .filter_map(|e| match e.kind {
            EventKind::Exit { tid, blkio_ns } if tid == pid => Some(blkio_ns),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 1, "python's exit, once: {exits:?}");
    assert!(exits[0] > 0, "its wait: {exits:?}");
    let unfollowed = before.id();
    before.wait().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let later = drain(&mut src);
    let sent = |e: &LiveEvent| matches!(e.kind, EventKind::Exit { tid, .. } if tid == unfollowed);
    let unfollowed_sent = got.iter().chain(&later).any(sent);
    assert!(!unfollowed_sent, "the exit of a process not followed");
}
