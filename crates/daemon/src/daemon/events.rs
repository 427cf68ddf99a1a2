//! The daemon's events: execs start launches, forks join a launch's
//! tree, reads are recorded in its set (and the boot set), misses count
//! against its replay's evidence; a launch that reads from memory is
//! turned hot and no longer followed.

use super::launches::NotLaunch;
use super::status::status_of;
use super::{Daemon, ANCESTORS_MAX, RECORDING_PAGES_MAX};
use crate::launchset::{PagesRead, EVIDENCE_PAGES, MISS_SHARE};
use outrider_live::session::pidfd_exited;
use outrider_live::tracefs::{folio_pages, EventKind, LiveEvent};
use std::sync::atomic::Ordering;

/// Launches whose files are resolved after their program
/// ([`crate::launchset::Recorder::record_later`]) at once at most; more are
/// recorded as their reads come. Each holds up to 2 MiB of reads and,
/// its pages held counted each once up to its cap (65 536 pages by default),
/// about as much again in the worst case: 8 of them, 32 MiB at most.
const DEFERRED_LAUNCHES_MAX: usize = 8;

/// How often [`Daemon::judge_hot`] asks the kernel which launches it let
/// go: for 20 ms of a launch's run at most, the metadata walk's mark is
/// held and its reads are recorded after the kernel stopped following it.
const LET_GO_LOOK_NS: u64 = 20_000_000;

impl Daemon {
    pub(super) fn on_event(&mut self, e: &LiveEvent) {
        let read = match e.kind {
            EventKind::Exec { pid, name } => return self.on_exec(pid, name, e.ts_ns),
            EventKind::Exit { tid, blkio_ns } => return self.on_task_exit(tid, blkio_ns),
            EventKind::Fork { parent, child } => return self.on_fork(parent, child),
            EventKind::GetPages {
                dev,
                ino,
                index,
                last_index,
            }
            | EventKind::MapPages {
                dev,
                ino,
                index,
                last_index,
            } => Some(PagesRead {
                dev,
                ino,
                index,
                pages: last_index.saturating_sub(index) + 1,
                mapped: matches!(e.kind, EventKind::MapPages { .. }),
            }),
            EventKind::Fault { dev, ino, index } => Some(PagesRead {
                dev,
                ino,
                index,
                pages: 1,
                mapped: true,
            }),
            EventKind::AddToCache {
                dev,
                ino,
                index,
                order,
            } => {
                let pages = u64::from(folio_pages(order));
                self.on_miss(e.pid, pages);
                self.unseen(e.ts_ns).then_some(PagesRead {
                    dev,
                    ino,
                    index,
                    pages,
                    mapped: false,
                })
            }
            _ => None,
        };
        let Some(read) = read else {
            return;
        };
        if let Some(&id) = self.tree.get(&e.pid) {
            self.record_read(id, e.pid, read);
        }
        if self.boot.is_some() && !self.is_own(e.pid) {
            if let Some((_, rec)) = self.boot.as_mut() {
                rec.read(e.pid, read);
                self.status.boot.recorded_pages = rec.pages;
                if rec.is_full() {
                    self.end_boot();
                }
            }
        }
    }

    /// Whether a page read made at `ts_ns` may have gone unseen: the
    /// source's program of page reads was detached then, and attached at
    /// the exec's record read, which a daemon kept off the CPU reads
    /// late (`outrider_live::ebpf`, module `reads`). What the read
    /// brought into the cache is then recorded as read: a launch's
    /// misses are what its replay is for. Under two busy loops, a
    /// `python3` that read an 8 MiB file at once had none of it
    /// recorded, so none of it replayed at the next launch.
    fn unseen(&self, ts_ns: u64) -> bool {
        self.reads_seen_since.is_none_or(|since| ts_ns < since)
    }

