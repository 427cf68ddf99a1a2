//! Against the real kernel: the programs of page reads, faults and
//! fault-around maps. Raw tracepoints build the same records as the
//! tracepoints; the programs are detached while no thread is followed,
//! and soon after the last is let go; a sequential read is sent up to
//! its bound. Skipped (passes vacuously, with a note) when not root.

mod common;

use common::*;
use outrider_live::ebpf::{EbpfSource, CHECK_UNTRACKED_NS};
use outrider_live::tracefs::{EventKind, LiveEvent};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

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
        // The exec asked for the attach, made on a thread of its own.
        let on = |src: &EbpfSource| src.reads_attached().is_some_and(|(on, _)| on);
        while !on(src) && std::time::Instant::now() < deadline {
            src.wait(None, Duration::from_millis(5));
            drain(src);
        }
        let attached = on(src);
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
