//! The eBPF event source: the same tracepoints as [`crate::tracefs`], read
//! through one BPF ring buffer, with the process-tree filter kept in the
//! kernel.
//!
//! Why: on a tree walker the tracefs source cost the program itself
//! ~0.35 µs per event inside its own context (an `os.pread` loop went
//! from 0.71 to 1.05 µs per call with `mm_filemap_get_pages` on, in a
//! bare instance with no reader), and outrider a `read` of each per-CPU
//! page; a BPF program on the same tracepoint cost ~0.1 µs (bpftrace,
//! pid-filtered), and the ring buffer is read from shared memory with no
//! system call per page. Measured numbers are in `bench/results/`.
//!
//! One program per tracepoint, generated ([`programs`]) with the offsets of the
//! running kernel's `format` files ([`outrider_sys::bpf`] says why no
//! compiler is involved). Each program:
//!
//! 1. returns unless the current thread is followed: the threads
//!    followed (thread ids, as tracefs's `set_event_pid` with
//!    `event-fork`, each with a stamp) are a hash and a bitmap tested
//!    first, so a thread not followed costs no hash lookup ([`followed`];
//!    no test at all when the source follows every task);
//! 2. for `sched_process_fork`, follows the child with its
//!    parent's stamp; for `sched_process_exit`, removes the thread and
//!    emits nothing, or, under [`Scope::Execs`] where the kernel's BTF
//!    says where it is, the exit with the thread's block-I/O wait
//!    appended (delay accounting's, so the daemon needs no taskstats
//!    message at every exit on the machine); following every exec
//!    ([`Scope::Execs`], the daemon's scope), `sched_process_exec` is
//!    emitted for every task, follows it with a new stamp (the exec's
//!    time) and wakes
//!    the reader at once, while the other records wait for the reader's
//!    next poll (`BPF_RB_NO_WAKEUP`, unless the record takes the ring
//!    past a multiple of [`WAKE_BYTES`] unread, or a stamp still judged
//!    to [`WAKE_MISSED`] pages missed), unless the file name
//!    the exec was given is quiet ([`EbpfSource::quiet`]); a switch
//!    ([`EbpfSource::record_everyone`]) lets every task's records
//!    through; under [`Scope::Execs`] a thread's sequential read of one
//!    file is sent up to a bound ([`runs`]), a record of pages that stamp
//!    sent already is dropped ([`repeats`]), and the pages each stamp read and
//!    missed are counted, a stamp that read its first pages from memory
//!    being let go ([`hot`]);
//! 3. reserves a ring-buffer record, writes the CLOCK_MONOTONIC time
//!    (`bpf_ktime_get_ns`; an exec's under [`Scope::Execs`] is its
//!    stamp, taken a moment before), the common header (event id,
//!    thread id: the context's first 8 bytes cannot be read by a
//!    tracepoint program) and copies the record's fixed fields, 8 bytes at a time;
//!    a record whose reservation fails (buffer full) is counted in
//!    `lost`.
//!
//! Under [`Scope::Execs`] the page reads, faults and fault-around maps
//! run on raw tracepoints where the kernel has BTF, and build that
//! record themselves ([`raw`]).
//!
//! So a record in the ring is `[u64 time][the tracepoint record as
//! tracefs lays it out]`, decoded by the tracefs [`Decoder`]. The
//! programs detach when the source is dropped.

use crate::tracefs::decode::{Continuations, Decoder};
use crate::tracefs::format::{parse_format, EventFormat};
use crate::tracefs::{ensure_mounted, EventKind, LiveEvent, SourceStats};
use outrider_sys::bpf::{Map, MapType, Program, RingBuf};
use outrider_sys::detach::detached;
use outrider_sys::fdpass::Offer;
use outrider_sys::monotonic_ns;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

mod exits;
mod followed;
mod hot;
mod kernel;
mod programs;
mod raw;
mod reads;
mod repeats;
pub mod runs;

pub use hot::WAKE_MISSED;
/// How soon the programs of reads are detached once an untrack emptied
/// the table of followed threads.
pub use reads::CHECK_UNTRACKED_NS;

use followed::Followed;
use programs::{
    program, record_end, role_of, Maps, Role, CTX, EVERYONE_KEY, QUIET_KEY, SLOT_SCRATCH,
    SLOT_SEEN, SLOT_STAMP, SLOT_TID, TID,
};