    /// Task `pid` of launch `id` read `pages` pages of (dev, ino) from
    /// `index`: record them in its set and in the sets of the launches
    /// that exec'd it, up to [`ANCESTORS_MAX`] up (as FAST and IORap
    /// record a start with the processes it spawns): a launch of `gcc`
    /// then holds what `cc1`, `as` and `ld` read, and its replay asks for
    /// them at `gcc`'s exec rather than at each child's.
    fn record_read(&mut self, id: u64, pid: u32, read: PagesRead) {
        let PagesRead {
            dev, ino, pages, ..
        } = read;
        let mut at = Some(id);
        for depth in 0..=ANCESTORS_MAX {
            let room = RECORDING_PAGES_MAX.saturating_sub(self.recording_pages);
            let Some(a) = at.filter(|a| room > 0 && self.launches.contains_key(a)) else {
                return;
            };
            if let Some(s) = status_of(&mut self.status, a) {
                s.read_pages += pages;
            }
            if depth == 0 {
                self.stop_if_hot(a, pages);
            }
            let l = self.launches.get_mut(&a).expect("present");
            if depth == 0 {
                l.reads.read.fetch_add(pages, Ordering::Relaxed);
            }
            at = l.parent;
            let before = l.rec.pages;
            if !l.hot {
                l.rec.read(pid, read);
            }
            self.recording_pages += l.rec.pages - before;
            let matched = (l.matcher.as_mut())
                .filter(|_| depth == 0)
                .and_then(|m| m.read(&self.index, (dev, ino)));
            if matched.is_some() {
                l.shared = matched;
            }
            if l.shared.is_some() {
                self.replay_shared_if_cold(a);
            }
            self.commit_if_cold(a);
            self.show_recorded(a);
            self.untrack_if_full(a);
        }
    }

    /// Judge launch `id` to be recorded
    /// ([`crate::launchset::Recorder::holding`]) once it is seen to read
    /// from storage: its tree missed [`EVIDENCE_PAGES`] or more, over one
    /// page in [`MISS_SHARE`] of those it read, or it read the pages it is
    /// judged at ([`Config::judge_pages`](crate::config::Config::judge_pages))
    /// and was not judged hot. What it holds, and what it reads from now
    /// on, is recorded once its program exited ([`Daemon::commit_exited`];
    /// [`crate::launchset::Recorder::record_later`] says why), or when the
    /// recorder reaches its bound or meets a file it could not open after
    /// the program; recorded, a set that fills up stops its launch being
    /// followed ([`Daemon::untrack_if_full`]). Not judged so, what it holds is
    /// recorded at the end of its window, after the program ran, unless it
    /// was judged hot (or the recorder, at its bound, records as the reads
    /// come).
    ///
    /// Neither its replay finding its set not in memory nor a few first
    /// misses are enough, to record it on the program's cores: on this
    /// machine the page cache loses a few hundred pages a second with no
    /// memory pressure, so a set of thousands of files looked at seconds
    /// after its last launch has a probe or two missing, and the first
    /// files read a few pages missing. `rg` over a tree it read 6 s
    /// before, recorded at either, had thousands of files opened and its
    /// set saved again with 934 of 167 600 pages missed, the daemon's CPU
    /// 190 ms a launch (8 launches 6 s apart, 2 of them so, perf).
    pub(super) fn commit_if_cold(&mut self, id: u64) {
        let Some(s) = status_of(&mut self.status, id) else {
            return;
        };
        let (read, missed) = (s.read_pages, s.missed_pages);
        let Some(l) = self.launches.get_mut(&id) else {
            return;
        };
        let judged_at = self.cfg.judge_pages();
        let cold = missed >= EVIDENCE_PAGES && missed * MISS_SHARE > read || read >= judged_at;
        if l.hot || l.rec.is_recording() || !cold {
            return;
        }
        let deferred = (self.launches.values())
            .filter(|l| l.rec.is_deferred())
            .count();
        let l = self.launches.get_mut(&id).expect("looked up");
        if deferred < DEFERRED_LAUNCHES_MAX {
            l.rec.record_later();
        }
        if !l.rec.is_deferred() {
            self.commit_held(id);
        }
    }

