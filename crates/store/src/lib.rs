//! outrider-store: the embedded history store — an SQLite database (WAL
//! mode) that keeps what outrider learns across runs and restarts. The EPCM
//! paper names this as missing (§6 "the paging of predictive data to and
//! from disk", §7 "this experimental implementation does not store any of
//! the predictive data to disk"); here every policy that learns saves its
//! history through [`outrider_core::Policy::save_history`] as an opaque blob
//! per application key and policy name, and the live runtime adds the files
//! it saw (their identity, to reopen them) to the same file.
//!
//! The one design decision a reader must know: **a bad store never stops
//! outrider.** Opening a file that is not SQLite, a foreign SQLite database,
//! a newer schema, or decoding a corrupted model all return a
//! [`StoreError`] whose message says what was found; callers
//! ([`load_or_warn`]) turn it into one warning and carry on with a fresh
//! model. Core does no I/O, so histories cross this boundary as the
//! policies' opaque blobs.
//!
//! # Schema (version [`SCHEMA_VERSION`])
//!
//! ```sql
//! CREATE TABLE schema_version (version INTEGER NOT NULL);      -- one row
//! CREATE TABLE outrider_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
//!     -- ('application', 'outrider'): marks the file as ours
//! CREATE TABLE models (
//!     app_key TEXT NOT NULL,   -- whose history: an application, a workload, "global"
//!     name    TEXT NOT NULL,   -- model name (policy spec, e.g. "epcm")
//!     kind    TEXT NOT NULL,   -- policy; files written before: last-successor | trie
//!     format  INTEGER NOT NULL,-- BLOB_FORMAT
//!     data    BLOB NOT NULL,   -- what Policy::save_history returned
//!     saved_unix INTEGER NOT NULL,
//!     PRIMARY KEY (app_key, name));
//! -- version 2: what `outrider run` saw, per application
//! CREATE TABLE app_runs (
//!     app_key TEXT PRIMARY KEY, -- see below
//!     exe TEXT NOT NULL, args TEXT NOT NULL, cwd TEXT NOT NULL, -- last run's, for people
//!     runs INTEGER NOT NULL,    -- runs saved so far
//!     accesses BLOB NOT NULL,   -- first-access list: 16-byte LE records (file id u32, page u64, pages u32)
//!     saved_unix INTEGER NOT NULL);
//! CREATE TABLE app_files (
//!     app_key TEXT NOT NULL, id INTEGER NOT NULL,  -- the id the access list names
//!     dev INTEGER NOT NULL, ino INTEGER NOT NULL,
//!     handle_type INTEGER, handle BLOB, mount_id INTEGER, -- name_to_handle_at(2), when it worked
//!     path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
//!     PRIMARY KEY (app_key, id));
//! -- version 3: the file was mapped (read through page faults), 0 or 1
//! ALTER TABLE app_files ADD COLUMN mapped INTEGER NOT NULL DEFAULT 0;
//! ```
//!
//! An application key is chosen by the caller (`outrider run`: executable,
//! arguments and working directory, or `--app-key NAME` to group runs).
//! One run's history ([`Store::save_run`]) is written in **one
//! transaction** at the end of the run: the access list, its files and the
//! policy's blob replace the previous ones together, so a process killed at
//! any point loses at most the run in progress, and two runs writing at
//! once serialise on SQLite's write lock (WAL mode, [`BUSY_TIMEOUT`]): the
//! last to commit wins, neither corrupts the file.
//!
//! History of the whole store (a policy's
//! [`outrider_core::Policy::shared_history_name`]) is a `models` row under
//! the reserved key [`SHARED_KEY`], saved by a read-modify-write in one
//! immediate transaction ([`Store::merge_shared`]): two processes saving at
//! once each merge into what the other committed, neither is lost.
//!
//! Privacy: the store's directory, the file and its `-wal`, `-shm` and
//! lock files are private to the running user, and a store another user
//! could replace or write is refused ([`private`]).
//!
//! Extending it: add tables in a new step of `Store::migrate` and bump
//! [`SCHEMA_VERSION`]; older files are migrated in place when opened, newer
//! ones are refused (not modified). [`Store::connection`] gives other crates
//! the connection for their own tables.
#![deny(missing_docs)]

