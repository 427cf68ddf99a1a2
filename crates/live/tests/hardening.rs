//! What a root prefetcher must not do with paths from a history: block on
//! a FIFO planted there, or open for a program a file its user could not.

use outrider_core::FileId;
use outrider_live::files::{FileInfo, FileTable, FileTableOptions};
use outrider_live::history;
use outrider_store::{AccessRecord, AppHistory, FileRecord};
use outrider_sys::launch::Credentials;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// `f` returns within a minute (a blocking open of a FIFO never would).
fn finishes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(60))
        .expect("returned instead of hanging on the FIFO")
}

fn record_of(id: u32, path: &Path) -> FileRecord {
    let md = std::fs::symlink_metadata(path).unwrap();
    FileRecord {
        id,
        dev: md.dev(),
        ino: md.ino(),
        handle: None,
        path: path.to_string_lossy().into_owned(),
        size: md.size(),
        mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
        mapped: false,
    }
}

/// A FIFO planted at a history file's path used to hang the next run in
/// `open` forever (holding the store's lock): it is dropped at once, both
/// when the history is restored and when a seeded file is reopened.
#[test]
fn a_fifo_at_a_history_path_is_dropped_not_waited_on() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let fifo = d.path().join("planted");
    mkfifo(&fifo);
    let h = AppHistory {
        runs: 1,
        files: vec![record_of(1, &fifo)],
        accesses: vec![AccessRecord {
            file: 1,
            page: 0,
            pages: 1,
        }],
        ..AppHistory::default()
    };
    let r = finishes(move || {
        let mut t = FileTable::new(FileTableOptions::default());
        history::restore(&h, &mut t)
    });
    assert_eq!((r.files_kept, r.files_dropped), (0, 1));
    let info = {
        let rec = record_of(1, &fifo);
        FileInfo {
            dev: rec.dev,
            ino: rec.ino,
            handle: None,
            path: fifo.clone(),
            size: 0,
            mtime_ns: rec.mtime_ns,
        }
    };
    let opened = finishes(move || {
        let mut t = FileTable::new(FileTableOptions::default());
        assert!(t.seed(FileId(1), info));
        t.open_known(FileId(1)).is_some()
    });
    assert!(!opened);
}

/// A directory of 0755 holding a root-only 0600 file, a world-readable
/// one, and a world-readable one inside a 0700 directory: (the
/// directory, secret, open, hidden).
fn user_fixture() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = d.path().join("secret");
    let open = d.path().join("open");
    let hidden_dir = d.path().join("private");
    std::fs::create_dir(&hidden_dir).unwrap();
    std::fs::set_permissions(&hidden_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let hidden = hidden_dir.join("readable");
    for (p, mode) in [(&secret, 0o600), (&open, 0o644), (&hidden, 0o644)] {
        std::fs::write(p, b"data").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    (d, secret, open, hidden)
}

/// A table acting for `nobody`.
fn nobodys_table() -> FileTable {
    let nobody = Credentials {
        uid: 65534,
        gid: 65534,
        groups: vec![65534],
    };
    FileTable::new(FileTableOptions {
        program_user: Some(nobody),
        ..FileTableOptions::default()
    })
}

/// The history record of the file at `p`.
fn info(p: &Path) -> FileInfo {
    let r = record_of(0, p);
    FileInfo {
        dev: r.dev,
        ino: r.ino,
        handle: None,
        path: p.to_path_buf(),
        size: r.size,
        mtime_ns: r.mtime_ns,
    }
}

/// For a program run as another user (sudo), a history file is registered
/// only if that user can open it: a root-only 0600 file, or a readable
/// file inside a 0700 directory, is not; a world-readable one is.
#[test]
fn history_files_the_programs_user_cannot_open_are_not_registered() {
    if !is_root() {
        eprintln!("skipped: taking another user's file-system ids needs root");
        return;
    }
    let (_d, secret, open, hidden) = user_fixture();
    let mut t = nobodys_table();
    assert!(!t.seed(FileId(1), info(&secret)), "root-only file refused");
    assert!(
        !t.seed(FileId(2), info(&hidden)),
        "file in a 0700 directory refused"
    );
    assert!(t.seed(FileId(3), info(&open)), "world-readable file kept");
    // And as root (no program user), all three are registered.
    let mut t = FileTable::new(FileTableOptions {
        program_user: None,
        ..FileTableOptions::default()
    });
    for (i, p) in [&secret, &hidden, &open].into_iter().enumerate() {
        assert!(t.seed(FileId(i as u64 + 1), info(p)));
    }
}

/// Asked for a batch at once (`check_access`, the user's identity taken
/// once for them all), the answers are those of one file at a time, and an
/// answer is used only for the path it was asked about: a hard link to
/// the world-readable file inside the 0700 directory is refused though
/// the same file by its open path was let in.
#[test]
fn access_answered_for_a_batch_holds_for_its_own_paths_only() {
    if !is_root() {
        eprintln!("skipped: taking another user's file-system ids needs root");
        return;
    }
    let (d, secret, open, hidden) = user_fixture();
    let link = d.path().join("private/link");
    std::fs::hard_link(&open, &link).unwrap();
    let mut t = nobodys_table();
    let asked = [&secret, &hidden, &open].map(|p| (p.clone(), info(p).dev, info(p).ino));
    t.check_access(asked);
    assert!(!t.seed(FileId(1), info(&secret)), "root-only file refused");
    assert!(!t.seed(FileId(2), info(&hidden)), "0700 directory refused");
    let mut by_link = info(&open);
    by_link.path = link;
    assert!(
        !t.seed(FileId(3), by_link),
        "the link, asked about by itself"
    );
    let mut t = nobodys_table();
    t.check_access([(open.clone(), info(&open).dev, info(&open).ino)]);
    assert!(t.seed(FileId(1), info(&open)), "world-readable file kept");
}
