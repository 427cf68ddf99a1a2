//! The daemon's use of the history store: one `outrider_store` file,
//! launch sets under `exe:PATH`, the boot set under [`BOOT_KEY`], and the
//! size bound (least recently saved launch sets forgotten first).
//!
//! The boot set is saved with a stamp of the package managers' databases
//! ([`PACKAGE_DBS`]: path and mtime of each present); a boot set whose
//! stamp differs at load was recorded before a package upgrade and is
//! discarded (ureadahead discards its pack the same way, when dpkg ran).

use crate::roots::Roots;
use crate::streaks::Streaks;
use outrider_driver::benefit::Gate;
use outrider_store::{AppHistory, Store, StoreError};
use rusqlite::params;
use std::path::PathBuf;

/// The store key of the boot set.
pub const BOOT_KEY: &str = "daemon-boot";

/// Package-manager databases whose change discards the boot set (dpkg,
/// rpm, pacman).
pub const PACKAGE_DBS: &[&str] = &[
    "/var/lib/dpkg/status",
    "/var/lib/rpm",
    "/var/lib/pacman/local",
];

/// The history name of the boot set's package stamp.
const STAMP: &str = "package-db";

/// One line per present path of `paths`: the path and its mtime (ns).
pub fn package_stamp(paths: &[&str]) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let mut out = String::new();
    for p in paths {
        if let Ok(md) = std::fs::metadata(p) {
            out.push_str(&format!("{p} {}.{:09}\n", md.mtime(), md.mtime_nsec()));
        }
    }
    out.into_bytes()
}

/// Save the boot set `h` with the package `stamp` it was recorded under.
pub fn save_boot(store: &mut Store, h: &AppHistory, stamp: &[u8]) -> Result<(), StoreError> {
    store.save_run(BOOT_KEY, h, &[(STAMP, stamp.to_vec())])
}

/// The boot set, if one was saved under the same package `stamp`; one
/// saved under another is deleted (`Err` says so).
pub fn load_boot(store: &Store, stamp: &[u8]) -> Result<Option<AppHistory>, String> {
    let Some(h) = store.load_run(BOOT_KEY).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let saved = store
        .load_history(BOOT_KEY, STAMP)
        .map_err(|e| e.to_string())?;
    if saved.as_deref() == Some(stamp) {
        return Ok(Some(h));
    }
    let c = store.connection();
    for table in ["app_files", "models", "app_runs"] {
        c.execute(
            &format!("DELETE FROM {table} WHERE app_key = ?1"),
            [BOOT_KEY],
        )
        .map_err(|e| e.to_string())?;
    }
    Err(format!(
        "{}: the package database changed since the boot set was recorded: boot set discarded",
        store.path().display()
    ))
}

/// What the store keys of launch sets start with.
pub const LAUNCH_PREFIX: &str = "exe:";

/// The store key of an executable's launch set.
pub fn launch_key(exe: &str) -> String {
    format!("{LAUNCH_PREFIX}{exe}")
}

/// The history name of a launch set's benefit gate.
const GATE: &str = "gate";

/// The history name of a launch set's per-file streaks.
const STREAKS: &str = "streaks";

/// The history name of the directories a launch opened (the blob of
/// [`outrider_live::metawalk::encode_dirs`], as `outrider run` saves it).
const DIRS: &str = "dirs";

/// The history name of a launch set's command-line roots ([`Roots`]).
const ROOTS: &str = "roots";

/// The history name of a launch set's working directory, when it is a
/// root ([`Roots`]; empty when not).
const CWD: &str = "cwd";

/// Where a launch went beside its pages: the directories it opened (in
/// that order; walked at a replay, [`outrider_live::metawalk`]) and the
/// roots of its command line ([`Roots`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Places {
    /// The directories it opened.
    pub dirs: Vec<PathBuf>,
    /// Its command line's roots.
    pub roots: Roots,
}

impl Places {
    /// Bytes held (for the cache of sets in memory).
    pub fn bytes(&self) -> usize {
        self.dirs
            .iter()
            .map(|d| d.as_os_str().len() + 24)
            .sum::<usize>()
            + self.roots.bytes()
    }
}

/// Save the launch set `h` under `key` with its benefit `gate`, its
/// files' `streaks` and its launch's `places` (the run counter goes on).
pub fn save(
    store: &mut Store,
    key: &str,
    h: &AppHistory,
    (gate, streaks): (&Gate, &Streaks),
    places: &Places,
) -> Result<(), StoreError> {
    store.save_run(
        key,
        h,
        &[
            (GATE, gate.encode()),
            (STREAKS, streaks.encode()),
            (DIRS, outrider_live::metawalk::encode_dirs(&places.dirs)),
            (ROOTS, places.roots.encode()),
            (CWD, places.roots.encode_cwd()),
        ],
    )
}

/// The places saved with the launch set of `key` (none of a kind when
/// none were saved, or they cannot be read).
pub fn load_places(store: &Store, key: &str) -> Places {
    let blob = |kind| (store.load_history(key, kind).ok().flatten()).unwrap_or_default();
    Places {
        dirs: load_dirs(store, key),
        roots: Roots::decode(&blob(ROOTS), &blob(CWD)),
    }
}

