//! Running a command under tracing: spawn it, read the event source's events,
//! keep those of its process tree, hand them to a [`Handler`], pass the
//! exit status back.
//!
//! Safety rules: tracing that cannot start, a tracing instance
//! removed under us, a read error or lost events never stop the program —
//! the handler is told to degrade ([`Handler::on_fault`]) and the command
//! runs to its end. The program is started by [`outrider_sys::launch`]: as
//! the sudo user unless `--as-root`, killed if outrider dies. Ctrl-C
//! reaches it through the terminal's process group; SIGHUP, SIGINT,
//! SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGTERM sent to outrider are
//! forwarded to it. Either way outrider waits for the program and removes
//! its event source before exiting.

use crate::proctree::ProcessTree;
use crate::source::{EventSource, Opened, SourceChoice, SourceError};
use crate::tracefs::{EventKind, InstanceOptions, LiveEvent, SourceStats};
use outrider_sys::{launch, monotonic_ns};
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// Ring-buffer pages read per poll at most (a bound on one batch:
/// 256 pages × ~90 events).
pub const MAX_PAGES_PER_POLL: usize = 256;
/// Sleep between polls when no page was ready (and, with a blocking wait,
/// after waking for an event: the batch a poll then reads).
pub const IDLE_SLEEP: Duration = Duration::from_millis(1);
/// How often the tracing instance is checked for removal at most.
const ALIVE_CHECK: Duration = Duration::from_millis(100);

/// Catch the signals forwarded to the program (recorded, not fatal) so
/// the instance is always removed ([`outrider_sys::launch`]).
pub use outrider_sys::launch::install_signal_handlers;

/// The last signal caught since [`install_signal_handlers`], if any.
pub fn signalled() -> Option<i32> {
    launch::last_signal()
}

/// What the session feeds its consumer.
pub trait Handler {
    /// The child was spawned (its pid is the tree's root).
    fn on_start(&mut self, _root_pid: u32, _t0_ns: u64) {}
    /// A batch of events, sorted by time. `in_tree` says, per event,
    /// whether its task belongs to the traced process tree (block
    /// completions run in interrupt context and rarely do).
    fn on_events(&mut self, events: &[LiveEvent], in_tree: &[bool]);
    /// Called after every poll with the monotonic time (ns).
    fn on_poll(&mut self, _now_ns: u64) {}
    /// How long the session may wait for events before the next
    /// [`Handler::on_poll`] (default [`IDLE_SLEEP`]: polled as often as
    /// events could come). A handler with nothing in flight says longer;
    /// the session still wakes at the first event or the program's exit.
    fn idle_wait(&self) -> Duration {
        IDLE_SLEEP
    }
    /// How long to let events gather after a partial batch (default
    /// [`IDLE_SLEEP`]). A handler with nothing to act on quickly says
    /// longer: each read of a partly filled tracing page, each wake-up
    /// and each cgroup look costs the same however few events it brings.
    fn batch_wait(&self) -> Duration {
        IDLE_SLEEP
    }
    /// Tracing failed or lost events: stop acting on the stream.
    fn on_fault(&mut self, _why: &str) {}
    /// The child exited and the last events were delivered.
    fn on_finish(&mut self, _now_ns: u64) {}
}

/// How a traced run ended.
#[derive(Debug)]
pub struct SessionOutcome {
    /// The child's exit status.
    pub status: ExitStatus,
    /// Event-source counters (zero when tracing never started).
    pub source: SourceStats,
    /// The event source that ran (`"ebpf"`, `"tracefs"`), `None` when
    /// tracing never started.
    pub source_name: Option<&'static str>,
    /// Why the eBPF source was not used, when `auto` fell back to tracefs.
    pub fallback: Option<String>,
    /// Warnings printed (tracing faults).
    pub warnings: Vec<String>,
    /// Wall time of the child, seconds.
    pub elapsed_s: f64,
    /// Tasks in the traced tree.
    pub tasks: usize,
    /// The traced tree: every task that was in it.
    pub tree: ProcessTree,
}

/// The child's exit code as a shell reports it: its code, or 128 + the
/// signal that killed it.
pub fn exit_code(status: &ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => (128 + s) as u8,
        _ => 1,
    }
}

