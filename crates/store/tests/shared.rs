//! History of the whole store (DiskSeen's one block table, §3.1): a
//! read-modify-write in one immediate transaction, so two processes
//! merging at once both keep what they added; a bad blob is a clear error
//! naming the store and the reserved key; the key lists no application.
//!
//! The concurrent writers are this test binary re-executed with
//! `OUTRIDER_SHARED_CHILD` set, running the ignored `merger_child` test.

use outrider_store::{Store, SHARED_KEY};
use std::process::Command;

/// The merger process: `count` merges of "test", each appending its tag
/// (`first`, `first + 1`, ...) as 8 bytes to what is stored.
#[test]
#[ignore = "run as a child process by the test below"]
fn merger_child() {
    let Ok(spec) = std::env::var("OUTRIDER_SHARED_CHILD") else {
        return;
    };
    let f: Vec<&str> = spec.split('|').collect();
    let (first, count): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
    for n in first..first + count {
        // A fresh open each time, like the save of a new `outrider run`.
        let mut s = Store::open(f[0]).unwrap();
        let wrote = s
            .merge_shared("test", |stored| {
                let mut v = stored.unwrap_or_default().to_vec();
                v.extend_from_slice(&n.to_le_bytes());
                Some(v)
            })
            .unwrap();
        assert!(wrote);
    }
}

/// Two processes each merging 40 times at once: all 80 additions are in
/// the stored blob (a read outside the write's transaction would lose
/// some: both read the same blob, the second commit drops the first's).
#[test]
fn two_concurrent_merges_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    Store::open(&db).unwrap();
    let spawn = |first: u64| {
        Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "merger_child", "--nocapture"])
            .env(
                "OUTRIDER_SHARED_CHILD",
                format!("{}|{first}|40", db.display()),
            )
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(1000), spawn(2000));
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let blob = Store::open(&db)
        .unwrap()
        .load_shared("test")
        .unwrap()
        .unwrap();
    let mut tags: Vec<u64> = blob
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    tags.sort_unstable();
    let want: Vec<u64> = (1000..1040).chain(2000..2040).collect();
    assert_eq!(tags, want);
}

#[test]
fn a_merge_that_adds_nothing_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path().join("h.db")).unwrap();
    assert!(!s.merge_shared("test", |_| None).unwrap());
    assert_eq!(s.load_shared("test").unwrap(), None);
}

/// DiskSeen's table through the trait: merged from one policy, loaded
/// into another; a corrupt one is an error naming the store, the
/// reserved key and the reason, and the policy stays fresh.
#[test]
fn a_policy_table_round_trips_and_a_corrupt_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut s = Store::open(&db).unwrap();
    let mut fresh = outrider_core::build_policy("readahead+diskseen").unwrap();
    assert!(!s.load_shared_into(fresh.as_mut()).unwrap(), "none stored");
    assert!(!s.merge_shared_from(fresh.as_ref()).unwrap(), "nothing new");
    let name = fresh.shared_history_name().unwrap().to_string();
    s.merge_shared(&name, |_| Some(b"ODSK1\x01\0\0\0\0\0\0\0".to_vec()))
        .unwrap();
    let mut p = outrider_core::build_policy("diskseen").unwrap();
    assert!(s.load_shared_into(p.as_mut()).unwrap());
    s.merge_shared(&name, |_| Some(b"not a table".to_vec()))
        .unwrap();
    let e = s.load_shared_into(p.as_mut()).unwrap_err().to_string();
    assert!(e.contains(&db.display().to_string()), "{e}");
    assert!(e.contains(SHARED_KEY) && e.contains("bad magic"), "{e}");
    // Not an application: no run of it, and forgetting it removes it.
    assert!(!s.has_run(SHARED_KEY).unwrap());
    assert_eq!(s.forget_shared().unwrap(), 1);
    assert_eq!(s.load_shared(&name).unwrap(), None);
}
