//! The daemon's loop: one machine-wide tracefs instance, launches
//! recorded and replayed, finished sets saved, the status file rewritten.

use crate::clients::Listener;
use crate::config::Config;
use crate::launchset::{replay, Recorder, ReplayOptions, ReplayStats};
use crate::sets::{Cached, Sets};
use crate::shared::{self, Index, Matcher};
use crate::store::{self, BOOT_KEY};
use crate::streaks::Streaks;
use outrider_driver::benefit::{Evidence, Gate, Level, Verdict};
use outrider_live::source::EventSource;
use outrider_live::tracefs::{EventKind, InstanceOptions, LiveEvent, EVENTS, EXEC_EVENT};
use outrider_store::{AppHistory, Store};
use outrider_sys::launch::Credentials;
use outrider_sys::monotonic_ns;
use outrider_sys::taskstats::{self, TaskDelay, Taskstats};
use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Wait between polls when no event page was ready and a launch (or the
/// boot set) is being recorded, or the source cannot wake us at an exec.
const IDLE_SLEEP: Duration = Duration::from_millis(5);
/// Wait between polls when nothing is being recorded and the source
/// wakes us at every exec (eBPF): the status file and finished replays
/// are taken this often.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// Launches kept in the status file.
const STATUS_LAUNCHES: usize = 256;
/// The status file is rewritten at most this often (ns) while nothing
/// else changes it.
const STATUS_EVERY_NS: u64 = 1_000_000_000;
/// ... and at most this often when something changed. Rewritten at every
/// change (each exec of a build), the file's serialising, writing and
/// renaming were a sixth of the daemon's CPU while a cargo build ran
/// beside the day in miniature (perf).
const STATUS_MIN_NS: u64 = 250_000_000;
/// Applications whose last launch is remembered at most (older ones are
/// dropped past it).
const RECENT_MAX: usize = 4096;

/// Bytes in a page.
const PAGE_BYTES: u64 = 4096;
/// Pages all launches being recorded hold at most together (8 GiB of
/// file data; the recorders' own memory is 16-32 bytes per run of pages
/// and 16 per 64 pages): 64 launches of a parallel build, each up to its
/// 256 MiB cap, would otherwise hold 16 GiB worth.
const RECORDING_PAGES_MAX: u64 = 2 << 20;

/// One launch in the status file.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LaunchStatus {
    /// Sequence number.
    pub id: u64,
    /// The executable.
    pub exe: String,
    /// The process that exec'd it.
    pub pid: u32,
    /// A launch set of this executable existed at exec.
    pub known: bool,
    /// What its replay did (once finished).
    pub replay: Option<ReplayStats>,
    /// Pages its process tree read in the window (hits and misses),
    /// until its set was full.
    pub read_pages: u64,
    /// Pages its process tree brought into the cache itself (misses),
    /// until its set was full.
    pub missed_pages: u64,
    /// Pages recorded into the new launch set.
    pub recorded_pages: u64,
    /// The benefit gate's level at exec: `full`, `reduced` (a quarter
    /// of the budget) or `off` (no replay).
    pub gate: String,
    /// Pages of the replayed set the launch read in its window.
    pub used_pages: u64,
    /// The replay's verdict once the window ended: `paid`, `harmed` or
    /// `no_evidence`.
    pub verdict: String,
    /// The window ended.
    pub finished: bool,
    /// Still running then, it was followed with the `auto` policy.
    pub followed: bool,
    /// With no launch set of its own, it read files of this application's
    /// set in the set's order, which was replayed from there
    /// ([`crate::shared`]).
    pub shared_from: Option<String>,
    /// Seconds its process tree waited for block I/O in its window
    /// (delay accounting, [`outrider_sys::taskstats`]); `None` without it.
    pub io_wait_s: Option<f64>,
    /// Its launch set was saved.
    pub saved: bool,
}

/// The boot set in the status file.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BootStatus {
    /// Recording now.
    pub recording: bool,
    /// Pages recorded.
    pub recorded_pages: u64,
    /// Saved to the store.
    pub saved: bool,
    /// The replay at start, if there was a boot set.
    pub replay: Option<ReplayStats>,
}

