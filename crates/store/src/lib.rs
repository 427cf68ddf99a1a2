//! outrider-store: the embedded history store — an SQLite database (WAL
//! mode) that keeps what outrider learns across runs and restarts. The EPCM
//! paper names this as missing (§6 "the paging of predictive data to and
//! from disk", §7 "this experimental implementation does not store any of
//! the predictive data to disk"); here the three file-prediction models are
//! saved and loaded, and the live runtime adds its own history tables to the
//! same file.
//!
//! The one design decision a reader must know: **a bad store never stops
//! outrider.** Opening a file that is not SQLite, a foreign SQLite database,
//! a newer schema, or decoding a corrupted model all return a
//! [`StoreError`] whose message says what was found; callers
//! ([`load_or_warn`]) turn it into one warning and carry on with a fresh
//! model. Core does no I/O, so models cross this boundary as plain-data
//! [`ModelSnapshot`]s.
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
//!     kind    TEXT NOT NULL,   -- last-successor | trie | policy (save_history blob)
//!     format  INTEGER NOT NULL,-- blob format (codec::FORMAT)
//!     data    BLOB NOT NULL,   -- codec-encoded ModelSnapshot
//!     saved_unix INTEGER NOT NULL,
//!     PRIMARY KEY (app_key, name));
//! ```
//!
//! Extending it: add tables in a new step of [`migrate`] and bump
//! [`SCHEMA_VERSION`]; older files are migrated in place when opened, newer
//! ones are refused (not modified). [`Store::connection`] gives other crates
//! the connection for their own tables.
#![deny(missing_docs)]

pub use outrider_core::policies::filepred::codec;

use outrider_core::policies::filepred::model::ModelSnapshot;
use outrider_core::policies::filepred::FilePred;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 1;

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

/// An open history store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if absent) the store at `path`, in WAL mode,
    /// migrating an older schema. See [`StoreError`] for refusals.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(sql)?;
        // Fails here with "file is not a database" for non-SQLite files.
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
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
        if found > SCHEMA_VERSION || found < 1 {
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
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
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
        // Later versions: `if from < 2 { ... }` here.
        tx.execute("UPDATE schema_version SET version = ?1", [SCHEMA_VERSION])
            .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The SQLite connection, for other history tables (see the schema
    /// notes in the crate documentation).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Save (replace) the model `name` of history `app_key`.
    pub fn save_model(
        &mut self,
        app_key: &str,
        name: &str,
        snap: &ModelSnapshot,
    ) -> Result<(), StoreError> {
        let kind = match snap {
            ModelSnapshot::LastSuccessor { .. } => "last-successor",
            ModelSnapshot::Trie(_) => "trie",
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO models (app_key, name, kind, format, data, saved_unix)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![app_key, name, kind, codec::FORMAT, codec::encode(snap), now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
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
                params![app_key, name, codec::FORMAT, data, now],
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

    /// Load the model `name` of history `app_key`; `Ok(None)` if none was
    /// saved.
    pub fn load_model(
        &self,
        app_key: &str,
        name: &str,
    ) -> Result<Option<ModelSnapshot>, StoreError> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT data FROM models WHERE app_key = ?1 AND name = ?2",
                params![app_key, name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        match blob {
            None => Ok(None),
            Some(b) => codec::decode(&b)
                .map(Some)
                .map_err(|why| StoreError::Corrupt {
                    path: self.path.clone(),
                    app_key: app_key.into(),
                    name: name.into(),
                    why,
                }),
        }
    }

    /// Load the model `name` of `app_key` into `model`. On any failure the
    /// model is left fresh (as it was) and the error says why.
    pub fn load_into(
        &self,
        app_key: &str,
        name: &str,
        model: &mut FilePred,
    ) -> Result<bool, StoreError> {
        let Some(snap) = self.load_model(app_key, name)? else {
            return Ok(false);
        };
        model.restore(&snap).map_err(|why| StoreError::Corrupt {
            path: self.path.clone(),
            app_key: app_key.into(),
            name: name.into(),
            why,
        })?;
        Ok(true)
    }
}

/// Open the store at `path` and load `name` of `app_key` into `model`,
/// never failing: returns the store (if usable), whether a model was
/// loaded, and a warning to print when something was wrong (the model is
/// then fresh).
pub fn load_or_warn(
    path: &Path,
    app_key: &str,
    name: &str,
    model: &mut FilePred,
) -> (Option<Store>, bool, Option<String>) {
    match Store::open(path) {
        Err(e) => (
            None,
            false,
            Some(format!("warning: {e}; starting with a fresh model")),
        ),
        Ok(store) => match store.load_into(app_key, name, model) {
            Ok(loaded) => (Some(store), loaded, None),
            Err(e) => (
                Some(store),
                false,
                Some(format!("warning: {e}; starting with a fresh model")),
            ),
        },
    }
}
