//! Whom a replay asks for its set on behalf of: its launching process,
//! and the launches whose pages it covers ([`super::ReplayOptions::covered`]).
//! A wrapper's set holds its program's pages, and the program's replay
//! leaves them to the wrapper's. A wrapper that does not wait for its
//! program (`setsid -f`, `nohup cmd &` from a script, a daemonizing
//! fork) exits first: its replay, stopped at its exit, would leave the
//! covered pages asked for by no one. So each covered launch holds the
//! replay around it going until it exits too ([`Holders`]).
//!
//! A process is held by the daemon's event loop, at its fork or exec
//! event, while the replay runs on a thread of its own: the replay sees
//! its launcher's exit through a pidfd at once, the loop reads the fork
//! that came before it at its next poll. So a replay that finds none
//! holding it waits, before it stops, until the loop has read the events
//! made up to then ([`EventsRead`]). Closed at once, a `sh -c 'cmd &'`
//! whose loop lagged behind the parallel tests of CI on two cores had
//! its replay stop at the shell's exit, 64 MiB of its background job's
//! set never asked for (once in two runs of the test suite; with two
//! busy loops on the two cores, 1 of 12 runs of that test closed at
//! once, 0 of 24 waiting).

use outrider_live::session::{pidfd, pidfd_exited};
use outrider_sys::monotonic_ns;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Processes held at most per replay: a `make` whose set covers each
/// compiler it starts holds only those still running; one more is
/// refused, and replays its own pages.
pub const HOLDERS_MAX: usize = 64;

/// How long a replay held by none waits for the event loop to read the
/// events made before it found so ([`EventsRead::wait_past`]); then it
/// stops regardless. The loop reads at least every 100 ms while it runs
/// (its longest wait for events), so this is reached only by a loop
/// stalled or gone.
const EVENTS_LAG_MAX: Duration = Duration::from_secs(1);

/// How far the daemon's event loop has read the events: the time
/// (`CLOCK_MONOTONIC`, ns) when it began its last poll that left none
/// waiting, published once it acted on all that poll read. An event made
/// before that time has been acted on. (With tracefs, whose per-CPU
/// pages the kernel hands over whole, an event can come a poll late.)
#[derive(Debug, Default)]
pub struct EventsRead {
    at_ns: Mutex<u64>,
    moved: Condvar,
}

impl EventsRead {
    fn at(&self) -> MutexGuard<'_, u64> {
        // A time stays sound whatever thread panicked.
        self.at_ns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The loop has acted on every event made before `at_ns`
    /// (`u64::MAX`: it stopped, and will read none more).
    pub fn caught_up(&self, at_ns: u64) {
        let mut at = self.at();
        *at = (*at).max(at_ns);
        self.moved.notify_all();
    }

    /// Wait until the loop has acted on the events made before `t_ns`,
    /// at most `most`.
    fn wait_past(&self, t_ns: u64, most: Duration) {
        let at = self.at();
        let waited = self.moved.wait_timeout_while(at, most, |at| *at < t_ns);
        drop(waited.unwrap_or_else(|e| e.into_inner()));
    }
}

/// The launches a replay covers, each keeping it going while it runs;
/// closed once none runs past the launcher's exit, or the replay stopped
/// short of its set (none may hold it then). Fed by an event loop
/// ([`Holders::fed_by`]), it closes only once that loop read the events
/// made before it found none running.
#[derive(Debug, Default)]
pub struct Holders {
    held: Mutex<Held>,
    events: Option<Arc<EventsRead>>,
}

#[derive(Debug, Default)]
struct Held {
    /// Each holding process and its pidfd.
    pids: Vec<(u32, OwnedFd)>,
    closed: bool,
}

impl Holders {
    /// Holders taken by an event loop that reads as far as `events`.
    pub fn fed_by(events: &Arc<EventsRead>) -> Self {
        Holders {
            held: Mutex::default(),
            events: Some(Arc::clone(events)),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        // A holder's pidfds stay sound whatever thread panicked.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Let process `pid` (of a covered launch, or forked in the covering
    /// launch's tree) keep the replay going until it exits. `false`: the
    /// replay has stopped, or holds [`HOLDERS_MAX`] running processes,
    /// or `pid` is gone or no process (a thread): a launch of its is to
    /// ask for its own pages.
    pub fn hold(&self, pid: u32) -> bool {
        let mut h = self.held();
        if h.closed {
            return false;
        }
        // Held already, unless it exited (and `pid` is another's now).
        h.pids.retain(|(p, f)| *p != pid || !pidfd_exited(f));
        if h.pids.iter().any(|(p, _)| *p == pid) {
            return true;
        }
        if h.pids.len() >= HOLDERS_MAX {
            h.pids.retain(|(_, f)| !pidfd_exited(f));
        }
        match pidfd(pid).filter(|_| h.pids.len() < HOLDERS_MAX) {
            Some(f) => {
                h.pids.push((pid, f));
                true
            }
            None => false,
        }
    }

    /// Does one of them run still? Once none does, and the event loop
    /// read what was made until then (a fork before the last one's exit
    /// is held by then), none may hold it any more.
    fn running(&self) -> bool {
        loop {
            let none_since = {
                let mut h = self.held();
                h.pids.retain(|(_, f)| !pidfd_exited(f));
                if h.closed || !h.pids.is_empty() {
                    return !h.closed;
                }
                // Taken after every exit it saw.
                monotonic_ns()
            };
            if let Some(e) = &self.events {
                e.wait_past(none_since, EVENTS_LAG_MAX);
            }
            let mut h = self.held();
            if h.pids.is_empty() {
                h.closed = true;
                return false;
            }
        }
    }

    /// The replay stopped short of its set: none may hold it any more.
    pub fn close(&self) {
        let mut h = self.held();
        h.closed = true;
        h.pids.clear();
    }
}

/// A replay's launching process and its holders.
pub(super) struct Launcher {
    /// `None`: there is none (a replay ahead of a launch, the boot
    /// set's); `Some(None)`: it was gone when the replay started.
    own: Option<Option<OwnedFd>>,
    holders: Arc<Holders>,
}

impl Launcher {
    pub(super) fn new(pid: Option<u32>, holders: &Arc<Holders>) -> Self {
        Launcher {
            own: pid.map(pidfd),
            holders: Arc::clone(holders),
        }
    }

    /// Has the launcher exited, and every launch it covers too? One
    /// already gone (no pidfd) has exited.
    pub(super) fn exited(&self) -> bool {
        let own = (self.own.as_ref()).is_some_and(|f| f.as_ref().is_none_or(pidfd_exited));
        own && !self.holders.running()
    }
}
