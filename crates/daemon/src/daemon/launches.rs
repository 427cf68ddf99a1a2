//! One launch, from its exec to the end of its window: whether it is
//! recorded and replayed, the set replayed for it (its own, or another
//! application's it follows), the benefit gate's verdict, following the
//! program on after its window, and its set queued for saving.

use super::status::{level_name, status_of, verdict_name, LaunchStatus};
use super::{log, Daemon, Done, Launch, Pending, ANCESTORS_MAX};
use crate::launchset::{replay, Holders, LaunchReads, Recorder, Verdict, WHERE_OPTIONS_MAX};
use crate::roots::Roots;
use crate::sets::Cached;
use crate::shared::{self, Matcher};
use crate::store::{self, Places};
use crate::streaks::Streaks;
use outrider_driver::benefit::{Evidence, Gate, Level};
use outrider_store::AppHistory;
use outrider_sys::launch::{user_entry, Credentials};
use outrider_sys::monotonic_ns;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Applications whose last launch is remembered at most (older ones are
/// dropped past it).
const RECENT_MAX: usize = 4096;

/// How long after its set was asked for a predicted launch counts as
/// read ahead: a script's next program comes within seconds.
const AHEAD_VALID_NS: u64 = 10_000_000_000;

/// Predicted launches remembered as read ahead at most (each is
/// forgotten at its launch or [`AHEAD_VALID_NS`] after).
const READ_AHEAD_MAX: usize = 256;

/// Predictions scored before wrong ones can turn successor replays off.
const SUCCESSOR_TRIAL: u64 = 8;

/// Bytes in a page.
const PAGE_BYTES: u64 = 4096;

/// The part of a set to replay and the streaks of the whole set
/// ([`Daemon::load_set`]).
type Part = (Option<Arc<AppHistory>>, Option<Arc<Streaks>>);

/// A set to replay and its share of the memory budget.
type Replay = (Arc<AppHistory>, f64);

/// A predicted launch's set to read ahead of it, and the flag its
/// launch sets ([`crate::launchset::ReplayOptions::launched`]).
type Ahead = (Replay, Arc<AtomicBool>);

/// Why an exec is not a launch.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NotLaunch {
    /// Gone already, the daemon itself, or turned away for now (CPU cap,
    /// recordings at their bound).
    Skip,
    /// Not watched, or its application launched less than the repeat
    /// window ago: an exec of the same file name is no launch either
    /// until CLOCK_MONOTONIC `until_ns`.
    Quiet {
        /// The end of the repeat window.
        until_ns: u64,
    },
}

impl Daemon {
    /// Replay the set launch `id`'s matcher found ([`crate::shared`])
    /// once its reads are seen to come from storage
    /// ([`LaunchReads::from_storage`](crate::launchset::LaunchReads::from_storage)),
    /// and never for a launch judged to read from memory (`make_hot`
    /// drops its match and ends its matcher). A copy of `rg`
    /// never seen, over a tree in memory that `rg`'s set of 8 192 files
    /// covers, matched it at its third file and had the set loaded,
    /// verified and probed at once: 4-5 ms of the daemon's CPU a launch,
    /// 2 ms once replayed only from storage (10 launches each; their
    /// wall times were not told apart, 0.981x and 0.980x of no daemon in
    /// 20 alternations of 5 runs). Such a copy over the tree cold,
    /// following the set from storage, still ran 1.23x of no daemon
    /// (1.15x replayed at once; medians of 7 alternations): a launch
    /// reading from storage shows it within its first files (64 pages
    /// missed, and more than one in 32 of those it read).
    pub(super) fn replay_shared_if_cold(&mut self, id: u64) {
        let Some(l) = self.launches.get_mut(&id) else {
            return;
        };
        if !l.reads.from_storage() {
            return;
        }
        if let Some((key, from)) = l.shared.take() {
            self.replay_shared(id, &key, from);
        }
    }

