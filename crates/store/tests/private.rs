//! The history store is private to its user: created 0600 in a 0700
//! directory, existing files tightened, and a store another user could
//! replace or write refused (it holds command lines and file paths, and
//! root's prefetcher acts on it).

use outrider_store::{open_lock, Store, StoreError};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_new_store_is_0600_in_a_0700_directory_and_so_are_its_wal_and_lock() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("state/outrider/history.db");
    let mut s = Store::open(&db).unwrap();
    s.save_run("app", &Default::default(), &[]).unwrap();
    let _lock = open_lock(&db).unwrap();
    assert_eq!(mode(&d.path().join("state/outrider")), 0o700);
    assert_eq!(mode(&db), 0o600);
    let wal = d.path().join("state/outrider/history.db-wal");
    assert!(wal.exists(), "WAL mode keeps a -wal file while open");
    assert_eq!(mode(&wal), 0o600);
    assert_eq!(
        mode(&d.path().join("state/outrider/history.db.lock")),
        0o600
    );
}

/// Stores written by earlier versions were 0644 in a 0755 `outrider`
/// directory: opening one makes both private.
#[test]
fn an_existing_world_readable_store_and_state_directory_are_made_private() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("outrider");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let db = dir.join("history.db");
    drop(Store::open(&db).unwrap());
    fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
    drop(Store::open(&db).unwrap());
    assert_eq!((mode(&dir), mode(&db)), (0o700, 0o600));
}

#[test]
fn a_directory_others_can_write_is_refused() {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let e = Store::open(d.path().join("h.db")).err().unwrap();
    assert!(matches!(e, StoreError::Unsafe { .. }), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("writable by other users") && m.contains("777"),
        "{m}"
    );
    assert!(open_lock(&d.path().join("h.db")).is_err());
}

/// A symbolic link planted as the store or its lock is never followed
/// (root would write through it into any file).
#[test]
fn a_symbolic_link_as_store_or_lock_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("victim");
    fs::write(&target, b"precious").unwrap();
    let db = d.path().join("h.db");
    std::os::unix::fs::symlink(&target, &db).unwrap();
    let e = Store::open(&db).err().unwrap().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    let db2 = d.path().join("g.db");
    std::os::unix::fs::symlink(&target, d.path().join("g.db.lock")).unwrap();
    let e = open_lock(&db2).err().unwrap().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    assert_eq!(fs::read(&target).unwrap(), b"precious");
}

/// A store (or directory) belonging to another user is refused: root
/// would otherwise act on what that user wrote into it.
#[test]
fn a_store_or_directory_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: chown to another user needs root");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("h.db");
    drop(Store::open(&db).unwrap());
    std::os::unix::fs::chown(&db, Some(65534), None).unwrap();
    let e = Store::open(&db).err().unwrap().to_string();
    assert!(e.contains("belongs to uid 65534"), "{e}");
    let sub = d.path().join("theirs");
    fs::create_dir(&sub).unwrap();
    std::os::unix::fs::chown(&sub, Some(65534), None).unwrap();
    let e = Store::open(sub.join("h.db")).err().unwrap().to_string();
    assert!(e.contains("belongs to uid 65534"), "{e}");
    assert_eq!(fs::metadata(&db).unwrap().uid(), 65534);
}
