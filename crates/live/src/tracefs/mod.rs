//! The tracefs event source: a private tracing instance read through the
//! binary per-CPU `trace_pipe_raw` buffers.
//!
//! Why a private instance (`/sys/kernel/tracing/instances/outrider-<pid>`):
//! it has its own ring buffers, event enables and clock, so the global
//! tracing state (and anyone else's instance) is untouched. The instance is
//! removed when [`Instance`] is dropped; an instance left behind by a killed
//! outrider (its pid no longer alive) is removed by the next
//! [`Instance::open`].
//!
//! Parking ([`AtEnd::Park`], what `outrider run` uses): creating an
//! instance and enabling its events cost 3-4 ms before a program can start
//! (mkdir 1.5-2.2 ms, five enables 0.3 ms each, measured here), and
//! removing one holds tracefs's locks for ~0.1 s, which the next run's
//! mkdir waited for. So a run's instance is left behind stopped, as
//! `outrider-park-<pid>`, for the next run to claim: each user holds an
//! exclusive `flock` on the instance directory while it uses it. A detached
//! process clears the pid filter (emptying a non-empty `set_event_pid`
//! waits for RCU grace periods, 80 ms here, so it is done off the
//! program's path, never at claim), unlocks, and removes the instance
//! after the linger unless someone holds it then. A parked instance
//! records nothing (`tracing_on` 0); its leftovers are discarded on claim.
//! A remover cannot tell whether its instance was claimed and parked again
//! during its linger: it may remove an instance parked moments ago, and the
//! next run then makes a new one. Two runs back to back (no pause) still
//! wait for the first one's filter to empty: 0.09 s, against 0.1-0.16 s
//! behind an rmdir before (`outrider run -- /bin/true` ten times in a row,
//! here).
//!
//! Records are decoded here rather than through the text `trace_pipe`: the
//! binary pages are cheaper to read and carry the kernel's lost-event flags
//! ([`ring`]); field offsets come from each event's `format` file
//! ([`format`](mod@format), [`decode`]).

pub mod decode;
pub mod format;
pub mod ring;

pub use decode::{folio_pages, EventKind, LiveEvent, EVENTS, EXEC_EVENT};

