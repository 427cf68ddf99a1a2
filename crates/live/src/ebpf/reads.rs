//! The programs of page-cache reads, page faults and fault-around maps
//! ([`EVENTS`]) are detached while the source follows no thread
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope).
//!
//! Why: attached, it runs at every `read` of every task on the machine,
//! followed or not. For a thread not followed it returns at its bitmap
//! test ([`followed`](super::followed)), yet the run itself costs: a
//! 1-byte `pread` of a cached page took 465 ns with no daemon and 535-541
//! ns with the daemon running, the thread not followed (best of 5 × 200 000
//! calls, 3 alternations, this 2-core VM). `rg` over a source tree in
//! memory makes 64 000 such reads a run and ran 0.93-0.96x of stock with
//! the daemon running, the same with `rg` excluded (`bench/results/daemon.md`,
//! two sittings).
//!
//! Faults and fault-around maps come once per page a process maps, not
//! per call, but every process makes them: `ld.so` maps its libraries,
//! ~40 faults for one `/bin/true`. With them attached, a shell loop of
//! 300 `true`s ran the programs ~11 400 times (the kernel's count,
//! `bench/results/daemon.md`), ~4 800 with them detached too, the rest
//! being the 50 ms after the loop's own exec ([`CHECK_ATTACHED_NS`]).
//! Measured, alternated with the daemon stopped (this VM): a program
//! that forks and execs `/bin/true` 300 times, each exec timed, took at
//! its 10th percentile 0.989x of the stopped time with them detached,
//! 0.986x with them attached (medians of 8 repetitions of 5 runs); a
//! script of ~550 execs of a dozen small programs 0.987x against 0.977x
//! (medians of 10). A process not followed that maps and touches 163 840
//! cached pages (~20 000 faults and maps) in a loop took 44.6 ms
//! detached, 44.7 attached, 44.4 with no daemon (medians of 28): what
//! costs is not a long-running process's runs; why a fresh exec's cost
//! more was not measured.
//! Detached so once before, they were attached again when a test of a
//! routine's launches had half of a launch's read unseen: the attach then
//! came after the exec was acted on, 10-24 ms late on a busy machine (see
//! below); with the attach first, that test passed 8 of 8 runs, 3 of
//! them beside a busy loop.
//! `detach_idle_faults = false` keeps them attached.
//!
//! How: each program, loaded once, is attached or not by its raw
//! tracepoint's link, all of them together (the faults' first). After
//! each poll (`EbpfSource::settle_reads`), the source attaches them when
//! a record of an exec was read (the exec's program follows the thread
//! in the kernel and wakes the reader at once), before the reader acts
//! on the exec; and every [`CHECK_ATTACHED_NS`] (every
//! [`CHECK_DETACHED_NS`] while detached, [`CHECK_UNTRACKED_NS`] once a
//! thread was untracked) it looks whether the table of
//! followed threads is empty (one `BPF_MAP_GET_NEXT_KEY`) and nothing
//! records every task: then it detaches them; else it attaches them.
//! Only a program on a raw tracepoint is detached: a perf event's close
//! waits ~40 ms for a grace period (see `EbpfSource::stop`).
//!
//! What it costs the reader (measured in the daemon, this VM): a look at
//! the empty table 50-125 µs (it scans its 65 536 buckets; a table with
//! a thread in it stops at its first), an attach 110-130 µs a program
//! (`strace -T`), a detach ~200 µs. So a launch that exits at once costs
//! ~1 ms, and its replay starts ~0.4 ms later; a program let go as it
//! reads from memory (`rg` over a tree in memory) has the programs off
//! its reads within 50 ms of the last followed thread's let-go or exit.
//!
//! What is lost: the reads and faults a launch makes between its exec
//! and the reader's attach, and those of a thread followed while nothing
//! was (a record of its exec lost) for up to [`CHECK_DETACHED_NS`]. The
//! reader is late when its CPU is taken: at nice 19 against a busy task
//! on each core it waits its turn for tens of milliseconds or more, and
//! a short program reads its files before the attach. What such a read
//! brought in from storage still comes, as the cache insertions (their
//! program is never detached) made before [`Reads::seen_since`]: the
//! daemon records those as the launch's reads. A read or a fault from
//! memory in that time (an ELF header `ld.so` reads, a page of a library
//! another program keeps cached) goes unseen: it is recorded at the
//! next launch that finds it missing.
//!
//! Why the attach comes before the exec is acted on: acting on it (the
//! launch's `/proc` files, its set, its replay's thread) took the daemon
//! 10-24 ms beside a busy loop, the attach itself 0.1-0.2 ms (four
//! `python3` launches, timed in the daemon). Attached after, the program
//! saw none of a launch's first ~20 ms of reads: a `python3` reading 4
//! MiB from memory 20 times over was counted 2 344 pages in the kernel,
//! not the 20 480 that let it go, and its test failed 6 of 7 runs beside
//! one busy loop (6 of 6 passed attached first). A replay now starts
//! those ~0.2 ms later.
//!
//! Why the attach runs on a thread of its own ([`Attacher`]): the kernel
//! makes a tracepoint's probes going 1 → 0 → 1 wait for an RCU grace
//! period since the 1 → 0 (`tp_rcu_cond_sync` in `kernel/tracepoint.c`).
//! A program started right after the last followed one exited (a
//! script's next command) had its exec read 0.1-1.8 ms after it, the
//! programs detached at that exit 2 ms before, and the attach then took
//! 5.9-16.2 ms (4 of 6 `python3 -c pass` after a `sleep 0.3`; the
//! others 0.2-0.3 ms); its replay started 11-27 ms after its exec,
//! against 2 ms with them kept attached (6 launches each). Now the
//! reader asks for the attach and acts on the exec meanwhile; the reads
//! are seen from when the attach returns, as before.

