//! Helpers shared by the eBPF test files (`ebpf_real.rs`, `ebpf_reads.rs`):
//! sources, files of pages, and the records read from them.
#![allow(dead_code)]

use outrider_live::ebpf::{EbpfSource, Scope};
use outrider_live::tracefs::{EventKind, LiveEvent, EVENTS, EXEC_EVENT};
use std::time::Duration;

pub fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn events() -> Vec<(String, String)> {
    EVENTS
        .iter()
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect()
}

/// A file of `pages` pages in a temporary directory (kept while the
/// directory lives), its path and metadata.
pub fn file_of_pages(pages: usize) -> (tempfile::TempDir, std::path::PathBuf, std::fs::Metadata) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![7u8; pages * 4096]).unwrap();
    let md = std::fs::metadata(&path).unwrap();
    (dir, path, md)
}

pub fn drain(src: &mut EbpfSource) -> Vec<LiveEvent> {
    let mut out = Vec::new();
    while src.poll(&mut out, 256).unwrap() > 0 {}
    src.settle_reads().unwrap();
    out
}

/// A source following every exec, as the daemon's, and the lock that
/// keeps the other tests' such sources closed while it is held: it
/// follows every exec on the machine, theirs too, whose records would
/// crowd its per-CPU table of pages sent.
pub fn execs_source() -> (std::sync::MutexGuard<'static, ()>, EbpfSource) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut evs = events();
    evs.push((EXEC_EVENT.0.into(), EXEC_EVENT.1.into()));
    let src = EbpfSource::open_scoped(&evs, Scope::Execs, None, 0).expect("eBPF as root");
    (guard, src)
}

/// The records sent while `child` runs, read as they come (a cold read
/// fills more than the ring), and a moment after.
pub fn gathered_while(src: &mut EbpfSource, mut child: std::process::Child) -> Vec<LiveEvent> {
    let mut got = Vec::new();
    while child.try_wait().unwrap().is_none() {
        src.wait(None, Duration::from_millis(5));
        got.extend(drain(src));
    }
    std::thread::sleep(Duration::from_millis(20));
    got.extend(drain(src));
    got
}

/// The reads of (`ino`) among `events`: (pid, first page, pages).
pub fn reads_of(events: &[LiveEvent], ino: u64) -> Vec<(u32, u64, u64)> {
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

/// Pages of (`ino`) sent in read records while `child` runs.
pub fn sent_while(src: &mut EbpfSource, child: std::process::Child, ino: u64) -> u64 {
    let got = gathered_while(src, child);
    reads_of(&got, ino).iter().map(|r| r.2).sum()
}

/// Drop `path`'s pages from the page cache (written back first: dirty
/// pages stay).
pub fn evict(path: &std::path::Path) {
    use outrider_sys::advise::{advise, Advice};
    use std::os::fd::AsFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
}