use std::ffi::{CStr, CString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use outrider_sys::detach::detached;
use outrider_sys::monotonic_ns;

/// Where tracefs is normally mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Prefix of outrider's instance names.
pub const INSTANCE_PREFIX: &str = "outrider-";
/// Prefix of parked instances ([`AtEnd::Park`]): `outrider-park-<pid>`.
pub const PARK_PREFIX: &str = "outrider-park-";

/// Something went wrong setting up or reading tracefs.
#[derive(Debug, thiserror::Error)]
pub enum TraceFsError {
    /// A tracefs file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// tracefs is not mounted and could not be mounted.
    #[error("tracefs is not available at {TRACEFS} and mounting it failed: {0}")]
    NoTraceFs(io::Error),
    /// A format file was not understood.
    #[error("{0}")]
    Format(#[from] format::FormatError),
    /// A page could not be decoded.
    #[error("{0}")]
    Page(#[from] ring::PageError),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TraceFsError + '_ {
    move |source| TraceFsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Read a tracefs text file with one large `read` per call: some tracefs
/// files (`events/header_page`) regenerate their text on every read and
/// answer a small first read (Rust's `read_to_string` probes with 32 bytes)
/// and then EOF, which would truncate them.
fn read_text(path: &Path) -> Result<String, TraceFsError> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = f.read(&mut buf[len..]).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        len += n;
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| TraceFsError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

fn write_text(path: &Path, text: &str) -> Result<(), TraceFsError> {
    fs::write(path, text).map_err(io_err(path))
}

/// Mount tracefs at [`TRACEFS`] if it is not there yet.
pub fn ensure_mounted() -> Result<PathBuf, TraceFsError> {
    let root = PathBuf::from(TRACEFS);
    if root.join("instances").is_dir() {
        return Ok(root);
    }
    let src = c"nodev";
    let target = c"/sys/kernel/tracing";
    let fstype = c"tracefs";
    // SAFETY: all pointers are valid NUL-terminated strings; no data.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(TraceFsError::NoTraceFs(io::Error::last_os_error()));
    }
    Ok(root)
}

/// Remove `outrider-<pid>` instances whose process is gone (left by a
/// crash or kill -9, or still being removed by the detached process of a
/// run that just ended), from a detached process as [`Instance`]'s drop
/// does: an rmdir waits for RCU grace periods (0.04–0.13 s here), which a
/// run started right after another waited for before its program could
/// start. Returns the names whose removal was started.
pub fn remove_stale_instances(root: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = fs::read_dir(root.join("instances")) else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // outrider-<pid> or outrider-<pid>-<suffix>
        let Some(pid) = name
            .strip_prefix(INSTANCE_PREFIX)
            .and_then(|p| p.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if remove_detached(&entry.path(), None) {
            removed.push(name);
        }
    }
    removed
}

/// Instance settings.
#[derive(Clone, Debug)]
pub struct InstanceOptions {
    /// Ring-buffer size per CPU in KiB; 0 (the default) keeps the size the
    /// kernel gives a new instance (1410 KiB here: ~29 000 filemap events
    /// per CPU, over a second of a tree walker's events and 0.1 s of an
    /// mmap scan's, against a reader that wakes within 1–20 ms).
    /// Resizing costs 20–28 ms before the program can start (the ring
    /// buffer waits for RCU grace periods, even to shrink; measured here),
    /// which was most of `outrider run -- true`'s added time.
    pub buffer_kb_per_cpu: u32,
    /// Instance name (default `outrider-<our pid>`).
    pub name: String,
    /// Events to enable (default [`EVENTS`]).
    pub events: Vec<(String, String)>,
    /// Kernel-side filter: record only this task and the tasks it forks
    /// from now on (`set_event_pid` + `options/event-fork`). Default `None`
    /// (every task). `outrider run` passes its own pid before spawning the
    /// program, so the program's tree is followed by the kernel and the
    /// rest of the machine costs nothing; outrider's I/O workers, started
    /// before, are not in the set.
    pub follow_pid: Option<u32>,
    /// The eBPF source follows every task from its exec on
    /// ([`crate::ebpf::Scope::Execs`]) instead of `follow_pid`'s tree;
    /// the tracefs source records every task either way. Default false.
    pub follow_execs: bool,
    /// What dropping the instance does (default [`AtEnd::Remove`]).
    pub at_end: AtEnd,
    /// A `cgroup.procs` file the detached process of [`AtEnd::Park`] and
    /// [`AtEnd::RemoveDetached`] moves itself to first (default `None`:
    /// it stays where we are). `outrider run` follows its program into the
    /// program's memory cgroup and gives its own first one here: a remover
    /// lingering in the program's cgroup would keep it from being removed.
    pub detached_home: Option<PathBuf>,
}

/// What happens to an [`Instance`] when it is dropped. Tracing is stopped
/// and every descriptor of the instance closed first in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtEnd {
    /// rmdir before `drop` returns.
    Remove,
    /// rmdir from a detached process. The rmdir waits for the kernel's RCU
    /// grace periods, about 0.1 s here, which `outrider run` would
    /// otherwise add to every run's wall time after the program exited; if
    /// the detached removal is killed, the next start removes the stale
    /// instance.
    RemoveDetached,
    /// Claim a parked instance (or create one) and park it again at the
    /// end, removed after `linger_ms` unless claimed by then (the module
    /// comment). The instance name in [`InstanceOptions::name`] is not
    /// used. A remover that is killed leaves the instance for the next
    /// claim.
    Park {
        /// How long a parked instance waits for its next user.
        linger_ms: u64,
    },
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            buffer_kb_per_cpu: 0,
            name: format!("{INSTANCE_PREFIX}{}", std::process::id()),
            events: EVENTS
                .iter()
                .map(|(s, e)| (s.to_string(), e.to_string()))
                .collect(),
            follow_pid: None,
            follow_execs: false,
            at_end: AtEnd::Remove,
            detached_home: None,
        }
    }
}

/// Counters of one [`Instance`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Ring-buffer pages read.
    pub pages: u64,
    /// Records decoded into events.
    pub events: u64,
    /// Pages whose header flagged lost events.
    pub lost_pages: u64,
    /// Lost events the kernel counted (a lower bound when not every page
    /// stored its count).
    pub lost_events: u64,
}