    /// Record what launch `id` holds now (its files resolved).
    fn commit_held(&mut self, id: u64) {
        let Some(l) = self.launches.get_mut(&id) else {
            return;
        };
        let before = l.rec.pages;
        l.rec.commit();
        self.recording_pages += l.rec.pages - before;
        self.show_recorded(id);
        self.untrack_if_full(id);
    }

    /// Note the launches whose program exited since the last turn (one
    /// poll of its pidfd each, until it did; none: gone at its exec).
    pub(super) fn note_exited(&mut self) {
        for l in self.launches.values_mut().filter(|l| !l.exited) {
            l.exited = l.launcher.as_ref().is_none_or(pidfd_exited);
        }
    }

    /// Record what the launches judged to be recorded hold once their
    /// program exited ([`crate::launchset::Recorder::record_later`]): its
    /// files are resolved after its run, not on the cores it needs.
    pub(super) fn commit_exited(&mut self) {
        let exited: Vec<u64> = (self.launches.iter())
            .filter(|(_, l)| l.rec.is_deferred() && l.exited)
            .map(|(&id, _)| id)
            .collect();
        for id in exited {
            self.commit_held(id);
        }
    }

    /// Launch `id`'s recorded pages in its status.
    fn show_recorded(&mut self, id: u64) {
        let Some(l) = self.launches.get(&id) else {
            return;
        };
        if let Some(s) = status_of(&mut self.status, id) {
            s.recorded_pages = l.rec.pages;
        }
    }

    /// Stop recording launch `id` once it reads from memory: once the
    /// first pages its tree read came from there, as many as it is judged
    /// at ([`Config::judge_pages`](crate::config::Config::judge_pages); at most 1
    /// in [`MISS_SHARE`] missed), before the read of `read` pages that
    /// reached them is recorded, or once its replay found its set there.
    /// Its tasks are no longer followed and nothing it read is saved (its
    /// set, if it has one, stands).
    fn stop_if_hot(&mut self, id: u64, read: u64) {
        let Some(s) = status_of(&mut self.status, id) else {
            return;
        };
        let at = self.cfg.judge_pages();
        let crossed = s.read_pages >= at && s.read_pages - read < at;
        let in_memory = s.missed_pages * MISS_SHARE <= s.read_pages;
        let Some(l) = self.launches.get_mut(&id).filter(|l| !l.hot) else {
            return;
        };
        let resident = l.resident.get() == Some(true);
        if crossed && in_memory || resident {
            self.make_hot(id);
        }
    }

    /// Turn hot the launches whose replay found their set in memory
    /// since, and those with no set of their own that the kernel let go
    /// for reading from memory: the replay or the kernel let their
    /// threads go at once, so no read of theirs comes to
    /// [`Daemon::stop_if_hot`] (the kernel counts the repeats it drops,
    /// which the daemon never sees), and they would count as recording,
    /// and hold the metadata walk's mark, for their whole window, and be
    /// saved at its end. `rg` over a source tree in memory, never seen
    /// before, let go at its first 64 MiB: 3 launches of 4 were left
    /// recording, their 3 000 directories resolved and files opened at
    /// their end, and the mark held for all of their run. So also a
    /// launch that read more than a holding
    /// [`Recorder`](crate::launchset::Recorder::holding) holds before its
    /// replay looked, recording already: left recording, `rg` found in
    /// memory saved 3 391 of its pages as its set, over the 65 536 of its
    /// cold launch. Those with no set of their own include a launch
    /// following another application's set ([`Daemon::replay_shared`]):
    /// the kernel judges it too, and left out, a copy of `rg` never seen
    /// over a tree in memory, following `rg`'s set, stayed recording after
    /// the kernel let it go at 64 MiB, and held the mark for most of its
    /// run in 5 runs of 6 (2-ms samples): 0.95x of its time with no
    /// daemon, 1.00x once taken (medians of 12 alternations of 5 runs).
    ///
    /// The kernel is asked at most every [`LET_GO_LOOK_NS`] (a map lookup
    /// per launch recording with no set of its own), not at every turn of
    /// the loop: the record that takes a launch past the bound is not
    /// sent when it is a repeat, so no read of its own need come after.
    pub(super) fn judge_hot(&mut self, now: u64) {
        let due = now >= self.let_go_looked + LET_GO_LOOK_NS;
        if due {
            self.let_go_looked = now;
        }
        let src = self.src.as_ref().filter(|_| due);
        let found: Vec<u64> = (self.launches.iter())
            .filter(|(_, l)| !l.hot)
            .filter(|(_, l)| {
                let let_go =
                    || !l.full && l.matcher.is_some() && src.is_some_and(|s| s.let_go(l.exec_ns));
                l.resident.get() == Some(true) || let_go()
            })
            .map(|(&id, _)| id)
            .collect();
        for id in found {
            self.make_hot(id);
        }
    }