    /// Launch `id`, with no set of its own, reads files of set `key` in
    /// its order: replay that set from access `from` on, as its own set
    /// would be, and judge it at the window's end as its own.
    pub(super) fn replay_shared(&mut self, id: u64, key: &str, from: usize) {
        let Some(watch) =
            (self.launches.get(&id)).map(|l| (l.pid, l.exec_ns, Arc::clone(&l.reads)))
        else {
            return;
        };
        let pid = watch.0;
        let ((Some(part), _), Ok(user)) = (self.load_set(key, from), Credentials::of_pid(pid))
        else {
            return;
        };
        let resident = self.spawn_replay(
            id,
            watch,
            (Some((Arc::clone(&part), 1.0)), Vec::new()),
            user,
            Default::default(),
        );
        self.status.shared_replays += 1;
        if let Some(l) = self.launches.get_mut(&id) {
            (l.replayed, l.resident) = (Some(part), resident);
        }
        if let Some(s) = status_of(&mut self.status, id) {
            s.shared_from = Some(key.strip_prefix(store::LAUNCH_PREFIX).unwrap_or(key).into());
        }
        self.dirty = true;
    }

    /// Start recording (and replaying) the launch `pid` exec'd at
    /// `exec_ns`, if it is one.
    pub(super) fn start_launch(&mut self, pid: u32, exec_ns: u64) -> Result<(), NotLaunch> {
        if pid == std::process::id() {
            return Err(NotLaunch::Skip);
        }
        let exe = match std::fs::read_link(format!("/proc/{pid}/exe")) {
            Ok(exe) => exe,
            Err(e) => {
                self.status.execs_gone += u64::from(e.kind() == std::io::ErrorKind::NotFound);
                return Err(NotLaunch::Skip);
            }
        };
        // Our own helpers (one per client run) are not launches.
        if !self.cfg.watches(&exe) || self.own_exe.as_ref() == Some(&exe) {
            return Err(self.quiet_for(monotonic_ns()));
        }
        // Read once: it names the application and gives its roots.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv: Vec<&[u8]> = (cmdline.split(|&c| c == 0))
            .filter(|w| !w.is_empty())
            .collect();
        let exe = app_of(&argv, &exe.to_string_lossy(), self.cfg.launch_key_args);
        self.status.launches_seen += 1;
        self.dirty = true;
        self.admitted(&exe)?;
        let id = self.next_id;
        self.next_id += 1;
        let key = store::launch_key(&exe);
        // Replayed with the launching process's own identity: a process
        // that is gone already, or whose identity cannot be read, gets
        // no replay.
        // The benefit gate (outrider_driver::benefit, as `outrider run`'s):
        // a set whose replays did not pay is replayed with a quarter of
        // the budget, then not at all but every PROBE_EVERY-th launch.
        let user = Credentials::of_pid(pid);
        let roots = self.roots_of(pid, &argv, &user);
        let cached = self.sets.get(&self.store, &key);
        let gate = cached.as_ref().map(|c| c.gate).unwrap_or_default();
        let places_before = (cached.as_ref()).map(|c| (Arc::clone(&c.dirs), Arc::clone(&c.roots)));
        let dirs = (cached.as_ref()).map_or_else(Arc::default, |c| Arc::clone(&c.dirs));
        let recorded = (cached.as_ref())
            .filter(|_| self.cfg.argument_roots)
            .map(|c| Arc::clone(&c.roots));
        let share = match gate.level_now() {
            Level::Full => 1.0,
            Level::Reduced => 0.25,
            Level::Off => 0.0,
        };
        let (loaded, prev) = cached.map_or((None, None), |c| Self::part_of(c, 0));
        let known = loaded.is_some();
        let (loaded, dirs, left_out) = for_roots((loaded, dirs), recorded.as_deref(), &roots);
        if let (true, Some(src)) = (known, &self.src) {
            // Its replay judges whether it reads from memory.
            src.keep_following(pid);
        }
        // Predicted at the launch before, its set was asked for then, 1
        // MiB at a time; its own replay still runs, at the full in-flight
        // bound: leaving it out when the set was read ahead made `perl`
        // 0.69x of its stock time in the day in miniature against 0.82x
        // with it (`bench/daemon/launch.sh`, medians of 5, one run each).
        // The replay ahead stops: this one takes over.
        let ahead = (self.read_ahead.remove(&key)).is_some_and(|(at, launched)| {
            launched.store(true, Ordering::Relaxed);
            monotonic_ns().saturating_sub(at) < AHEAD_VALID_NS
        });
        self.status.launches_read_ahead += u64::from(ahead && known);
        let own = (loaded.filter(|_| share > 0.0)).map(|h| (h, share));
        let replayed = own.as_ref().map(|(h, _)| Arc::clone(h));
        let next = self.successor_sets(&key);
        let reads = Arc::<LaunchReads>::default();
        // Only a set that is replayed covers the launches it holds.
        let covers = (own.as_ref().filter(|_| user.is_ok()))
            .and_then(|(h, share)| (*share >= 1.0).then(|| (Arc::clone(h), self.new_holders())));
        let covered = self.covering(pid);
        let resident = match (user, own.is_some() || !next.is_empty()) {
            (Ok(user), true) => {
                let watch = (pid, exec_ns, Arc::clone(&reads));
                let holders = (covers.as_ref()).map_or_else(Arc::default, |c| Arc::clone(&c.1));
                self.spawn_replay(id, watch, (own, next), user, (dirs, covered, holders))
            }
            _ => Arc::default(),
        };
        self.push_status(LaunchStatus {
            id,
            exe: exe.clone(),
            pid,
            known,
            gate: level_name(gate.level_now()).into(),
            files_left_out: left_out,
            ..LaunchStatus::default()
        });
        let parent = self.tree.insert(pid, id);
        self.dead.remove(&pid);
        self.launches.insert(
            id,
            Launch {
                exe,
                pid,
                launcher: outrider_live::session::pidfd(pid),
                exited: false,
                started_ns: monotonic_ns(),
                exec_ns,
                rec: Recorder::holding(self.cfg.launch_cap_mib << 20, self.cfg.launch_files_max)
                    .knowing(replayed.clone()),
                gate,
                matcher: (!known).then(Matcher::default),
                shared: None,
                replayed,
                covers,
                full: false,
                hot: false,
                reads,
                resident,
                prev,
                parent,
                gone_ns: None,
                dirs: Default::default(),
                roots,
                places_before,
            },
        );
        Ok(())
    }