/// Ring-buffer size: 1 MiB, ~16 000 records of 64 bytes. The busiest
/// program of the live suite (tar of the source tree) makes 70 000 events
/// a second, 280 per 4 ms batch wait; the reader keeps up unless it is
/// off the CPU for a fifth of a second. Mapping the ring maps every page
/// of it at once and unmapping clears them: at 4 MiB that was ~9% of
/// `outrider run -- true`'s CPU (perf).
pub const RING_BYTES: usize = 1 << 20;
/// Unread bytes in the ring at which a record wakes the reader (an
/// eighth of it, ~2 000 records): records other than execs are
/// submitted with no wake-up, so the reader polls at its own pace, but
/// a program reading fast fills the ring in 0.2 s (`RING_BYTES`).
pub const WAKE_BYTES: usize = 1 << WAKE_SHIFT;
const WAKE_SHIFT: i32 = RING_BYTES.trailing_zeros() as i32 - 3;
/// Threads followed at most (a fork beyond it is counted as lost).
pub const MAX_TRACKED: u32 = 1 << 16;
/// Bytes read per "page" of [`EbpfSource::poll`]'s bound, as tracefs pages.
const POLL_UNIT: usize = 4096;
/// Quiet exec names held at most (the least recently used go first).
pub const QUIET_MAX: u32 = 1024;
/// Bytes of an exec's file name hashed: a longer name is told apart by
/// its first 128 bytes only (two names alike that far share a quiet
/// entry: an exec missed, never one slowed).
const NAME_BYTES: i16 = 128;

/// The eBPF event source.
pub struct EbpfSource {
    ring: RingBuf,
    tracked: Followed,
    counters: Map,
    /// Exec names whose execs are dropped in the kernel until a time
    /// ([`Scope::Execs`] only).
    quiet: Option<Map>,
    /// Per launch stamp, what it read and missed ([`hot`]; [`Scope::Execs`]
    /// only).
    stamps: Option<Map>,
    decoder: Decoder,
    continuations: Continuations,
    /// Perf events holding the programs attached (closed first on drop).
    links: Vec<OwnedFd>,
    _programs: Vec<Program>,
    /// The programs of page reads, faults and fault-around maps, detached
    /// while no thread is followed ([`reads`]; [`Scope::Execs`] on raw
    /// tracepoints only).
    reads: Option<reads::Reads>,
    /// Followed threads' exits are sent, with their block-I/O wait
    /// ([`EventKind::Exit`]).
    exit_waits: bool,
    /// An exec was read since the last [`EbpfSource::settle_reads`].
    exec_read: bool,
    /// A thread was untracked since the last [`EbpfSource::settle_reads`]
    /// (by [`EbpfSource::untrack`]).
    untracked: std::cell::Cell<bool>,
    /// The abstract socket name the source is parked under at the end
    /// (`None`: not parked, [`EbpfSource::stop`]).
    park: Option<Vec<u8>>,
    /// The programs were claimed from a parked source.
    reused: bool,
    /// Programs on raw tracepoints ([`raw`]).
    raw: usize,
    /// How long the parked source waits for the next run.
    linger_ms: u64,
    /// The lost-record count when the source was opened (a claimed
    /// source's counter carries its earlier runs').
    lost_base: u64,
    /// The `cgroup.procs` the detached parker moves to ([`EbpfSource::stop`]).
    home: Option<CString>,
    /// What was read so far (`pages`: 4 KiB units of ring buffer).
    pub stats: SourceStats,
}

/// Stops following threads of an [`EbpfSource`]'s, from any thread.
#[derive(Debug)]
pub struct Untracker(Map);

impl Untracker {
    /// Stop following the threads process `pid` has now (`/proc/PID/task`);
    /// its threads forked later are not followed either, their parent no
    /// longer being. Its child processes stay followed.
    pub fn untrack_threads_of(&self, pid: u32) {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            if let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<u32>().ok())
            {
                let _ = self.0.delete(&tid.to_ne_bytes());
            }
        }
    }
}

