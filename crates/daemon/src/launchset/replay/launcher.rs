//! Whom a replay asks for its set on behalf of: its launching process,
//! and the launches whose pages it covers ([`super::ReplayOptions::covered`]).
//! A wrapper's set holds its program's pages, and the program's replay
//! leaves them to the wrapper's. A wrapper that does not wait for its
//! program (`setsid -f`, `nohup cmd &` from a script, a daemonizing
//! fork) exits first: its replay, stopped at its exit, would leave the
//! covered pages asked for by no one. So each covered launch holds the
//! replay around it going until it exits too ([`Holders`]).

use outrider_live::session::{pidfd, pidfd_exited};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};

/// Processes held at most per replay: a `make` whose set covers each
/// compiler it starts holds only those still running; one more is
/// refused, and replays its own pages.
pub const HOLDERS_MAX: usize = 64;

/// The launches a replay covers, each keeping it going while it runs;
/// closed once none runs past the launcher's exit, or the replay stopped
/// short of its set (none may hold it then).
#[derive(Debug, Default)]
pub struct Holders(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    /// Each holding process and its pidfd.
    pids: Vec<(u32, OwnedFd)>,
    closed: bool,
}

impl Holders {
    fn held(&self) -> MutexGuard<'_, Held> {
        // A holder's pidfds stay sound whatever thread panicked.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Does one of them run still? Once none does, none may hold it any
    /// more.
    fn running(&self) -> bool {
        let mut h = self.held();
        h.pids.retain(|(_, f)| !pidfd_exited(f));
        h.closed |= h.pids.is_empty();
        !h.closed
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
