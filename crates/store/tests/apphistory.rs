//! Per-application run history: saved and loaded
//! exactly; two writers at once serialise without corruption or lost
//! runs; a writer killed with SIGKILL at any point leaves the previous
//! complete run; a version-1 file is migrated in place.
//!
//! The concurrent and killed writers are separate processes: this test
//! binary re-executed with `OUTRIDER_STORE_CHILD` set runs the ignored
//! `writer_child` test as the writer.

use outrider_store::{AccessRecord, AppHistory, FileRecord, Store};
use std::path::Path;
use std::process::{Child, Command};

/// Run number `n`'s history: `files` files and `files * 4` accesses, each
/// value derived from `n` so a mix of two runs is detectable.
fn history(n: u64, files: u32) -> AppHistory {
    AppHistory {
        exe: "/bin/prog".into(),
        args: format!("run {n}"),
        cwd: "/work".into(),
        runs: 0,
        files: (1..=files)
            .map(|id| FileRecord {
                id,
                dev: 2049,
                ino: n * 100_000 + u64::from(id),
                handle: Some((1, vec![n as u8; 8], 42)),
                path: format!("/data/{n}/{id}"),
                size: n * 4096,
                mtime_ns: n as i64,
                mapped: id % 2 == 0,
            })
            .collect(),
        accesses: (0..files * 4)
            .map(|i| AccessRecord {
                file: 1 + i % files,
                page: n * 1000 + u64::from(i),
                pages: 1 + i % 3,
            })
            .collect(),
    }
}

/// The loaded history is one whole run: every field derived from the same
/// run number.
fn run_number_of(h: &AppHistory) -> u64 {
    let n: u64 = h.args.strip_prefix("run ").unwrap().parse().unwrap();
    let mut want = history(n, h.files.len() as u32);
    want.runs = h.runs;
    assert_eq!(h, &want, "a run saved whole, not a mix");
    n
}

fn integrity_ok(db: &Path) {
    let s = Store::open(db).unwrap();
    let r: String = s
        .connection()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(r, "ok");
}

fn spawn_writer(db: &Path, first: u64, count: u64, files: u32) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "writer_child", "--nocapture"])
        .env(
            "OUTRIDER_STORE_CHILD",
            format!("{}|{first}|{count}|{files}", db.display()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The writer process: saves runs `first..first+count` (count 0: forever)
/// of application "app", each in its own `save_run`.
#[test]
#[ignore = "run as a child process by the tests below"]
fn writer_child() {
    let Ok(spec) = std::env::var("OUTRIDER_STORE_CHILD") else {
        return;
    };
    let f: Vec<&str> = spec.split('|').collect();
    let (first, count, files): (u64, u64, u32) = (
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
    );
    let mut n = first;
    loop {
        // A fresh open each time, like a new `outrider run`.
        let mut s = Store::open(f[0]).unwrap();
        s.save_run("app", &history(n, files), &[("auto", vec![n as u8; 16])])
            .unwrap();
        n += 1;
        if count > 0 && n >= first + count {
            break;
        }
    }
}

#[test]
fn a_run_is_saved_and_loaded_exactly_and_keyed_by_application() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.load_run("app").unwrap(), None);
    s.save_run("app", &history(3, 5), &[("auto", vec![1, 2, 3])])
        .unwrap();
    s.save_run("other", &history(4, 2), &[]).unwrap();
    let h = s.load_run("app").unwrap().unwrap();
    assert_eq!(h.runs, 1);
    assert_eq!(run_number_of(&h), 3);
    assert_eq!(s.load_history("app", "auto").unwrap(), Some(vec![1, 2, 3]));
    s.save_run("app", &history(5, 1), &[]).unwrap();
    let h = s.load_run("app").unwrap().unwrap();
    assert_eq!((h.runs, run_number_of(&h)), (2, 5));
    assert_eq!(run_number_of(&s.load_run("other").unwrap().unwrap()), 4);
}