/// A private tracing instance with the outrider events enabled.
pub struct Instance {
    path: PathBuf,
    cpus: Vec<File>,
    layout: format::PageLayout,
    decoder: decode::Decoder,
    continuations: decode::Continuations,
    page: Vec<u8>,
    at_end: AtEnd,
    detached_home: Option<std::ffi::CString>,
    /// The directory's descriptor holding the instance's `flock`
    /// ([`AtEnd::Park`]).
    lock: Option<File>,
    /// A parked instance was claimed.
    reused: bool,
    /// CLOCK_MONOTONIC minus the instance's clock, added to every
    /// timestamp (see [`Instance::calibrate_clock`]).
    clock_offset_ns: i64,
    /// The clock marker (`None` when the clock is `mono` itself).
    marker: Option<Marker>,
    /// Events read while calibrating, handed out by the first poll.
    pending: Vec<LiveEvent>,
    /// What was read so far.
    pub stats: SourceStats,
}

impl Instance {
    /// Create the instance (mounting tracefs and removing stale instances
    /// first) or claim a parked one, enable the events, and open every
    /// CPU's raw pipe.
    pub fn open(opts: &InstanceOptions) -> Result<Instance, TraceFsError> {
        let root = ensure_mounted()?;
        remove_stale_instances(&root);
        let (path, lock, reused) = match opts.at_end {
            AtEnd::Park { .. } => claim_parked(&root)?,
            _ => {
                let path = root.join("instances").join(&opts.name);
                if !path.is_dir() {
                    fs::create_dir(&path).map_err(io_err(&path))?;
                }
                (path, None, false)
            }
        };
        // From here on, Drop removes (or parks) the instance even on error.
        let mut inst = Instance {
            path: path.clone(),
            cpus: Vec::new(),
            layout: format::PageLayout {
                timestamp: (0, 8),
                commit: (8, 8),
                data_offset: 16,
                data_size: 0,
            },
            decoder: decode::Decoder::new(&[])?,
            continuations: Default::default(),
            page: vec![0u8; outrider_sys::page_size()],
            at_end: opts.at_end,
            detached_home: opts.detached_home.as_deref().and_then(cstring),
            lock,
            reused,
            clock_offset_ns: 0,
            marker: None,
            pending: Vec::new(),
            stats: SourceStats::default(),
        };
        inst.layout = format::parse_header_page(&read_text(&root.join("events/header_page"))?)?;
        write_text(&path.join("tracing_on"), "0")?;
        // Sized while tracing is off: growing a buffer that records lost
        // events silently here (a process tree's forks went missing).
        if opts.buffer_kb_per_cpu > 0 {
            write_text(
                &path.join("buffer_size_kb"),
                &opts.buffer_kb_per_cpu.to_string(),
            )?;
        }
        inst.follow(opts.follow_pid, reused)?;
        inst.decoder = decode::Decoder::new(&inst.enable(&opts.events, reused)?)?;
        let mut n = 0;
        while path.join(format!("per_cpu/cpu{n}")).is_dir() {
            let p = path.join(format!("per_cpu/cpu{n}/trace_pipe_raw"));
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(io_err(&p))?;
            inst.cpus.push(f);
            n += 1;
        }
        if reused {
            // What the last user's leftover tasks did before it stopped.
            inst.read_pages(usize::MAX, |_, _, _| {})?;
            inst.stats = SourceStats::default();
        }
        // Wake a waiting reader ([`Instance::wait`]) at the first event,
        // not when a buffer is half full (the default 50 %): the reader
        // batches by sleeping after it wakes. Older kernels lack the file.
        let _ = write_text(&path.join("buffer_percent"), "0");
        write_text(&path.join("tracing_on"), "1")?;
        inst.calibrate_clock(&root)?;
        Ok(inst)
    }

    /// Set the kernel-side task filter ([`InstanceOptions::follow_pid`]).
    /// A parked instance's filter was emptied when it was parked; should
    /// it still hold pids (its parker was killed first), it is emptied
    /// here, the slow way.
    fn follow(&self, pid: Option<u32>, reused: bool) -> Result<(), TraceFsError> {
        let pids = self.path.join("set_event_pid");
        if reused && !read_text(&pids)?.trim().is_empty() {
            File::create(&pids).map_err(io_err(&pids))?;
        }
        if let Some(pid) = pid {
            let fork = self.path.join("options/event-fork");
            if !reused || read_text(&fork)?.trim() != "1" {
                write_text(&fork, "1")?;
            }
            write_text(&pids, &pid.to_string())?;
        }
        Ok(())
    }

