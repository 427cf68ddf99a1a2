//! The daemon's loop: one machine-wide tracefs instance, launches
//! recorded and replayed, finished sets saved, the status file rewritten.
//!
//! Its parts: one launch's course (`daemon/launches.rs`), the status file
//! (`daemon/status.rs`), the events (`daemon/events.rs`), the metadata
//! walk's mark (`daemon/dirs.rs`), the daemon's CPU meter and delay
//! accounting (`daemon/accounting.rs`).

mod accounting;
mod dirs;
mod events;
mod launches;
mod status;

use accounting::{start_delay_accounting, CpuMeter, DELAYACCT_WAS};
use status::{status_of, STATUS_EVERY_NS, STATUS_MIN_NS};
pub use status::{BootStatus, LaunchStatus, Status};

use crate::clients::Listener;
use crate::config::Config;
use crate::launchset::{
    replay, EventsRead, Holders, LaunchReads, Recorder, ReplayOptions, ReplayStats, Verdict,
    MISS_SHARE,
};
use crate::roots::Roots;
use crate::sets::Sets;
use crate::shared::{Index, Matcher};
use crate::store::{self, BOOT_KEY};
use crate::streaks::Streaks;
use crate::successors::Successors;
use outrider_driver::benefit::Gate;
use outrider_live::ebpf::Untracker;
use outrider_live::source::EventSource;
use outrider_live::tracefs::{InstanceOptions, EVENTS, EXEC_EVENT};
use outrider_store::{AppHistory, Store, SHARED_KEY};
use outrider_sys::launch::Credentials;
use outrider_sys::monotonic_ns;
use outrider_sys::taskstats::{self, TaskDelay, Taskstats};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Event pages read at most per poll: fewer read, none was left waiting.
const POLL_PAGES: usize = 256;
/// Wait between polls when no event page was ready and the source
/// cannot wake us at an exec (tracefs).
const IDLE_SLEEP: Duration = Duration::from_millis(5);
/// Wait between polls when a launch (or the boot set) is being recorded
/// and the source wakes us at every exec and once its ring is an eighth
/// full (eBPF, [`outrider_live::ebpf::WAKE_BYTES`]). A launch is being
/// recorded for 5 s after every exec on a machine, so this is the
/// daemon's pace most of the time: polled every 5 ms, the daemon took a
/// core from a program it could not help 200 times a second (`rg` over a
/// tree in memory, on both cores: 47 involuntary context switches in a
/// 0.2 s run against 9 with no daemon).
/// But [`IDLE_SLEEP`] while a launch with no set of its own is young
/// and reads from storage ([`Daemon::matching`]): `cat` of eight 1 MiB
/// files, cold, ended before the daemon polled at 25 ms saw the three
/// files in order that would have had it follow `diff`'s history of them.
const RECORDING_WAIT: Duration = Duration::from_millis(25);
/// How long a launch with no set of its own is polled for at
/// [`IDLE_SLEEP`] while it reads from storage.
const MATCHING_NS: u64 = 1_000_000_000;
/// Wait between polls when nothing is being recorded and the source
/// wakes us at every exec (eBPF): the status file and finished replays
/// are taken this often.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// Pages all launches being recorded hold at most together (8 GiB of
/// file data; the recorders' own memory is 16-32 bytes per run of pages
/// and 16 per 64 pages): 64 launches of a parallel build, each up to its
/// 256 MiB cap, would otherwise hold 16 GiB worth.
const RECORDING_PAGES_MAX: u64 = 2 << 20;

/// Launches up a launch's reads are recorded in besides its own
/// ([`Daemon::record_read`]): `make` → `gcc` → `cc1` is two.
pub(crate) const ANCESTORS_MAX: usize = 3;

/// How long after its process tree is gone a launch ends, if its window
/// has not: the directories its tree opened reach the daemon from the
/// fanotify reader's thread, after the exits (ended at the exit of its
/// last task, `python3` walking a tree of 31 directories as it exited
/// had 5 of them recorded).
const GONE_GRACE_NS: u64 = 100_000_000;