use outrider_sys::bpf::{Map, Program};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::mpsc;

/// How often the table of followed threads is looked at while the
/// programs are attached: they are detached this long at most after the
/// last followed thread went.
pub const CHECK_ATTACHED_NS: u64 = 50_000_000;
/// How often while detached (a thread followed with no exec read).
pub const CHECK_DETACHED_NS: u64 = 250_000_000;
/// How often while attached once a thread was untracked: the table may
/// have just emptied. A thread reading from memory pays the programs'
/// run at each read while they are attached, followed or not. A fresh
/// copy of `rg` over a source tree in memory (63 000 reads a run), the
/// next look 50 ms after its exec attached them: 20 000-26 000 runs a run
/// with its executable excluded from watching, 27 000-33 000 watched
/// (let go at its first 64 MiB); looked at this soon after the untrack,
/// 0-12 000 and 2 000-17 000 (one run of 10: 37 000; the reader, at
/// nice 19 beside `rg`'s two threads, reads the exec late). Its wall
/// time moved less than this machine's noise (0.994x of no daemon both,
/// 20 alternations of 5 runs).
/// A look at the empty table costs the reader 50-125 µs (above), at most
/// one per this period.
pub const CHECK_UNTRACKED_NS: u64 = 2_000_000;
const _: () = assert!(CHECK_UNTRACKED_NS * 10 <= CHECK_ATTACHED_NS);

/// What a detached program would have seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Page-cache reads (`read`, `pread`, ...).
    Reads,
    /// Page faults and fault-around maps of mapped files.
    Faults,
}

/// The events whose programs are detached, and what each sees.
pub const EVENTS: [(&str, Kind); 3] = [
    ("mm_filemap_get_pages", Kind::Reads),
    ("mm_filemap_fault", Kind::Faults),
    ("mm_filemap_map_pages", Kind::Faults),
];

/// Event `name` and what its program sees, when it is one of [`EVENTS`].
pub fn event(name: &str) -> Option<(&'static str, Kind)> {
    EVENTS.iter().find(|(e, _)| *e == name).copied()
}

/// One program and its link, when attached.
#[derive(Debug)]
struct Detachable {
    prog: Program,
    event: &'static str,
    kind: Kind,
    link: Option<OwnedFd>,
}