    /// Is launch `exe` to be recorded and replayed? Not when it
    /// [`Daemon::repeated`], the daemon is over its CPU cap, or
    /// [`Config::max_recording`](crate::config::Config::max_recording)
    /// launches are being recorded; each reason is counted in the status.
    fn admitted(&mut self, exe: &str) -> Result<(), NotLaunch> {
        if let Some(last) = self.repeated(exe) {
            self.status.launches_repeated += 1;
            return Err(self.quiet_for(last));
        }
        if self.cpu.over {
            self.status.launches_over_cpu += 1;
            return Err(NotLaunch::Skip);
        }
        if self.launches.len() >= self.cfg.max_recording {
            self.status.launches_not_recorded += 1;
            return Err(NotLaunch::Skip);
        }
        Ok(())
    }

    /// An exec that is not a launch until `from` plus the repeat window:
    /// its name may be quieted that long (with no repeat window, never).
    fn quiet_for(&self, from: u64) -> NotLaunch {
        match (self.cfg.repeat_window_s * 1e9) as u64 {
            0 => NotLaunch::Skip,
            window => NotLaunch::Quiet {
                until_ns: from + window,
            },
        }
    }

    /// The part of set `key` to replay, from its access `from` on
    /// ([`Streaks::stable_part`]), and the streaks of the whole set (all 1
    /// for a set saved without them, which replays whole); `(None, None)`
    /// when there is no such set.
    fn load_set(&mut self, key: &str, from: usize) -> Part {
        match self.sets.get(&self.store, key) {
            Some(c) => Self::part_of(c, from),
            None => (None, None),
        }
    }

    /// [`Daemon::load_set`] of a set in memory.
    fn part_of(c: Cached, from: usize) -> Part {
        let part = match (from, &c.streaks) {
            (0, _) => c.part,
            (_, Some(s)) => Arc::new(s.stable_part(shared::from_position(&c.set, from))),
            (_, None) => Arc::new(shared::from_position(&c.set, from)),
        };
        let streaks = (c.streaks).unwrap_or_else(|| Arc::new(Streaks::all(&part, 1)));
        (Some(part), Some(streaks))
    }

    /// When application `app` launched last, if less than
    /// [`Config::repeat_window_s`](crate::config::Config::repeat_window_s)
    /// ago; notes this launch otherwise.
    ///
    /// Such a launch is neither recorded nor replayed: the pages the last
    /// one read (or had replayed) are still cached, and its set stands.
    /// Recording and replaying each of 300 back-to-back execs of `true`
    /// made the loop 1.2-4x slower than with no daemon (the daemon's work
    /// per exec: its store, a replay thread, a file table; hot cache,
    /// `bench/daemon/launch.sh`'s exec-storm).
    fn repeated(&mut self, app: &str) -> Option<u64> {
        let now = monotonic_ns();
        let repeat = (self.cfg.repeat_window_s * 1e9) as u64;
        if let Some(&t) = self.recent.get(app).filter(|&&t| now < t + repeat) {
            return Some(t);
        }
        if self.recent.len() >= RECENT_MAX {
            self.recent.retain(|_, t| now < *t + repeat);
            if self.recent.len() >= RECENT_MAX {
                self.recent.clear();
            }
        }
        self.recent.insert(app.to_string(), now);
        None
    }