struct Launch {
    exe: String,
    /// The process that exec'd it.
    pid: u32,
    /// A pidfd of `pid` (`None`: it was gone at the exec's handling).
    launcher: Option<std::os::fd::OwnedFd>,
    /// `pid` exited (its pidfd polled once a turn of the loop until it
    /// did: [`Daemon::note_exited`]).
    exited: bool,
    started_ns: u64,
    /// When it exec'd (the event's time).
    exec_ns: u64,
    rec: Recorder,
    /// The application's benefit gate at this launch.
    gate: Gate,
    /// The launch set replayed for it, if one was.
    replayed: Option<Arc<AppHistory>>,
    /// That set, if it was replayed with the full budget: the launches
    /// its process tree execs leave its pages to that replay
    /// ([`ReplayOptions::covered`]), each holding it going while it runs
    /// ([`ReplayOptions::holders`]).
    covers: Option<(Arc<AppHistory>, Arc<Holders>)>,
    /// With no set of its own: the search for another application's.
    matcher: Option<Matcher>,
    /// The set its matcher found and where to replay it from, until the
    /// launch reads from storage ([`Daemon::replay_shared_if_cold`]).
    shared: Option<(String, usize)>,
    /// Its set is full and its tasks are no longer followed in the kernel.
    full: bool,
    /// It read from memory ([`Daemon::stop_if_hot`]): no longer followed,
    /// and its recording is dropped.
    hot: bool,
    /// What it read so far, for its replay ([`ReplayOptions::launch_reads`]).
    reads: Arc<LaunchReads>,
    /// Set by its replay once it looked whether the set is in memory
    /// ([`ReplayOptions::found_resident`]): found there, it is then hot.
    resident: Arc<Verdict>,
    /// The streaks of the set it had before (`None`: it had none).
    prev: Option<Arc<Streaks>>,
    /// The launch whose process tree exec'd it, if one was recording: its
    /// reads are that launch's too ([`Daemon::record_read`]).
    parent: Option<u64>,
    /// When its whole process tree was seen gone, its launches too
    /// ([`Daemon::note_trees_gone`]).
    gone_ns: Option<u64>,
    /// The directories its process tree opened.
    dirs: dirs::Opened,
    /// Its command line's roots ([`crate::roots`]).
    roots: Roots,
    /// The directories saved with the set it had before and that set's
    /// roots (`None`: it had none).
    places_before: Option<(Arc<Vec<std::path::PathBuf>>, Arc<Roots>)>,
}

/// A finished set waiting to be saved: its key, the set, the launch it
/// came from (`None`: the boot set) and the launch's gate after it.
struct Pending {
    key: String,
    set: AppHistory,
    launch: Option<u64>,
    gate: Gate,
    streaks: Streaks,
    /// The directories the launch opened and its command line's roots.
    places: store::Places,
}

enum Done {
    Launch(u64, ReplayStats),
    /// The replay of a launch's predicted successor.
    Successor(ReplayStats),
    Boot(ReplayStats),
    /// The index of the stored launch sets, built at start.
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
    /// When [`Daemon::judge_hot`] last asked the kernel.
    let_go_looked: u64,
    launches: FxHashMap<u64, Launch>,
    /// The tasks of the launches, each with its launch, until the launch
    /// ends.
    tree: FxHashMap<u32, u64>,
    /// The tasks of `tree` that exited (where the source sends exits).
    dead: FxHashSet<u32>,
    /// Launches that lost a task or a child launch since the last turn:
    /// their whole tree may be gone ([`Daemon::note_trees_gone`]).
    maybe_gone: Vec<u64>,
    boot: Option<(u64, Recorder)>,
    own: FxHashMap<u32, bool>,
    /// Since when the source sees every page read (`None`: not now), as
    /// the events being read were made.
    reads_seen_since: Option<u64>,
    /// Users' home directories, as looked up (`getpwuid_r`).
    homes: FxHashMap<u32, Option<PathBuf>>,
    pending: Vec<Pending>,
    last_save_ns: u64,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    /// The event source, once [`Daemon::run`] opened it.
    src: Option<EventSource>,
    /// Stops following threads from a replay's thread (eBPF only).
    untracker: Option<Arc<Untracker>>,
    /// Pages the launches being recorded hold (≤ [`RECORDING_PAGES_MAX`]).
    recording_pages: u64,
    /// Helpers following a program after its launch
    /// ([`crate::helper::follow`]): the program's pid, the helper.
    followers: Vec<(u32, std::process::Child)>,
    /// Delay accounting: every task's totals at its exit, a socket to ask
    /// about running ones, and the sysctl's value before (put back at
    /// the end).
    delays: Option<(Option<Taskstats>, Taskstats, bool)>,
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
    /// The order launches come in ([`crate::successors`]).
    successors: Successors,
    /// Predicted launches whose sets were asked for ahead of them: when,
    /// and the flag their launch sets to stop that replay
    /// ([`ReplayOptions::launched`]).
    read_ahead: FxHashMap<String, (u64, Arc<std::sync::atomic::AtomicBool>)>,
    /// The directory opens on the root file system
    /// ([`Config::metadata_walk`]).
    dir_watch: Option<dirs::Watch>,
    /// When a replay last read from storage
    /// ([`ReplayOptions::storage_read_ns`]).
    replays_read_ns: Arc<AtomicU64>,
    /// How far the loop has read the events, for the replays' holders
    /// ([`Holders::fed_by`]).
    events_read: Arc<EventsRead>,
}

