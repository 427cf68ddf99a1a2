//! Tests against the running kernel (root, ext4, Linux 6.5+ for cachestat;
//! the mincore fallback is tested directly). Files live in the system temp
//! directory, which must be on a file system with FIEMAP.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use outrider_sys::*;

const MIB: u64 = 1 << 20;

fn temp_path(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "outrider-sys-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A file of `bytes` written, synced and dropped from the cache.
fn cold_file(tag: &str, bytes: u64) -> (PathBuf, File) {
    let path = temp_path(tag);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let block = vec![0xa5u8; MIB as usize];
    for _ in 0..bytes / MIB {
        f.write_all(&block).unwrap();
    }
    f.sync_all().unwrap();
    advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
    advise(f.as_fd(), 0, 0, Advice::Random).unwrap();
    (path, f)
}

#[test]
fn fiemap_covers_a_written_file() {
    let (path, f) = cold_file("fiemap", 8 * MIB);
    let ext = fiemap(f.as_fd()).unwrap();
    assert!(!ext.is_empty());
    assert_eq!(ext[0].logical, 0);
    assert_eq!(ext.iter().map(|e| e.length).sum::<u64>(), 8 * MIB);
    assert!(ext.last().unwrap().flags & fiemap::FLAG_LAST != 0);
    for w in ext.windows(2) {
        assert_eq!(w[0].logical + w[0].length, w[1].logical);
    }
    assert_eq!(ext[0].physical_of(0), Some(ext[0].physical));
    std::fs::remove_file(path).unwrap();
}

// More extents than one ioctl returns: fiemap must continue after the last.
#[test]
fn fiemap_continues_past_one_call() {
    let path = temp_path("sparse");
    let f = File::create_new(&path).unwrap();
    let n = fiemap::EXTENTS_PER_CALL as u64 * 2 + 77;
    let page = [1u8; 4096];
    for i in 0..n {
        f.write_all_at(&page, i * 8192).unwrap();
    }
    f.sync_all().unwrap();
    let ext = fiemap(f.as_fd()).unwrap();
    assert_eq!(ext.len() as u64, n);
    for (i, e) in ext.iter().enumerate() {
        assert_eq!((e.logical, e.length), (i as u64 * 8192, 4096));
    }
    std::fs::remove_file(path).unwrap();
}

// Around the first call's small batch (8 extents): none lost or repeated.
#[test]
fn fiemap_is_exact_around_the_first_batch() {
    for n in [1u64, 7, 8, 9, 16, 17] {
        let path = temp_path(&format!("sparse{n}"));
        let f = File::create_new(&path).unwrap();
        for i in 0..n {
            f.write_all_at(&[1u8; 4096], i * 8192).unwrap();
        }
        f.sync_all().unwrap();
        let ext = fiemap(f.as_fd()).unwrap();
        let got: Vec<(u64, u64)> = ext.iter().map(|e| (e.logical, e.length)).collect();
        let want: Vec<(u64, u64)> = (0..n).map(|i| (i * 8192, 4096)).collect();
        assert_eq!(got, want, "{n} extents");
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn cachestat_counts_exactly_the_pages_read() {
    let (path, f) = cold_file("cachestat", 4 * MIB);
    assert_eq!(cachestat(f.as_fd(), 0, 0).unwrap().cache, 0);
    let mut buf = vec![0u8; MIB as usize];
    f.read_exact_at(&mut buf, 0).unwrap();
    let st = cachestat(f.as_fd(), 0, MIB).unwrap();
    assert_eq!(st.cache, 256);
    assert_eq!(st.dirty, 0);
    assert_eq!(cachestat_mincore(f.as_fd(), 0, MIB).unwrap().cache, 256);
    assert_eq!(cachestat_mincore(f.as_fd(), 2 * MIB, MIB).unwrap().cache, 0);
    assert!(page_cached_nowait(f.as_fd(), 4096).unwrap());
    // A miss under RWF_NOWAIT still starts the read of the page asked
    // for (`filemap_get_pages` calls `page_cache_sync_ra` before it
    // looks again; random access only keeps it to that page), and a fast
    // disk may finish it before that second look: the page at 3 MiB
    // read as cached in two `.ci/run`s, once with random access. So
    // eight pages not cached, each checked just before its probe: at
    // least one must be reported missing, which a probe that says
    // "cached" of every page fails.
    let missing = (0..8u64)
        .map(|k| 2 * MIB + k * MIB / 4)
        .filter(|&off| {
            assert_eq!(cachestat_mincore(f.as_fd(), off, 4096).unwrap().cache, 0);
            !page_cached_nowait(f.as_fd(), off).unwrap()
        })
        .count();
    assert!(missing > 0, "every page not cached was reported cached");
    std::fs::remove_file(path).unwrap();
}

// DONTNEED invalidates pages without leaving shadow entries, so our own
// drops never show up as `evicted` — only reclaim does. The directed library
// relies on this to tell premature eviction from its own DONTNEED.
#[test]
fn dontneed_leaves_no_evicted_count() {
    let (path, f) = cold_file("evicted", 2 * MIB);
    let mut buf = vec![0u8; MIB as usize];
    f.read_exact_at(&mut buf, 0).unwrap();
    advise(f.as_fd(), 0, MIB, Advice::DontNeed).unwrap();
    let st = cachestat(f.as_fd(), 0, MIB).unwrap();
    assert_eq!(st.cache, 0);
    assert_eq!(st.evicted, 0);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn chunks_never_exceed_the_cap() {
    let v: Vec<_> = chunks(0, 20 * MIB, 8 * MIB).collect();
    assert_eq!(
        v,
        vec![(0, 8 * MIB), (8 * MIB, 8 * MIB), (16 * MIB, 4 * MIB)]
    );
    assert_eq!(chunks(5, 0, 8).count(), 0);
    assert_eq!(chunks(0, 1, 0).collect::<Vec<_>>(), vec![(0, 1)]);
}

#[test]
fn willneed_in_chunks_brings_in_the_whole_range() {
    let (path, f) = cold_file("willneed", 6 * MIB);
    fetch_chunks(f.as_fd(), MIB, 4 * MIB, MIB, Fetch::WillNeed).unwrap();
    assert_eq!(cachestat(f.as_fd(), MIB, 4 * MIB).unwrap().cache, 1024);
    assert_eq!(cachestat(f.as_fd(), 5 * MIB, MIB).unwrap().cache, 0);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn pool_fetches_every_chunk_and_waits() {
    let (path, f) = cold_file("pool", 12 * MIB);
    let fd: Arc<OwnedFd> = Arc::new(f.into());
    let pool = Pool::new(2, 4);
    assert_eq!(pool.threads(), 2);
    pool.fetch(&fd, 0, 12 * MIB, 4 * MIB, Fetch::Readahead);
    pool.wait().unwrap();
    assert_eq!(cachestat(fd.as_fd(), 0, 0).unwrap().cache, 3072);
    // Errors surface from wait() and are then cleared.
    pool.submit(|| Err(std::io::Error::from_raw_os_error(libc_ebadf())));
    assert!(pool.wait().is_err());
    assert!(pool.wait().is_ok());
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_shut_down_pool_ran_its_queue_and_drops_later_jobs() {
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut pool = Pool::new(2, 4);
    for _ in 0..4 {
        let ran = Arc::clone(&ran);
        pool.submit(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
    }
    pool.shutdown();
    assert_eq!(pool.threads(), 0, "workers joined");
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "queue ran first"
    );
    let later = Arc::clone(&ran);
    pool.submit(move || {
        later.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    });
    assert!(pool.wait().is_ok(), "nothing pending");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 4);
}

fn libc_ebadf() -> i32 {
    9
}

#[test]
fn ra_cap_matches_sysfs() {
    let (path, f) = cold_file("racap", MIB);
    let cap = ra_cap_bytes(f.as_fd());
    assert!(cap >= 4096 && cap.is_multiple_of(1024), "cap {cap}");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn mem_available_is_positive() {
    assert!(mem_available_bytes().unwrap() > 0);
}

// The limit of another process's cgroup: create a v1 memory cgroup limited to
// 256 MiB, move a child into it, read the limit back through its pid.
#[test]
fn cgroup_limit_of_a_given_pid() {
    let root = PathBuf::from("/sys/fs/cgroup/memory");
    if !root.join("memory.limit_in_bytes").exists() {
        eprintln!("skipping: no cgroup v1 memory controller at {root:?}");
        return;
    }
    let dir = root.join(format!("outrider-sys-test-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        eprintln!("skipping: cannot create {dir:?} (not root?)");
        return;
    }
    std::fs::write(dir.join("memory.limit_in_bytes"), "268435456").unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
    let got = cgroup_memory(Some(child.id())).unwrap().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_dir(&dir).unwrap();
    assert_eq!(got.version, 1);
    assert_eq!(got.dir, dir);
    assert_eq!(got.limit_bytes, Some(256 << 20));
    assert_eq!(got.cache_room_bytes().map(|b| b <= 256 << 20), Some(true));
    // And the calling process has some memory cgroup here.
    assert!(cgroup_memory(None).unwrap().is_some());
}