    /// On a thread of its own, as `user`: replay `own` (a set and its
    /// share of the budget, capped by the launch-set cap) for launch `id`
    /// of process `pid`, exec'd at `exec_ns`, until `pid` exits; then
    /// `next`, the predicted next launch's set, whether `pid` runs on or
    /// not (its launch comes after). With `own`, the directories its
    /// launch opened, `dirs`, are walked beside it.
    fn spawn_replay(
        &mut self,
        id: u64,
        (pid, exec_ns, reads): (u32, u64, Arc<LaunchReads>),
        (own, next): (Option<Replay>, Vec<Ahead>),
        user: Option<Credentials>,
        (dirs, covered, holders): (
            Arc<Vec<std::path::PathBuf>>,
            Vec<Arc<AppHistory>>,
            Arc<Holders>,
        ),
    ) -> Arc<Verdict> {
        let resident = Arc::<Verdict>::default();
        let cap = self.cfg.launch_cap_mib << 20;
        let options = |share: f64| {
            let mut o = self.replay_options(share, user.clone());
            o.budget_bytes = o.budget_bytes.min(cap);
            o
        };
        let own = own.map(|(set, share)| {
            let mut o = options(share);
            o.launcher = Some(pid);
            o.exec_ns = exec_ns;
            o.walk_dirs = dirs;
            o.covered = covered;
            o.holders = holders;
            o.launch_reads = reads;
            o.found_resident = Arc::clone(&resident);
            o.stop_following = self.untracker.as_ref().map(|u| (Arc::clone(u), pid));
            (set, o)
        });
        let next: Vec<_> = (next.into_iter())
            .map(|((set, share), launched)| {
                let mut o = options(share);
                o.ahead = true;
                o.launched = launched;
                (set, o)
            })
            .collect();
        self.status.replays += u64::from(own.is_some());
        self.status.successor_replays += next.len() as u64;
        let tx = self.done_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("outrider-replay".into())
            .spawn(move || {
                super::default_slice();
                if let Some((set, o)) = own {
                    let _ = tx.send(Done::Launch(id, replay(&set, &o)));
                }
                for (set, o) in next {
                    let _ = tx.send(Done::Successor(replay(&set, &o)));
                }
            });
        if let Err(e) = spawned {
            log(format!("outrider daemon: no thread for a replay: {e}"));
        }
        resident
    }

    /// The launches predicted to follow this launch of `key` (learning
    /// this one, [`crate::successors`]), nearest first: the sets of
    /// those not asked for already, with their shares of the budget by
    /// their gates, unless predictions have been mostly wrong.
    fn successor_sets(&mut self, key: &str) -> Vec<Ahead> {
        if !self.cfg.successor_prefetch {
            return Vec::new();
        }
        let next = self.successors.launched(key);
        self.status.successors = self.successors.stats;
        // Predictions that are mostly wrong only cost reads: off until
        // they are right more often than not (they go on being scored).
        let st = self.successors.stats;
        if st.hits + st.misses >= SUCCESSOR_TRIAL && st.misses > st.hits {
            return Vec::new();
        }
        let now = monotonic_ns();
        (self.read_ahead).retain(|_, (at, _)| now.saturating_sub(*at) < AHEAD_VALID_NS);
        (next.into_iter())
            .filter_map(|k| self.successor_set(k, now))
            .collect()
    }

    /// Predicted launch `next`'s set and share, unless it was asked for
    /// at an earlier launch and has not launched since (its pages are
    /// cached or on their way), it has no set, or its gate is off.
    fn successor_set(&mut self, next: String, now: u64) -> Option<Ahead> {
        if self.read_ahead.contains_key(&next) || self.read_ahead.len() >= READ_AHEAD_MAX {
            return None;
        }
        let c = self.sets.get(&self.store, &next)?;
        let share = match c.gate.level_now() {
            Level::Full => 1.0,
            Level::Reduced => 0.25,
            Level::Off => return None,
        };
        let set = Self::part_of(c, 0).0?;
        let launched = Arc::<AtomicBool>::default();
        self.read_ahead.insert(next, (now, Arc::clone(&launched)));
        Some(((set, share), launched))
    }