/// The directories saved with the launch set of `key`, in the order its
/// launch opened them (none when none were, or they cannot be read).
fn load_dirs(store: &Store, key: &str) -> Vec<PathBuf> {
    (store.load_history(key, DIRS).ok().flatten())
        .map(|b| outrider_live::metawalk::decode_dirs(&b))
        .unwrap_or_default()
}

/// The per-file streaks saved with the launch set of `key`; `None` when
/// none were (a set saved before they existed) or they cannot be read.
pub fn load_streaks(store: &Store, key: &str) -> Option<Streaks> {
    (store.load_history(key, STREAKS).ok().flatten()).and_then(|b| Streaks::decode(&b))
}

/// The benefit gate saved with the launch set of `key` (a fresh one when
/// none was, or it cannot be read).
pub fn load_gate(store: &Store, key: &str) -> Gate {
    (store.load_history(key, GATE).ok().flatten())
        .and_then(|b| Gate::decode(&b))
        .unwrap_or_default()
}

/// Launch sets saved.
pub fn launch_sets(store: &Store) -> u64 {
    store
        .connection()
        .query_row(
            "SELECT COUNT(*) FROM app_runs WHERE app_key LIKE 'exe:%'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_or(0, |n| n as u64)
}

/// The keys of the launch sets saved, most recent first.
pub fn launch_keys(store: &Store) -> Vec<String> {
    let c = store.connection();
    let Ok(mut st) = c.prepare(
        "SELECT app_key FROM app_runs WHERE app_key LIKE 'exe:%' ORDER BY saved_unix DESC",
    ) else {
        return Vec::new();
    };
    st.query_map([], |r| r.get::<_, String>(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// Forget the least recently saved launch sets beyond `max_apps`;
/// returns how many were forgotten.
pub fn enforce_bound(store: &Store, max_apps: u64) -> Result<u64, rusqlite::Error> {
    let n = launch_sets(store);
    if n <= max_apps {
        return Ok(0);
    }
    let excess = (n - max_apps) as i64;
    let c = store.connection();
    let tx = c.unchecked_transaction()?;
    let victims = "SELECT app_key FROM app_runs WHERE app_key LIKE 'exe:%'
                   ORDER BY saved_unix, app_key LIMIT ?1";
    for table in ["app_files", "models", "app_runs"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE app_key IN ({victims})"),
            params![excess],
        )?;
    }
    tx.commit()?;
    Ok(excess as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_forgets_the_oldest_launch_sets_only() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let h = AppHistory::default();
        let streaks = Streaks::after(None, &h);
        for k in ["exe:/a", "exe:/b", "exe:/c"] {
            save(
                &mut s,
                k,
                &h,
                (&Gate::default(), &streaks),
                &Places::default(),
            )
            .unwrap();
        }
        save(
            &mut s,
            BOOT_KEY,
            &h,
            (&Gate::default(), &streaks),
            &Places::default(),
        )
        .unwrap();
        assert_eq!(load_streaks(&s, "exe:/a"), Some(streaks));
        assert_eq!(load_streaks(&s, "exe:/none"), None);
        // Make /a the oldest, /c the newest.
        for (k, t) in [("exe:/a", 1), ("exe:/b", 2), ("exe:/c", 3)] {
            s.connection()
                .execute(
                    "UPDATE app_runs SET saved_unix = ?1 WHERE app_key = ?2",
                    params![t, k],
                )
                .unwrap();
        }
        assert_eq!(enforce_bound(&s, 2).unwrap(), 1);
        assert_eq!(launch_sets(&s), 2);
        assert!(s.load_run("exe:/a").unwrap().is_none());
        assert!(s.load_run("exe:/c").unwrap().is_some());
        assert!(
            s.load_run(BOOT_KEY).unwrap().is_some(),
            "the boot set is not a launch set"
        );
        assert_eq!(enforce_bound(&s, 2).unwrap(), 0);
    }

    #[test]
    fn a_sets_places_come_back_as_saved() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let h = AppHistory::default();
        let argv: [&[u8]; 3] = [b"grep", b"-r", b"arch/arm64"];
        let places = Places {
            dirs: vec![PathBuf::from("/src/arch"), PathBuf::from("/src/arch/arm64")],
            roots: Roots::of_command(&argv, std::path::Path::new("/src"), None),
        };
        let marks = (&Gate::default(), &Streaks::after(None, &h));
        save(&mut s, "exe:/a", &h, marks, &places).unwrap();
        assert_eq!(load_places(&s, "exe:/a"), places);
        assert_eq!(load_places(&s, "exe:/none"), Places::default());
    }

    #[test]
    fn a_package_upgrade_discards_the_boot_set() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let db = dir.path().join("status");
        std::fs::write(&db, "a").unwrap();
        let paths = [db.to_str().unwrap()];
        let stamp = package_stamp(&paths);
        assert!(!stamp.is_empty());
        save_boot(&mut s, &AppHistory::default(), &stamp).unwrap();
        assert!(load_boot(&s, &package_stamp(&paths)).unwrap().is_some());
        // "dpkg ran": the database's mtime moves.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&db)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let e = load_boot(&s, &package_stamp(&paths)).unwrap_err();
        assert!(e.contains("package database changed"), "{e}");
        assert!(s.load_run(BOOT_KEY).unwrap().is_none(), "deleted");
        assert_eq!(load_boot(&s, &package_stamp(&paths)), Ok(None));
    }
}