/// Which tasks a source records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every task.
    Everyone,
    /// This thread and the tasks it forks from now on.
    Follow(u32),
    /// Every task from its exec on, and the tasks it forks, until
    /// [`EbpfSource::untrack`]: the machine-wide daemon's scope, where a
    /// program it cannot help (its launch recorded, or never watched)
    /// costs a bit test per event in the kernel ([`followed`]) and nothing
    /// in the daemon. The tracefs source recorded every task's events for the
    /// daemon to drop; see `bench/results/daemon.md` for its CPU.
    Execs,
}

impl EbpfSource {
    /// Load and attach programs for `events` (`(system, event)` pairs,
    /// `sched_process_exit` added when following). `follow`: record only
    /// this thread and the tasks it forks from now on; `None`: every task.
    /// `home`: the `cgroup.procs` file the detached process that holds
    /// the tracepoints at the end moves to, `linger_ms` how long it holds
    /// them ([`EbpfSource::stop`]).
    pub fn open(
        events: &[(String, String)],
        follow: Option<u32>,
        home: Option<&Path>,
        linger_ms: u64,
    ) -> io::Result<EbpfSource> {
        let scope = follow.map_or(Scope::Everyone, Scope::Follow);
        EbpfSource::open_scoped(events, scope, home, linger_ms)
    }

    /// [`EbpfSource::open`] for any [`Scope`]; only a source that follows
    /// one tree is parked.
    pub fn open_scoped(
        events: &[(String, String)],
        scope: Scope,
        home: Option<&Path>,
        linger_ms: u64,
    ) -> io::Result<EbpfSource> {
        let root = ensure_mounted().map_err(io::Error::other)?;
        let follow = match scope {
            Scope::Follow(tid) => Some(tid),
            Scope::Everyone | Scope::Execs => None,
        };
        let mut wanted: Vec<(String, String)> = events.to_vec();
        if scope != Scope::Everyone {
            wanted.push(("sched".into(), "sched_process_exit".into()));
        }
        let formats = (wanted.iter())
            .map(|(sys, ev)| read_format(&root, sys, ev))
            .collect::<io::Result<Vec<_>>>()?;
        // Only a source that follows a tree is parked (the programs test the
        // table of followed threads); it is parked again at the end when
        // it may linger.
        let name = follow.map(|_| park_name(&wanted));
        let claimed = name.as_deref().and_then(|n| claim_parked(n, formats.len()));
        let park = name.filter(|_| linger_ms > 0);
        let reused = claimed.is_some();
        let parts = match claimed {
            Some(p) => p,
            None => load(&formats, scope)?,
        };
        if let Some(tid) = follow {
            parts.tracked.follow(tid, 1)?;
        }
        let emitted: Vec<EventFormat> = (formats.into_iter())
            .filter(|f| role_of(f).is_ok_and(|r| r != Role::Exit || parts.exit_waits))
            .collect();
        let mut src = EbpfSource {
            decoder: Decoder::new(&emitted).map_err(io::Error::other)?,
            continuations: Continuations::default(),
            lost_base: 0,
            ring: parts.ring,
            tracked: parts.tracked,
            counters: parts.counters,
            quiet: parts.quiet,
            stamps: parts.stamps,
            links: parts.links,
            _programs: parts.programs,
            reads: parts.reads,
            exit_waits: parts.exit_waits,
            exec_read: false,
            untracked: std::cell::Cell::new(false),
            park,
            reused,
            raw: parts.raw,
            linger_ms,
            home: home.and_then(|h| CString::new(h.as_os_str().as_bytes()).ok()),
            stats: SourceStats::default(),
        };
        src.lost_base = src.lost()?;
        Ok(src)
    }

    /// How many of its programs run on raw tracepoints ([`raw`]).
    pub fn raw_tracepoints(&self) -> usize {
        self.raw
    }