/// What `<state_dir>/status.json` holds.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Status {
    /// The daemon's pid.
    pub pid: u32,
    /// Where its kernel events come from: `ebpf` or `tracefs`.
    pub event_source: String,
    /// The history store.
    pub store: String,
    /// Events decoded.
    pub events: u64,
    /// Events the kernel lost (buffer overruns).
    pub lost_events: u64,
    /// Launches of watched executables seen.
    pub launches_seen: u64,
    /// Programs followed after their launch window (helpers started).
    pub followed: u64,
    /// Programs followed now.
    pub following: u64,
    /// Launches not recorded ([`Config::max_recording`] reached).
    pub launches_not_recorded: u64,
    /// Launches neither recorded nor replayed: the daemon was over its
    /// CPU cap ([`Config::cpu_max_pct`]).
    pub launches_over_cpu: u64,
    /// Launches neither recorded nor replayed: the same application
    /// launched less than [`Config::repeat_window_s`] before.
    pub launches_repeated: u64,
    /// Launch sets saved.
    pub launch_sets_saved: u64,
    /// Launch sets in the store.
    pub launch_sets_stored: u64,
    /// Launch sets forgotten by the size bound.
    pub launch_sets_forgotten: u64,
    /// Replays started.
    pub replays: u64,
    /// Of them, sets of another application followed by a launch with
    /// none of its own ([`crate::shared`]).
    pub shared_replays: u64,
    /// Save errors (each also printed).
    pub save_errors: u64,
    /// The last launches, oldest first.
    pub launches: Vec<LaunchStatus>,
    /// The boot set.
    pub boot: BootStatus,
}

struct Launch {
    exe: String,
    /// The process that exec'd it.
    pid: u32,
    started_ns: u64,
    /// When it exec'd (the event's time).
    exec_ns: u64,
    rec: Recorder,
    /// The application's benefit gate at this launch.
    gate: Gate,
    /// The launch set replayed for it, if one was.
    replayed: Option<Arc<AppHistory>>,
    /// With no set of its own: the search for another application's.
    matcher: Option<Matcher>,
    /// Its set is full and its tasks are no longer followed in the kernel.
    full: bool,
    /// The streaks of the set it had before (`None`: it had none).
    prev: Option<Streaks>,
}

/// A finished set waiting to be saved: its key, the set, the launch it
/// came from (`None`: the boot set) and the launch's gate after it.
struct Pending {
    key: String,
    set: AppHistory,
    launch: Option<u64>,
    gate: Gate,
    streaks: Streaks,
}

enum Done {
    Launch(u64, ReplayStats),
    Boot(ReplayStats),
    /// The index of the stored launch sets, and the sets, read at start.
    Index(Box<(Index, Sets)>),
}

/// The running daemon.
pub struct Daemon {
    cfg: Config,
    config_path: PathBuf,
    /// Our own executable (read once; every exec is compared with it).
    own_exe: Option<PathBuf>,
    store: Store,
    /// The launch sets in memory ([`crate::sets`]).
    sets: Sets,
    status_path: PathBuf,
    status: Status,
    status_written_ns: u64,
    dirty: bool,
    next_id: u64,
    launches: FxHashMap<u64, Launch>,
    tree: FxHashMap<u32, u64>,
    boot: Option<(u64, Recorder)>,
    own: FxHashMap<u32, bool>,
    pending: Vec<Pending>,
    last_save_ns: u64,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    /// The event source, once [`Daemon::run`] opened it.
    src: Option<EventSource>,
    /// Pages the launches being recorded hold (≤ [`RECORDING_PAGES_MAX`]).
    recording_pages: u64,
    /// Helpers following a program after its launch
    /// ([`crate::helper::follow`]): the program's pid, the helper.
    followers: Vec<(u32, std::process::Child)>,
    /// Delay accounting: every task's totals at its exit, a socket to ask
    /// about running ones, and the sysctl's value before (put back at
    /// the end).
    delays: Option<(Taskstats, Taskstats, bool)>,
    exited: Vec<TaskDelay>,
    /// Which launch sets hold each file ([`crate::shared`]).
    index: Index,
    /// Sets saved before the index built at start arrived (added to it
    /// then); `None` once it did.
    saved_before_index: Option<Vec<String>>,
    /// Our own CPU use against [`Config::cpu_max_pct`].
    cpu: CpuMeter,
    /// When each application last launched ([`Config::repeat_window_s`]).
    recent: FxHashMap<String, u64>,
}

/// The daemon's CPU use (all its threads) over the last
/// [`CPU_WINDOW_NS`]: over the cap, no new launch is recorded or
/// replayed until it is under again.
#[derive(Default)]
struct CpuMeter {
    /// (monotonic ns, CPU seconds) once a second, oldest first.
    samples: std::collections::VecDeque<(u64, f64)>,
    /// Over the cap now.
    over: bool,
}

/// The window the CPU cap is judged over: a launch's burst (a 100 MiB
/// replay and its recording) fits in it, a stream of launches does not.
const CPU_WINDOW_NS: u64 = 10_000_000_000;

impl CpuMeter {
    /// Take a sample when a second passed; whether we are over `max_pct`.
    fn tick(&mut self, now: u64, max_pct: f64) -> bool {
        if self
            .samples
            .back()
            .is_some_and(|&(t, _)| now < t + 1_000_000_000)
        {
            return self.over;
        }
        let cpu = outrider_live::lifecycle::own_cpu_s();
        self.samples.push_back((now, cpu));
        while self.samples.len() > 2 && now - self.samples[1].0 >= CPU_WINDOW_NS {
            self.samples.pop_front();
        }
        let &(t0, c0) = self.samples.front().expect("one pushed");
        self.over = now > t0 && (cpu - c0) / ((now - t0) as f64 / 1e9) * 100.0 > max_pct;
        self.over
    }
}

