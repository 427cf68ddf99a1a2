//! The launch sets held in memory, so that an exec costs the daemon no
//! read of its own store.
//!
//! At an exec the daemon needs the application's launch set, its streaks
//! and its benefit gate before it can start the replay, and the program
//! is already running. Read from SQLite at every exec, they cost a few
//! page reads of the store — disk reads when the store's pages are cold,
//! as after a cache drop — before the replay's first request: the replay
//! of `python3 -c pass` started 16-17 ms after the exec in two of five
//! cold launches, with the whole launch taking 30-50 ms (`outrider
//! status --json`, `started_s`).
//!
//! So [`Sets`] keeps, in memory:
//!
//! * the keys of every launch set stored (an exec of an application with
//!   no set reads nothing), read at start and kept on every save and
//!   bound;
//! * the sets themselves, with their streaks and gate, as saved by this
//!   daemon or loaded at a first exec, up to [`CACHE_MAX_BYTES`]
//!   (estimated), the least recently launched dropped first (a dropped
//!   set is read from the store again at its next exec).
//!
//! Another process may change the store: `outrider forget` removes sets.
//! SQLite's `PRAGMA data_version` (moved by any other connection's commit;
//! in WAL mode read from the shared-memory index, no disk read) is looked
//! at before each use, and the whole cache is read again when it moved.

use crate::roots::Roots;
use crate::store::{self, Places};
use crate::streaks::Streaks;
use outrider_driver::benefit::Gate;
use outrider_store::{AccessRecord, AppHistory, FileRecord, Store};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// Bytes of launch sets kept in memory at most (estimated: their access
/// records, file records and paths). A 256 MiB launch set of a thousand
/// files is about 0.3 MiB; `rg` over a source tree filled its 256 MiB set
/// with 31 577 files, about 4 MiB.
pub const CACHE_MAX_BYTES: usize = 16 << 20;

/// One launch set in memory.
#[derive(Clone, Debug)]
pub struct Cached {
    /// The set as the store returns it (files in id order).
    pub set: Arc<AppHistory>,
    /// What of it a launch replays ([`Streaks::stable_part`]; the set
    /// itself when that is all of it), made once: made at each exec, a
    /// clone of `rg`'s set of 32 768 files and its streaks cost the
    /// daemon more CPU than the rest of a launch found in memory (perf).
    pub part: Arc<AppHistory>,
    /// Its files' streaks (`None`: saved before streaks existed).
    pub streaks: Option<Arc<Streaks>>,
    /// Its benefit gate.
    pub gate: Gate,
    /// The directories its launch opened, in that order (walked at a
    /// replay, [`outrider_live::metawalk`]).
    pub dirs: Arc<Vec<std::path::PathBuf>>,
    /// Its launch's command-line roots.
    pub roots: Arc<Roots>,
    bytes: usize,
    used: u64,
}

/// The launch sets in memory (see the module documentation).
#[derive(Default)]
pub struct Sets {
    keys: FxHashSet<String>,
    cached: FxHashMap<String, Cached>,
    bytes: usize,
    clock: u64,
    version: Option<i64>,
}

/// What a set takes in memory, estimated.
fn bytes_of(h: &AppHistory) -> usize {
    let file = |f: &FileRecord| {
        size_of::<FileRecord>() + f.path.len() + f.handle.as_ref().map_or(0, |h| h.1.len())
    };
    h.accesses.len() * size_of::<AccessRecord>() + h.files.iter().map(file).sum::<usize>()
}

/// The store's change counter as seen by this connection.
fn data_version(store: &Store) -> Option<i64> {
    (store.connection())
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .ok()
}

impl Sets {
    /// The keys of the launch sets in `store`; no set read yet.
    pub fn open(store: &Store) -> Sets {
        let mut s = Sets::default();
        s.reread(store);
        s
    }

