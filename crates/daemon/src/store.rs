//! The daemon's use of the history store: one `outrider_store` file,
//! launch sets under `exe:PATH`, the boot set under [`BOOT_KEY`], and the
//! size bound (least recently saved launch sets forgotten first).

use outrider_store::{AppHistory, Store, StoreError};
use rusqlite::params;

/// The store key of the boot set.
pub const BOOT_KEY: &str = "daemon-boot";

/// The store key of an executable's launch set.
pub fn launch_key(exe: &str) -> String {
    format!("exe:{exe}")
}

/// Save `h` under `key` (the run counter goes on).
pub fn save(store: &mut Store, key: &str, h: &AppHistory) -> Result<(), StoreError> {
    store.save_run(key, h, &[])
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
        for k in ["exe:/a", "exe:/b", "exe:/c"] {
            save(&mut s, k, &h).unwrap();
        }
        save(&mut s, BOOT_KEY, &h).unwrap();
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
}
