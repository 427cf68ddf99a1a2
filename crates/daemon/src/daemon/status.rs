//! The status file, `<state_dir>/status.json`: what it holds
//! ([`Status`]), and how the daemon keeps and rewrites it.

use super::Daemon;
use crate::launchset::ReplayStats;
use outrider_driver::benefit::{Level, Verdict};

/// Launches kept in the status file.
const STATUS_LAUNCHES: usize = 256;

/// The status file is rewritten at most this often (ns) while nothing
/// else changes it.
pub(super) const STATUS_EVERY_NS: u64 = 1_000_000_000;
/// ... and at most this often when something changed. Rewritten at every
/// change (each exec of a build), the file's serialising, writing and
/// renaming were a sixth of the daemon's CPU while a cargo build ran
/// beside the day in miniature (perf).
pub(super) const STATUS_MIN_NS: u64 = 250_000_000;

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
    /// Files of its set not replayed: they lie under a path the set's
    /// launch was given on its command line and this launch was not
    /// ([`crate::roots`]).
    pub files_left_out: u64,
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
    /// Directories its process tree was seen opening in the window
    /// ([`Config::metadata_walk`](crate::config::Config::metadata_walk)).
    pub dirs_opened: u64,
    /// Directories saved with the new set: those it opened, and the
    /// set's before when it was seen opening them only in part.
    pub dirs_saved: u64,
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
    /// Still running then, it was followed with
    /// [`follow_policy`](crate::config::Config::follow_policy).
    pub followed: bool,
    /// With no launch set of its own, it read files of this application's
    /// set in the set's order, which was replayed from there
    /// ([`crate::shared`]).
    pub shared_from: Option<String>,
    /// Seconds its process tree waited for block I/O in its window
    /// (delay accounting, [`outrider_sys::taskstats`]); `None` without it.
    pub io_wait_s: Option<f64>,
    /// The kernel reported a wait longer than the launch has existed for
    /// one of its tasks (a delay-accounting glitch): `io_wait_s` leaves
    /// that task out, and the stall estimate leaves the launch out.
    pub io_wait_glitch: bool,
    /// Its launch set was saved.
    pub saved: bool,
    /// It read from memory: no longer recorded, its set (if any) kept.
    pub hot: bool,
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
    /// Execs whose process had exited before the daemon read its exec
    /// (`/proc/PID/exe` gone): neither named, recorded nor replayed, and
    /// in no other count here. A program shorter than the daemon's delay
    /// in reading its exec (a burst of execs before it, the daemon's
    /// thread at nice 19 waiting for a CPU) is missed so.
    pub execs_gone: u64,
    /// Programs followed after their launch window (helpers started).
    pub followed: u64,
    /// Programs followed now.
    pub following: u64,
    /// Launches not recorded
    /// ([`Config::max_recording`](crate::config::Config::max_recording)
    /// reached).
    pub launches_not_recorded: u64,
    /// Launches neither recorded nor replayed: the daemon was over its
    /// CPU cap ([`Config::cpu_max_pct`](crate::config::Config::cpu_max_pct)).
    pub launches_over_cpu: u64,
    /// Launches neither recorded nor replayed: the same application
    /// launched less than
    /// [`Config::repeat_window_s`](crate::config::Config::repeat_window_s)
    /// before.
    pub launches_repeated: u64,
    /// Launches no longer recorded once they were found to read from
    /// memory (`judge_from_memory_mib`).
    pub launches_hot: u64,
    /// Execs dropped in the kernel, their file name quieted after an exec
    /// that was not a launch (repeated, or not watched; the eBPF source
    /// only): never seen by the daemon, so in no other count here.
    pub execs_quieted: u64,
    /// Times the eBPF programs of page reads and faults were detached, no
    /// thread being followed (`outrider_live::ebpf`, module `reads`).
    pub reads_detached: u64,
    /// Whether they are attached now (always, for tracefs).
    pub reads_attached: bool,
    /// Next launches predicted ([`crate::successors`]), right and wrong.
    pub successors: crate::successors::SuccessorStats,
    /// Launches with a set that was asked for ahead of them, as their
    /// predicted launch (their own replay runs too).
    pub launches_read_ahead: u64,
    /// Replays of a predicted next launch's set started.
    pub successor_replays: u64,
    /// Pages those replays asked for.
    pub successor_pages: u64,
    /// Of those replays, the ones that stopped with pages not asked for:
    /// the disk stayed busy for their half second of waits in all (they
    /// read only in its idle time, `launchset::idle`).
    pub successor_busy: u64,
    /// Of those replays, the ones that stopped as their launch started:
    /// its own replay took over.
    pub successor_launched: u64,
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

/// The status entry of launch `id` (ids increase along the list).
pub(super) fn status_of(status: &mut Status, id: u64) -> Option<&mut LaunchStatus> {
    let i = status.launches.binary_search_by_key(&id, |s| s.id).ok()?;
    status.launches.get_mut(i)
}

pub(super) fn level_name(l: Level) -> &'static str {
    match l {
        Level::Full => "full",
        Level::Reduced => "reduced",
        Level::Off => "off",
    }
}

pub(super) fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Paid => "paid",
        Verdict::Harmed => "harmed",
        Verdict::NoEvidence => "no_evidence",
    }
}

impl Daemon {
    /// Add launch `s` to the status list, its older half dropped first
    /// when it holds [`STATUS_LAUNCHES`].
    pub(super) fn push_status(&mut self, s: LaunchStatus) {
        if self.status.launches.len() >= STATUS_LAUNCHES {
            self.compact_status();
        }
        self.status.launches.push(s);
    }

    /// Drop the older half of the status list.
    fn compact_status(&mut self) {
        let cut = self.status.launches.len() / 2;
        self.status.launches.drain(..cut);
    }

    /// Write the status file (a new file renamed over the old), mode
    /// 0600 whatever the state directory's mode: it names every user's
    /// programs.
    pub(super) fn write_status(&mut self) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        self.dirty = false;
        let tmp = self.status_path.with_extension("json.tmp");
        let Ok(text) = serde_json::to_string_pretty(&self.status) else {
            return;
        };
        let _ = std::fs::remove_file(&tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &self.status_path);
        }
    }
}