    /// The gate of launch `l` after its window: a replay's pages the
    /// launch read were used, the rest wasted unless the launch filled
    /// its set ([`outrider_driver::benefit::Evidence`]); a launch with no replay
    /// (or one not finished) is no evidence.
    fn judge(&mut self, id: u64, l: &Launch) -> Gate {
        let requested = status_of(&mut self.status, id)
            .and_then(|s| s.replay.as_ref())
            .map(|r| r.pages_requested);
        let ev = match (&l.replayed, requested) {
            (Some(h), Some(requested)) => {
                let used = l.rec.overlap(h).min(requested);
                // A launch whose set filled up may read the rest after
                // its cap: not read is not wasted. (`rg` over a source
                // tree read its files in another order each time: 6 518
                // of 65 536 replayed pages recorded, judged harmed, while
                // its block-I/O wait fell from 1.13 s to 0.54 s.)
                let unread = if l.rec.is_full() { 0 } else { requested - used };
                Evidence {
                    used_pages: used,
                    wasted_pages: unread,
                    cpu_s: 0.0,
                    elapsed_s: self.cfg.launch_window_s,
                }
            }
            _ => Evidence::default(),
        };
        let after = l.gate.after(ev);
        if let Some(s) = status_of(&mut self.status, id) {
            s.used_pages = ev.used_pages;
            s.verdict = verdict_name(after.verdict).into();
        }
        after
    }

