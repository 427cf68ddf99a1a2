//! Where a traced run's kernel events come from: the eBPF source
//! ([`crate::ebpf`]), the tracefs one ([`crate::tracefs`]) where eBPF is
//! not available, by choice ([`SourceChoice`]).

use crate::ebpf::{EbpfSource, Scope};
use crate::tracefs::{AtEnd, Instance, InstanceOptions, LiveEvent, SourceStats, TraceFsError};
use std::os::fd::BorrowedFd;
use std::time::Duration;

/// Which event source to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SourceChoice {
    /// eBPF, else tracefs (the reason kept in [`Opened::fallback`]).
    #[default]
    Auto,
    /// eBPF only: an error when it cannot start.
    Ebpf,
    /// tracefs only.
    TraceFs,
}

impl std::str::FromStr for SourceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SourceChoice::Auto),
            "ebpf" => Ok(SourceChoice::Ebpf),
            "tracefs" => Ok(SourceChoice::TraceFs),
            _ => Err(format!(
                "unknown event source {s:?}: expected auto, ebpf or tracefs"
            )),
        }
    }
}

/// An open event source.
pub enum EventSource {
    /// Programs on the tracepoints, one ring buffer.
    Ebpf(Box<EbpfSource>),
    /// A tracing instance's per-CPU buffers.
    TraceFs(Box<Instance>),
}