    /// Whether the programs came attached from the previous run's parked
    /// source rather than loaded now.
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// Append the events waiting now to `out` (at most `max_pages` × 4 KiB
    /// of records); returns the 4 KiB units read, as the tracefs source
    /// returns pages.
    pub fn poll(&mut self, out: &mut Vec<LiveEvent>, max_pages: usize) -> io::Result<usize> {
        let before = out.len();
        let decoder = &self.decoder;
        let (names, exit_waits) = (self.quiet.is_some(), self.exit_waits);
        let bytes = self.ring.consume(max_pages * POLL_UNIT, |rec| {
            if rec.len() >= 8 {
                let ts = u64::from_ne_bytes(rec[..8].try_into().expect("8 bytes"));
                if let Some(mut e) = decoder.decode(ts, &rec[8..]) {
                    // The exec's name hash, and the exit's wait, follow
                    // their fields ([`emit`]).
                    let tail =
                        || u64::from_ne_bytes(rec[rec.len() - 8..].try_into().expect("8 bytes"));
                    match (&mut e.kind, names, exit_waits) {
                        (EventKind::Exec { name, .. }, true, _) => *name = tail(),
                        (EventKind::Exit { blkio_ns, .. }, _, true) => *blkio_ns = tail(),
                        _ => {}
                    }
                    out.push(e);
                }
            }
        });
        self.continuations.drop_from(out, before);
        self.exec_read |= (out[before..].iter()).any(|e| matches!(e.kind, EventKind::Exec { .. }));
        self.stats.events += (out.len() - before) as u64;
        let pages = bytes.div_ceil(POLL_UNIT);
        self.stats.pages += pages as u64;
        let lost = self.lost()? - self.lost_base;
        if lost > self.stats.lost_events {
            self.stats.lost_pages += 1;
            self.stats.lost_events = lost;
        }
        Ok(pages)
    }

    /// [`reads`]: attach the programs of page reads and faults if an exec
    /// was read since the last call, and now and then attach them or
    /// detach them as threads are followed or not (soon after a thread
    /// was untracked). Called by the reader after each poll, before it
    /// acts on what it read ([`reads`] says why), and again once it acted
    /// when that untracked a thread. Never called, the programs stay
    /// attached.
    pub fn settle_reads(&mut self) -> io::Result<()> {
        let exec_read = std::mem::take(&mut self.exec_read);
        let untracked = self.untracked.take();
        let Some(r) = &mut self.reads else {
            return Ok(());
        };
        let counters = &self.counters;
        let everyone = || Ok(counter(counters, EVERYONE_KEY)? != 0);
        let seen = (exec_read, untracked);
        r.settle(monotonic_ns(), seen, &self.tracked.hash, everyone)
    }

    /// Detach the program of page reads (`reads`) and those of faults
    /// and fault-around maps (`faults`) while no thread is followed (both,
    /// by default), or keep them attached ([`reads`]); nothing where the
    /// source has no such program.
    pub fn detach_idle(&mut self, reads: bool, faults: bool) -> io::Result<()> {
        match &mut self.reads {
            Some(r) => r.detach_idle(reads, faults),
            None => Ok(()),
        }
    }

    /// Whether the exits of followed threads are sent with their
    /// block-I/O wait ([`EventKind::Exit`]; [`Scope::Execs`] where the
    /// kernel's BTF tells where the wait is).
    pub fn sends_exit_waits(&self) -> bool {
        self.exit_waits
    }

    /// Whether the programs of page reads and faults are attached, and
    /// how many times they were detached; `None` when they never are.
    pub fn reads_attached(&self) -> Option<(bool, u64)> {
        (self.reads.as_ref()).map(|r| (r.attached(), r.detached))
    }

    /// Since when every page read of a followed thread is seen
    /// ([`reads::Reads::seen_since`]): `None` while the program is
    /// detached, 0 where it never is.
    pub fn reads_seen_since(&self) -> Option<u64> {
        match &self.reads {
            Some(r) => r.seen_since(),
            None => Some(0),
        }
    }

    /// Records the kernel could not store (ring buffer full, or a fork
    /// beyond [`MAX_TRACKED`]).
    fn lost(&self) -> io::Result<u64> {
        self.counter(0)
    }

    /// Execs dropped in the kernel as quiet ([`EbpfSource::quiet`]) so far.
    pub fn quieted(&self) -> u64 {
        self.counter(QUIET_KEY).unwrap_or(0)
    }

    fn counter(&self, key: u32) -> io::Result<u64> {
        counter(&self.counters, key)
    }

    /// Block until a record waits, `also` is readable (a pidfd: the
    /// program exited), or `timeout` passes; true when a record waits.
    pub fn wait(&self, also: Option<BorrowedFd<'_>>, timeout: Duration) -> bool {
        let mut fds = [self.ring.fd(), also.map_or(-1, |f| f.as_raw_fd())].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: a valid array of two pollfd (a negative fd is ignored).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        n > 0 && fds[0].revents & libc::POLLIN != 0
    }