/// The name of the launch-order model in the store (beside DiskSeen's
/// shared table, under [`SHARED_KEY`]: `forget --all` clears both).
pub const LAUNCH_ORDER: &str = "launch-order";

/// The launch-order model saved in `store`, its symbols named by the keys
/// of the stored sets; an unreadable one is logged and started afresh.
fn load_successors(cfg: &Config, store: &Store, sets: &Sets) -> Successors {
    let mut s = Successors::new(cfg.successor_threshold);
    if let Ok(Some(blob)) = store.load_history(SHARED_KEY, LAUNCH_ORDER) {
        if let Err(e) = s.restore(&blob) {
            log(format!(
                "outrider daemon: the launch order saved is unreadable ({e}); starting afresh"
            ));
            s = Successors::new(cfg.successor_threshold);
        }
    }
    for key in sets.keys() {
        s.name(key);
    }
    s
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
        lowest_cpu_priority();
        let store = open_store(&cfg)?;
        let sets = Sets::open(&store);
        let successors = load_successors(&cfg, &store, &sets);
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
            let_go_looked: 0,
            launches: FxHashMap::default(),
            tree: FxHashMap::default(),
            dead: FxHashSet::default(),
            maybe_gone: Vec::new(),
            boot: None,
            own: FxHashMap::default(),
            reads_seen_since: Some(0),
            homes: FxHashMap::default(),
            pending: Vec::new(),
            last_save_ns: monotonic_ns(),
            done_tx,
            done_rx,
            src: None,
            untracker: None,
            recording_pages: 0,
            followers: Vec::new(),
            delays: None,
            exited: Vec::new(),
            index: Index::default(),
            saved_before_index: Some(Vec::new()),
            cpu: CpuMeter::default(),
            recent: FxHashMap::default(),
            successors,
            read_ahead: FxHashMap::default(),
            dir_watch: None,
            replays_read_ns: Arc::default(),
            events_read: Arc::default(),
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

    /// Index the stored launch sets, and read them into memory, on a
    /// thread of its own (a store of hundreds of sets takes a while to
    /// read).
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
        self.boot = Some((
            monotonic_ns(),
            Recorder::new(self.cfg.boot_cap_mib << 20, self.cfg.launch_files_max),
        ));
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
            ahead: false,
            launched: Default::default(),
            read_around: self.cfg.read_around,
            confirm_data: self.cfg.confirm_data_files,
            walk_dirs: Default::default(),
            storage_read_ns: Arc::clone(&self.replays_read_ns),
            launch_reads: Default::default(),
            found_resident: Default::default(),
            stop_following: None,
            covered: Vec::new(),
            holders: Default::default(),
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
        self.start_dir_watch();
        if self.cfg.delay_accounting {
            let exits_sent = self.src.as_ref().is_some_and(|s| s.sends_exit_waits());
            self.delays = start_delay_accounting(&self.cfg.state_dir, exits_sent)
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
        quick_wakeups();
        let mut events = Vec::new();
        while outrider_sys::launch::last_signal().is_none() {
            events.clear();
            let src = self.src.as_mut().expect("opened");
            let polled_ns = monotonic_ns();
            let pages =
                (src.poll(&mut events, POLL_PAGES)).map_err(|e| format!("reading events: {e}"))?;
            // Before the execs are acted on: see `outrider_live::ebpf`,
            // module `reads`.
            (src.settle_reads()).map_err(|e| format!("tracing: {e}"))?;
            let (stats, quieted, reads) = (src.stats(), src.quieted(), src.reads_attached());
            self.reads_seen_since = src.reads_seen_since();
            events.sort_by_key(|e| e.ts_ns);
            for e in &events {
                self.on_event(e);
            }
            if pages < POLL_PAGES {
                self.events_read.caught_up(polled_ns);
            }
            self.note_exited();
            self.judge_hot(monotonic_ns());
            self.mark_while_recording();
            self.take_dirs();
            self.status.events = stats.events;
            self.status.lost_events = stats.lost_events;
            self.status.execs_quieted = quieted;
            (self.status.reads_attached, self.status.reads_detached) = reads.unwrap_or((true, 0));
            self.tick(monotonic_ns(), false);
            // The table may have emptied: the programs of reads are
            // detached now, not at the next poll's look.
            let src = self.src.as_mut().expect("opened");
            if src.untracked_since_settled() {
                (src.settle_reads()).map_err(|e| format!("tracing: {e}"))?;
            }
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
        let mut opened =
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
        let (reads, faults) = (self.cfg.detach_idle_reads, self.cfg.detach_idle_faults);
        (opened.source.detach_idle(reads, faults)).map_err(|e| format!("tracing: {e}"))?;
        // The kernel judges as `stop_if_hot` does, at nice 0 in the
        // launch's own context, where the daemon comes late.
        let judged_at = self.cfg.judge_pages();
        (opened.source.let_go_from_memory(judged_at, MISS_SHARE))
            .map_err(|e| format!("tracing: {e}"))?;
        self.untracker = opened.source.untracker().map(Arc::new);
        self.src = Some(opened.source);
        Ok(prompt)
    }

    /// Stop tracing and the helpers, put delay accounting back, save.
    fn stop(&mut self) {
        self.src = None;
        self.events_read.caught_up(u64::MAX);
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
        let wait = if self.matching(monotonic_ns()) {
            IDLE_SLEEP
        } else if recording {
            RECORDING_WAIT
        } else {
            IDLE_WAIT
        };
        match &self.src {
            Some(src) if prompt => {
                src.wait(None, wait);
            }
            _ => std::thread::sleep(IDLE_SLEEP),
        }
    }

    /// Is a launch with no set of its own young ([`MATCHING_NS`]) and
    /// reading from storage, where its reads may name another
    /// application's history to follow ([`crate::shared`]) while it still
    /// runs? Until it reads from storage, following one would not pay;
    /// the kernel wakes the daemon at its first misses
    /// (`outrider_live::ebpf`, module `hot`). Polled at 5 ms for its whole
    /// first second, `tar` of a source tree in memory had the daemon drain
    /// its records in small batches beside it on both cores: 0.952x of
    /// its time with no daemon, 0.983x polled fast only once a launch
    /// reads from storage (medians of 10 alternations of 5 runs, one
    /// sitting).
    fn matching(&self, now: u64) -> bool {
        (self.launches.values()).any(|l| {
            let young = now.saturating_sub(l.exec_ns) < MATCHING_NS;
            l.matcher.is_some() && !l.hot && young && l.reads.from_storage()
        })
    }

    /// Stop following thread `tid` in the kernel (eBPF): it is in no
    /// launch now.
    fn untrack(&self, tid: u32) {
        if let Some(src) = &self.src {
            src.untrack(tid);
        }
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
        self.commit_exited();
        (self.cpu).tick(now, (self.cfg.cpu_max_pct, self.cfg.cpu_busy_pct));
        self.note_trees_gone(now);
        let window = (self.cfg.launch_window_s * 1e9) as u64;
        let ended: Vec<u64> = self
            .launches
            .iter()
            .filter(|(_, l)| {
                let gone = l
                    .gone_ns
                    .is_some_and(|t| now.saturating_sub(t) >= GONE_GRACE_NS);
                stopping || gone || now.saturating_sub(l.started_ns) >= window
            })
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
            self.trim_if_idle();
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
                Done::Successor(st) => {
                    self.status.successor_pages += st.pages_requested;
                    self.status.successor_busy += u64::from(st.stopped_busy);
                    self.status.successor_launched += u64::from(st.stopped_launched);
                }
                Done::Launch(id, st) => {
                    if let Some(s) = status_of(&mut self.status, id) {
                        s.replay = Some(st);
                    }
                }
            }
        }
    }

    /// The boot window ended (or the daemon stops): queue the boot set.
    fn end_boot(&mut self) {
        let (_, rec) = self.boot.take().expect("checked");
        self.status.boot.recording = false;
        if let Some(Err(e)) = self.src.as_mut().map(|s| s.record_everyone(false)) {
            log(format!("outrider daemon: ending the boot recording: {e}"));
        }
        if rec.pages > 0 {
            self.pending.push(Pending {
                key: BOOT_KEY.into(),
                set: rec.finish("boot"),
                launch: None,
                gate: Gate::default(),
                streaks: Streaks::default(),
                places: store::Places::default(),
            });
        }
    }

    fn save_pending(&mut self) {
        if self.successors.changed {
            let blob = self.successors.snapshot();
            if let Err(e) = self.store.save_history(SHARED_KEY, LAUNCH_ORDER, &blob) {
                log(format!("outrider daemon: saving the launch order: {e}"));
            }
        }
        for p in std::mem::take(&mut self.pending) {
            let saved = match p.launch {
                Some(_) => store::save(
                    &mut self.store,
                    &p.key,
                    &p.set,
                    (&p.gate, &p.streaks),
                    &p.places,
                ),
                None => {
                    let stamp = store::package_stamp(store::PACKAGE_DBS);
                    store::save_boot(&mut self.store, &p.set, &stamp)
                }
            };
            let key = p.key;
            match saved {
                Ok(()) => match p.launch {
                    Some(id) => {
                        let (set, marks) = (&p.set, (&p.streaks, &p.gate));
                        (self.sets).saved(&self.store, &key, set, marks, &p.places);
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

    /// Give the heap's free memory back to the kernel once no launch is
    /// recorded: a launch set of thousands of files, recorded, saved and
    /// indexed, leaves most of what it held free in the allocator's
    /// arenas (one per thread that replayed), and glibc returns only the
    /// top of the main one by itself. With `launch_files_max = 32768`,
    /// two cold launches of `rg` over a tree of 31 479 files left the
    /// daemon at 68 MiB resident; trimmed after each save with no launch
    /// recording, at 41 MiB (each trim 0.1-1.8 ms).
    fn trim_if_idle(&self) {
        if self.launches.is_empty() {
            // SAFETY: no preconditions; it only releases free memory.
            unsafe { libc::malloc_trim(0) };
        }
    }
}

/// One line on stderr (the journal under systemd); a closed stderr is
/// not a reason to stop prefetching.
pub(crate) fn log(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The calling thread, and every thread and helper process it starts
/// after, at nice 19 (`setpriority(2)`; Linux keeps a nice value per
/// thread, and a new thread or process takes its creator's): the
/// daemon's work at a launch never keeps the launched program off a CPU.
/// At nice 0, the threads of its exec's replay ran on both cores of
/// this machine while `make --version` (3 ms cold) waited to run: 0.70x
/// of stock, 0.88x at nice 19; `gdb --version` 1.42x -> 1.54x, `cmake
/// --version` 2.05x -> 2.14x, `gpg --version` 1.48x -> 1.60x (`/tmp`
/// A/B, caches dropped before each, medians of 9 in one sitting). Under
/// load it still gets a share of the CPU (nice 19 weighs 15 against
/// nice 0's 1024), so its events are read and its replays run.
fn lowest_cpu_priority() {
    // SAFETY: no pointers; a failure leaves the priority as it was.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}

/// The calling thread, the one that reads the events, given the
/// shortest slice ([`outrider_sys::sched`]), still at nice 19: behind a
/// busy task on its core it waited its turn long enough for a short
/// program to be gone before its exec was read (no launch then), and
/// for one still running to read files before the program of page
/// reads was attached again. With a busy loop on each core, 12-16 of 20
/// `python3 -c pass`, 0.3 s apart, were seen as launches; with this
/// slice 19-20 (5 sittings each, alternated). The replays' threads it
/// starts go back to the default slice ([`default_slice`]): they are
/// what a launch must not wait for. A kernel that takes no slice for a
/// fair task (before 6.12) leaves the default.
/// At nice 0 this thread read a `go version` exec 0.04-0.09 ms after it
/// (at 19, up to 2.6 ms), and its replay started 0.35-0.5 ms after the
/// exec (at 19, ~2 ms), but neither launch gained: `go version` 1.06x
/// of stock at nice 0 against 0.99x at 19 in one sitting, 0.95x against
/// 1.06x in another, `make --version` 0.96x against 0.99x (medians of 9,
/// 9 and 11 cold runs alternated, each run's own ratio spread over
/// 0.8-1.3x). So it stays at 19.
fn quick_wakeups() {
    let _ = outrider_sys::sched::set_fair(19, outrider_sys::sched::SHORTEST_SLICE_NS);
}

/// The calling thread back at nice 19's default slice (see
/// [`quick_wakeups`]).
fn default_slice() {
    let _ = outrider_sys::sched::set_fair(19, 0);
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
                ahead: false,
                launched: Default::default(),
                read_around: cfg.read_around,
                confirm_data: cfg.confirm_data_files,
                walk_dirs: Default::default(),
                storage_read_ns: Default::default(),
                launch_reads: Default::default(),
                found_resident: Default::default(),
                stop_following: None,
                covered: Vec::new(),
                holders: Default::default(),
            },
        )),
        None => Err(format!(
            "{}: no boot set recorded (start the daemon with boot_prefetch = true first)",
            cfg.store_path().display()
        )),
    }
}