    /// Enable `events` (on a reused instance: those not enabled yet, and
    /// disable the others); returns their formats.
    fn enable(
        &self,
        events: &[(String, String)],
        reused: bool,
    ) -> Result<Vec<format::EventFormat>, TraceFsError> {
        let on_now = if reused {
            read_text(&self.path.join("set_event"))?
        } else {
            String::new()
        };
        let is_on = |sys: &str, ev: &str| on_now.lines().any(|l| l == format!("{sys}:{ev}"));
        let mut formats = Vec::new();
        for (sys, ev) in events {
            let dir = self.path.join("events").join(sys).join(ev);
            let fpath = dir.join("format");
            formats.push(format::parse_format(
                &read_text(&fpath)?,
                &fpath.display().to_string(),
            )?);
            if !is_on(sys, ev) {
                write_text(&dir.join("enable"), "1")?;
            }
        }
        for line in on_now.lines() {
            let Some((sys, ev)) = line.split_once(':') else {
                continue;
            };
            if !events.iter().any(|(s, e)| s == sys && e == ev) {
                write_text(
                    &self.path.join("events").join(sys).join(ev).join("enable"),
                    "0",
                )?;
            }
        }
        Ok(formats)
    }

    /// Block until an event can be read on some CPU, `also` is readable
    /// (a pidfd: the program exited), or `timeout` passes. Returns true
    /// when an event can be read.
    pub fn wait(&self, also: Option<BorrowedFd<'_>>, timeout: std::time::Duration) -> bool {
        let mut fds: Vec<libc::pollfd> = (self.cpus.iter())
            .map(|f| f.as_raw_fd())
            .chain(also.map(|f| f.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        n > 0
            && fds[..self.cpus.len()]
                .iter()
                .any(|p| p.revents & libc::POLLIN != 0)
    }

    /// Make timestamps CLOCK_MONOTONIC, which the rest of outrider uses.
    ///
    /// The instance keeps the kernel's default `local` clock: switching
    /// its `trace_clock` to `mono` resets the buffers behind two RCU grace
    /// periods, 15-35 ms here on every run. Instead a marker is written to
    /// the instance's `trace_marker` between two `clock_gettime` calls and
    /// its recorded timestamp read back: the difference is the offset from
    /// the instance's clock to CLOCK_MONOTONIC (the bracket is a few
    /// microseconds wide). Both clocks count nanoseconds, but CLOCK_MONOTONIC
    /// is slewed by NTP, so [`Instance::poll`] writes a new marker every
    /// [`CLOCK_RESYNC_NS`] and the offset follows it. Events read while
    /// looking for the first marker are kept for the first poll. When no
    /// marker comes back (a tracefs without `trace_marker`), the clock is
    /// switched to `mono` after all.
    fn calibrate_clock(&mut self, root: &Path) -> Result<(), TraceFsError> {
        self.marker = Marker::open(root, &self.path);
        if self.marker.is_some() {
            self.send_marker();
            let mut pending = Vec::new();
            let _ = self.read_pages(usize::MAX, |ts, rec, decoder| {
                if let Some(e) = decoder.decode(ts, rec) {
                    pending.push(e);
                }
            });
            if self.marker.as_ref().is_some_and(|m| m.synced) {
                self.continuations.drop_from(&mut pending, 0);
                let offset = self.clock_offset_ns;
                for e in &mut pending {
                    e.ts_ns = e.ts_ns.saturating_add_signed(offset);
                }
                self.stats.events += pending.len() as u64;
                self.pending = pending;
                return Ok(());
            }
        }
        self.marker = None;
        write_text(&self.path.join("tracing_on"), "0")?;
        write_text(&self.path.join("trace_clock"), "mono")?;
        write_text(&self.path.join("tracing_on"), "1")?;
        self.clock_offset_ns = 0;
        Ok(())
    }

    /// Write a clock marker, remembering when (the middle of the write).
    fn send_marker(&mut self) {
        let Some(m) = self.marker.as_mut() else {
            return;
        };
        let before = monotonic_ns();
        if io::Write::write_all(&mut m.file, MARKER_TEXT).is_ok() {
            let after = monotonic_ns();
            m.sent_mid_ns = Some(before + (after - before) / 2);
        }
    }

    /// Was a parked instance claimed ([`AtEnd::Park`]) rather than made?
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// The instance directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Is the instance still there? (Someone may remove it under us.)
    pub fn alive(&self) -> bool {
        self.path.join("tracing_on").exists()
    }

    /// Read every page available now on every CPU and append the decoded
    /// events to `out` (per CPU in order; the caller sorts by time if it
    /// needs a global order). At most `max_pages` pages are read per call
    /// (a bound on the work and memory of one poll). Returns pages read.
    pub fn poll(
        &mut self,
        out: &mut Vec<LiveEvent>,
        max_pages: usize,
    ) -> Result<usize, TraceFsError> {
        out.append(&mut self.pending);
        if let Some(m) = &self.marker {
            // Due a second after the last measurement, or after a marker
            // that never came back (lost with a full buffer).
            let since = m.sent_mid_ns.unwrap_or(m.last_sync_ns);
            if monotonic_ns() >= since + CLOCK_RESYNC_NS {
                self.send_marker();
            }
        }
        let before = out.len();
        let pages = self.read_pages(max_pages, |ts, rec, decoder| {
            if let Some(e) = decoder.decode(ts, rec) {
                out.push(e);
            }
        })?;
        self.continuations.drop_from(out, before);
        let offset = self.clock_offset_ns;
        for e in &mut out[before..] {
            e.ts_ns = e.ts_ns.saturating_add_signed(offset);
        }
        self.stats.events += (out.len() - before) as u64;
        Ok(pages)
    }

    /// Read up to `max_pages` pages, calling `each(timestamp, record,
    /// decoder)` for every record with the instance's own timestamps;
    /// counts pages and losses, and takes clock markers out of the stream
    /// (updating the clock offset).
    fn read_pages(
        &mut self,
        max_pages: usize,
        mut each: impl FnMut(u64, &[u8], &decode::Decoder),
    ) -> Result<usize, TraceFsError> {
        let mut pages = 0;
        for cpu in 0..self.cpus.len() {
            while pages < max_pages {
                match self.cpus[cpu].read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => {
                        pages += 1;
                        self.stats.pages += 1;
                        let decoder = &self.decoder;
                        let marker = &mut self.marker;
                        let offset = &mut self.clock_offset_ns;
                        let loss =
                            ring::parse_page(
                                &self.page[..n],
                                &self.layout,
                                |ts, rec| match marker {
                                    Some(m) if m.is_marker(rec) => {
                                        if let Some(mid) = m.sent_mid_ns.take() {
                                            *offset = mid as i64 - ts as i64;
                                            m.synced = true;
                                            m.last_sync_ns = mid;
                                        }
                                    }
                                    _ => each(ts, rec, decoder),
                                },
                            )?;
                        if loss.missed {
                            self.stats.lost_pages += 1;
                            self.stats.lost_events += loss.count.unwrap_or(1);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let p = self.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
                        return Err(TraceFsError::Io { path: p, source: e });
                    }
                }
            }
        }
        Ok(pages)
    }

    /// Stop tracing (events already in the buffers can still be read).
    pub fn stop(&self) {
        let _ = fs::write(self.path.join("tracing_on"), "0");
    }
}

/// What a clock marker says (the `buf` of an `ftrace:print` record).
const MARKER_TEXT: &[u8] = b"outrider clock";
/// How often the clock offset is measured again (see
/// [`Instance::calibrate_clock`]).
pub const CLOCK_RESYNC_NS: u64 = 1_000_000_000;

/// The instance's `trace_marker` and how to recognise what it records.
struct Marker {
    file: File,
    /// `common_type` of `ftrace:print` records and where it is.
    print_id: u64,
    ty: (usize, usize),
    /// Offset of the text.
    buf: usize,
    /// When the marker in flight was written (CLOCK_MONOTONIC).
    sent_mid_ns: Option<u64>,
    /// When the offset was last measured.
    last_sync_ns: u64,
    /// Measured at least once.
    synced: bool,
}

impl Marker {
    fn open(root: &Path, instance: &Path) -> Option<Marker> {
        let text = read_text(&root.join("events/ftrace/print/format")).ok()?;
        let print = format::parse_format(&text, "ftrace/print").ok()?;
        let ty = print.field("common_type").ok()?;
        let buf = print.field("buf").ok()?;
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(instance.join("trace_marker"))
            .ok()?;
        Some(Marker {
            file,
            print_id: u64::from(print.id),
            ty: (ty.offset, ty.size),
            buf: buf.offset,
            sent_mid_ns: None,
            last_sync_ns: 0,
            synced: false,
        })
    }

    fn is_marker(&self, rec: &[u8]) -> bool {
        ring::field_u64(rec, self.ty.0, self.ty.1) == self.print_id
            && rec
                .get(self.buf..)
                .is_some_and(|t| t.starts_with(MARKER_TEXT))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
        self.marker = None;
        // rmdir fails with EBUSY while any of its files is open.
        self.cpus.clear();
        let home = self.detached_home.as_deref();
        let ended = match (self.at_end, self.lock.take()) {
            (AtEnd::Park { linger_ms }, Some(lock)) => {
                park_detached(&self.path, lock, linger_ms, home)
            }
            (AtEnd::RemoveDetached, _) => remove_detached(&self.path, home),
            _ => false,
        };
        if ended {
            return;
        }
        for _ in 0..50 {
            match fs::remove_dir(&self.path) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}

/// Claim a parked instance (the first whose `flock` we get and that still
/// exists), or create `outrider-park-<pid>[-n]` and lock it. Returns its
/// path, the locked descriptor and whether it was reused.
fn claim_parked(root: &Path) -> Result<(PathBuf, Option<File>, bool), TraceFsError> {
    let dir = root.join("instances");
    if let Ok(rd) = fs::read_dir(&dir) {
        for e in rd.flatten() {
            if !e.file_name().to_string_lossy().starts_with(PARK_PREFIX) {
                continue;
            }
            let path = e.path();
            // Removed by its remover between the listing and the lock.
            if let Some(lock) = try_lock(&path).filter(|_| path.join("tracing_on").exists()) {
                return Ok((path, Some(lock), true));
            }
        }
    }
    let pid = std::process::id();
    let mut last = None;
    for n in 0..8 {
        let path = match n {
            0 => dir.join(format!("{PARK_PREFIX}{pid}")),
            _ => dir.join(format!("{PARK_PREFIX}{pid}-{n}")),
        };
        match fs::create_dir(&path) {
            Ok(()) => {
                let lock = try_lock(&path);
                return Ok((path, lock, false));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((path, e)),
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
    let (path, e) = last.expect("the loop ran");
    Err(io_err(&path)(e))
}

/// An exclusive `flock` on directory `path`, if nobody holds one.
fn try_lock(path: &Path) -> Option<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
        .ok()?;
    // SAFETY: flock on a descriptor we own.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    (rc == 0).then_some(f)
}

/// Park the stopped instance at `path` from a detached grandchild
/// ([`detached`]): it keeps `lock` while it empties the pid filter,
/// releases it, sleeps `linger_ms`, and removes the instance if it can
/// lock it then (nobody claimed it). True when it was started.
fn park_detached(path: &Path, lock: File, linger_ms: u64, home: Option<&CStr>) -> bool {
    let (Some(dir), Some(pids)) = (cstring(path), cstring(&path.join("set_event_pid"))) else {
        return false;
    };
    let fd = lock.as_raw_fd();
    let linger = libc::timespec {
        tv_sec: (linger_ms / 1000) as libc::time_t,
        tv_nsec: ((linger_ms % 1000) * 1_000_000) as libc::c_long,
    };
    let started = detached(c"outrider-park", &[fd], home, || {
        // SAFETY: valid NUL-terminated paths and our own descriptors;
        // open, close, nanosleep and flock are async-signal-safe.
        unsafe {
            let p = libc::open(pids.as_ptr(), libc::O_WRONLY | libc::O_TRUNC);
            if p >= 0 {
                libc::close(p);
            }
            libc::close(fd);
            libc::nanosleep(&linger, std::ptr::null_mut());
            let d = libc::open(dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            if d >= 0 && libc::flock(d, libc::LOCK_EX | libc::LOCK_NB) == 0 {
                rmdir_retrying(&dir);
            }
        }
    });
    drop(lock);
    started
}

/// rmdir `path` (retrying while busy, up to 0.5 s; not once it is gone or
/// being removed by another process) from a detached grandchild
/// ([`detached`]); true when it was started.
fn remove_detached(path: &Path, home: Option<&CStr>) -> bool {
    let Some(c) = cstring(path) else {
        return false;
    };
    detached(c"outrider-rmdir", &[], home, || rmdir_retrying(&c))
}

fn cstring(p: &Path) -> Option<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// rmdir, retrying while busy (up to 0.5 s), not once the directory is
/// gone or being removed by someone else. Async-signal-safe.
fn rmdir_retrying(dir: &CStr) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    for _ in 0..50 {
        // SAFETY: a valid NUL-terminated path; rmdir, errno and nanosleep
        // are async-signal-safe.
        unsafe {
            if libc::rmdir(dir.as_ptr()) == 0 {
                return;
            }
            let e = *libc::__errno_location();
            if e == libc::ENOENT || e == libc::ENODEV {
                return;
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}
