use super::*;

#[test]
fn finds_a_file_this_process_has_open_by_dev_and_inode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    fs::write(&p, b"hello").unwrap();
    let held = File::open(&p).unwrap();
    let md = held.metadata().unwrap();
    let mut t = FileTable::new(FileTableOptions::default());
    let id = t.id_of(md.dev(), md.ino()).unwrap();
    assert_eq!(id, FileId(1));
    assert_eq!(t.id_of(md.dev(), md.ino()), Some(FileId(1)));
    assert_eq!(t.key_of(id), Some((md.dev(), md.ino())));
    let f = t
        .resolve(id, std::process::id())
        .expect("found via /proc/self/fd");
    assert_eq!(f.size, 5);
    // Found through /proc, the path comes with it; opened by inode
    // number (root on ext4) it is looked up when first asked for.
    assert_eq!(
        t.info(id).unwrap().path.as_os_str().is_empty(),
        t.opened_by_ino == 1
    );
    assert_eq!(t.path_of(id), Some(p.clone()));
    assert_eq!(t.info(id).unwrap().path, p);
    assert!(t.info(id).unwrap().handle.is_some() || t.opened_by_ino == 0);
    // A size change is noticed and drops the extent map.
    fs::write(&p, b"hello world").unwrap();
    assert!(t.refresh(id));
    assert_eq!(t.get(id).unwrap().size, 11);
    assert!(!t.refresh(id));
}

/// Ids skipped by a seed are reserved and may be seeded later, each
/// once; an id in use, 0, or one past the bound may not.
#[test]
fn skipped_ids_may_be_seeded_later_once() {
    let info = |ino| FileInfo {
        dev: 1,
        ino,
        ..FileInfo::default()
    };
    let mut t = FileTable::new(FileTableOptions {
        max_files: 10,
        program_user: None,
        ..FileTableOptions::default()
    });
    assert!(t.seed(FileId(5), info(50)));
    assert_eq!(t.len(), 5);
    assert_eq!(t.lookup(1, 30), None, "reserved ids match no file");
    assert!(t.seed(FileId(3), info(30)));
    assert_eq!(t.lookup(1, 30), Some(FileId(3)));
    assert!(!t.seed(FileId(3), info(31)), "seeded already");
    assert!(!t.seed(FileId(5), info(51)), "seeded already");
    assert!(!t.seed(FileId(2), info(50)), "the file has an id");
    assert!(!t.seed(FileId(0), info(1)));
    assert!(!t.seed(FileId(11), info(110)), "past the bound");
    assert!(t.seed(FileId(7), info(70)));
    assert_eq!((t.len(), t.key_of(FileId(7))), (7, Some((1, 70))));
    let fresh = t.id_of(1, 80).unwrap();
    assert_eq!(fresh, FileId(8), "a run's ids come after");
}

#[test]
fn unknown_inode_is_not_found_and_not_searched_forever() {
    let mut t = FileTable::new(FileTableOptions::default());
    let id = t.id_of(1, u64::MAX - 1).unwrap();
    for _ in 0..10 {
        assert!(t.resolve(id, std::process::id()).is_none());
    }
    assert_eq!(t.unresolved, 3);
}

/// Regression: each unknown file used to cost its own listing of
/// `/proc/PID/{fd,map_files}` (a stat per entry), which made `grep -r`
/// over the kernel tree 1.7x slower under `outrider run` with no
/// prefetching at all. Lookups within one snapshot share one listing.
#[test]
fn lookups_within_a_snapshot_share_one_listing() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = FileTable::new(FileTableOptions {
        snapshot_ttl: Duration::from_secs(3600),
        ..FileTableOptions::default()
    });
    let mut held = Vec::new();
    let mut ids = Vec::new();
    for i in 0..5 {
        let p = dir.path().join(format!("f{i}"));
        fs::write(&p, b"x").unwrap();
        let f = File::open(&p).unwrap();
        let md = f.metadata().unwrap();
        ids.push(t.id_of(md.dev(), md.ino()).unwrap());
        held.push(f);
    }
    let gone = t.id_of(1, u64::MAX - 1).unwrap();
    for id in &ids {
        assert!(t.resolve(*id, std::process::id()).is_some());
    }
    assert!(t.resolve(gone, std::process::id()).is_none());
    assert_eq!((t.scans, t.resolved, t.unresolved), (1, 5, 1));
}

#[test]
fn descriptor_bound_closes_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = FileTable::new(FileTableOptions {
        max_open: 2,
        ..FileTableOptions::default()
    });
    let mut ids = Vec::new();
    for i in 0..3 {
        let p = dir.path().join(format!("f{i}"));
        fs::write(&p, b"x").unwrap();
        ids.push(t.insert_file(File::open(&p).unwrap(), p).unwrap());
    }
    assert!(t.get(ids[0]).is_none(), "oldest closed");
    assert!(t.get(ids[1]).is_some() && t.get(ids[2]).is_some());
}