    /// The keys of the stored launch sets.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(String::as_str)
    }

    /// Forget what is in memory and read the keys again.
    fn reread(&mut self, store: &Store) {
        self.cached.clear();
        self.bytes = 0;
        self.keys = store::launch_keys(store).into_iter().collect();
        self.version = data_version(store);
    }

    /// Another connection committed since we last looked: read again.
    fn check(&mut self, store: &Store) {
        let v = data_version(store);
        if v != self.version {
            self.reread(store);
        }
    }

    /// The launch set of `key`, read from the store only the first time
    /// (or after another process changed the store); `None` when the store
    /// has none or it cannot be read.
    pub fn get(&mut self, store: &Store, key: &str) -> Option<Cached> {
        self.check(store);
        if !self.keys.contains(key) {
            return None;
        }
        self.clock += 1;
        if let Some(c) = self.cached.get_mut(key) {
            c.used = self.clock;
            return Some(c.clone());
        }
        let set = store.load_run(key).ok().flatten()?;
        let streaks = store::load_streaks(store, key);
        let gate = store::load_gate(store, key);
        let places = store::load_places(store, key);
        Some(self.insert(key, set, (streaks, gate), places))
    }

    /// The set of `key` was just saved by this daemon: what the store now
    /// returns for it. `runs` goes on from the set in memory (the store
    /// counts the same way; a set not in memory counts from the store's
    /// count, unknown here, so from 1: `runs` only tells the streaks
    /// whether one launch or more is behind the set, see
    /// [`Streaks::stable_part`]).
    pub fn saved(
        &mut self,
        store: &Store,
        key: &str,
        set: &AppHistory,
        (streaks, gate): (&Streaks, &Gate),
        places: &Places,
    ) {
        self.check(store);
        let runs = match self.cached.get(key) {
            Some(c) => c.set.runs + 1,
            // Not in memory: the store's count is the truth (its row
            // alone, not the whole set).
            None if self.keys.contains(key) => (store.connection())
                .query_row("SELECT runs FROM app_runs WHERE app_key = ?1", [key], |r| {
                    r.get::<_, i64>(0)
                })
                .map_or(1, |n| n as u64),
            None => 1,
        };
        let mut set = set.clone();
        set.runs = runs;
        set.files.sort_unstable_by_key(|f| f.id);
        self.keys.insert(key.to_string());
        self.insert(key, set, (Some(streaks.clone()), *gate), places.clone());
    }

    /// The store forgot launch sets (its size bound): keep only those left.
    pub fn bounded(&mut self, store: &Store) {
        self.keys = store::launch_keys(store).into_iter().collect();
        let keys = &self.keys;
        self.cached.retain(|k, _| keys.contains(k));
        self.bytes = self.cached.values().map(|c| c.bytes).sum();
    }

    /// Keep `set` in memory under `key`, with the part a launch replays
    /// made now ([`Sets::keep`]); returns it.
    fn insert(
        &mut self,
        key: &str,
        set: AppHistory,
        (streaks, gate): (Option<Streaks>, Gate),
        places: Places,
    ) -> Cached {
        let set = Arc::new(set);
        let part = match &streaks {
            Some(s) if !s.keeps_all(&set) => Arc::new(s.stable_part((*set).clone())),
            _ => Arc::clone(&set),
        };
        let part_bytes = if Arc::ptr_eq(&part, &set) {
            0
        } else {
            bytes_of(&part)
        };
        let c = Cached {
            bytes: bytes_of(&set) + part_bytes + places.bytes(),
            set,
            part,
            streaks: streaks.map(Arc::new),
            gate,
            dirs: Arc::new(places.dirs),
            roots: Arc::new(places.roots),
            used: 0,
        };
        self.keep(key, c)
    }

    /// Keep `c` in memory under `key`, as the most recently used (a set
    /// larger than the whole cache is not kept); returns it.
    fn keep(&mut self, key: &str, mut c: Cached) -> Cached {
        if let Some(old) = self.cached.remove(key) {
            self.bytes -= old.bytes;
        }
        self.clock += 1;
        c.used = self.clock;
        if c.bytes > CACHE_MAX_BYTES {
            return c;
        }
        while self.bytes + c.bytes > CACHE_MAX_BYTES {
            self.evict_oldest();
        }
        self.bytes += c.bytes;
        self.cached.insert(key.to_string(), c.clone());
        debug_assert_eq!(
            self.bytes,
            self.cached.values().map(|c| c.bytes).sum::<usize>()
        );
        debug_assert!(self.bytes <= CACHE_MAX_BYTES);
        c
    }

    fn evict_oldest(&mut self) {
        let oldest = (self.cached.iter())
            .min_by_key(|(_, c)| c.used)
            .map(|(k, _)| k.clone());
        if let Some(c) = oldest.and_then(|k| self.cached.remove(&k)) {
            self.bytes -= c.bytes;
        }
    }

    /// Read every launch set of `store` into memory, the most recently
    /// saved kept when they do not all fit; with each `(key, set)` read
    /// given to `each` (the daemon indexes them, [`crate::shared`]).
    pub fn preload(store: &Store, mut each: impl FnMut(&str, &AppHistory)) -> Sets {
        let mut s = Sets::open(store);
        // Oldest first: the least recently used is the first dropped.
        for key in store::launch_keys(store).into_iter().rev() {
            if let Some(c) = s.get(store, &key) {
                each(&key, &c.set);
            }
        }
        s
    }

    /// Take the sets `other` read on another connection
    /// ([`Sets::preload`]) where this cache has none of its own (a set
    /// saved since is newer). A store changed by another process since is
    /// seen at the next use, as always.
    pub fn adopt(&mut self, other: Sets) {
        self.keys.extend(other.keys);
        let mut taken: Vec<(String, Cached)> = other.cached.into_iter().collect();
        taken.sort_unstable_by_key(|(_, c)| c.used);
        for (key, c) in taken {
            if !self.cached.contains_key(&key) {
                self.keep(&key, c);
            }
        }
    }

    /// Launch sets stored.
    pub fn stored(&self) -> u64 {
        self.keys.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: u32) -> AppHistory {
        AppHistory {
            exe: "/usr/bin/x".into(),
            files: (0..files)
                .rev()
                .map(|id| FileRecord {
                    id,
                    dev: 1,
                    ino: u64::from(id) + 10,
                    handle: None,
                    path: format!("/f{id}"),
                    size: 4096,
                    mtime_ns: 1,
                    mapped: false,
                })
                .collect(),
            accesses: (0..files)
                .map(|file| AccessRecord {
                    file,
                    page: 0,
                    pages: 1,
                })
                .collect(),
            ..AppHistory::default()
        }
    }

    fn saved_in(s: &mut Store, key: &str, h: &AppHistory) -> (Streaks, Gate) {
        let (streaks, gate) = (Streaks::after(None, h), Gate::default());
        store::save(s, key, h, (&gate, &streaks), &Places::default()).unwrap();
        (streaks, gate)
    }

    const X: &str = "exe:/usr/bin/x";

    #[test]
    fn a_set_in_memory_is_what_the_store_returns() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let mut sets = Sets::open(&s);
        assert!(sets.get(&s, "exe:/usr/bin/x").is_none(), "nothing stored");
        let h = set(3);
        for _ in 0..2 {
            let (streaks, gate) = saved_in(&mut s, "exe:/usr/bin/x", &h);
            sets.saved(&s, X, &h, (&streaks, &gate), &Places::default());
            let got = sets.get(&s, "exe:/usr/bin/x").unwrap();
            let stored = s.load_run("exe:/usr/bin/x").unwrap().unwrap();
            assert_eq!(*got.set, stored, "runs and file order as stored");
            assert_eq!(
                got.streaks.as_deref(),
                store::load_streaks(&s, "exe:/usr/bin/x").as_ref()
            );
        }
        assert_eq!(sets.stored(), 1);
        // A new daemon reads it from the store at the first exec.
        let mut fresh = Sets::open(&s);
        let got = fresh.get(&s, "exe:/usr/bin/x").unwrap();
        assert_eq!(got.set.runs, 2);
        // A set saved while not in memory counts its runs from the store.
        let mut cold = Sets::open(&s);
        let (streaks, gate) = saved_in(&mut s, "exe:/usr/bin/x", &h);
        cold.saved(&s, X, &h, (&streaks, &gate), &Places::default());
        let stored = s.load_run("exe:/usr/bin/x").unwrap().unwrap();
        assert_eq!(stored.runs, 3);
        assert_eq!(*cold.get(&s, "exe:/usr/bin/x").unwrap().set, stored);
    }

    #[test]
    fn the_part_a_launch_replays_is_made_once_with_the_set() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let s = Store::open(dir.path().join("h.db")).unwrap();
        let mut sets = Sets::open(&s);
        let (key, none) = (X, Gate::default());
        let (two, three) = (set(2), set(3));
        let first = Streaks::after(None, &two);
        sets.saved(&s, key, &two, (&first, &none), &Places::default());
        let c = sets.get(&s, key).unwrap();
        assert!(
            Arc::ptr_eq(&c.part, &c.set),
            "one launch behind it: all of it"
        );
        // The second launch read a third file: not stable yet.
        let second = Streaks::after(Some(&first), &three);
        sets.saved(&s, key, &three, (&second, &none), &Places::default());
        let c = sets.get(&s, key).unwrap();
        assert_eq!(c.set.runs, 2);
        assert_eq!(*c.part, second.stable_part((*c.set).clone()));
        let mut kept: Vec<u64> = c.part.files.iter().map(|f| f.ino).collect();
        kept.sort_unstable();
        assert_eq!(kept, [10, 11], "the file read once is left out");
        assert!(c.part.accesses.iter().all(|a| a.file < 2));
        assert!(
            Arc::ptr_eq(&c.part, &sets.get(&s, key).unwrap().part),
            "not made again"
        );
    }

    #[test]
    fn another_process_forgetting_a_set_is_seen() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let path = dir.path().join("h.db");
        let mut s = Store::open(&path).unwrap();
        let mut sets = Sets::open(&s);
        let (streaks, gate) = saved_in(&mut s, "exe:/usr/bin/x", &set(2));
        sets.saved(
            &s,
            "exe:/usr/bin/x",
            &set(2),
            (&streaks, &gate),
            &Places::default(),
        );
        assert!(sets.get(&s, "exe:/usr/bin/x").is_some());
        // `outrider forget --all`, through a connection of its own.
        let other = Store::open(&path).unwrap();
        assert_eq!(crate::query::forget_in(&other, None).unwrap(), 1);
        assert!(sets.get(&s, "exe:/usr/bin/x").is_none(), "forgotten");
        assert_eq!(sets.stored(), 0);
    }

    #[test]
    fn the_cache_keeps_within_its_bound_dropping_the_least_recently_launched() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let mut sets = Sets::open(&s);
        // Each set about a third of the cache.
        let files = (CACHE_MAX_BYTES / 3 / (size_of::<FileRecord>() + 3 + 16)) as u32;
        let h = set(files);
        for k in ["exe:/a", "exe:/b", "exe:/c"] {
            let (streaks, gate) = saved_in(&mut s, k, &h);
            sets.saved(&s, k, &h, (&streaks, &gate), &Places::default());
            assert!(sets.bytes <= CACHE_MAX_BYTES);
        }
        assert!(sets.cached.contains_key("exe:/c"));
        assert!(!sets.cached.contains_key("exe:/a"), "the oldest dropped");
        // A dropped set is read from the store again.
        assert_eq!(
            sets.get(&s, "exe:/a").unwrap().set.files.len(),
            h.files.len()
        );
        assert!(sets.bytes <= CACHE_MAX_BYTES);
        assert!(!sets.cached.contains_key("exe:/b"), "now the oldest");
    }
}