/// Open the history store of `cfg` (its directory created if missing).
pub fn open_store(cfg: &Config) -> Result<Store, String> {
    Store::open(cfg.store_path()).map_err(|e| e.to_string())
}

impl Daemon {
    /// Open the store and start the boot replay and recording if
    /// configured. `config_path` is where `cfg` came from (the helpers
    /// serving clients read it again).
    pub fn new(cfg: Config, config_path: PathBuf) -> Result<Daemon, String> {
        let store = open_store(&cfg)?;
        let sets = Sets::open(&store);
        let (done_tx, done_rx) = mpsc::channel();
        let mut d = Daemon {
            status_path: cfg.state_dir.join("status.json"),
            status: Status {
                pid: std::process::id(),
                store: cfg.store_path().display().to_string(),
                launch_sets_stored: sets.stored(),
                ..Status::default()
            },
            store,
            sets,
            status_written_ns: 0,
            dirty: true,
            next_id: 1,
            launches: FxHashMap::default(),
            tree: FxHashMap::default(),
            boot: None,
            own: FxHashMap::default(),
            pending: Vec::new(),
            last_save_ns: monotonic_ns(),
            done_tx,
            done_rx,
            src: None,
            recording_pages: 0,
            followers: Vec::new(),
            delays: None,
            exited: Vec::new(),
            index: Index::default(),
            saved_before_index: Some(Vec::new()),
            cpu: CpuMeter::default(),
            recent: FxHashMap::default(),
            cfg,
            config_path,
            own_exe: std::fs::read_link("/proc/self/exe").ok(),
        };
        if d.cfg.boot_prefetch {
            d.start_boot();
        }
        d.build_index();
        Ok(d)
    }

    /// Index the stored launch sets on a thread of its own (a store of
    /// hundreds of sets takes a while to read).
    fn build_index(&self) {
        let (path, tx) = (self.cfg.store_path(), self.done_tx.clone());
        std::thread::spawn(move || {
            let mut idx = Index::default();
            let sets = match Store::open(&path) {
                Ok(store) => Sets::preload(&store, |key, h| idx.add(key, h)),
                Err(_) => Sets::default(),
            };
            let _ = tx.send(Done::Index(Box::new((idx, sets))));
        });
    }

    /// The index and the sets read at start arrived: the index takes the
    /// sets saved since, the sets in memory those read.
    fn take_index(&mut self, (mut idx, sets): (Index, Sets)) {
        for key in self.saved_before_index.take().unwrap_or_default() {
            if let Some(c) = self.sets.get(&self.store, &key) {
                idx.add(&key, &c.set);
            }
        }
        self.index = idx;
        self.sets.adopt(sets);
    }