pub mod private;
pub use private::{open_lock, private_dir};

use outrider_core::Policy;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The application key of history that belongs to the whole store rather
/// than one application ([`outrider_core::Policy::shared_history_name`]:
/// DiskSeen's one block table, §3.1). Real keys start `run:`, `name:` or
/// `exe:` (and the daemon's boot set is `boot`), so it collides with none;
/// it has no row in `app_runs`, so no listing of applications shows it.
pub const SHARED_KEY: &str = "*shared";

/// The `format` column of a saved policy blob (the blob's own format is
/// the policy's business: each checks its own header on load).
pub const BLOB_FORMAT: u8 = 1;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 3;

/// How long a writer waits for another process's write lock (10 s).
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Size of one access-list record in [`Store::save_run`]'s blob.
pub const ACCESS_RECORD_BYTES: usize = 16;

/// One file of an application's history (a row of `app_files`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRecord {
    /// The id the access list names (stable across runs of the app).
    pub id: u32,
    /// Device number (`st_dev`).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// `name_to_handle_at(2)` handle (type, bytes) and mount id, if known.
    pub handle: Option<(i32, Vec<u8>, i32)>,
    /// Path when last seen.
    pub path: String,
    /// Size in bytes when last seen.
    pub size: u64,
    /// mtime in ns when last seen.
    pub mtime_ns: i64,
    /// The run read it through page faults (it was mapped: an
    /// executable, a library, a mapped data file), not only `read(2)`:
    /// the kernel reads around a faulting page, not just the page.
    pub mapped: bool,
}

/// One page range of the access list: `pages` pages of file `file` from
/// `page`, in the order the run first touched them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessRecord {
    /// File id ([`FileRecord::id`]).
    pub file: u32,
    /// First page (4 KiB).
    pub page: u64,
    /// Pages.
    pub pages: u32,
}

/// What one run of an application leaves behind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppHistory {
    /// Executable (for people reading the store).
    pub exe: String,
    /// Arguments, space separated (for people).
    pub args: String,
    /// Working directory (for people).
    pub cwd: String,
    /// Runs saved so far under this key (including this one, on load).
    pub runs: u64,
    /// Files the access list names.
    pub files: Vec<FileRecord>,
    /// The access list, first-access order.
    pub accesses: Vec<AccessRecord>,
}

/// Encode an access list as [`ACCESS_RECORD_BYTES`]-byte little-endian
/// records.
pub fn encode_accesses(list: &[AccessRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len() * ACCESS_RECORD_BYTES);
    for a in list {
        out.extend_from_slice(&a.file.to_le_bytes());
        out.extend_from_slice(&a.page.to_le_bytes());
        out.extend_from_slice(&a.pages.to_le_bytes());
    }
    out
}

/// Decode [`encode_accesses`]'s blob; `None` when its length is not a
/// multiple of the record size.
pub fn decode_accesses(b: &[u8]) -> Option<Vec<AccessRecord>> {
    if !b.len().is_multiple_of(ACCESS_RECORD_BYTES) {
        return None;
    }
    Some(
        b.chunks_exact(ACCESS_RECORD_BYTES)
            .map(|c| AccessRecord {
                file: u32::from_le_bytes(c[0..4].try_into().expect("4")),
                page: u64::from_le_bytes(c[4..12].try_into().expect("8")),
                pages: u32::from_le_bytes(c[12..16].try_into().expect("4")),
            })
            .collect(),
    )
}

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (I/O, locking, or the file is not a database).
    #[error("{path}: history store unusable: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A valid SQLite database that is not an outrider store.
    #[error("{path}: is an SQLite database but not an outrider history store ({why})")]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// What was found.
        why: String,
    },
    /// Written by a newer outrider.
    #[error(
        "{path}: history store schema version {found}, this build knows up to {SCHEMA_VERSION}"
    )]
    Version {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
    },
    /// The store, its directory or a file beside it could be changed or
    /// replaced by another user (or is not a regular file).
    #[error("{path}: refusing to use the history store: {why}")]
    Unsafe {
        /// The file or directory at fault.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A saved model could not be decoded or does not fit the policy.
    #[error("{path}: saved model '{name}' for '{app_key}' is unusable: {why}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// History key.
        app_key: String,
        /// Model name.
        name: String,
        /// What was wrong.
        why: String,
    },
}

