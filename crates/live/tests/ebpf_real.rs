//! Against the real kernel: the eBPF source sees a followed thread's file
//! reads (device, inode, pages, CLOCK_MONOTONIC times), follows the
//! processes it forks, and ignores every other task. Skipped (passes
//! vacuously, with a note) when not root.

use outrider_live::ebpf::CHECK_UNTRACKED_NS;
use outrider_live::ebpf::{EbpfSource, Scope};
use outrider_live::tracefs::{EventKind, LiveEvent, EVENTS, EXEC_EVENT};
use outrider_sys::monotonic_ns;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn events() -> Vec<(String, String)> {
    EVENTS
        .iter()
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect()
}

/// A file of `pages` pages in a temporary directory (kept while the
/// directory lives), its path and metadata.
fn file_of_pages(pages: usize) -> (tempfile::TempDir, std::path::PathBuf, std::fs::Metadata) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![7u8; pages * 4096]).unwrap();
    let md = std::fs::metadata(&path).unwrap();
    (dir, path, md)
}

fn drain(src: &mut EbpfSource) -> Vec<LiveEvent> {
    let mut out = Vec::new();
    while src.poll(&mut out, 256).unwrap() > 0 {}
    src.settle_reads().unwrap();
    out
}

/// A source following every exec, as the daemon's, and the lock that
/// keeps the other tests' such sources closed while it is held: it
/// follows every exec on the machine, theirs too, whose records would
/// crowd its per-CPU table of pages sent.
fn execs_source() -> (std::sync::MutexGuard<'static, ()>, EbpfSource) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut evs = events();
    evs.push((EXEC_EVENT.0.into(), EXEC_EVENT.1.into()));
    let src = EbpfSource::open_scoped(&evs, Scope::Execs, None, 0).expect("eBPF as root");
    (guard, src)
}

/// The records sent while `child` runs, read as they come (a cold read
/// fills more than the ring), and a moment after.
fn gathered_while(src: &mut EbpfSource, mut child: std::process::Child) -> Vec<LiveEvent> {
    let mut got = Vec::new();
    while child.try_wait().unwrap().is_none() {
        src.wait(None, Duration::from_millis(5));
        got.extend(drain(src));
    }
    std::thread::sleep(Duration::from_millis(20));
    got.extend(drain(src));
    got
}

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