    /// Follow launch `id`'s process for the rest of its run when it still
    /// runs after its window, read enough in it to be worth following
    /// ([`Config::follow_min_read_mib`](crate::config::Config::follow_min_read_mib))
    /// and a helper is free
    /// ([`Config::max_followed`](crate::config::Config::max_followed)).
    fn maybe_follow(&mut self, id: u64, l: &Launch) {
        let read = status_of(&mut self.status, id).map_or(0, |s| s.read_pages);
        let busy = self.followers.len() >= self.cfg.max_followed
            || self.followers.iter().any(|(p, _)| *p == l.pid);
        let small = !l.full && read * PAGE_BYTES < self.cfg.follow_min_read_mib << 20;
        if busy || small || l.hot {
            return;
        }
        if !std::path::Path::new(&format!("/proc/{}", l.pid)).exists() {
            return;
        }
        let Some(exe) = &self.own_exe else { return };
        let child = std::process::Command::new(exe)
            .args(["daemon", "--follow", &l.pid.to_string(), "--config"])
            .arg(&self.config_path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn();
        match child {
            Ok(c) => {
                self.followers.push((l.pid, c));
                self.status.followed += 1;
                if let Some(s) = status_of(&mut self.status, id) {
                    s.followed = true;
                }
            }
            Err(e) => log(format!("outrider daemon: following pid {}: {e}", l.pid)),
        }
        self.status.following = self.followers.len() as u64;
    }

    /// Stop the helpers following programs (each saves its history).
    pub(super) fn stop_followers(&mut self) {
        for (_, c) in &mut self.followers {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for (_, mut c) in self.followers.drain(..) {
            let _ = c.wait();
        }
    }

    /// Launch `id`'s window ended (or the daemon stops): stop following
    /// its tree, judge its replay, follow it on if it runs on, queue its
    /// set for saving.
    pub(super) fn end_launch(&mut self, id: u64, stopping: bool) {
        self.add_running_waits(id);
        let mut l = self.launches.remove(&id).expect("listed");
        // Its parent may have no other task or launch left.
        self.maybe_gone.extend(l.parent);
        debug_assert!(
            self.recording_pages >= l.rec.pages,
            "recorded pages are counted"
        );
        self.recording_pages -= l.rec.pages;
        // What it held is recorded now, after its run (unless hot).
        if !l.hot {
            l.rec.commit();
        }
        let src = self.src.as_ref();
        let dead = &mut self.dead;
        self.tree.retain(|&tid, v| {
            if *v == id {
                src.inspect(|s| s.untrack(tid));
                dead.remove(&tid);
            }
            *v != id
        });
        if let Some(s) = status_of(&mut self.status, id) {
            s.finished = true;
            s.recorded_pages = l.rec.pages;
        }
        if !stopping {
            self.maybe_follow(id, &l);
        }
        let key = store::launch_key(&l.exe);
        if l.hot {
            self.dirty = true;
            return;
        }
        let gate = self.judge(id, &l);
        if l.rec.pages > 0 {
            let (opened, dirs) = (l.dirs.len(), self.dirs_to_save(&l));
            let set = l.rec.finish(&l.exe);
            let streaks = Streaks::after(l.prev.as_deref(), &set);
            if let Some(s) = status_of(&mut self.status, id) {
                s.dirs_opened = opened as u64;
                s.dirs_saved = dirs.len() as u64;
            }
            self.pending.push(Pending {
                key,
                set,
                launch: Some(id),
                gate,
                streaks,
                places: Places {
                    dirs,
                    roots: std::mem::take(&mut l.roots),
                },
            });
        }
        self.dirty = true;
    }

    /// Holders of a replay, taken by this loop ([`Holders::fed_by`]).
    fn new_holders(&self) -> Arc<Holders> {
        Arc::new(Holders::fed_by(&self.events_read))
    }

    /// The sets the launches around process `pid` (the launch it
    /// belongs to, and the launches that exec'd that one, up to
    /// [`ANCESTORS_MAX`]) replay with the full budget, each replay held
    /// going until `pid` exits ([`Holders`]): a wrapper that does not
    /// wait for its program (`setsid -f`, a script's background job)
    /// exits first. Their sets hold what their process trees read, a
    /// launch of `pid` included: a wrapper (`setpriv`, `env`, `sudo`,
    /// `sh -c`) holds its program's whole set. A replay already stopped
    /// short of its set is not one of them. Called at each fork in a
    /// launch's tree too, so the child holds them before its parent may
    /// exit.
    pub(super) fn covering(&self, pid: u32) -> Vec<Arc<AppHistory>> {
        let mut out = Vec::new();
        let mut at = self.tree.get(&pid).copied();
        for _ in 0..=ANCESTORS_MAX {
            let Some(l) = at.and_then(|a| self.launches.get(&a)) else {
                break;
            };
            let held = (l.covers.as_ref()).filter(|(_, holders)| holders.hold(pid));
            out.extend(held.map(|(set, _)| Arc::clone(set)));
            at = l.parent;
        }
        out
    }

    /// The roots of launch `pid` with command line `argv`, its identity
    /// `user` (`None`: root's), its user's home directory looked up once.
    fn roots_of(
        &mut self,
        pid: u32,
        argv: &[&[u8]],
        user: &std::io::Result<Option<Credentials>>,
    ) -> Roots {
        let uid = match user {
            Ok(Some(c)) => c.uid,
            Ok(None) => 0,
            Err(_) => return Roots::default(),
        };
        if self.homes.len() >= HOMES_MAX {
            self.homes.clear();
        }
        let home = (self.homes.entry(uid)).or_insert_with(|| user_entry(uid).and_then(|u| u.home));
        Roots::of_process(pid, argv, home.as_deref())
    }
}

/// Users whose home directories are held at most (then looked up again).
const HOMES_MAX: usize = 1024;

/// What a launch with command-line roots `now` replays of `part` (the
/// set to replay) and walks of `dirs` (those its set's launch opened),
/// given that launch's roots (`recorded`; `None`: all): less what lies
/// under its foreign roots ([`Roots::left_for`]); and how many files that
/// left out.
fn for_roots(
    (part, dirs): (Option<Arc<AppHistory>>, Arc<Vec<PathBuf>>),
    recorded: Option<&Roots>,
    now: &Roots,
) -> (Option<Arc<AppHistory>>, Arc<Vec<PathBuf>>, u64) {
    let left = (part.as_deref())
        .zip(recorded)
        .and_then(|(p, r)| r.left_for(now, p, &dirs));
    match (part, left) {
        (Some(p), Some((set, kept))) => {
            let out = (p.files.len() - set.files.len()) as u64;
            (Some(Arc::new(set)), Arc::new(kept), out)
        }
        (part, _) => (part, dirs, 0),
    }
}

/// The application of executable `exe` run with command line `argv`
/// ([`crate::launchset::app_name`]).
fn app_of(argv: &[&[u8]], exe: &str, args: usize) -> String {
    if args == 0 {
        return exe.to_string();
    }
    // The words a name may need: argv[0], `args` of them, the options
    // naming a path left out, and an inline program's text.
    let argv: Vec<String> = (argv.iter().take(2 + args + 2 * WHERE_OPTIONS_MAX))
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    crate::launchset::app_name(exe, &argv, args)
}