    fn start_boot(&mut self) {
        let stamp = store::package_stamp(store::PACKAGE_DBS);
        let loaded = store::load_boot(&self.store, &stamp).unwrap_or_else(|e| {
            log(format!("outrider daemon: {e}"));
            None
        });
        if let Some(h) = loaded {
            let opts = self.replay_options(1.0, None);
            let tx = self.done_tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send(Done::Boot(replay(&h, &opts)));
            });
        }
        self.boot = Some((monotonic_ns(), Recorder::new(self.cfg.boot_cap_mib << 20)));
        self.status.boot.recording = true;
    }

    /// A replay's options: `share` of the memory budget (a launch's is
    /// also capped by the launch-set cap), for `user`.
    fn replay_options(&self, share: f64, user: Option<Credentials>) -> ReplayOptions {
        ReplayOptions {
            budget_bytes: ((self.cfg.memory_budget_mib << 20) as f64 * share) as u64,
            user,
            pressure_max_pct: self.cfg.pressure_max_pct,
            launcher: None,
            exec_ns: 0,
        }
    }

    /// Run until SIGTERM, SIGINT or SIGHUP; save what was recorded.
    pub fn run(mut self) -> Result<(), String> {
        outrider_sys::launch::install_signal_handlers();
        // glibc gives each thread that allocates an arena of its own, up to
        // eight per core, and keeps what was freed in it: a replay thread
        // per launch left 20 MiB of arenas after two days in miniature
        // (smaps). Two arenas: the loop's and its replays'.
        // SAFETY: a malloc setting (glibc takes its own lock).
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
        let prompt = self.open_source()?;
        if self.cfg.delay_accounting {
            self.delays = start_delay_accounting(&self.cfg.state_dir)
                .map_err(|e| log(format!("outrider daemon: no delay accounting: {e}")))
                .ok();
        }
        // Clients are served by helpers of their own: a socket that cannot
        // be bound leaves the daemon's own prefetching running.
        let _listener = (!self.cfg.socket.as_os_str().is_empty())
            .then(|| Listener::start(&self.cfg, &self.config_path))
            .and_then(|r| {
                r.map_err(|e| log(format!("outrider daemon: clients: {e}")))
                    .ok()
            });
        log(format!(
            "outrider daemon: watching {}; history {}",
            if self.cfg.watch.is_empty() {
                "every program".to_string()
            } else {
                format!("{} executables", self.cfg.watch.len())
            },
            self.status.store
        ));
        let mut events = Vec::new();
        while outrider_sys::launch::last_signal().is_none() {
            events.clear();
            let src = self.src.as_mut().expect("opened");
            let pages = (src.poll(&mut events, 256)).map_err(|e| format!("reading events: {e}"))?;
            let stats = src.stats();
            events.sort_by_key(|e| e.ts_ns);
            for e in &events {
                self.on_event(e);
            }
            self.status.events = stats.events;
            self.status.lost_events = stats.lost_events;
            self.tick(monotonic_ns(), false);
            if pages == 0 {
                self.idle(prompt);
            }
        }
        self.stop();
        Ok(())
    }

    /// Open the machine-wide event source; whether it wakes us at an exec.
    fn open_source(&mut self) -> Result<bool, String> {
        let mut events_list: Vec<(String, String)> = EVENTS
            .iter()
            .filter(|(s, _)| *s != "block")
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect();
        events_list.push((EXEC_EVENT.0.into(), EXEC_EVENT.1.into()));
        let opts = InstanceOptions {
            events: events_list,
            follow_execs: true,
            ..InstanceOptions::default()
        };
        let opened =
            EventSource::open(&opts, self.cfg.source()?).map_err(|e| format!("tracing: {e}"))?;
        if let Some(why) = &opened.fallback {
            log(format!(
                "outrider daemon: eBPF unavailable ({why}); using tracefs"
            ));
        }
        let prompt = matches!(opened.source, EventSource::Ebpf(_));
        self.status.event_source = opened.source.name().into();
        if self.boot.is_some() {
            (opened.source.record_everyone(true)).map_err(|e| format!("tracing: {e}"))?;
        }
        self.src = Some(opened.source);
        Ok(prompt)
    }

    /// Stop tracing and the helpers, put delay accounting back, save.
    fn stop(&mut self) {
        self.src = None;
        self.stop_followers();
        if let Some((_, _, was)) = self.delays.take() {
            taskstats::restore(was);
            let _ = std::fs::remove_file(self.cfg.state_dir.join(DELAYACCT_WAS));
        }
        self.tick(u64::MAX, true);
        log("outrider daemon: stopped, history saved".to_string());
    }

    /// Wait for events: a source that wakes us at an exec is waited on
    /// (longer while nothing is recorded); tracefs's per-CPU files are
    /// slept beside, as their readiness is not an exec's.
    fn idle(&self, prompt: bool) {
        let recording = !self.launches.is_empty() || self.boot.is_some();
        match &self.src {
            Some(src) if prompt => {
                src.wait(None, if recording { IDLE_SLEEP } else { IDLE_WAIT });
            }
            _ => std::thread::sleep(IDLE_SLEEP),
        }
    }

    /// Launch `id`, with no set of its own, reads files of set `key` in
    /// its order: replay that set from access `from` on, as its own set
    /// would be, and judge it at the window's end as its own.
    fn replay_shared(&mut self, id: u64, key: &str, from: usize) {
        let Some((pid, exec_ns)) = self.launches.get(&id).map(|l| (l.pid, l.exec_ns)) else {
            return;
        };
        let ((Some(part), _), Ok(user)) = (self.load_set(key, from), Credentials::of_pid(pid))
        else {
            return;
        };
        let part = Arc::new(part);
        self.spawn_replay(id, (pid, exec_ns), Arc::clone(&part), 1.0, user);
        self.status.shared_replays += 1;
        if let Some(l) = self.launches.get_mut(&id) {
            l.replayed = Some(part);
        }
        if let Some(s) = status_of(&mut self.status, id) {
            s.shared_from = Some(key.strip_prefix(store::LAUNCH_PREFIX).unwrap_or(key).into());
        }
        self.dirty = true;
    }

    /// Stop following thread `tid` in the kernel (eBPF): it is in no
    /// launch now.
    fn untrack(&self, tid: u32) {
        if let Some(src) = &self.src {
            src.untrack(tid);
        }
    }

    fn on_event(&mut self, e: &LiveEvent) {
        let read = match e.kind {
            EventKind::Exec { pid } => return self.on_exec(pid, e.ts_ns),
            EventKind::Fork { parent, child } => {
                if let Some(&id) = self.tree.get(&parent) {
                    self.tree.insert(child, id);
                    if self.launches.get(&id).is_some_and(|l| l.full) {
                        self.untrack(child);
                    }
                }
                return;
            }
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
            } => Some((dev, ino, index, last_index.saturating_sub(index) + 1)),
            EventKind::Fault { dev, ino, index } => Some((dev, ino, index, 1)),
            EventKind::AddToCache { order, .. } => {
                self.on_miss(e.pid, 1u64 << order.min(20));
                None
            }
            _ => None,
        };
        let Some((dev, ino, index, pages)) = read else {
            return;
        };
        let room = RECORDING_PAGES_MAX.saturating_sub(self.recording_pages);
        if let Some(&id) = self.tree.get(&e.pid).filter(|_| room > 0) {
            if let Some(l) = self.launches.get_mut(&id) {
                let before = l.rec.pages;
                l.rec.read(e.pid, dev, ino, index, pages);
                let recorded = l.rec.pages;
                self.recording_pages += recorded - before;
                let matched = (l.matcher.as_mut()).and_then(|m| m.read(&self.index, (dev, ino)));
                if let Some(s) = status_of(&mut self.status, id) {
                    s.read_pages += pages;
                    s.recorded_pages = recorded;
                }
                if let Some((key, from)) = matched {
                    self.replay_shared(id, &key, from);
                }
                self.untrack_if_full(id);
            }
        }
        if self.boot.is_some() && !self.is_own(e.pid) {
            if let Some((_, rec)) = self.boot.as_mut() {
                rec.read(e.pid, dev, ino, index, pages);
                self.status.boot.recorded_pages = rec.pages;
                if rec.is_full() {
                    self.end_boot();
                }
            }
        }
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
        if let Some(src) = &self.src {
            for (&tid, _) in self.tree.iter().filter(|(_, v)| **v == id) {
                src.untrack(tid);
            }
        }
    }

    fn on_miss(&mut self, pid: u32, pages: u64) {
        if let Some(&id) = self.tree.get(&pid) {
            if let Some(s) = status_of(&mut self.status, id) {
                s.missed_pages += pages;
            }
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

    /// An exec: a new launch if it is one, else the process is no longer
    /// followed (unless it is part of a launch being recorded).
    fn on_exec(&mut self, pid: u32, ts_ns: u64) {
        if !self.start_launch(pid, ts_ns) && !self.tree.contains_key(&pid) {
            self.untrack(pid);
        }
    }

    /// Start recording (and replaying) the launch `pid` exec'd at
    /// `exec_ns`, if it is one; false when it is not.
    fn start_launch(&mut self, pid: u32, exec_ns: u64) -> bool {
        if pid == std::process::id() {
            return false;
        }
        let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
            return false;
        };
        // Our own helpers (one per client run) are not launches.
        if !self.cfg.watches(&exe) || self.own_exe.as_ref() == Some(&exe) {
            return false;
        }
        let exe = app_of(pid, &exe.to_string_lossy(), self.cfg.launch_key_args);
        self.status.launches_seen += 1;
        self.dirty = true;
        if self.repeated(&exe) {
            self.status.launches_repeated += 1;
            return false;
        }
        if self.cpu.over {
            self.status.launches_over_cpu += 1;
            return false;
        }
        if self.launches.len() >= self.cfg.max_recording {
            self.status.launches_not_recorded += 1;
            return false;
        }
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
        let cached = self.sets.get(&self.store, &key);
        let gate = cached.as_ref().map(|c| c.gate.clone()).unwrap_or_default();
        let share = match gate.level_now() {
            Level::Full => 1.0,
            Level::Reduced => 0.25,
            Level::Off => 0.0,
        };
        let (loaded, prev) = cached.map_or((None, None), |c| Self::part_of(c, 0));
        let known = loaded.is_some();
        let replayed = match (loaded, user) {
            (Some(h), Ok(user)) if share > 0.0 => {
                let h = Arc::new(h);
                self.spawn_replay(id, (pid, exec_ns), Arc::clone(&h), share, user);
                Some(h)
            }
            _ => None,
        };
        if self.status.launches.len() >= STATUS_LAUNCHES {
            self.compact_status();
        }
        self.status.launches.push(LaunchStatus {
            id,
            exe: exe.clone(),
            pid,
            known,
            gate: level_name(gate.level_now()).into(),
            ..LaunchStatus::default()
        });
        self.tree.insert(pid, id);
        self.launches.insert(
            id,
            Launch {
                exe,
                pid,
                started_ns: monotonic_ns(),
                exec_ns,
                rec: Recorder::new(self.cfg.launch_cap_mib << 20),
                gate,
                matcher: (!known).then(Matcher::default),
                replayed,
                full: false,
                prev,
            },
        );
        true
    }

    /// The part of set `key` to replay, from its access `from` on
    /// ([`Streaks::stable_part`]), and the streaks of the whole set (all 1
    /// for a set saved without them, which replays whole); `(None, None)`
    /// when there is no such set.
    fn load_set(&mut self, key: &str, from: usize) -> (Option<AppHistory>, Option<Streaks>) {
        match self.sets.get(&self.store, key) {
            Some(c) => Self::part_of(c, from),
            None => (None, None),
        }
    }

    /// [`Daemon::load_set`] of a set in memory.
    fn part_of(c: Cached, from: usize) -> (Option<AppHistory>, Option<Streaks>) {
        let h = if from > 0 {
            shared::from_position(&c.set, from)
        } else {
            Arc::unwrap_or_clone(c.set)
        };
        match c.streaks {
            Some(s) => (Some(s.stable_part(h)), Some(s)),
            None => {
                let all = Streaks::all(&h, 1);
                (Some(h), Some(all))
            }
        }
    }

    /// Did application `app` launch less than
    /// [`Config::repeat_window_s`] ago? Notes this launch otherwise.
    ///
    /// Such a launch is neither recorded nor replayed: the pages the last
    /// one read (or had replayed) are still cached, and its set stands.
    /// Recording and replaying each of 300 back-to-back execs of `true`
    /// made the loop 1.2-4x slower than with no daemon (the daemon's work
    /// per exec: its store, a replay thread, a file table; hot cache,
    /// `bench/daemon/launch.sh`'s exec-storm).
    fn repeated(&mut self, app: &str) -> bool {
        let now = monotonic_ns();
        let repeat = (self.cfg.repeat_window_s * 1e9) as u64;
        if self.recent.get(app).is_some_and(|&t| now < t + repeat) {
            return true;
        }
        if self.recent.len() >= RECENT_MAX {
            self.recent.retain(|_, t| now < *t + repeat);
            if self.recent.len() >= RECENT_MAX {
                self.recent.clear();
            }
        }
        self.recent.insert(app.to_string(), now);
        false
    }

    /// Replay `set` for launch `id` of process `pid`, exec'd at
    /// `exec_ns` (`share` of the budget, capped by the launch-set cap; as
    /// `user`) on a thread of its own, until `pid` exits.
    fn spawn_replay(
        &mut self,
        id: u64,
        (pid, exec_ns): (u32, u64),
        set: Arc<AppHistory>,
        share: f64,
        user: Option<Credentials>,
    ) {
        let mut opts = self.replay_options(share, user);
        opts.launcher = Some(pid);
        opts.exec_ns = exec_ns;
        opts.budget_bytes = opts.budget_bytes.min(self.cfg.launch_cap_mib << 20);
        let tx = self.done_tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Done::Launch(id, replay(&set, &opts)));
        });
        self.status.replays += 1;
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
    /// ([`Config::follow_min_read_mib`]) and a helper is free
    /// ([`Config::max_followed`]).
    fn maybe_follow(&mut self, id: u64, l: &Launch) {
        let read = status_of(&mut self.status, id).map_or(0, |s| s.read_pages);
        let busy = self.followers.len() >= self.cfg.max_followed
            || self.followers.iter().any(|(p, _)| *p == l.pid);
        if busy || (!l.full && read * PAGE_BYTES < self.cfg.follow_min_read_mib << 20) {
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

    /// Add the block-I/O waits of tasks that exited to their launches.
    fn take_exits(&mut self) {
        let Some((exits, _, _)) = self.delays.as_mut() else {
            return;
        };
        self.exited.clear();
        exits.exited(&mut self.exited);
        let now = monotonic_ns();
        for i in 0..self.exited.len() {
            let d = self.exited[i];
            let Some(&id) = self.tree.get(&d.tid) else {
                continue;
            };
            if let Some(l) = self.launches.get(&id) {
                let ns = plausible_wait(d.blkio_ns, now - l.started_ns);
                add_wait(&mut self.status, id, ns);
            }
        }
    }

    /// Add the block-I/O waits so far of launch `id`'s tasks that still
    /// run (those that exited were added by [`Daemon::take_exits`]).
    fn add_running_waits(&mut self, id: u64) {
        let Some((_, query, _)) = self.delays.as_mut() else {
            return;
        };
        let Some(l) = self.launches.get(&id) else {
            return;
        };
        let age = monotonic_ns() - l.started_ns;
        let mut ns = 0;
        for (&tid, _) in self.tree.iter().filter(|(_, v)| **v == id) {
            if let Ok(Some(d)) = query.of(tid) {
                ns += plausible_wait(d.blkio_ns, age);
            }
        }
        add_wait(&mut self.status, id, ns);
    }

    /// Stop the helpers following programs (each saves its history).
    fn stop_followers(&mut self) {
        for (_, c) in &mut self.followers {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for (_, mut c) in self.followers.drain(..) {
            let _ = c.wait();
        }
    }

    /// Drop the older half of the status list.
    fn compact_status(&mut self) {
        let cut = self.status.launches.len() / 2;
        self.status.launches.drain(..cut);
    }

    /// Finish launches (and the boot set) whose window ended, save when
    /// due, take replay results, rewrite the status file.
    fn tick(&mut self, now: u64, stopping: bool) {
        self.take_done();
        let before = self.followers.len();
        self.followers
            .retain_mut(|(_, c)| !matches!(c.try_wait(), Ok(Some(_)) | Err(_)));
        if self.followers.len() != before {
            self.status.following = self.followers.len() as u64;
            self.dirty = true;
        }
        self.take_exits();
        self.cpu.tick(now, self.cfg.cpu_max_pct);
        let window = (self.cfg.launch_window_s * 1e9) as u64;
        let ended: Vec<u64> = self
            .launches
            .iter()
            .filter(|(_, l)| stopping || now.saturating_sub(l.started_ns) >= window)
            .map(|(id, _)| *id)
            .collect();
        for id in ended {
            self.end_launch(id, stopping);
        }
        let boot_window = (self.cfg.boot_window_s * 1e9) as u64;
        if self
            .boot
            .as_ref()
            .is_some_and(|(t0, _)| stopping || now.saturating_sub(*t0) >= boot_window)
        {
            self.end_boot();
        }
        let save_every = (self.cfg.save_interval_s * 1e9) as u64;
        if !self.pending.is_empty()
            && (stopping || now.saturating_sub(self.last_save_ns) >= save_every)
        {
            self.save_pending();
            self.last_save_ns = now;
        }
        let since = now.saturating_sub(self.status_written_ns);
        if (self.dirty && since >= STATUS_MIN_NS) || since >= STATUS_EVERY_NS || stopping {
            self.write_status();
            self.status_written_ns = now;
        }
    }

    /// Take what the replay and index threads finished.
    fn take_done(&mut self) {
        while let Ok(done) = self.done_rx.try_recv() {
            self.dirty = true;
            match done {
                Done::Boot(st) => self.status.boot.replay = Some(st),
                Done::Index(idx) => self.take_index(*idx),
                Done::Launch(id, st) => {
                    if let Some(s) = status_of(&mut self.status, id) {
                        s.replay = Some(st);
                    }
                }
            }
        }
    }

    /// Launch `id`'s window ended (or the daemon stops): stop following
    /// its tree, judge its replay, follow it on if it runs on, queue its
    /// set for saving.
    fn end_launch(&mut self, id: u64, stopping: bool) {
        self.add_running_waits(id);
        let l = self.launches.remove(&id).expect("listed");
        debug_assert!(
            self.recording_pages >= l.rec.pages,
            "recorded pages are counted"
        );
        self.recording_pages -= l.rec.pages;
        let src = self.src.as_ref();
        self.tree.retain(|&tid, v| {
            if *v == id {
                src.inspect(|s| s.untrack(tid));
            }
            *v != id
        });
        if let Some(s) = status_of(&mut self.status, id) {
            s.finished = true;
        }
        if !stopping {
            self.maybe_follow(id, &l);
        }
        let key = store::launch_key(&l.exe);
        let gate = self.judge(id, &l);
        if l.rec.pages > 0 {
            let set = l.rec.finish(&l.exe);
            let streaks = Streaks::after(l.prev.as_ref(), &set);
            self.pending.push(Pending {
                key,
                set,
                launch: Some(id),
                gate,
                streaks,
            });
        }
        self.dirty = true;
    }

    /// The boot window ended (or the daemon stops): queue the boot set.
    fn end_boot(&mut self) {
        let (_, rec) = self.boot.take().expect("checked");
        self.status.boot.recording = false;
        if let Some(Err(e)) = self.src.as_ref().map(|s| s.record_everyone(false)) {
            log(format!("outrider daemon: ending the boot recording: {e}"));
        }
        if rec.pages > 0 {
            self.pending.push(Pending {
                key: BOOT_KEY.into(),
                set: rec.finish("boot"),
                launch: None,
                gate: Gate::default(),
                streaks: Streaks::default(),
            });
        }
    }

    fn save_pending(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let saved = match p.launch {
                Some(_) => store::save(&mut self.store, &p.key, &p.set, &p.gate, &p.streaks),
                None => {
                    let stamp = store::package_stamp(store::PACKAGE_DBS);
                    store::save_boot(&mut self.store, &p.set, &stamp)
                }
            };
            let key = p.key;
            match saved {
                Ok(()) => match p.launch {
                    Some(id) => {
                        (self.sets).saved(&self.store, &key, &p.set, &p.streaks, &p.gate);
                        self.index.add(&key, &p.set);
                        if let Some(keys) = self.saved_before_index.as_mut() {
                            keys.push(key.clone());
                        }
                        self.status.launch_sets_saved += 1;
                        if let Some(s) = status_of(&mut self.status, id) {
                            s.saved = true;
                        }
                    }
                    None => self.status.boot.saved = true,
                },
                Err(e) => {
                    log(format!("outrider daemon: saving {key}: {e}"));
                    self.status.save_errors += 1;
                }
            }
        }
        match store::enforce_bound(&self.store, self.cfg.history_max_apps) {
            Ok(0) => {}
            Ok(n) => {
                self.status.launch_sets_forgotten += n;
                self.sets.bounded(&self.store);
            }
            Err(e) => log(format!("outrider daemon: bounding the history: {e}")),
        }
        self.status.launch_sets_stored = self.sets.stored();
        self.dirty = true;
    }

    fn write_status(&mut self) {
        self.dirty = false;
        let tmp = self.status_path.with_extension("json.tmp");
        let Ok(text) = serde_json::to_string_pretty(&self.status) else {
            return;
        };
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &self.status_path);
        }
    }
}