/// A source could not start or read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The tracefs source.
    #[error("{0}")]
    TraceFs(#[from] TraceFsError),
    /// The eBPF source.
    #[error("eBPF: {0}")]
    Ebpf(#[from] std::io::Error),
}

/// An opened source and, when `auto` fell back to tracefs, why.
pub struct Opened {
    /// The source.
    pub source: EventSource,
    /// Why eBPF was not used under [`SourceChoice::Auto`].
    pub fallback: Option<String>,
}

impl EventSource {
    /// Open the source `choice` names for `opts`'s events and task filter
    /// (the tracefs-only settings — instance name, parking — apply to the
    /// tracefs source).
    pub fn open(opts: &InstanceOptions, choice: SourceChoice) -> Result<Opened, SourceError> {
        let home = opts.detached_home.as_deref();
        // A parked tracing instance's linger is also how long the eBPF
        // source's tracepoints stay registered for the next run.
        let linger_ms = match opts.at_end {
            AtEnd::Park { linger_ms } => linger_ms,
            AtEnd::Remove | AtEnd::RemoveDetached => 0,
        };
        let scope = match (opts.follow_execs, opts.follow_pid) {
            (true, _) => Scope::Execs,
            (false, Some(tid)) => Scope::Follow(tid),
            (false, None) => Scope::Everyone,
        };
        let ebpf = || EbpfSource::open_scoped(&opts.events, scope, home, linger_ms).map(Box::new);
        match choice {
            SourceChoice::TraceFs => Ok(Opened {
                source: EventSource::TraceFs(Box::new(Instance::open(opts)?)),
                fallback: None,
            }),
            SourceChoice::Ebpf => Ok(Opened {
                source: EventSource::Ebpf(ebpf()?),
                fallback: None,
            }),
            SourceChoice::Auto => match ebpf() {
                Ok(s) => Ok(Opened {
                    source: EventSource::Ebpf(s),
                    fallback: None,
                }),
                Err(e) => Ok(Opened {
                    source: EventSource::TraceFs(Box::new(Instance::open(opts)?)),
                    fallback: Some(e.to_string()),
                }),
            },
        }
    }

    /// `"ebpf"` or `"tracefs"`.
    pub fn name(&self) -> &'static str {
        match self {
            EventSource::Ebpf(_) => "ebpf",
            EventSource::TraceFs(_) => "tracefs",
        }
    }

    /// Append the events available now to `out` (not sorted across CPUs);
    /// at most `max_pages` 4 KiB units; returns the units read.
    pub fn poll(
        &mut self,
        out: &mut Vec<LiveEvent>,
        max_pages: usize,
    ) -> Result<usize, SourceError> {
        match self {
            EventSource::Ebpf(s) => Ok(s.poll(out, max_pages)?),
            EventSource::TraceFs(i) => Ok(i.poll(out, max_pages)?),
        }
    }

    /// Block until an event waits, `also` is readable or `timeout` passes;
    /// true when an event waits.
    pub fn wait(&self, also: Option<BorrowedFd<'_>>, timeout: Duration) -> bool {
        match self {
            EventSource::Ebpf(s) => s.wait(also, timeout),
            EventSource::TraceFs(i) => i.wait(also, timeout),
        }
    }

    /// Is the source still there? (A tracing instance can be removed under
    /// us; BPF programs cannot.)
    pub fn alive(&self) -> bool {
        match self {
            EventSource::Ebpf(_) => true,
            EventSource::TraceFs(i) => i.alive(),
        }
    }

    /// A handle that stops following threads from another thread (eBPF
    /// only: the tracefs source records every task regardless).
    pub fn untracker(&self) -> Option<crate::ebpf::Untracker> {
        match self {
            EventSource::Ebpf(s) => s.untracker().ok(),
            EventSource::TraceFs(_) => None,
        }
    }

    /// Stop following thread `tid` (eBPF under [`Scope::Execs`]; the
    /// tracefs source records every task regardless).
    pub fn untrack(&self, tid: u32) {
        if let EventSource::Ebpf(s) = self {
            s.untrack(tid);
        }
    }

    /// Whether a thread was untracked since the last
    /// [`EventSource::settle_reads`] (eBPF; never for tracefs).
    pub fn untracked_since_settled(&self) -> bool {
        match self {
            EventSource::Ebpf(s) => s.untracked_since_settled(),
            EventSource::TraceFs(_) => false,
        }
    }

    /// Let an exec'd image go in the kernel once its first `pages` pages
    /// read came from memory (eBPF under [`Scope::Execs`]; see
    /// [`crate::ebpf::EbpfSource::let_go_from_memory`]).
    pub fn let_go_from_memory(&self, pages: u64, miss_share: u64) -> Result<(), SourceError> {
        match self {
            EventSource::Ebpf(s) => Ok(s.let_go_from_memory(pages, miss_share)?),
            EventSource::TraceFs(_) => Ok(()),
        }
    }

    /// Whether the launch exec'd at `stamp` was let go in the kernel for
    /// reading from memory (eBPF under [`Scope::Execs`]; the tracefs
    /// source lets nothing go).
    pub fn let_go(&self, stamp: u64) -> bool {
        matches!(self, EventSource::Ebpf(s) if s.let_go(stamp))
    }

    /// Never let the image thread `tid` runs go for reading from memory.
    pub fn keep_following(&self, tid: u32) {
        if let EventSource::Ebpf(s) = self {
            s.keep_following(tid);
        }
    }

    /// Drop the execs of file name `name` (their [`EventKind::Exec`]
    /// hash) in the kernel until CLOCK_MONOTONIC `until_ns` (eBPF under
    /// [`Scope::Execs`]; the tracefs source has no such filter).
    ///
    /// [`EventKind::Exec`]: crate::tracefs::EventKind::Exec
    pub fn quiet(&self, name: u64, until_ns: u64) {
        if let EventSource::Ebpf(s) = self {
            s.quiet(name, until_ns);
        }
    }

    /// Record every task's events (true) or only followed ones' (eBPF
    /// under [`Scope::Execs`]; the tracefs source records every task).
    pub fn record_everyone(&mut self, on: bool) -> Result<(), SourceError> {
        match self {
            EventSource::Ebpf(s) => Ok(s.record_everyone(on)?),
            EventSource::TraceFs(_) => Ok(()),
        }
    }

    /// Detach the programs of page reads (`reads`) and of faults and
    /// fault-around maps (`faults`) while no thread is followed, or keep
    /// them attached (eBPF under [`Scope::Execs`]; elsewhere nothing).
    pub fn detach_idle(&mut self, reads: bool, faults: bool) -> Result<(), SourceError> {
        match self {
            EventSource::Ebpf(s) => Ok(s.detach_idle(reads, faults)?),
            EventSource::TraceFs(_) => Ok(()),
        }
    }

    /// Attach or detach the programs of page reads and faults after a
    /// poll, before the events read are acted on (eBPF under [`Scope::Execs`]; elsewhere
    /// nothing).
    pub fn settle_reads(&mut self) -> Result<(), SourceError> {
        match self {
            EventSource::Ebpf(s) => Ok(s.settle_reads()?),
            EventSource::TraceFs(_) => Ok(()),
        }
    }

    /// Whether the exits of followed threads come as events with their
    /// block-I/O wait ([`EventKind::Exit`](crate::tracefs::EventKind)).
    pub fn sends_exit_waits(&self) -> bool {
        match self {
            EventSource::Ebpf(s) => s.sends_exit_waits(),
            EventSource::TraceFs(_) => false,
        }
    }

    /// Whether the programs of page reads and faults are attached and how
    /// many times they were detached; `None` where they never are.
    pub fn reads_attached(&self) -> Option<(bool, u64)> {
        match self {
            EventSource::Ebpf(s) => s.reads_attached(),
            EventSource::TraceFs(_) => None,
        }
    }

    /// Since when (monotonic ns) every page read of a followed thread is
    /// seen: `None` while the eBPF source's programs of page reads and
    /// faults are detached, 0 where they never are (`ebpf::reads`).
    pub fn reads_seen_since(&self) -> Option<u64> {
        match self {
            EventSource::Ebpf(s) => s.reads_seen_since(),
            EventSource::TraceFs(_) => Some(0),
        }
    }

    /// Execs dropped in the kernel as quiet so far ([`EventSource::quiet`]).
    pub fn quieted(&self) -> u64 {
        match self {
            EventSource::Ebpf(s) => s.quieted(),
            EventSource::TraceFs(_) => 0,
        }
    }

    /// What was read so far.
    pub fn stats(&self) -> SourceStats {
        match self {
            EventSource::Ebpf(s) => s.stats,
            EventSource::TraceFs(i) => i.stats,
        }
    }
}