    /// Stop following thread `tid` (its exec is not a launch, or its
    /// launch was recorded). Its children forked before stay followed
    /// until they are untracked or exit.
    pub fn untrack(&self, tid: u32) {
        if let Ok(true) = self.tracked.hash.delete(&tid.to_ne_bytes()) {
            self.untracked.set(true);
        }
    }

    /// Whether a thread was untracked since the last
    /// [`EbpfSource::settle_reads`].
    pub fn untracked_since_settled(&self) -> bool {
        self.untracked.get()
    }

    /// A handle that stops following threads, for another thread.
    pub fn untracker(&self) -> io::Result<Untracker> {
        Ok(Untracker(self.tracked.hash.try_clone()?))
    }

    /// Drop the execs of file name `name` (the hash in their
    /// [`EventKind::Exec`]) in the kernel until CLOCK_MONOTONIC `until_ns`:
    /// no wake-up, no record, the task not followed. A thread followed
    /// already (forked by a followed one) stays followed. Under
    /// [`Scope::Execs`] only; elsewhere nothing.
    pub fn quiet(&self, name: u64, until_ns: u64) {
        if let Some(q) = &self.quiet {
            let _ = q.update(&name.to_ne_bytes(), &until_ns.to_ne_bytes());
        }
    }

    /// Stop following an exec'd image (its stamp) whose first `pages`
    /// pages read came from memory, at most one in `miss_share` of them
    /// missed, in the kernel ([`hot`]; [`Scope::Execs`] only, else a
    /// no-op); `pages` 0: never.
    pub fn let_go_from_memory(&self, pages: u64, miss_share: u64) -> io::Result<()> {
        if self.stamps.is_none() {
            return Ok(());
        }
        let c = &self.counters;
        c.update(&hot::SHARE_KEY.to_ne_bytes(), &miss_share.to_ne_bytes())?;
        c.update(&hot::PAGES_KEY.to_ne_bytes(), &pages.to_ne_bytes())
    }

    /// Never let the image thread `tid` runs go for reading from memory
    /// ([`EbpfSource::let_go_from_memory`]): its launch is judged
    /// otherwise. False when `tid` is not followed.
    pub fn keep_following(&self, tid: u32) -> bool {
        match (&self.stamps, self.stamp_of(tid)) {
            (Some(stamps), Some(stamp)) => hot::keep(stamps, stamp).is_ok(),
            _ => false,
        }
    }

    /// Whether the launch exec'd at `stamp` (its exec record's time) was
    /// let go for reading from memory ([`EbpfSource::let_go_from_memory`]).
    /// Its reader may never see it otherwise: the kernel counts the pages
    /// its records read before the repeats among them are dropped, so the
    /// records sent can stay under the bound ([`hot`]). False when its
    /// stamp is no longer held (the table's least recently used go).
    pub fn let_go(&self, stamp: u64) -> bool {
        (self.stamps.as_ref()).and_then(|m| hot::state(m, stamp)) == Some(hot::LET_GO)
    }

    /// The stamp thread `tid` is followed with, if it is.
    pub fn stamp_of(&self, tid: u32) -> Option<u64> {
        let v = self.tracked.hash.lookup(&tid.to_ne_bytes()).ok()??;
        Some(u64::from_ne_bytes(v[..8].try_into().ok()?))
    }

    /// Let every task's records through (true) or only followed ones'.
    pub fn record_everyone(&mut self, on: bool) -> io::Result<()> {
        (self.counters).update(&EVERYONE_KEY.to_ne_bytes(), &u64::from(on).to_ne_bytes())?;
        match &mut self.reads {
            Some(r) if on => r.attach(true),
            _ => Ok(()),
        }
    }

    /// Is thread `tid` followed now? (Tests.)
    pub fn follows(&self, tid: u32) -> bool {
        matches!(self.tracked.hash.lookup(&tid.to_ne_bytes()), Ok(Some(_)))
    }

    /// Whether the programs look thread `tid` up in the table of followed
    /// threads (its bit is set, or it is past the bitmap), as every
    /// followed thread must be ([`followed`]).
    pub fn looked_up(&self, tid: u32) -> bool {
        self.tracked.bit(tid).is_ok_and(|b| b != Some(false))
    }