/// Switch `conn` to WAL mode. Switching a new store from its rollback
/// journal needs the exclusive lock, and SQLite answers `SQLITE_BUSY` at
/// once, without its busy handler, to a connection that would have to
/// upgrade its own shared lock to get it (deadlock avoidance): two
/// processes creating the store at the same moment (the concurrent-writer
/// test failed so once in five `.ci/run`s, the busy error coming from
/// `Store::open`). Retried until [`BUSY_TIMEOUT`].
fn wal_mode(conn: &Connection) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => return r.map(drop),
        }
    }
}

/// The error for a failed SQLite call on the store at `path` (`Copy`, so
/// one serves every `map_err` of a function).
fn sql_error(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + Copy + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// An open history store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if absent, `0600` in a private directory) the store
    /// at `path`, in WAL mode, migrating an older schema. See
    /// [`StoreError`] for refusals, and [`private`] for who may own it.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        private::prepare(&path)?;
        let sql = sql_error(&path);
        let conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // Fails here with "file is not a database" for non-SQLite files.
        wal_mode(&conn).map_err(sql)?;
        // In WAL mode NORMAL syncs at checkpoints, not at every commit: a
        // commit survives the process being killed (the WAL is in the
        // page cache), and only an OS crash may lose the last ones. The
        // daemon saves launch sets on its event loop, where each commit's
        // fsync held the next exec's replay back.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        let tables: Vec<String> = {
            let mut st = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .map_err(sql)?;
            let rows = st.query_map([], |r| r.get(0)).map_err(sql)?;
            rows.collect::<Result<_, _>>().map_err(sql)?
        };
        let mut store = Store { conn, path };
        if tables.is_empty() {
            // Another process may be creating it right now: migrate()
            // re-checks under the write lock.
            store.migrate(0)?;
            return Ok(store);
        }
        if !tables.iter().any(|t| t == "outrider_meta")
            || !tables.iter().any(|t| t == "schema_version")
        {
            return Err(StoreError::Foreign {
                path: store.path,
                why: format!("tables: {}", tables.join(", ")),
            });
        }
        let app: Option<String> = store
            .conn
            .query_row(
                "SELECT value FROM outrider_meta WHERE key = 'application'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| store.sql(e))?;
        if app.as_deref() != Some("outrider") {
            return Err(StoreError::Foreign {
                path: store.path,
                why: format!("application = {app:?}"),
            });
        }
        let found: i64 = store
            .conn
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .map_err(|e| store.sql(e))?;
        if !(1..=SCHEMA_VERSION).contains(&found) {
            return Err(StoreError::Version {
                path: store.path,
                found,
            });
        }
        store.migrate(found)?;
        Ok(store)
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Bring the schema from version `from` (0 = empty file) to
    /// [`SCHEMA_VERSION`], one step per version, in one transaction.
    fn migrate(&mut self, from: i64) -> Result<(), StoreError> {
        if from == SCHEMA_VERSION {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = sql_error(&path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        // Under the write lock: another process may have migrated since
        // `from` was read.
        let has_version: bool = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql)?
            > 0;
        let from = if has_version {
            tx.query_row("SELECT version FROM schema_version", [], |r| r.get(0))
                .map_err(sql)?
        } else {
            from.min(0)
        };
        if from >= SCHEMA_VERSION {
            return Ok(());
        }
        if from < 1 {
            tx.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL);
                 INSERT INTO schema_version VALUES (0);
                 CREATE TABLE outrider_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO outrider_meta VALUES ('application', 'outrider');
                 CREATE TABLE models (
                     app_key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
                     format INTEGER NOT NULL, data BLOB NOT NULL,
                     saved_unix INTEGER NOT NULL,
                     PRIMARY KEY (app_key, name));",
            )
            .map_err(sql)?;
        }
        if from < 2 {
            tx.execute_batch(
                "CREATE TABLE app_runs (
                     app_key TEXT PRIMARY KEY, exe TEXT NOT NULL, args TEXT NOT NULL,
                     cwd TEXT NOT NULL, runs INTEGER NOT NULL, accesses BLOB NOT NULL,
                     saved_unix INTEGER NOT NULL);
                 CREATE TABLE app_files (
                     app_key TEXT NOT NULL, id INTEGER NOT NULL,
                     dev INTEGER NOT NULL, ino INTEGER NOT NULL,
                     handle_type INTEGER, handle BLOB, mount_id INTEGER,
                     path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                     PRIMARY KEY (app_key, id));",
            )
            .map_err(sql)?;
        }
        if from < 3 {
            tx.execute_batch("ALTER TABLE app_files ADD COLUMN mapped INTEGER NOT NULL DEFAULT 0;")
                .map_err(sql)?;
        }
        // Later versions: `if from < 4 { ... }` here.
        tx.execute("UPDATE schema_version SET version = ?1", [SCHEMA_VERSION])
            .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closing this connection will not checkpoint the WAL into the
    /// database (SQLite does that when the last connection closes), so a
    /// caller that closes it in a hurry leaves the work to the next one
    /// (`outrider run`, before its background saver opens its own).
    pub fn skip_checkpoint_on_close(&self) -> Result<(), StoreError> {
        self.conn
            .set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// The SQLite connection, for other history tables (see the schema
    /// notes in the crate documentation).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Save one run of application `app_key` in one transaction: its
    /// history replaces the previous one (the run counter goes on), and
    /// each `(name, blob)` of `policy_blobs` replaces that policy history.
    pub fn save_run(
        &mut self,
        app_key: &str,
        h: &AppHistory,
        policy_blobs: &[(&str, Vec<u8>)],
    ) -> Result<(), StoreError> {
        self.save_run_with(app_key, h, policy_blobs, None)
    }

    /// [`Store::save_run`] for a caller that knows `h.files` are exactly
    /// the files of the run it loaded ([`Store::load_run`], whose `runs`
    /// was `loaded_runs`), in any order: their rows are left as they are —
    /// for a history of 10^5 files, deleting and inserting them again was
    /// most of the time a save took. If another process saved a run of
    /// `app_key` in between (the counter moved on), the files are written
    /// after all, so a saved run is never a mix of two.
    pub fn save_run_same_files(
        &mut self,
        app_key: &str,
        h: &AppHistory,
        policy_blobs: &[(&str, Vec<u8>)],
        loaded_runs: u64,
    ) -> Result<(), StoreError> {
        self.save_run_with(app_key, h, policy_blobs, Some(loaded_runs))
    }

    fn save_run_with(
        &mut self,
        app_key: &str,
        h: &AppHistory,
        policy_blobs: &[(&str, Vec<u8>)],
        same_files_as_run: Option<u64>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = sql_error(&path);
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let runs: i64 = tx
            .query_row(
                "SELECT runs FROM app_runs WHERE app_key = ?1",
                [app_key],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?
            .unwrap_or(0);
        let write_files = same_files_as_run != Some(runs as u64);
        tx.execute(
            "INSERT OR REPLACE INTO app_runs (app_key, exe, args, cwd, runs, accesses, saved_unix)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                app_key,
                h.exe,
                h.args,
                h.cwd,
                runs + 1,
                encode_accesses(&h.accesses),
                now
            ],
        )
        .map_err(sql)?;
        if write_files {
            tx.execute("DELETE FROM app_files WHERE app_key = ?1", [app_key])
                .map_err(sql)?;
            let mut st = tx
                .prepare(
                    "INSERT INTO app_files (app_key, id, dev, ino, handle_type, handle, mount_id,
                     path, size, mtime_ns, mapped)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(sql)?;
            for f in &h.files {
                let (ht, hb, mid) = match &f.handle {
                    Some((t, b, m)) => (Some(*t), Some(b.as_slice()), Some(*m)),
                    None => (None, None, None),
                };
                st.execute(params![
                    app_key,
                    f.id,
                    f.dev as i64,
                    f.ino as i64,
                    ht,
                    hb,
                    mid,
                    f.path,
                    f.size as i64,
                    f.mtime_ns,
                    f.mapped
                ])
                .map_err(sql)?;
            }
        }
        for (name, blob) in policy_blobs {
            tx.execute(
                "INSERT OR REPLACE INTO models (app_key, name, kind, format, data, saved_unix)
                 VALUES (?1, ?2, 'policy', ?3, ?4, ?5)",
                params![app_key, name, BLOB_FORMAT, blob, now],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// Whether a run of `app_key` was saved (one indexed lookup: a run
    /// of a new application does not read the rest of the store).
    pub fn has_run(&self, app_key: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT 1 FROM app_runs WHERE app_key = ?1",
                [app_key],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.sql(e))
    }

    /// The last saved run of `app_key`, if any (files by id).
    pub fn load_run(&self, app_key: &str) -> Result<Option<AppHistory>, StoreError> {
        let row: Option<(String, String, String, i64, Vec<u8>)> = self
            .conn
            .query_row(
                "SELECT exe, args, cwd, runs, accesses FROM app_runs WHERE app_key = ?1",
                [app_key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((exe, args, cwd, runs, blob)) = row else {
            return Ok(None);
        };
        let accesses = decode_accesses(&blob).ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            app_key: app_key.into(),
            name: "accesses".into(),
            why: format!(
                "{} bytes is not a whole number of {ACCESS_RECORD_BYTES}-byte records",
                blob.len()
            ),
        })?;
        let mut st = self
            .conn
            .prepare(
                "SELECT id, dev, ino, handle_type, handle, mount_id, path, size, mtime_ns, mapped
                 FROM app_files WHERE app_key = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let files = st
            .query_map([app_key], |r| {
                let ht: Option<i32> = r.get(3)?;
                let hb: Option<Vec<u8>> = r.get(4)?;
                let mid: Option<i32> = r.get(5)?;
                Ok(FileRecord {
                    id: r.get(0)?,
                    dev: r.get::<_, i64>(1)? as u64,
                    ino: r.get::<_, i64>(2)? as u64,
                    handle: match (ht, hb, mid) {
                        (Some(t), Some(b), Some(m)) => Some((t, b, m)),
                        _ => None,
                    },
                    path: r.get(6)?,
                    size: r.get::<_, i64>(7)? as u64,
                    mtime_ns: r.get(8)?,
                    mapped: r.get(9)?,
                })
            })
            .map_err(|e| self.sql(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        Ok(Some(AppHistory {
            exe,
            args,
            cwd,
            runs: runs as u64,
            files,
            accesses,
        }))
    }

    /// Save (replace) the history of `policy` as `name` of `app_key`;
    /// `Ok(false)` when the policy learns nothing.
    pub fn save_policy(
        &mut self,
        app_key: &str,
        name: &str,
        policy: &dyn Policy,
    ) -> Result<bool, StoreError> {
        let Some(blob) = policy.save_history() else {
            return Ok(false);
        };
        self.save_history(app_key, name, &blob)?;
        Ok(true)
    }

    /// Save (replace) an opaque history blob `name` of `app_key` (what
    /// [`outrider_core::Policy::save_history`] returns).
    pub fn save_history(
        &mut self,
        app_key: &str,
        name: &str,
        data: &[u8],
    ) -> Result<(), StoreError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO models (app_key, name, kind, format, data, saved_unix)
                 VALUES (?1, ?2, 'policy', ?3, ?4, ?5)",
                params![app_key, name, BLOB_FORMAT, data, now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The history blob `name` of `app_key`, if saved.
    pub fn load_history(&self, app_key: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .query_row(
                "SELECT data FROM models WHERE app_key = ?1 AND name = ?2",
                params![app_key, name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// The shared history `name` (under [`SHARED_KEY`]), if saved.
    pub fn load_shared(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.load_history(SHARED_KEY, name)
    }

    /// Load `policy`'s shared history, if it names one and one is saved
    /// ([`outrider_core::Policy::load_shared_history`]); `Ok(false)` when
    /// not. On failure the policy is left as it was and the error names
    /// the store and the history.
    pub fn load_shared_into(&self, policy: &mut dyn Policy) -> Result<bool, StoreError> {
        let Some(name) = policy.shared_history_name().map(str::to_string) else {
            return Ok(false);
        };
        let Some(blob) = self.load_shared(&name)? else {
            return Ok(false);
        };
        self.decode_shared_into(&name, &blob, policy)?;
        Ok(true)
    }

    /// Load `blob`, the shared history `name` read from this store before
    /// ([`Store::load_shared`]), into `policy`; on failure the policy is
    /// left as it was and the error names the store and the history.
    pub fn decode_shared_into(
        &self,
        name: &str,
        blob: &[u8],
        policy: &mut dyn Policy,
    ) -> Result<(), StoreError> {
        policy
            .load_shared_history(blob)
            .map_err(|why| StoreError::Corrupt {
                path: self.path.clone(),
                app_key: SHARED_KEY.into(),
                name: name.into(),
                why,
            })
    }

    /// Read-modify-write the shared history `name` in one immediate
    /// transaction (SQLite's write lock held from the read to the commit,
    /// so a concurrent save waits and then merges into ours): `merge` gets
    /// what is stored (`None`: nothing) and returns what to store (`None`:
    /// leave it). Returns whether it wrote.
    pub fn merge_shared(
        &mut self,
        name: &str,
        merge: impl FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    ) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let sql = sql_error(&path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let stored: Option<Vec<u8>> = tx
            .query_row(
                "SELECT data FROM models WHERE app_key = ?1 AND name = ?2",
                params![SHARED_KEY, name],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        let Some(blob) = merge(stored.as_deref()) else {
            return Ok(false);
        };
        tx.execute(
            "INSERT OR REPLACE INTO models (app_key, name, kind, format, data, saved_unix)
             VALUES (?1, ?2, 'policy', ?3, ?4, ?5)",
            params![SHARED_KEY, name, BLOB_FORMAT, blob, unix_now()],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(true)
    }

    /// Merge `policy`'s shared history into the store
    /// ([`outrider_core::Policy::merge_shared_history`] in
    /// [`Store::merge_shared`]); `Ok(false)` when it keeps none or had
    /// nothing to add.
    pub fn merge_shared_from(&mut self, policy: &dyn Policy) -> Result<bool, StoreError> {
        let Some(name) = policy.shared_history_name() else {
            return Ok(false);
        };
        self.merge_shared(name, |stored| policy.merge_shared_history(stored))
    }

    /// Forget the history of the whole store (every [`SHARED_KEY`] row);
    /// returns how many were removed.
    pub fn forget_shared(&self) -> Result<u64, StoreError> {
        self.conn
            .execute("DELETE FROM models WHERE app_key = ?1", [SHARED_KEY])
            .map(|n| n as u64)
            .map_err(|e| self.sql(e))
    }

    /// Load the history `name` of `app_key` into `policy`
    /// ([`outrider_core::Policy::load_history`]); `Ok(false)` when none was
    /// saved. On any failure the policy is left fresh (as it was) and the
    /// error says why.
    pub fn load_into(
        &self,
        app_key: &str,
        name: &str,
        policy: &mut dyn Policy,
    ) -> Result<bool, StoreError> {
        let Some(blob) = self.load_history(app_key, name)? else {
            return Ok(false);
        };
        self.decode_into(app_key, name, &blob, policy)?;
        Ok(true)
    }

    /// Load `blob`, the history `name` of `app_key` read from this store
    /// before ([`Store::load_history`]), into `policy`; on failure the
    /// policy is left fresh and the error names the store, key and name.
    pub fn decode_into(
        &self,
        app_key: &str,
        name: &str,
        blob: &[u8],
        policy: &mut dyn Policy,
    ) -> Result<(), StoreError> {
        policy
            .load_history(blob)
            .map_err(|why| StoreError::Corrupt {
                path: self.path.clone(),
                app_key: app_key.into(),
                name: name.into(),
                why,
            })
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Open the store at `path` and load `name` of `app_key` into `policy`,
/// never failing: returns the store (if usable), whether a history was
/// loaded, and a warning to print when something was wrong (the policy is
/// then fresh).
pub fn load_or_warn(
    path: &Path,
    app_key: &str,
    name: &str,
    policy: &mut dyn Policy,
) -> (Option<Store>, bool, Option<String>) {
    match Store::open(path) {
        Err(e) => (
            None,
            false,
            Some(format!("warning: {e}; starting with a fresh model")),
        ),
        Ok(store) => match store.load_into(app_key, name, policy) {
            Ok(loaded) => (Some(store), loaded, None),
            Err(e) => (
                Some(store),
                false,
                Some(format!("warning: {e}; starting with a fresh model")),
            ),
        },
    }
}
