//! The program of page-cache reads is detached while the source follows
//! no thread ([`Scope::Execs`](super::Scope::Execs), the daemon's scope).
//!
//! Why: attached, it runs at every `read` of every task on the machine,
//! followed or not. For a thread not followed it returns at its bitmap
//! test ([`followed`](super::followed)), yet the run itself costs: a
//! 1-byte `pread` of a cached page took 465 ns with no daemon and 535-541
//! ns with the daemon running, the thread not followed (best of 5 × 200 000
//! calls, 3 alternations, this 2-core VM). `rg` over a source tree in
//! memory makes 64 000 such reads a run and ran 0.93-0.96x of stock with
//! the daemon running, the same with `rg` excluded (`bench/results/daemon.md`,
//! two sittings). Faults and fault-around maps come once per page a
//! process maps, not per call, and stay attached.
//!
//! How: the program, loaded once, is attached or not by its raw
//! tracepoint's link. After each poll (`EbpfSource::settle_reads`), the
//! source attaches it when a record of an exec was read (the exec's
//! program follows the thread in the kernel and wakes the reader at
//! once), before the reader acts on the exec; and every
//! [`CHECK_ATTACHED_NS`] (every [`CHECK_DETACHED_NS`] while detached) it
//! looks whether the table of followed threads is empty (one
//! `BPF_MAP_GET_NEXT_KEY`) and nothing records every task: then it
//! detaches the program; else it attaches it. Only a program on a raw
//! tracepoint is detached: a perf event's close waits ~40 ms for a grace
//! period (see `EbpfSource::stop`).
//!
//! What it costs the reader (measured in the daemon, this VM): a look at
//! the empty table 50-125 µs (it scans its 65 536 buckets; a table with
//! a thread in it stops at its first), an attach or a detach ~200 µs.
//! So a launch that exits at once costs ~0.5 ms; a program let go as it
//! reads from memory (`rg` over a tree in memory) has the program off its
//! reads within 50 ms of the last followed thread's let-go or exit.
//!
//! What is lost: the reads a launch makes between its exec and the
//! reader's attach, and the reads of a thread followed while nothing was
//! (a record of its exec lost) for up to [`CHECK_DETACHED_NS`]. The
//! reader is late when its CPU is taken: at nice 19 against a busy task
//! on each core it waits its turn for tens of milliseconds or more, and
//! a short program reads its files before the attach. What such a read
//! brought in from storage still comes, as the cache insertions (their
//! program is never detached) made before [`Reads::seen_since`]: the
//! daemon records those as the launch's reads. A read from memory in
//! that time (an ELF header `ld.so` reads before mapping the library
//! whose pages its faults report) goes unseen.
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

use outrider_sys::bpf::{Map, Program};
use std::io;
use std::os::fd::OwnedFd;

/// How often the table of followed threads is looked at while the
/// program is attached: it is detached this long at most after the last
/// followed thread went.
pub const CHECK_ATTACHED_NS: u64 = 50_000_000;
/// How often while detached (a thread followed with no exec read).
pub const CHECK_DETACHED_NS: u64 = 250_000_000;

/// The event whose program is detached.
pub const EVENT: &str = "mm_filemap_get_pages";

/// The reads' program and its link, when attached.
#[derive(Debug)]
pub struct Reads {
    prog: Program,
    link: Option<OwnedFd>,
    checked_ns: u64,
    /// When it was last attached, once the attach returned.
    attached_ns: u64,
    /// Times it was detached.
    pub detached: u64,
}

impl Reads {
    /// `prog`, attached by `link`, on raw tracepoint [`EVENT`]: first
    /// looked at [`CHECK_ATTACHED_NS`] from now.
    pub fn new(prog: Program, link: OwnedFd) -> Reads {
        let now = outrider_sys::monotonic_ns();
        Reads {
            prog,
            link: Some(link),
            checked_ns: now,
            attached_ns: now,
            detached: 0,
        }
    }

    /// Since when (monotonic ns) every page read is seen: `None` while
    /// detached. A read made before it, by a thread followed then, may
    /// have gone unseen.
    pub fn seen_since(&self) -> Option<u64> {
        self.link.as_ref().map(|_| self.attached_ns)
    }

    /// Whether the program is attached.
    pub fn attached(&self) -> bool {
        self.link.is_some()
    }

    /// The link's descriptor, when attached (handed over at the end).
    pub fn take_link(&mut self) -> Option<OwnedFd> {
        self.link.take()
    }

    /// Once the reader acted on a poll, at `now_ns`: attach at an exec
    /// read; every [`CHECK_ATTACHED_NS`] ([`CHECK_DETACHED_NS`] while
    /// detached), attach when a thread is followed in `hash` or
    /// `everyone()` (a counter's lookup, asked only then) says every task
    /// is recorded, else detach.
    pub fn settle(
        &mut self,
        now_ns: u64,
        exec_read: bool,
        hash: &Map,
        everyone: impl FnOnce() -> io::Result<bool>,
    ) -> io::Result<()> {
        if exec_read {
            self.checked_ns = now_ns;
            return self.attach(true);
        }
        let every = match self.link {
            Some(_) => CHECK_ATTACHED_NS,
            None => CHECK_DETACHED_NS,
        };
        if now_ns.saturating_sub(self.checked_ns) < every {
            return Ok(());
        }
        self.checked_ns = now_ns;
        let wanted = everyone()? || !hash.is_empty(4)?;
        self.attach(wanted)
    }

    /// Attach (`on`) or detach the program; nothing when it already is.
    pub fn attach(&mut self, on: bool) -> io::Result<()> {
        match (on, self.link.is_some()) {
            (true, false) => {
                self.link = Some(self.prog.attach_raw_tracepoint(EVENT)?);
                self.attached_ns = outrider_sys::monotonic_ns();
            }
            (false, true) => {
                self.link = None;
                self.detached += 1;
            }
            _ => {}
        }
        Ok(())
    }
}
