//! The programs of page-cache reads, faults and fault-around maps are
//! detached while the source follows no thread
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope).
//!
//! Why: attached, they run at every `read`, and at every fault and
//! fault-around map of a mapped file, of every task on the machine,
//! followed or not. For a thread not followed they return at its bitmap
//! test ([`followed`](super::followed)), yet the run itself costs:
//! - a 1-byte `pread` of a cached page took 465 ns with no daemon and
//!   535-541 ns with the daemon running, the thread not followed (best
//!   of 5 × 200 000 calls, 3 alternations, this 2-core VM); `rg` over a
//!   source tree in memory makes 64 000 such reads a run and ran
//!   0.93-0.96x of stock with the daemon running, the same with `rg`
//!   excluded (`bench/results/daemon.md`, two sittings);
//! - an exec of `/bin/true` (`fork`, `execve`, `waitpid`) maps its
//!   libraries in ~38 fault-around maps and ~7 faults, each a program run
//!   (the kernel's count): 1 000 of them took 575 µs each with no daemon
//!   and 593 µs with it, nothing watched, only the reads' program
//!   detached (3 alternations); with all three detached, 590 µs against
//!   580 µs (5 alternations). A shell loop of 300 `true`s ran 0.97x of
//!   its speed with no daemon with only the reads' detached
//!   (`bench/results/daemon.md`).
//!
//! How: the programs, loaded once, are attached or not by their raw
//! tracepoints' links. Once the reader acted on what it polled
//! (`EbpfSource::settle_reads`), the source attaches them when a record
//! of an exec was read (the exec's program follows the thread in the
//! kernel and wakes the reader at once), and every [`CHECK_ATTACHED_NS`]
//! (every [`CHECK_DETACHED_NS`] while detached) it looks whether the
//! table of followed threads is empty (one `BPF_MAP_GET_NEXT_KEY`) and
//! nothing records every task: then it detaches them; else it attaches
//! them. Only programs on raw tracepoints are detached: a perf event's
//! close waits ~40 ms for a grace period (see `EbpfSource::stop`).
//!
//! What it costs the reader (measured in the daemon, this VM): a look at
//! the empty table 50-125 µs (it scans its 65 536 buckets; a table with
//! a thread in it stops at its first, 15-25 µs), an attach 100-160 µs a
//! program (strace), a detach ~10 µs. So a launch that exits at once
//! costs ~0.5 ms; a program let go as it reads from memory (`rg` over a
//! tree in memory) has the programs off its reads within 50 ms of the
//! last followed thread's let-go or exit.
//!
//! What is lost: what a launch reads and maps between its exec and the
//! reader's attach. A page from storage is reported once it came in,
//! after the attach; a page in memory may go unseen (an ELF header
//! `ld.so` reads, its first faults in a cached library). `perl -MPOSIX
//! -MData::Dumper` cold, a fresh daemon each: 35-37 files and 1 267-1 332
//! pages recorded with the three detached at its exec, 37 and 1 355-1 400
//! with them attached (3 each); its next cold launches took 0.0304 s
//! against 0.0310 s (medians of 18, 6 alternations; stock 0.0343 s).
//! And the reads of a thread followed while nothing was (a record of its
//! exec lost), for up to [`CHECK_DETACHED_NS`].

use outrider_sys::bpf::{Map, Program};
use std::io;
use std::os::fd::OwnedFd;

/// How often the table of followed threads is looked at while the
/// programs are attached: they are detached this long at most after the
/// last followed thread went.
pub const CHECK_ATTACHED_NS: u64 = 50_000_000;
/// How often while detached (a thread followed with no exec read).
pub const CHECK_DETACHED_NS: u64 = 250_000_000;

/// The events whose programs are detached: the page reads, the
/// fault-around maps and the faults.
pub const EVENTS: [&str; 3] = [
    "mm_filemap_get_pages",
    "mm_filemap_map_pages",
    "mm_filemap_fault",
];

/// The page-cache programs and their events, and their links while
/// attached.
#[derive(Debug)]
pub struct Reads {
    progs: Vec<(Program, &'static str)>,
    links: Vec<OwnedFd>,
    checked_ns: u64,
    /// Times they were detached.
    pub detached: u64,
}

impl Reads {
    /// `progs`, attached by `links` (one each, in order) on raw
    /// tracepoints of [`EVENTS`]: first looked at [`CHECK_ATTACHED_NS`]
    /// from now.
    pub fn new(progs: Vec<(Program, &'static str)>, links: Vec<OwnedFd>) -> Reads {
        assert_eq!(progs.len(), links.len(), "one link a program");
        Reads {
            progs,
            links,
            checked_ns: outrider_sys::monotonic_ns(),
            detached: 0,
        }
    }

    /// Whether the programs are attached.
    pub fn attached(&self) -> bool {
        !self.links.is_empty()
    }

    /// The links' descriptors, when attached (handed over at the end).
    pub fn take_links(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.links)
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
        let every = match self.attached() {
            true => CHECK_ATTACHED_NS,
            false => CHECK_DETACHED_NS,
        };
        if now_ns.saturating_sub(self.checked_ns) < every {
            return Ok(());
        }
        self.checked_ns = now_ns;
        let wanted = everyone()? || !hash.is_empty(4)?;
        self.attach(wanted)
    }

    /// Attach (`on`) or detach the programs; nothing when they already
    /// are. An attach that fails part way detaches those it attached.
    pub fn attach(&mut self, on: bool) -> io::Result<()> {
        match (on, self.attached()) {
            (true, false) => {
                let links = (self.progs.iter())
                    .map(|(prog, event)| prog.attach_raw_tracepoint(event))
                    .collect::<io::Result<Vec<_>>>()?;
                self.links = links;
            }
            (false, true) => {
                self.links.clear();
                self.detached += 1;
            }
            _ => {}
        }
        Ok(())
    }
}