/// The reads of (`ino`) among `events`: (pid, first page, pages).
fn reads_of(events: &[LiveEvent], ino: u64) -> Vec<(u32, u64, u64)> {
    (events.iter())
        .filter_map(|e| match e.kind {
            EventKind::GetPages {
                ino: i,
                index,
                last_index,
                ..
            } if i == ino => Some((e.pid, index, last_index + 1 - index)),
            _ => None,
        })
        .collect()
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
    let (mut child, mut stdin) = reader_at_a_line(&mut src, &path, "");
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
    let (mut child, mut stdin) = reader_at_a_line(&mut src, &path, "sys.stdin.readline()\n");
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
/// stdin, then running `then`; its records so far drained from `src`.
fn reader_at_a_line(
    src: &mut EbpfSource,
    path: &std::path::Path,
    then: &str,
) -> (std::process::Child, std::process::ChildStdin) {
    let reader = format!(
        "import sys\nsys.stdin.readline()\nf = open({:?}, 'rb')\nwhile f.read(4096): pass\n{then}",
        path.display().to_string()
    );
    let mut child = std::process::Command::new("python3")
        .args(["-c", &reader])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    drain(src);
    (child, stdin)
}

/// Pages of (`ino`) sent in read records while `child` runs.
fn sent_while(src: &mut EbpfSource, child: std::process::Child, ino: u64) -> u64 {
    let got = gathered_while(src, child);
    reads_of(&got, ino).iter().map(|r| r.2).sum()
}

/// Drop `path`'s pages from the page cache (written back first: dirty
/// pages stay).
fn evict(path: &std::path::Path) {
    use outrider_sys::advise::{advise, Advice};
    use std::os::fd::AsFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
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
    // (`a_sequential_read_is_sent_up_to_its_bound`).
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

/// Following every exec, the page reads, faults and fault-around maps
/// come from raw tracepoints where the kernel has BTF, their records
/// built by the programs: the same file (inode and device) and pages as
/// the tracepoints' own records say.
#[test]
fn a_launchs_reads_and_faults_from_raw_tracepoints_name_its_file_and_pages() {
    if !is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("skipped: needs root for eBPF and the kernel's BTF");
        return;
    }
    let (_dir, path, md) = file_of_pages(64);
    let (_one, mut src) = execs_source();
    assert_eq!(src.raw_tracepoints(), 3, "reads, faults and maps");
    evict(&path);
    let cat = std::process::Command::new("cat")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (cat_pid, read) = (cat.id(), sent_while(&mut src, cat, md.ino()));
    assert!(read >= 64, "cat's reads of the file's 64 pages: {read}");
    let script = format!(
        "import mmap; f = open('{}', 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
         s = sum(m[i * 4096] for i in range(64))",
        path.display()
    );
    let py = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .spawn()
        .unwrap();
    let py_pid = py.id();
    let got = gathered_while(&mut src, py);
    let mapped: Vec<&LiveEvent> = (got.iter())
        .filter(|e| {
            e.pid == py_pid
                && matches!(e.kind, EventKind::Fault { ino, dev, .. } | EventKind::MapPages { ino, dev, .. }
                    if ino == md.ino() && dev == md.dev())
        })
        .collect();
    assert!(!mapped.is_empty(), "python's faults in the mapped file");
    let in_file = mapped.iter().all(|e| match e.kind {
        EventKind::Fault { index, .. } => index < 64,
        EventKind::MapPages {
            index, last_index, ..
        } => index <= last_index && last_index < 64,
        _ => false,
    });
    assert!(in_file, "pages within the file: {mapped:?}");
    assert_ne!(cat_pid, py_pid);
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

/// The programs of page reads, faults and fault-around maps are detached
/// while nothing is followed, and an exec read attaches them again: a
/// launch's reads and the pages it maps after that are all sent.
#[test]
fn the_reads_and_faults_programs_are_detached_while_no_thread_is_followed_and_an_exec_attaches_them(
) {
    if !is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("skipped: needs root for eBPF and the kernel's BTF");
        return;
    }
    let (_dir, path, md) = file_of_pages(64);
    let (_dir2, mapped, mapped_md) = file_of_pages(64);
    let (_one, mut src) = execs_source();
    assert_eq!(
        src.reads_attached(),
        Some((true, 0)),
        "attached when opened"
    );
    // The other tests' processes are followed while they run (this
    // source follows every exec): wait for a moment with none.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let detached = |s: &EbpfSource| s.reads_attached().is_some_and(|(on, n)| !on && n > 0);
    while !detached(&src) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        drain(&mut src);
    }
    assert!(detached(&src), "detached: {:?}", src.reads_attached());
    evict(&path);
    let script = format!(
        "import mmap, os, time\ntime.sleep(0.1)\nf = os.open({:?}, os.O_RDONLY)\n\
         for o in range(0, 64 * 4096, 16384): os.pread(f, 16384, o)\n\
         m = mmap.mmap(os.open({:?}, os.O_RDONLY), 0, prot=mmap.PROT_READ)\n\
         for o in range(0, 64 * 4096, 4096): m[o]\n",
        path.display().to_string(),
        mapped.display().to_string()
    );
    let py = (std::process::Command::new("/usr/bin/python3").args(["-c", &script]))
        .spawn()
        .unwrap();
    let got = gathered_while(&mut src, py);
    let unsent = reads_unsent(&got, md.ino(), (0..64).step_by(4));
    assert!(unsent.is_empty(), "reads not sent: {unsent:?}");
    let unmapped = pages_unmapped(&got, mapped_md.ino(), 0..64);
    assert!(unmapped.is_empty(), "mapped pages not sent: {unmapped:?}");
}

/// Once a thread is untracked, the table of followed threads is looked at
/// `CHECK_UNTRACKED_NS` later, not `CHECK_ATTACHED_NS` (ten times it): a
/// launch let go leaves the programs off the reads of everyone within a
/// few milliseconds. (Other tests' processes are followed while they run:
/// tried until a moment with none.)
#[test]
fn an_untrack_that_empties_the_table_detaches_the_reads_programs_soon() {
    if !is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("skipped: needs root for eBPF and the kernel's BTF");
        return;
    }
    let (_one, mut src) = execs_source();
    let detached_after = |src: &mut EbpfSource| {
        let mut child = (std::process::Command::new("/bin/sleep").arg("5"))
            .spawn()
            .unwrap();
        let pid = child.id();
        let exec = |e: &LiveEvent| matches!(e.kind, EventKind::Exec { pid: p, .. } if p == pid);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !drain(src).iter().any(exec) && std::time::Instant::now() < deadline {
            src.wait(None, Duration::from_millis(5));
        }
        let attached = src.reads_attached().is_some_and(|(on, _)| on);
        src.untrack(pid);
        std::thread::sleep(Duration::from_nanos(CHECK_UNTRACKED_NS + 1_000_000));
        src.settle_reads().unwrap();
        let detached = src.reads_attached().is_some_and(|(on, _)| !on);
        let _ = child.kill();
        let _ = child.wait();
        attached && detached
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut soon = false;
    while !soon && std::time::Instant::now() < deadline {
        soon = detached_after(&mut src);
    }
    assert!(
        soon,
        "never detached {CHECK_UNTRACKED_NS} ns after an untrack"
    );
}