    /// Detach the programs now; records already stored can still be read.
    ///
    /// Closing a perf event that runs a BPF program waits, under the
    /// kernel's global `bpf_event_mutex`, for an RCU-tasks-trace grace
    /// period (`perf_event_detach_bpf_prog`): 40 ms per program, seven
    /// programs (measured with strace). Done here it would add that to
    /// every run; done by a detached process it made the next run's
    /// attach wait for the mutex (back-to-back `run -- true`: 10-50 ms
    /// instead of 7). So, as the tracefs source parks its instance, the
    /// source is parked: a detached process keeps the programs attached,
    /// the maps and the ring, and hands them to the next run that claims
    /// them within the linger time ([`outrider_sys::fdpass`], root only);
    /// unclaimed, it exits and the slow closes are its own. Where parking
    /// is off or the name is taken, a detached process closes them.
    pub fn stop(&mut self) {
        let mut links = std::mem::take(&mut self.links);
        links.extend(
            self.reads
                .as_mut()
                .map(reads::Reads::take_links)
                .unwrap_or_default(),
        );
        if links.is_empty() {
            return;
        }
        let mut fds = vec![self.ring.fd()];
        fds.extend(self.tracked.raw_fds());
        fds.push(self.counters.raw_fd());
        fds.extend(links.iter().map(|l| l.as_raw_fd()));
        let home = self.home.as_deref();
        if let Some(name) = &self.park {
            // Nothing of this run's is followed any more.
            let _ = self.tracked.hash.clear(4);
            if let Ok(mut offer) = bind_park(name, &fds) {
                let mut keep = fds.clone();
                keep.push(offer.listener());
                let linger = Duration::from_millis(self.linger_ms);
                detached(c"outrider-bpf-park", &keep, home, || {
                    offer.serve(linger);
                });
                return;
            }
        }
        detached(c"outrider-bpf-end", &fds, home, || {});
    }
}

/// Counter `key` of the programs' counters map (0 when unset).
fn counter(counters: &Map, key: u32) -> io::Result<u64> {
    let v = counters.lookup(&key.to_ne_bytes())?;
    Ok(v.map_or(0, |v| {
        u64::from_ne_bytes(v[..8].try_into().expect("8 bytes"))
    }))
}

/// Offer `fds` under `name`. The parked source this run claimed holds the
/// name until it has exited, a moment after it handed its parts over
/// (a run that stops at once, as `outrider run -- true` does, met it
/// still there and closed its programs instead of parking them): a taken
/// name is tried again, five times a millisecond apart.
fn bind_park(name: &[u8], fds: &[i32]) -> io::Result<Offer> {
    for _ in 0..5 {
        match Offer::bind(name, fds) {
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            r => return r,
        }
    }
    Offer::bind(name, fds)
}

/// What a source runs on: its maps, ring and attached programs.
struct Parts {
    ring: RingBuf,
    tracked: Followed,
    counters: Map,
    quiet: Option<Map>,
    stamps: Option<Map>,
    links: Vec<OwnedFd>,
    programs: Vec<Program>,
    /// The programs of page reads and faults ([`reads`]), not in `links`
    /// nor `programs`.
    reads: Option<reads::Reads>,
    /// The exits of followed threads are sent with their block-I/O wait.
    exit_waits: bool,
    /// Programs on raw tracepoints ([`raw`]).
    raw: usize,
}