/// One line on stderr (the journal under systemd); a closed stderr is
/// not a reason to stop prefetching.
pub(crate) fn log(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The application process `pid` runs ([`crate::launchset::app_name`]),
/// from its command line and working directory.
fn app_of(pid: u32, exe: &str, args: usize) -> String {
    if args == 0 {
        return exe.to_string();
    }
    let argv: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|w| !w.is_empty())
                .take(args)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
    crate::launchset::app_name(exe, &argv, &cwd, args)
}

/// Where the sysctl's value before the daemon turned delay accounting on
/// is kept while it runs: a daemon killed (`kill -9`) cannot put it back,
/// the next one, stopping, does.
const DELAYACCT_WAS: &str = "task_delayacct.before";

/// Delay accounting on, a socket for every task's exit and one for
/// questions, and the sysctl's value before (this daemon's, or the one a
/// killed daemon found).
fn start_delay_accounting(
    state: &std::path::Path,
) -> std::io::Result<(Taskstats, Taskstats, bool)> {
    let now = taskstats::enable()?;
    let kept = std::fs::read_to_string(state.join(DELAYACCT_WAS));
    let was = match kept {
        Ok(v) => v.trim() == "1",
        Err(_) => {
            std::fs::write(state.join(DELAYACCT_WAS), if now { "1" } else { "0" })?;
            now
        }
    };
    let socks = Taskstats::exits().and_then(|e| Ok((e, Taskstats::query()?)));
    match socks {
        Ok((e, q)) => Ok((e, q, was)),
        Err(err) => {
            taskstats::restore(was);
            Err(err)
        }
    }
}