/// What [`Attacher`]'s thread is asked: the programs to attach (their
/// index in [`Reads`]), and where to answer.
type AttachRequest = (Vec<(usize, Program, &'static str)>, mpsc::Sender<Attached>);
/// Its answer: each program's link by index, and when the attaches
/// returned (monotonic ns).
type Attached = io::Result<(Vec<(usize, OwnedFd)>, u64)>;

/// A thread that attaches programs (see the module comment), one
/// request at a time, in order.
#[derive(Debug)]
struct Attacher {
    tx: mpsc::Sender<AttachRequest>,
    /// The answer to the request in flight, if one is.
    pending: Option<mpsc::Receiver<Attached>>,
}

impl Attacher {
    fn start() -> io::Result<Attacher> {
        let (tx, rx) = mpsc::channel::<AttachRequest>();
        std::thread::Builder::new()
            .name("outrider-attach".into())
            .spawn(move || {
                for (progs, answer) in rx {
                    let links = (progs.iter())
                        .map(|(i, p, event)| Ok((*i, p.attach_raw_tracepoint(event)?)))
                        .collect::<io::Result<Vec<_>>>();
                    let _ = answer.send(links.map(|l| (l, outrider_sys::monotonic_ns())));
                }
            })?;
        Ok(Attacher { tx, pending: None })
    }
}

/// The programs of [`EVENTS`] and their links.
#[derive(Debug)]
pub struct Reads {
    progs: Vec<Detachable>,
    /// Attaches them off the reader's thread; started at the first
    /// attach after a detach.
    attacher: Option<Attacher>,
    /// Which kinds are detached while no thread is followed, indexed by
    /// [`Kind`] ([`Reads::detaches`]).
    detaching: [bool; 2],
    checked_ns: u64,
    /// A thread was untracked since the table was last looked at.
    untracked: bool,
    /// When they were last attached, once the attach returned.
    attached_ns: u64,
    /// Times they were detached.
    pub detached: u64,
}

impl Default for Reads {
    /// None yet, both kinds detached while idle; first looked at
    /// [`CHECK_ATTACHED_NS`] from now.
    fn default() -> Reads {
        let now = outrider_sys::monotonic_ns();
        Reads {
            progs: Vec::new(),
            attacher: None,
            detaching: [true; 2],
            checked_ns: now,
            untracked: false,
            attached_ns: now,
            detached: 0,
        }
    }
}

impl Reads {
    /// Add `prog`, attached by `link` on raw tracepoint `event` (one of
    /// [`EVENTS`], as [`event`] gives it).
    pub fn add(&mut self, prog: Program, (event, kind): (&'static str, Kind), link: OwnedFd) {
        let link = Some(link);
        self.progs.push(Detachable {
            prog,
            event,
            kind,
            link,
        });
    }

    /// Whether it holds no program.
    pub fn is_empty(&self) -> bool {
        self.progs.is_empty()
    }

    /// Since when (monotonic ns) every page read and fault is seen:
    /// `None` while a program is detached. A read made before it, by a
    /// thread followed then, may have gone unseen.
    pub fn seen_since(&self) -> Option<u64> {
        self.attached().then_some(self.attached_ns)
    }

    /// Whether every program is attached.
    pub fn attached(&self) -> bool {
        self.progs.iter().all(|p| p.link.is_some())
    }

    /// The links' descriptors, of those attached (handed over at the end).
    pub fn take_links(&mut self) -> Vec<OwnedFd> {
        let _ = self.collect(true);
        self.progs
            .iter_mut()
            .filter_map(|p| p.link.take())
            .collect()
    }

    /// Detach the programs of page reads (`reads`) and of faults and
    /// fault-around maps (`faults`) while no thread is followed; those
    /// not, attached now and kept so.
    pub fn detach_idle(&mut self, reads: bool, faults: bool) -> io::Result<()> {
        self.detaching = [reads, faults];
        self.attach(true)
    }

    fn detaches(&self, kind: Kind) -> bool {
        self.detaching[kind as usize]
    }

    /// Once the reader acted on a poll, at `now_ns`: attach at an exec
    /// read (`seen.0`); every [`CHECK_ATTACHED_NS`] ([`CHECK_DETACHED_NS`]
    /// while detached, [`CHECK_UNTRACKED_NS`] while attached once a
    /// thread was untracked, `seen.1`), attach when a thread is followed
    /// in `hash` or `everyone()` (a counter's lookup, asked only then)
    /// says every task is recorded, else detach. Nothing when no program
    /// is detached so.
    pub fn settle(
        &mut self,
        now_ns: u64,
        (exec_read, untracked): (bool, bool),
        hash: &Map,
        everyone: impl FnOnce() -> io::Result<bool>,
    ) -> io::Result<()> {
        if !self.progs.iter().any(|p| self.detaches(p.kind)) {
            return Ok(());
        }
        self.collect(false)?;
        self.untracked |= untracked;
        if exec_read {
            self.checked_ns = now_ns;
            return self.attach(true);
        }
        let every = match (self.attached(), self.untracked) {
            (true, true) => CHECK_UNTRACKED_NS,
            (true, false) => CHECK_ATTACHED_NS,
            (false, _) => CHECK_DETACHED_NS,
        };
        if now_ns.saturating_sub(self.checked_ns) < every {
            return Ok(());
        }
        (self.checked_ns, self.untracked) = (now_ns, false);
        let wanted = everyone()? || !hash.is_empty(4)?;
        self.attach(wanted)
    }

    /// Attach every program (`on`), or detach those detached while idle;
    /// nothing for a program that already is, or is being attached. The
    /// attach is asked of [`Attacher`]'s thread and not waited for (its
    /// links are taken at a later call); a detach waits for an attach in
    /// flight first. The faults' first: a launch's first pages come by
    /// its faults (`ld.so` mapping).
    pub fn attach(&mut self, on: bool) -> io::Result<()> {
        let mut asked = Vec::new();
        let mut detached = false;
        if !on {
            self.collect(true)?;
        }
        let attaching = self.attacher.as_ref().is_some_and(|a| a.pending.is_some());
        for kind in [Kind::Faults, Kind::Reads] {
            let want = on || !self.detaches(kind);
            for (i, p) in self
                .progs
                .iter_mut()
                .enumerate()
                .filter(|(_, p)| p.kind == kind)
            {
                match (want, p.link.is_some()) {
                    (true, false) if !attaching => asked.push((i, p.prog.try_clone()?, p.event)),
                    (false, true) => {
                        p.link = None;
                        detached = true;
                    }
                    _ => {}
                }
            }
        }
        self.detached += u64::from(detached);
        if asked.is_empty() {
            return Ok(());
        }
        if self.attacher.is_none() {
            self.attacher = Some(Attacher::start()?);
        }
        let a = self.attacher.as_mut().expect("started");
        let (answer, pending) = mpsc::channel();
        a.tx.send((asked, answer))
            .map_err(|_| io::Error::other("the attach thread ended"))?;
        a.pending = Some(pending);
        Ok(())
    }

    /// Take the links of the attach in flight once it returned (`wait`:
    /// waiting for it); its error, if it failed.
    fn collect(&mut self, wait: bool) -> io::Result<()> {
        let Some(rx) = self.attacher.as_mut().and_then(|a| a.pending.take()) else {
            return Ok(());
        };
        let answer = match wait {
            true => rx
                .recv()
                .map_err(|_| io::Error::other("the attach thread ended")),
            false => match rx.try_recv() {
                Ok(a) => Ok(a),
                Err(mpsc::TryRecvError::Empty) => {
                    self.attacher.as_mut().expect("asked").pending = Some(rx);
                    return Ok(());
                }
                Err(mpsc::TryRecvError::Disconnected) => {
                    Err(io::Error::other("the attach thread ended"))
                }
            },
        };
        let (links, at_ns) = answer??;
        for (i, link) in links {
            self.progs[i].link = Some(link);
        }
        self.attached_ns = at_ns;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detached_events_are_the_page_reads_faults_and_maps() {
        let kind = |name| event(name).map(|(_, k)| k);
        assert_eq!(kind("mm_filemap_get_pages"), Some(Kind::Reads));
        assert_eq!(kind("mm_filemap_fault"), Some(Kind::Faults));
        assert_eq!(kind("mm_filemap_map_pages"), Some(Kind::Faults));
        assert_eq!(kind("mm_filemap_add_to_page_cache"), None);
        assert_eq!(kind("sched_process_exec"), None);
    }
}
