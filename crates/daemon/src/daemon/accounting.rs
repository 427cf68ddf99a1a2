//! Process-wide accounting: the daemon's own CPU use against its cap
//! ([`CpuMeter`]), and the block-I/O wait of each launch's tasks from the
//! kernel's delay accounting ([`outrider_sys::taskstats`]), turned on at
//! start and put back at the end.

use super::status::{status_of, Status};
use super::Daemon;
use outrider_sys::monotonic_ns;
use outrider_sys::taskstats::{self, Taskstats};

/// The daemon's CPU use (all its threads) and the machine's CPU pressure
/// over the last [`CPU_WINDOW_NS`]: over the cap while the machine is
/// busy, no new launch is recorded or replayed until it is under again.
/// On an idle core the daemon's work delays no one: held to 5% of a core
/// always, the day in miniature's second run (`bench/daemon/launch.sh`)
/// found 28-48 of its launches over the cap after the first run's
/// learning (0.5-0.74 s of CPU in its 8.5 s), and replayed none of them.
#[derive(Default)]
pub(super) struct CpuMeter {
    /// (monotonic ns, CPU seconds, PSI `cpu` `some` total µs) once a
    /// second, oldest first.
    samples: std::collections::VecDeque<(u64, f64, Option<u64>)>,
    /// Over the cap now.
    pub(super) over: bool,
}

/// The window the CPU cap is judged over: a launch's burst (a 100 MiB
/// replay and its recording) fits in it, a stream of launches does not.
const CPU_WINDOW_NS: u64 = 10_000_000_000;

impl CpuMeter {
    /// Take a sample when a second passed; whether we are over `max_pct`
    /// of a core while some task waited for a CPU more than `busy_pct` of
    /// the time (always, with `busy_pct` 0 or no PSI).
    pub(super) fn tick(&mut self, now: u64, (max_pct, busy_pct): (f64, f64)) -> bool {
        if (self.samples.back()).is_some_and(|&(t, ..)| now < t + 1_000_000_000) {
            return self.over;
        }
        let cpu = outrider_live::lifecycle::own_cpu_s();
        let waited = cpu_waited_us();
        self.samples.push_back((now, cpu, waited));
        while self.samples.len() > 2 && now - self.samples[1].0 >= CPU_WINDOW_NS {
            self.samples.pop_front();
        }
        let &(t0, c0, w0) = self.samples.front().expect("one pushed");
        let secs = (now.saturating_sub(t0)) as f64 / 1e9;
        let busy = match (w0, waited) {
            (Some(w0), Some(w)) if busy_pct > 0.0 => {
                w.saturating_sub(w0) as f64 / 1e6 / secs * 100.0 > busy_pct
            }
            _ => true,
        };
        self.over = now > t0 && busy && (cpu - c0) / secs * 100.0 > max_pct;
        self.over
    }
}

/// Microseconds some task waited for a CPU since boot (PSI,
/// `/proc/pressure/cpu`), if the kernel tells.
fn cpu_waited_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    Some(outrider_sys::memory::parse_pressure(&text)?.some_total_us)
}

/// Where the sysctl's value before the daemon turned delay accounting on
/// is kept while it runs: a daemon killed (`kill -9`) cannot put it back,
/// the next one, stopping, does.
pub(super) const DELAYACCT_WAS: &str = "task_delayacct.before";

/// Delay accounting on, a socket for every task's exit (unless the event
/// source sends the followed threads' exits with their wait:
/// `exits_sent`) and one for questions, and the sysctl's value before
/// (this daemon's, or the one a killed daemon found).
///
/// Why not the socket always: registered for every CPU, it has the
/// kernel fill and send a taskstats message at every task's exit on the
/// machine. `fork` + `_exit` + `waitpid` in a loop (1 500 a run, hot)
/// ran 0.925x of its speed with no daemon with the socket, 0.991x with
/// delay accounting off (12 alternations; the sysctl alone made no
/// difference), and a loop of 300 `true`s 0.94-0.95x against 0.98-1.01x.
pub(super) fn start_delay_accounting(
    state: &std::path::Path,
    exits_sent: bool,
) -> std::io::Result<(Option<Taskstats>, Taskstats, bool)> {
    let now = taskstats::enable()?;
    let kept = std::fs::read_to_string(state.join(DELAYACCT_WAS));
    let was = match kept {
        Ok(v) => v.trim() == "1",
        Err(_) => {
            std::fs::write(state.join(DELAYACCT_WAS), if now { "1" } else { "0" })?;
            now
        }
    };
    let exits = (!exits_sent).then(Taskstats::exits).transpose();
    let socks = exits.and_then(|e| Ok((e, Taskstats::query()?)));
    match socks {
        Ok((e, q)) => Ok((e, q, was)),
        Err(err) => {
            taskstats::restore(was);
            Err(err)
        }
    }
}

