//! Against the real kernel: a file read shows up as `mm_filemap_get_pages`
//! events with its device and inode. Skipped (passes vacuously, with a
//! note) when not root or tracefs is unavailable.

use outrider_live::tracefs::{EventKind, Instance, InstanceOptions};
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
    // live pid) is removed by the next open.
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
    assert!(!stale.exists(), "stale instance removed");
    assert!(ipath.is_dir());
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 4096];
    for _ in 0..64 {
        f.read_exact(&mut buf).unwrap();
    }
    let me = std::thread::current();
    drop(me);
    let mut events = Vec::new();
    for _ in 0..50 {
        inst.poll(&mut events, 10_000).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
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
            }
        }
    }
    pages.sort_unstable();
    pages.dedup();
    assert_eq!(pages, (0..64).collect::<Vec<u64>>());
    assert_eq!(inst.stats.lost_events, 0);
    drop(inst);
    assert!(!ipath.exists(), "instance removed on drop");
}
