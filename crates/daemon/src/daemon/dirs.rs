//! The directories each launch opens: recorded from one fanotify watch on
//! the root file system ([`outrider_sys::dirwatch`]), saved with the
//! launch set and walked at its next replay
//! ([`ReplayOptions::walk_dirs`](crate::launchset::ReplayOptions::walk_dirs)).
//!
//! Only the root file system is marked: the watch holds a descriptor of
//! each file system it marks, and one held on another (a removable disk,
//! a separate `/home`) would keep it from being unmounted.

use super::{log, Daemon, ANCESTORS_MAX};
use outrider_sys::dirwatch::{DirOpen, DirWatch};
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Batches of directory opens waiting for the daemon's loop at most
/// (each one reader's read, ~10 ms of opens): more are dropped.
const BATCHES_MAX: usize = 256;

/// The directories one launch opened: each once, in first-open order.
#[derive(Default)]
pub(super) struct Opened {
    list: Vec<DirOpen>,
    seen: FxHashSet<DirOpen>,
    /// Some of its run passed with the watch unmarked: what it opened
    /// then is not in `list`.
    pub(super) partial: bool,
}

/// The watch and where its batches arrive.
pub(super) struct Watch {
    watch: DirWatch,
    rx: mpsc::Receiver<Vec<DirOpen>>,
}

impl Opened {
    /// Directories seen opened.
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }
}

impl Daemon {
    /// Start watching directory opens, if configured.
    pub(super) fn start_dir_watch(&mut self) {
        if !self.cfg.metadata_walk {
            return;
        }
        let (tx, rx) = mpsc::sync_channel(BATCHES_MAX);
        match DirWatch::stream([Path::new("/")], tx) {
            Some(watch) => self.dir_watch = Some(Watch { watch, rx }),
            None => log("outrider daemon: no directory watch (fanotify); no metadata walks".into()),
        }
    }

    /// Hold the watch's mark only while a launch records what it opens:
    /// its set not full, its launcher still running (a short program
    /// found in memory, `sleep` or `grep`, is not always found so, and
    /// its window held the mark after it was gone), and once it was seen
    /// to read from storage: its reads recorded, no longer held
    /// ([`Daemon::commit_if_cold`]), or its replay found its set not in
    /// memory. Until then a launch may be one in memory: with a set of
    /// its own, 20-280 ms of it (the first `rg` over a tree in memory
    /// after a pause was marked for 33 of its 46 5-ms samples); with
    /// none, until it is judged (`judge_from_memory_mib`), later still when the
    /// daemon waits for a CPU the launch keeps busy (a copy of `rg` never
    /// seen, over a tree in memory, marked to its exit: 0.90x-0.92x of its
    /// time with no daemon, 0.96x with no watch, medians of 10-12
    /// alternations of 5 runs, two sittings). A marked file system costs
    /// every open and read there. `rg` over a source tree in memory, its
    /// launch found there and not recorded: 0.88x of its time with no
    /// daemon with the mark held for good, 0.96x-1.03x with no watch,
    /// 0.93x-1.06x with the mark held only for launches in their
    /// windows, in two sittings (medians of 5-6, 5 runs each,
    /// alternated). What a cold launch opens before it is seen to miss
    /// is not recorded: a cold tree walk misses its first directory's
    /// blocks at once, and its first 256 pages missed (`EVIDENCE_PAGES`)
    /// judge it to be recorded.
    pub(super) fn mark_while_recording(&mut self) {
        let recording = (self.launches.values()).any(|l| {
            let looked_cold = l.rec.is_recording() || l.resident.get() == Some(false);
            !l.full && !l.exited && looked_cold
        });
        let Some(w) = &mut self.dir_watch else { return };
        if !w.watch.marked() {
            for l in self.launches.values_mut().filter(|l| !l.exited) {
                l.dirs.partial = true;
            }
        }
        w.watch.set_marked(recording);
    }

    /// Record the directories opened since the last look in the launches
    /// of the processes that opened them (and the launches that exec'd
    /// those, as [`Daemon::record_read`] does reads), each up to the
    /// launch-set bound in files.
    pub(super) fn take_dirs(&mut self) {
        let Some(w) = &self.dir_watch else { return };
        let batches: Vec<Vec<DirOpen>> = w.rx.try_iter().collect();
        let max = self.cfg.launch_files_max;
        for d in batches.into_iter().flatten() {
            let mut at = self.tree.get(&d.pid).copied();
            for _ in 0..=ANCESTORS_MAX {
                let Some(l) = at.and_then(|a| self.launches.get_mut(&a)) else {
                    break;
                };
                at = l.parent;
                let o = &mut l.dirs;
                if o.list.len() < max && o.seen.insert(d.clone()) {
                    o.list.push(d.clone());
                }
            }
        }
    }

    /// The paths of `opened` now, each once, in their order.
    pub(super) fn dir_paths(&self, opened: &Opened) -> Vec<PathBuf> {
        (self.dir_watch.as_ref()).map_or_else(Vec::new, |w| w.watch.paths_of(&opened.list))
    }

    /// The directories to save with launch `l`'s set: those it opened,
    /// then, when it was seen only in part ([`Opened::partial`]) and ran
    /// with the same roots as the set before it, that set's not among
    /// them, up to the launch-set bound in files. The mark goes on only
    /// once a launch is seen to read from storage, so a short launch is
    /// seen late: `python3 -c pass`, whose module search opens 14
    /// directories, was recorded with 0-5 of them in 7 of 9 launches,
    /// and its next launches walked nothing.
    pub(super) fn dirs_to_save(&self, l: &super::Launch) -> Vec<PathBuf> {
        let mut dirs = self.dir_paths(&l.dirs);
        let before = (l.dirs.partial)
            .then_some(l.places_before.as_ref())
            .flatten()
            .filter(|(_, roots)| **roots == l.roots);
        if let Some((before, _)) = before {
            let seen: FxHashSet<PathBuf> = dirs.iter().cloned().collect();
            let max = self.cfg.launch_files_max;
            let more = before.iter().filter(|d| !seen.contains(*d));
            let room = max.saturating_sub(dirs.len());
            dirs.extend(more.take(room).cloned());
        }
        dirs
    }
}