/// Run `argv` under tracing from the event source `choice` names, feeding
/// `handler`. Errors only when the
/// command cannot be started (for its exit code, see
/// [`launch::spawn_failure_code`]); tracing problems become warnings.
pub fn run_traced(
    argv: &[OsString],
    opts: &InstanceOptions,
    choice: SourceChoice,
    handler: &mut dyn Handler,
) -> std::io::Result<SessionOutcome> {
    run_traced_on(argv, EventSource::open(opts, choice), handler)
}

/// A program started by someone else — a client of the daemon started it
/// as itself — whose process tree a session follows from its root.
pub trait Attached {
    /// The root of the tree (the event source follows it from before
    /// it forks).
    fn pid(&self) -> u32;
    /// Tracing is on: let the program start.
    fn start(&mut self) -> std::io::Result<()>;
    /// Its exit status once it ended (reported, or its root vanished).
    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>>;
    /// A descriptor that becomes readable when [`Attached::try_wait`] may
    /// have news.
    fn wake_fd(&self) -> BorrowedFd<'_>;
}

/// The program of a session.
pub enum Program<'a> {
    /// Started here: the command and its arguments (as its user,
    /// [`launch::program_credentials`]).
    Spawn(&'a [OsString]),
    /// Started elsewhere.
    Attached(&'a mut dyn Attached),
}

/// The program while it runs.
enum Running<'a> {
    Child(std::process::Child, Option<OwnedFd>),
    Attached(&'a mut dyn Attached),
}

impl Running<'_> {
    fn start(program: Program<'_>) -> std::io::Result<Running<'_>> {
        match program {
            Program::Spawn(argv) => {
                let (prog, args) = argv
                    .split_first()
                    .ok_or_else(|| std::io::Error::other("no command given"))?;
                let creds = launch::program_credentials()
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                let child = launch::command(prog, args, creds.as_ref()).spawn()?;
                let exit_fd = pidfd(child.id());
                Ok(Running::Child(child, exit_fd))
            }
            Program::Attached(a) => {
                a.start()?;
                Ok(Running::Attached(a))
            }
        }
    }

    fn root(&self) -> u32 {
        match self {
            Running::Child(c, _) => c.id(),
            Running::Attached(a) => a.pid(),
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self {
            Running::Child(c, _) => c.try_wait(),
            Running::Attached(a) => a.try_wait(),
        }
    }

    fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Running::Child(_, fd) => fd.as_ref().map(|f| f.as_fd()),
            Running::Attached(a) => Some(a.wake_fd()),
        }
    }

    /// Pass on the signals caught (only to a program started here: an
    /// attached one's starter has them).
    fn forward_signals(&self) {
        if let Running::Child(c, _) = self {
            launch::forward_pending(c.id());
        }
    }
}

/// [`run_traced`] on a source opened beforehand (`outrider run` opens it
/// on another thread while it loads the history: the set-up then costs
/// the program nothing).
pub fn run_traced_on(
    argv: &[OsString],
    opened: Result<Opened, SourceError>,
    handler: &mut dyn Handler,
) -> std::io::Result<SessionOutcome> {
    run_program(Program::Spawn(argv), opened, handler)
}