    /// Launch `id` reads from memory: record nothing more of it, follow
    /// its tasks no longer.
    fn make_hot(&mut self, id: u64) {
        let Some(l) = self.launches.get_mut(&id).filter(|l| !l.hot) else {
            return;
        };
        (l.hot, l.full) = (true, true);
        // Nor does it follow another application's set from now on.
        l.shared = None;
        if let Some(m) = l.matcher.as_mut() {
            m.done = true;
        }
        l.reads.judge_hot();
        l.rec.discard();
        if let Some(s) = status_of(&mut self.status, id) {
            s.hot = true;
        }
        self.status.launches_hot += 1;
        self.untrack_launch(id);
    }

    /// Once launch `id`'s set is full its tasks are no longer followed
    /// in the kernel: their reads could add nothing (a tree walker's
    /// launch went on sending ten times its set's events, `rg` over a
    /// source tree in the day in miniature). Their exits still count.
    fn untrack_if_full(&mut self, id: u64) {
        let Some(l) = self.launches.get_mut(&id) else {
            return;
        };
        if l.full || !l.rec.is_full() {
            return;
        }
        l.full = true;
        self.untrack_launch(id);
    }

    /// Stop following launch `id`'s tasks in the kernel: those its
    /// events named so far, and the threads its launcher has now. The
    /// events come late when the daemon waits for a CPU the launch keeps
    /// busy, and the kernel follows a thread from its fork: `rg`, marked
    /// hot 24 ms after its exec with 17 pages read by then, went on to
    /// send 163 000 pages' events from threads the daemon had not yet
    /// seen forked.
    fn untrack_launch(&self, id: u64) {
        let Some(src) = &self.src else {
            return;
        };
        for (&tid, _) in self.tree.iter().filter(|(_, v)| **v == id) {
            src.untrack(tid);
        }
        if let (Some(u), Some(l)) = (&self.untracker, self.launches.get(&id)) {
            u.untrack_threads_of(l.pid);
        }
    }

    fn on_miss(&mut self, pid: u32, pages: u64) {
        if let Some(&id) = self.tree.get(&pid) {
            if let Some(s) = status_of(&mut self.status, id) {
                s.missed_pages += pages;
            }
            let pending = self.launches.get(&id).is_some_and(|l| {
                l.reads.missed.fetch_add(pages, Ordering::Relaxed);
                l.shared.is_some()
            });
            if pending {
                self.replay_shared_if_cold(id);
            }
            self.commit_if_cold(id);
        }
    }

    /// Is `tid` one of the daemon's own threads (its reads are its
    /// replays and its store)?
    fn is_own(&mut self, tid: u32) -> bool {
        if self.own.len() > 4096 {
            self.own.clear();
        }
        *self
            .own
            .entry(tid)
            .or_insert_with(|| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists())
    }