/// Two processes each saving 40 runs of the same application at the same
/// time: no error, the file is intact, the run counter counts all 80
/// saves (none lost to a race) and the survivor is one whole run.
#[test]
fn two_concurrent_writers_serialise() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut a = spawn_writer(&db, 1000, 40, 50);
    let mut b = spawn_writer(&db, 2000, 40, 50);
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    integrity_ok(&db);
    let h = Store::open(&db).unwrap().load_run("app").unwrap().unwrap();
    assert_eq!(h.runs, 80);
    let n = run_number_of(&h);
    assert!(n == 1039 || n == 2039, "the last save of one writer: {n}");
}

/// A writer killed with SIGKILL while saving large runs in a loop: the
/// store opens, is intact, and holds one whole earlier run.
#[test]
fn a_killed_writer_loses_at_most_the_run_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    Store::open(&db)
        .unwrap()
        .save_run("app", &history(1, 2000), &[])
        .unwrap();
    for (round, delay_ms) in [37u64, 150, 410].into_iter().enumerate() {
        let mut c = spawn_writer(&db, 10_000 * (round as u64 + 1), 0, 2000);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        integrity_ok(&db);
        let h = Store::open(&db).unwrap().load_run("app").unwrap().unwrap();
        run_number_of(&h); // whole, not torn
    }
}

/// A version-1 store (models only) is migrated to the current schema in
/// place, its models kept.
#[test]
fn a_version_1_store_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (1);
             CREATE TABLE outrider_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO outrider_meta VALUES ('application', 'outrider');
             CREATE TABLE models (
                 app_key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
                 format INTEGER NOT NULL, data BLOB NOT NULL,
                 saved_unix INTEGER NOT NULL, PRIMARY KEY (app_key, name));
             INSERT INTO models VALUES ('k', 'p', 'policy', 1, x'0102', 0);",
        )
        .unwrap();
    }
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.load_history("k", "p").unwrap(), Some(vec![1, 2]));
    s.save_run("app", &history(7, 3), &[]).unwrap();
    assert_eq!(run_number_of(&s.load_run("app").unwrap().unwrap()), 7);
}

/// `save_run_same_files` replaces the access list and counts the run but
/// leaves the file rows as saved: loading gives the new accesses with the
/// files of the earlier save.
#[test]
fn a_save_with_the_same_files_keeps_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut s = Store::open(&db).unwrap();
    let first = history(1, 5);
    s.save_run("app", &first, &[]).unwrap();
    let mut second = history(1, 5);
    second.accesses.reverse();
    second.accesses.truncate(7);
    s.save_run_same_files("app", &second, &[], 1).unwrap();
    let got = s.load_run("app").unwrap().unwrap();
    assert_eq!(got.runs, 2);
    assert_eq!(got.accesses, second.accesses);
    assert_eq!(got.files, first.files);
    // Another run was saved since the one loaded (runs 1): the files are
    // written after all.
    let third = history(3, 2);
    s.save_run_same_files("app", &third, &[], 1).unwrap();
    let got = s.load_run("app").unwrap().unwrap();
    assert_eq!(got.runs, 3);
    assert_eq!(got.files, third.files);
    integrity_ok(&db);
}

/// `skip_checkpoint_on_close`: the last connection closes without moving
/// the WAL into the database (the WAL file keeps the run), and the next
/// connection reads the run back whole from the WAL.
#[test]
fn a_connection_closed_without_checkpoint_leaves_the_run_in_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let wal = dir.path().join("h.db-wal");
    let mut s = Store::open(&db).unwrap();
    s.save_run("app", &history(3, 50), &[]).unwrap();
    s.skip_checkpoint_on_close().unwrap();
    drop(s);
    assert!(
        std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0),
        "the WAL stays"
    );
    let s = Store::open(&db).unwrap();
    assert_eq!(run_number_of(&s.load_run("app").unwrap().unwrap()), 3);
    drop(s);
    // A normal close checkpoints and removes the WAL.
    assert!(std::fs::metadata(&wal).map_or(true, |m| m.len() == 0));
    integrity_ok(&db);
}