/// Create the maps, load a program per format and attach it.
fn load(formats: &[EventFormat], scope: Scope) -> io::Result<Parts> {
    let ring = RingBuf::create("outrider_ring", RING_BYTES)?;
    let tracked = Followed::create()?;
    let counters = Map::create(MapType::Array, "outrider_lost", 4, 8, 5, 0)?;
    let quiet = (scope == Scope::Execs)
        .then(|| Map::create(MapType::LruHash, "outrider_quiet", 8, 8, QUIET_MAX, 0))
        .transpose()?;
    // Held by the programs that use it once they are loaded.
    let seen = (scope == Scope::Execs).then(repeats::create).transpose()?;
    let stamps = (scope == Scope::Execs).then(hot::create).transpose()?;
    let (mut links, mut programs) = (Vec::new(), Vec::new());
    let kernel = (scope == Scope::Execs).then(kernel::Kernel::open).flatten();
    let waits = kernel.as_ref().and_then(exits::WaitOffsets::of);
    let maps = Maps {
        ring: ring.map(),
        tracked: tracked.tables(),
        counters: &counters,
        quiet: quiet.as_ref(),
        seen: seen.as_ref(),
        stamps: stamps.as_ref(),
        cut_runs: scope == Scope::Execs,
        waits,
    };
    let offsets = kernel.as_ref().and_then(raw::Offsets::of);
    let (mut raw_programs, mut reads) = (0, reads::Reads::default());
    for format in formats {
        let role = role_of(format)?;
        let raw = offsets.and_then(|o| Some((raw::layout(format, record_end(format))?, o)));
        let attached = raw.map(|r| attach_raw(format, role, scope, &maps, r));
        let (prog, link) = match (attached, reads::event(&format.name)) {
            (Some(Ok((prog, link))), Some(event)) => {
                raw_programs += 1;
                reads.add(prog, event, link);
                continue;
            }
            (Some(Ok(attached)), None) => {
                raw_programs += 1;
                attached
            }
            // No raw tracepoint (or its program refused): the tracepoint.
            (None | Some(Err(_)), _) => {
                let insns = program(format, role, scope, &maps, None)?;
                let prog = Program::load_tracepoint(&format.name, &insns)?;
                let link = prog.attach_tracepoint(u32::from(format.id)).map_err(|e| {
                    io::Error::new(e.kind(), format!("attaching to {}: {e}", format.name))
                })?;
                (prog, link)
            }
        };
        links.push(link);
        programs.push(prog);
    }
    Ok(Parts {
        ring,
        tracked,
        counters,
        quiet,
        stamps,
        links,
        programs,
        reads: (!reads.is_empty()).then_some(reads),
        raw: raw_programs,
        exit_waits: waits.is_some(),
    })
}

/// `format`'s program on its raw tracepoint ([`raw`]).
fn attach_raw(
    format: &EventFormat,
    role: Role,
    scope: Scope,
    maps: &Maps<'_>,
    raw: (raw::Layout, raw::Offsets),
) -> io::Result<(Program, OwnedFd)> {
    let insns = program(format, role, scope, maps, Some(raw))?;
    let prog = Program::load_raw_tracepoint(&format.name, &insns)?;
    let link = prog.attach_raw_tracepoint(&format.name)?;
    Ok((prog, link))
}

/// The name a source of these events is parked under: the programs differ
/// with the event set and with outrider's version, the maps with their
/// sizes (a ring claimed at another size would be read wrongly).
fn park_name(events: &[(String, String)]) -> Vec<u8> {
    let mut text = format!(
        "outrider-bpf-{},ring:{RING_BYTES},tracked:{MAX_TRACKED}x{}",
        env!("CARGO_PKG_VERSION"),
        followed::VALUE_BYTES
    );
    for (sys, ev) in events {
        text += &format!(",{sys}:{ev}");
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("outrider-bpf-park-{h:016x}").into_bytes()
}

/// The parked source's parts, when one is offered under `name` with a
/// program per tracepoint: ring (its waiting records skipped), followed
/// threads (emptied: their hash and bitmap), counters, then the attached
/// programs' perf events.
fn claim_parked(name: &[u8], programs: usize) -> Option<Parts> {
    let fds = outrider_sys::fdpass::claim(name, CLAIM_WAIT).ok()??;
    if fds.len() != 4 + programs {
        // Not what we would park: their slow detach goes elsewhere.
        let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
        detached(c"outrider-bpf-end", &raw, None, || {});
        return None;
    }
    let mut it = fds.into_iter();
    let ring = RingBuf::from_fd(it.next()?, RING_BYTES).ok()?;
    let tracked = Followed::from_fds(it.next()?, it.next()?);
    tracked.hash.clear(4).ok()?;
    let counters = Map::from_fd(it.next()?, 8);
    Some(Parts {
        ring,
        tracked,
        counters,
        quiet: None,
        stamps: None,
        links: it.collect(),
        programs: Vec::new(),
        reads: None,
        raw: 0,
        exit_waits: false,
    })
}

/// How long a claim waits for the parked source to answer.
const CLAIM_WAIT: Duration = Duration::from_millis(100);

impl Drop for EbpfSource {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_format(root: &Path, sys: &str, ev: &str) -> io::Result<EventFormat> {
    let path = root.join("events").join(sys).join(ev).join("format");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    parse_format(&text, &path.display().to_string()).map_err(io::Error::other)
}
