//! The history loaded while the program starts: the store opened, the
//! application's files verified and its policy blob read on a thread of
//! their own, and the controller held back until they are in.
//!
//! The load runs beside the tracing set-up, and the program waits for it
//! at most [`LOAD_WAIT`]: an application without history waits only for
//! the store to say so (its key's `PATH` search and the store's read-through
//! are done on the loading thread), a large history or a store busy with a
//! save no longer holds the program back. A program started before the
//! load is in has its first events wait in [`Starting`] (at most
//! [`MAX_HELD`]); they reach the controller after the history, in the order
//! the controller always saw them: history, [`Handler::on_start`], events.

use super::save::{open_store, HistoryLock};
use super::{gate_name, Loaded, RunOptions};
use crate::controller::Controller;
use crate::history::{self, Verification, EAGER_FILES};
use crate::metawalk::{self, MetaWalk};
use crate::session::{Handler, IDLE_SLEEP};
use crate::tracefs::LiveEvent;
use outrider_driver::benefit::Gate;
use outrider_store::{AppHistory, Store};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the program waits for its history at most. A replay that
/// starts with the program covers its first reads; one that starts after
/// the program has read on its own competes with it: `tar` of a 31 k-file
/// tree, run 2, 0.85 s when it waited for its history (60-70 ms) against
/// 0.95 s when it did not (medians of 9, alternated, cold cache, copies of
/// one store). Bounded, so a store busy with another run's save, or slow to
/// read, never holds a program back longer.
pub(super) const LOAD_WAIT: Duration = Duration::from_millis(150);
/// How often the wait looks whether the load is done.
const LOAD_POLL: Duration = Duration::from_micros(250);

/// Events held while the history loads, at most (~12 MiB); past it the
/// controller waits for the load instead (the kernel's buffers then hold
/// what follows).
const MAX_HELD: usize = 1 << 18;

/// What the loading thread read.
#[derive(Default)]
pub(super) struct Prepared {
    key: String,
    store: Option<Store>,
    history: Option<AppHistory>,
    verification: Verification,
    policy_blob: Option<Vec<u8>>,
    /// The store's shared history the policy names, and its blob.
    shared_blob: Option<(String, Vec<u8>)>,
    gate: Gate,
    walk: Option<MetaWalk>,
    load_s: f64,
    verify_s: f64,
}

/// Start loading the history of `opts`' application (run in `cwd`) from
/// the store at `db` on a new thread, with the store's shared history
/// `shared` when the policy names one. Its key is found there too: the
/// executable's search through `PATH` is a few cold directory reads (2.5
/// ms of `outrider run -- true` on a cold cache, measured).
pub(super) fn start_loading(
    db: &Path,
    opts: &RunOptions,
    cwd: &Path,
    shared: Option<String>,
) -> Option<JoinHandle<Prepared>> {
    let (db, cwd) = (db.to_path_buf(), cwd.to_path_buf());
    let (cmd, name) = (opts.cmd.clone(), opts.app_key.clone());
    let (spec, walk) = (opts.policy_spec.clone(), opts.metadata_walk);
    std::thread::Builder::new()
        .name("outrider-history".into())
        .spawn(move || {
            let key = history::app_key(&cmd, &cwd, name.as_deref());
            prepare(&db, key, &spec, walk, shared)
        })
        .ok()
}