/// A task's block-I/O wait `ns` if it could be true of a task in a
/// launch `age_ns` old, else 0 (left out).
///
/// The kernel (6.18) reported a few tasks of multi-threaded programs
/// (`git status`, `rustc`, `rg`) as having waited about the machine's
/// uptime (41 696 s for one, 5 x that for five threads): an I/O wait's
/// end was counted from a start never stamped (zero). No task of a
/// launch can wait longer than the launch has existed.
fn plausible_wait(ns: u64, age_ns: u64) -> u64 {
    if ns <= age_ns {
        ns
    } else {
        0
    }
}

/// Add `ns` of block-I/O wait to launch `id`'s status.
fn add_wait(status: &mut Status, id: u64, ns: u64) {
    if let Some(s) = status_of(status, id) {
        *s.io_wait_s.get_or_insert(0.0) += ns as f64 / 1e9;
    }
}

/// The status entry of launch `id` (ids increase along the list).
fn status_of(status: &mut Status, id: u64) -> Option<&mut LaunchStatus> {
    let i = status.launches.binary_search_by_key(&id, |s| s.id).ok()?;
    status.launches.get_mut(i)
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Full => "full",
        Level::Reduced => "reduced",
        Level::Off => "off",
    }
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Paid => "paid",
        Verdict::Harmed => "harmed",
        Verdict::NoEvidence => "no_evidence",
    }
}

/// `outrider daemon --replay-boot`: replay the saved boot set now.
pub fn replay_boot(cfg: &Config) -> Result<ReplayStats, String> {
    let store = open_store(cfg)?;
    match store::load_boot(&store, &store::package_stamp(store::PACKAGE_DBS))? {
        Some(h) => Ok(replay(
            &h,
            &ReplayOptions {
                budget_bytes: cfg.memory_budget_mib << 20,
                user: None,
                pressure_max_pct: cfg.pressure_max_pct,
                launcher: None,
                exec_ns: 0,
            },
        )),
        None => Err(format!(
            "{}: no boot set recorded (start the daemon with boot_prefetch = true first)",
            cfg.store_path().display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::plausible_wait;

    /// A wait longer than the launch has existed (the kernel's glitch:
    /// about the uptime) is left out; any other is kept.
    #[test]
    fn a_wait_longer_than_the_launch_is_left_out() {
        let uptime_ns = 41_696 * 1_000_000_000;
        assert_eq!(plausible_wait(uptime_ns, 3_000_000_000), 0);
        assert_eq!(plausible_wait(250_000_000, 3_000_000_000), 250_000_000);
        assert_eq!(plausible_wait(3_000_000_000, 3_000_000_000), 3_000_000_000);
    }
}