    /// Task `tid` exited having waited `blkio_ns` for block I/O: its wait
    /// is its launch's, and its launch's tree may be gone.
    pub(super) fn on_task_exit(&mut self, tid: u32, blkio_ns: u64) {
        self.on_exit(tid, blkio_ns);
        if let Some(&id) = self.tree.get(&tid) {
            self.dead.insert(tid);
            self.maybe_gone.push(id);
        }
    }

    /// Note as gone, at `now`, the launches of [`Daemon::maybe_gone`]
    /// whose every task exited and whose own launches ended: a
    /// [`GONE_GRACE_NS`](super::GONE_GRACE_NS) later their windows end,
    /// as nothing more can be read in them, so a short program's set is
    /// saved a moment after its run, not after its whole window. Where
    /// the source sends no exits (of threads no longer followed: a launch
    /// found in memory, or with its set full), a launch keeps its window.
    pub(super) fn note_trees_gone(&mut self, now: u64) {
        debug_assert!(
            self.dead.iter().all(|t| self.tree.contains_key(t)),
            "the tasks that exited are tasks of launches"
        );
        let mut maybe = std::mem::take(&mut self.maybe_gone);
        maybe.sort_unstable();
        maybe.dedup();
        for id in maybe {
            let tasks_gone = (self.tree.iter())
                .filter(|(_, v)| **v == id)
                .all(|(tid, _)| self.dead.contains(tid));
            let children = self.launches.values().any(|l| l.parent == Some(id));
            if let Some(l) = self
                .launches
                .get_mut(&id)
                .filter(|_| tasks_gone && !children)
            {
                l.gone_ns.get_or_insert(now);
            }
        }
    }

    /// A followed task forked `child`: it joins its parent's launch, or,
    /// the parent in none (its exec was no launch, or its launch ended
    /// before the daemon read the fork), is no longer followed.
    fn on_fork(&mut self, parent: u32, child: u32) {
        match self.tree.get(&parent) {
            Some(&id) => {
                self.tree.insert(child, id);
                self.dead.remove(&child);
                // Held before its parent may exit: a script's background
                // job outlives the script, whose replay its exec leaves
                // its pages to.
                self.covering(child);
                if self.launches.get(&id).is_some_and(|l| l.full) {
                    self.untrack(child);
                }
            }
            None => self.untrack(child),
        }
    }

    /// An exec: a new launch if it is one, else the process is no longer
    /// followed (unless it is part of a launch being recorded).
    ///
    /// An exec that is not a launch for a while (its application launched
    /// within the repeat window, or it is not watched) has its file name
    /// `name` quieted in the kernel that long: the execs of that name are
    /// then dropped there, with no wake-up of the daemon and nothing
    /// followed. Waking for each of a loop's 300 execs of `true`, only to
    /// find it repeated, made the loop 0.83x of its speed with no daemon
    /// (the wake-up, `/proc` reads and the untrack per exec: ~67 µs of
    /// daemon CPU each, `bench/daemon/launch.sh`'s exec-storm). The
    /// price: another application of the same executable (`python3 b.py`
    /// after two quick `python3 a.py`) is not a launch either until then.
    fn on_exec(&mut self, pid: u32, name: u64, ts_ns: u64) {
        let Err(not) = self.start_launch(pid, ts_ns) else {
            return;
        };
        if let (NotLaunch::Quiet { until_ns }, Some(src)) = (not, &self.src) {
            src.quiet(name, until_ns);
        }
        if !self.tree.contains_key(&pid) {
            self.untrack(pid);
            // The threads it forked before the daemon read its exec: a
            // fresh `rg` excluded from watching had its 2 searching
            // threads followed to its end, every read of theirs sent.
            if let Some(u) = &self.untracker {
                u.untrack_threads_of(pid);
            }
        }
    }
}