/// [`run_traced_on`] for a program started here or elsewhere.
pub fn run_program(
    program: Program<'_>,
    opened: Result<Opened, SourceError>,
    handler: &mut dyn Handler,
) -> std::io::Result<SessionOutcome> {
    install_signal_handlers();
    let mut warnings: Vec<String> = Vec::new();
    let warn = |w: String, h: &mut dyn Handler, warnings: &mut Vec<String>| {
        outrider_sys::warnln!("outrider: warning: {w}; running without prefetching");
        h.on_fault(&w);
        warnings.push(w);
    };
    let mut fallback = None;
    let mut inst = match opened {
        Ok(o) => {
            fallback = o.fallback;
            Some(o.source)
        }
        Err(e) => {
            warn(format!("tracing unavailable ({e})"), handler, &mut warnings);
            None
        }
    };
    let start = Instant::now();
    let t0 = monotonic_ns();
    let mut child = Running::start(program)?;
    let root = child.root();
    let mut alive_checked = Instant::now();
    handler.on_start(root, t0);
    let mut tree = ProcessTree::new(root);
    let mut events = Vec::new();
    let mut in_tree = Vec::new();
    let mut lost_seen = 0u64;
    let status = loop {
        let exited = child.try_wait()?;
        let mut pages = 0;
        if let Some(i) = inst.as_mut() {
            events.clear();
            let r = i.poll(&mut events, MAX_PAGES_PER_POLL);
            match r {
                Ok(n) => pages = n,
                Err(e) => {
                    warn(
                        format!("reading trace events failed ({e})"),
                        handler,
                        &mut warnings,
                    );
                    inst = None;
                }
            }
        }
        if let Some(i) = inst.as_ref() {
            if i.stats().lost_events > lost_seen {
                lost_seen = i.stats().lost_events;
                if warnings.iter().all(|w| !w.starts_with("the kernel lost")) {
                    warn(
                        format!("the kernel lost {lost_seen} trace events (buffer overrun)"),
                        handler,
                        &mut warnings,
                    );
                }
            }
            let check = pages == 0 && exited.is_none() && alive_checked.elapsed() >= ALIVE_CHECK;
            if check {
                alive_checked = Instant::now();
            }
            if check && !i.alive() {
                warn(
                    "the tracing instance was removed".into(),
                    handler,
                    &mut warnings,
                );
                inst = None;
            }
        }
        if !events.is_empty() {
            events.sort_by_key(|e| e.ts_ns);
            in_tree.clear();
            for e in &events {
                if let EventKind::Fork { parent, child } = e.kind {
                    tree.on_fork(parent, child);
                }
                in_tree.push(tree.contains(e.pid));
            }
            handler.on_events(&events, &in_tree);
        }
        handler.on_poll(monotonic_ns());
        if exited.is_none() {
            child.forward_signals();
        }
        if let Some(st) = exited {
            if pages < MAX_PAGES_PER_POLL {
                break st;
            }
            continue; // drain what is left
        }
        if pages == 0 {
            idle(inst.as_ref(), child.exit_fd(), handler.idle_wait());
        } else if pages < MAX_PAGES_PER_POLL {
            // A partial batch: read again once more events gathered, not
            // at once (a few events per read made the read, poll and
            // decode calls most of a busy tree walker's cost per event).
            pause(child.exit_fd(), handler.batch_wait());
        }
    };
    let elapsed_s = start.elapsed().as_secs_f64();
    handler.on_finish(monotonic_ns());
    let source = inst.as_ref().map(|i| i.stats()).unwrap_or_default();
    let source_name = inst.as_ref().map(EventSource::name);
    drop(inst);
    Ok(SessionOutcome {
        status,
        source,
        source_name,
        fallback,
        warnings,
        elapsed_s,
        tasks: tree.len(),
        tree,
    })
}

/// Wait for work between polls: with the event source and the
/// program's pidfd, block until an event arrives, the program exits or
/// `longest` passes, then let a batch of events gather for [`IDLE_SLEEP`];
/// otherwise sleep [`IDLE_SLEEP`]. A 1 ms sleep loop cost outrider 47 ms
/// of CPU per second of an idle program (measured, `run -- sleep 2`).
fn idle(inst: Option<&EventSource>, exit_fd: Option<BorrowedFd<'_>>, longest: Duration) {
    match (inst, exit_fd) {
        (Some(i), Some(fd)) if longest > IDLE_SLEEP => {
            if i.wait(Some(fd), longest) {
                std::thread::sleep(IDLE_SLEEP);
            }
        }
        _ => std::thread::sleep(IDLE_SLEEP),
    }
}

/// Wait `d`, or less if the program exits (its pidfd becomes readable).
pub fn pause(exit_fd: Option<BorrowedFd<'_>>, d: Duration) {
    match exit_fd {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, d.as_millis().max(1) as i32) };
        }
        None => std::thread::sleep(d),
    }
}

/// A pidfd of `pid` (readable once it exits); `None` before Linux 5.3.
pub fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh descriptor we own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Has the process of `pidfd` exited (its pidfd readable: a zombie
/// too)?
pub fn pidfd_exited(pidfd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}