/// The pages of `pages` that no fault or fault-around map record of file
/// `ino` in `got` holds.
fn pages_unmapped(got: &[LiveEvent], ino: u64, pages: std::ops::Range<u64>) -> Vec<u64> {
    let sent: std::collections::HashSet<u64> = (got.iter())
        .flat_map(|e| match e.kind {
            EventKind::Fault { ino: i, index, .. } if i == ino => index..index + 1,
            EventKind::MapPages {
                ino: i,
                index,
                last_index,
                ..
            } if i == ino => index..last_index + 1,
            _ => 0..0,
        })
        .collect();
    pages.filter(|p| !sent.contains(p)).collect()
}

/// A launch reading a file from start to end is sent its first
/// `runs::SENT_PAGES` (16 MiB) of it; one reading it backwards, reading
/// one 16 KiB in every 64 KiB forwards (a stride: it skips more than it
/// reads), or reading it forwards from 8 MiB (a run the daemon replays),
/// every read.
///
/// Every read, not every page: a cold read whose readahead brought in
/// nothing (seen here with `find` running beside it, in 1 run of 2)
/// reads its first page alone (`filemap_create_folio`), which
/// `mm_filemap_get_pages` does not report, and the rest of the read in a
/// record of its own: one to three of the 3 072 pages of the strided read
/// were missing from records of the 768 reads.
#[test]
fn a_sequential_read_is_sent_up_to_its_bound() {
    if !is_root() || !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs root for eBPF and /usr/bin/python3");
        return;
    }
    let pages = 12 * 1024;
    let (_dir, path, md) = file_of_pages(pages);
    let (_one, mut src) = execs_source();
    let read = |src: &mut EbpfSource, order: &str, step: u32, from: u32| {
        let script = format!(
            "import os, sys\nsys.stdin.readline()\nf = os.open({:?}, os.O_RDONLY)\n\
             for o in {order}(range({from}, os.fstat(f).st_size, {step})): os.pread(f, 16384, o)\n",
            path.display().to_string()
        );
        let mut py = (std::process::Command::new("/usr/bin/python3").args(["-c", &script]))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        go_once_reads_attached(src, &mut py);
        py
    };
    let py = read(&mut src, "", 16384, 0);
    let forwards = sent_while(&mut src, py, md.ino());
    let py = read(&mut src, "reversed", 16384, 0);
    let backwards = sent_while(&mut src, py, md.ino());
    evict(&path);
    let py = read(&mut src, "", 65536, 0);
    let strided = gathered_while(&mut src, py);
    evict(&path);
    let py = read(&mut src, "", 16384, 8 << 20);
    let from_8m = gathered_while(&mut src, py);
    assert!(
        (3072..=4096 + 64).contains(&forwards),
        "forwards: {forwards} of {pages} pages sent"
    );
    assert!(
        backwards >= pages as u64,
        "backwards: {backwards} of {pages} pages sent"
    );
    let unsent = reads_unsent(&strided, md.ino(), (0..pages as u64).step_by(16));
    assert!(unsent.is_empty(), "strided: reads not sent {unsent:?}");
    let unsent = reads_unsent(&from_8m, md.ino(), (2048..pages as u64).step_by(4));
    assert!(unsent.is_empty(), "from 8 MiB: reads not sent {unsent:?}");
}

/// Send `child` (waiting for a line on its stdin) its line once the page
/// reads' program is attached: detached while no thread was followed, it
/// is attached when the source reads the child's exec, and a child that
/// reads before that (its reader late, on a loaded machine: the first
/// 7 MiB of a read in one CI run) is not seen. What is read meanwhile is
/// the child's exec and start-up, not its reads of the test's file.
fn go_once_reads_attached(src: &mut EbpfSource, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let attached = |s: &EbpfSource| s.reads_attached().is_none_or(|(on, _)| on);
    while !attached(src) && std::time::Instant::now() < deadline {
        src.wait(None, Duration::from_millis(5));
        drain(src);
    }
    assert!(attached(src), "reads attached: {:?}", src.reads_attached());
    (child.stdin.take().unwrap()).write_all(b"go\n").unwrap();
}

/// Of the 4-page reads starting at `firsts`, those whose last page no
/// record of `ino` holds (a read's record ends at its last page).
fn reads_unsent(got: &[LiveEvent], ino: u64, firsts: impl Iterator<Item = u64>) -> Vec<u64> {
    let sent: std::collections::HashSet<u64> = (reads_of(got, ino).iter())
        .flat_map(|&(_, first, n)| first..first + n)
        .collect();
    firsts.filter(|f| !sent.contains(&(f + 3))).collect()
}