/// A task's block-I/O wait `ns` if it could be true of a task in a
/// launch `age_ns` old; `None` (the kernel's glitch) if not.
///
/// The kernel (6.18) reports some tasks as having waited about the
/// machine's uptime: an I/O wait's end counted from a start never
/// stamped (zero). Seen first in multi-threaded programs (`git status`,
/// `rustc`, `rg`: 41 696 s for one task); then in 7 of 30 cold runs of a
/// one-thread `python3` reading 32 MiB (`/proc/self/stat`'s
/// `delayacct_blkio_ticks` at its end: 4 ticks, or 3 704 597 with
/// 37 046 s of uptime). No task of a launch can wait longer than the
/// launch has existed; such a total is no measurement at all.
fn plausible_wait(ns: u64, age_ns: u64) -> Option<u64> {
    (ns <= age_ns).then_some(ns)
}

/// Add a task's block-I/O wait to launch `id`'s status: `Some(ns)`, or
/// `None` for a total the kernel got wrong (the launch's wait is then
/// known only in part: [`LaunchStatus::io_wait_glitch`]).
///
/// [`LaunchStatus::io_wait_glitch`]: super::status::LaunchStatus::io_wait_glitch
fn add_wait(status: &mut Status, id: u64, ns: Option<u64>) {
    if let Some(s) = status_of(status, id) {
        let w = s.io_wait_s.get_or_insert(0.0);
        match ns {
            Some(ns) => *w += ns as f64 / 1e9,
            None => s.io_wait_glitch = true,
        }
    }
}

impl Daemon {
    /// Add the block-I/O waits of tasks that exited to their launches
    /// (from the taskstats socket; else they come as events, [`Daemon::on_exit`]).
    pub(super) fn take_exits(&mut self) {
        let Some((Some(exits), _, _)) = self.delays.as_mut() else {
            return;
        };
        self.exited.clear();
        exits.exited(&mut self.exited);
        for i in 0..self.exited.len() {
            let d = self.exited[i];
            self.on_task_exit(d.tid, d.blkio_ns);
        }
    }

    /// Thread `tid` exited having waited `blkio_ns` for block I/O: add
    /// it to its launch's wait.
    pub(super) fn on_exit(&mut self, tid: u32, blkio_ns: u64) {
        if self.delays.is_none() {
            return;
        }
        let Some(&id) = self.tree.get(&tid) else {
            return;
        };
        if let Some(l) = self.launches.get(&id) {
            let ns = plausible_wait(blkio_ns, monotonic_ns() - l.started_ns);
            add_wait(&mut self.status, id, ns);
        }
    }

    /// Add the block-I/O waits so far of launch `id`'s tasks that still
    /// run (those that exited were added by [`Daemon::take_exits`]).
    pub(super) fn add_running_waits(&mut self, id: u64) {
        let Some((_, query, _)) = self.delays.as_mut() else {
            return;
        };
        let Some(l) = self.launches.get(&id) else {
            return;
        };
        let age = monotonic_ns() - l.started_ns;
        add_wait(&mut self.status, id, Some(0));
        for (&tid, _) in self.tree.iter().filter(|(_, v)| **v == id) {
            if let Ok(Some(d)) = query.of(tid) {
                add_wait(&mut self.status, id, plausible_wait(d.blkio_ns, age));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::status::{LaunchStatus, Status};
    use super::{add_wait, plausible_wait};

    /// A wait longer than the launch has existed (the kernel's glitch:
    /// about the uptime) is no measurement; any other is kept.
    #[test]
    fn a_wait_longer_than_the_launch_is_left_out() {
        let uptime_ns = 41_696 * 1_000_000_000;
        assert_eq!(plausible_wait(uptime_ns, 3_000_000_000), None);
        assert_eq!(
            plausible_wait(250_000_000, 3_000_000_000),
            Some(250_000_000)
        );
        assert_eq!(
            plausible_wait(3_000_000_000, 3_000_000_000),
            Some(3_000_000_000)
        );
    }

    /// A glitched task marks its launch's wait as known in part; the
    /// other tasks' waits still add up.
    #[test]
    fn a_glitched_task_marks_the_launch_and_the_rest_still_add_up() {
        let mut st = Status::default();
        st.launches.push(LaunchStatus {
            id: 4,
            ..LaunchStatus::default()
        });
        add_wait(&mut st, 4, Some(250_000_000));
        assert!(!st.launches[0].io_wait_glitch);
        add_wait(&mut st, 4, None);
        add_wait(&mut st, 4, Some(500_000_000));
        assert_eq!(st.launches[0].io_wait_s, Some(0.75));
        assert!(st.launches[0].io_wait_glitch);
    }
}