fn prepare(
    db: &Path,
    key: String,
    spec: &str,
    metadata_walk: bool,
    shared: Option<String>,
) -> Prepared {
    let t = Instant::now();
    // Wait for a previous run's background save of this store to finish.
    let lock = HistoryLock::take(db, libc::LOCK_SH);
    let mut p = Prepared {
        key: key.clone(),
        ..Prepared::default()
    };
    let Some(st) = open_store(db, |st| st.has_run(&key).unwrap_or(true)) else {
        return p;
    };
    let loaded = st.load_run(&key);
    // The store's own history, whether or not the application has any
    // (DiskSeen §3.1: one block table for every program).
    p.shared_blob = shared.and_then(|name| match st.load_shared(&name) {
        Ok(b) => b.map(|b| (name, b)),
        Err(e) => {
            outrider_sys::warnln!("outrider: warning: {e}; starting without shared history");
            None
        }
    });
    p.load_s = t.elapsed().as_secs_f64();
    match loaded {
        Ok(Some(h)) => {
            let t = Instant::now();
            p.verification = history::verify_files(&h, EAGER_FILES);
            p.verify_s = t.elapsed().as_secs_f64();
            p.policy_blob = match st.load_history(&key, spec) {
                Ok(b) => b,
                Err(e) => {
                    outrider_sys::warnln!("outrider: warning: {e}; starting fresh");
                    None
                }
            };
            // The directories the previous run opened, in that order, and
            // its files in first-touch (id) order.
            if (p.policy_blob.is_some() || p.shared_blob.is_some()) && metadata_walk {
                let dirs = (st.load_history(&key, super::DIRS_BLOB).ok().flatten())
                    .map(|b| metawalk::decode_dirs(&b))
                    .unwrap_or_default();
                let files = metawalk::walk_order(h.files.iter().map(|f| Path::new(&f.path)));
                p.walk = MetaWalk::start(dirs, files);
            }
            p.gate = (st.load_history(&key, &gate_name(spec)).ok().flatten())
                .and_then(|b| Gate::decode(&b))
                .unwrap_or_default();
            p.history = Some(h);
        }
        Ok(None) => {}
        Err(e) => outrider_sys::warnln!("outrider: warning: {e}; starting without history"),
    }
    drop(lock);
    p.store = Some(st);
    p
}

/// The controller behind a history still loading: holds the program's
/// start and first events until the history is in.
pub(super) struct Starting<'a> {
    ctl: &'a mut Controller,
    loading: Option<JoinHandle<Prepared>>,
    policy_spec: String,
    started: Option<(u32, u64)>,
    running: bool,
    held: Vec<LiveEvent>,
    held_in_tree: Vec<bool>,
    /// What the load gave (filled once it is in).
    pub(super) loaded: Loaded,
    /// The store, to save into after the run.
    pub(super) store: Option<Store>,
    /// The application's key in the store (found by the load).
    pub(super) key: String,
}

impl<'a> Starting<'a> {
    pub(super) fn new(
        ctl: &'a mut Controller,
        loading: Option<JoinHandle<Prepared>>,
        policy_spec: &str,
    ) -> Self {
        Starting {
            ctl,
            loading,
            key: String::new(),
            policy_spec: policy_spec.to_string(),
            started: None,
            running: false,
            held: Vec::new(),
            held_in_tree: Vec::new(),
            loaded: Loaded::default(),
            store: None,
        }
    }

    /// Wait for the load (if any) and take it in; for a program that
    /// could not be started.
    pub(super) fn finish_loading(&mut self) {
        self.advance(true);
    }

    /// Wait for the load up to `longest`, and take it in if it is done.
    pub(super) fn wait_loading(&mut self, longest: Duration) {
        let t = Instant::now();
        while self.loading.as_ref().is_some_and(|h| !h.is_finished()) && t.elapsed() < longest {
            std::thread::sleep(LOAD_POLL);
        }
        self.advance(false);
    }

    /// Take the load in once it is done (`block`: wait for it), then the
    /// program's start and the events held; true when the controller is
    /// running.
    fn advance(&mut self, block: bool) -> bool {
        if let Some(h) = self.loading.take_if(|h| block || h.is_finished()) {
            let p = h.join().unwrap_or_else(|_| {
                outrider_sys::warnln!(
                    "outrider: warning: loading the history failed; starting without history"
                );
                Prepared::default()
            });
            self.take_in(p);
        }
        if self.loading.is_some() {
            return false;
        }
        if let Some((root, t0)) = self.started.take() {
            self.ctl.on_start(root, t0);
            self.running = true;
        }
        if self.running && !self.held.is_empty() {
            self.ctl.on_events(&self.held, &self.held_in_tree);
            self.held = Vec::new();
            self.held_in_tree = Vec::new();
        }
        self.running
    }

    /// The history into the controller: files under their saved ids, the
    /// policy's blob, the benefit gate's limits.
    fn take_in(&mut self, p: Prepared) {
        let l = &mut self.loaded;
        self.key = p.key;
        l.load_s = p.load_s;
        l.walk = p.walk;
        l.gate = p.gate;
        self.store = p.store;
        if let Some(h) = p.history {
            let t = Instant::now();
            l.restored = history::seed(&h, p.verification, self.ctl.files_mut());
            l.restore_s = p.verify_s + t.elapsed().as_secs_f64();
            // The blob came from the store, so the store is at hand.
            l.policy_loaded = match (p.policy_blob, &self.store) {
                (Some(b), Some(st)) => {
                    let policy = self.ctl.policy_mut();
                    match st.decode_into(&self.key, &self.policy_spec, &b, policy) {
                        Ok(()) => true,
                        Err(e) => {
                            outrider_sys::warnln!("outrider: warning: {e}; starting fresh");
                            false
                        }
                    }
                }
                _ => false,
            };
            let runs = h.runs;
            let mut files = h.files;
            files.sort_unstable_by_key(|f| f.id);
            l.files = Some((files, runs));
        }
        // After the application's blob: the store's table replaces a
        // table saved per application before it existed.
        l.shared_loaded = match (p.shared_blob, &self.store) {
            (Some((name, b)), Some(st)) => {
                match st.decode_shared_into(&name, &b, self.ctl.policy_mut()) {
                    Ok(()) => true,
                    Err(e) => {
                        outrider_sys::warnln!(
                            "outrider: warning: {e}; starting without shared history"
                        );
                        false
                    }
                }
            }
            _ => false,
        };
        self.ctl.limit(&l.gate);
    }
}

impl Handler for Starting<'_> {
    fn on_start(&mut self, root_pid: u32, t0_ns: u64) {
        self.started = Some((root_pid, t0_ns));
        self.advance(false);
    }

    fn on_events(&mut self, events: &[LiveEvent], in_tree: &[bool]) {
        let full = self.held.len() + events.len() > MAX_HELD;
        if self.advance(full) {
            self.ctl.on_events(events, in_tree);
        } else {
            self.held.extend_from_slice(events);
            self.held_in_tree.extend_from_slice(in_tree);
        }
    }

    fn on_poll(&mut self, now_ns: u64) {
        if self.advance(false) {
            self.ctl.on_poll(now_ns);
        }
    }

    fn idle_wait(&self) -> Duration {
        match self.loading {
            Some(_) => IDLE_SLEEP,
            None => self.ctl.idle_wait(),
        }
    }

    fn batch_wait(&self) -> Duration {
        match self.loading {
            Some(_) => IDLE_SLEEP,
            None => self.ctl.batch_wait(),
        }
    }

    fn on_fault(&mut self, why: &str) {
        self.ctl.on_fault(why);
    }

    fn on_finish(&mut self, now_ns: u64) {
        self.advance(true);
        self.ctl.on_finish(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::ControllerOptions;
    use crate::tracefs::EventKind;
    use outrider_store::FileRecord;
    use std::os::unix::fs::MetadataExt;

    /// A history still loading when the program starts: its first events
    /// wait, and reach the controller after the history's files took
    /// their saved ids (an event first would have taken id 1 itself).
    #[test]
    fn events_before_the_history_is_in_wait_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("saved");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let md = std::fs::metadata(&path).unwrap();
        let h = AppHistory {
            runs: 1,
            files: vec![FileRecord {
                id: 1,
                dev: md.dev(),
                ino: md.ino(),
                handle: None,
                path: path.display().to_string(),
                size: md.size(),
                mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
                mapped: false,
            }],
            ..AppHistory::default()
        };
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let loading = std::thread::spawn(move || {
            wait.recv().unwrap();
            let verification = history::verify_files(&h, EAGER_FILES);
            Prepared {
                history: Some(h),
                verification,
                ..Prepared::default()
            }
        });
        let policy = outrider_core::build_policy("none").unwrap();
        let mut ctl = Controller::new(policy, ControllerOptions::default());
        let mut s = Starting::new(&mut ctl, Some(loading), "none");
        s.wait_loading(Duration::from_millis(1));
        s.on_start(42, 1_000_000_000);
        let read = LiveEvent {
            ts_ns: 1_000_000_010,
            pid: 42,
            kind: EventKind::GetPages {
                dev: 7,
                ino: 99,
                index: 0,
                last_index: 0,
            },
        };
        s.on_events(&[read], &[true]);
        s.on_poll(1_000_000_020);
        assert_eq!((s.held.len(), s.running), (1, false));
        go.send(()).unwrap();
        s.on_finish(1_000_000_030);
        assert!(s.running && s.held.is_empty());
        let restored = s.loaded.restored.clone();
        assert_eq!((restored.files_kept, restored.files_dropped), (1, 0));
        assert_eq!(ctl.files().len(), 2);
        assert_eq!(ctl.stats().accesses, 1);
    }
}
