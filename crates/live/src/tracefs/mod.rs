//! The tracefs event source: a private tracing instance read through the
//! binary per-CPU `trace_pipe_raw` buffers (issue 7, "Event sources").
//!
//! Why a private instance (`/sys/kernel/tracing/instances/outrider-<pid>`):
//! it has its own ring buffers, event enables and clock, so the global
//! tracing state (and anyone else's instance) is untouched. The instance is
//! removed when [`Instance`] is dropped; an instance left behind by a killed
//! outrider (its pid no longer alive) is removed by the next
//! [`Instance::open`].
//!
//! Records are decoded here rather than through the text `trace_pipe`: the
//! binary pages are cheaper to read and carry the kernel's lost-event flags
//! ([`ring`]); field offsets come from each event's `format` file
//! ([`format`], [`decode`]).

pub mod decode;
pub mod format;
pub mod ring;

pub use decode::{EventKind, LiveEvent, EVENTS};

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where tracefs is normally mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Prefix of outrider's instance names.
pub const INSTANCE_PREFIX: &str = "outrider-";

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
/// crash or kill -9). Returns the names removed.
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
        if fs::remove_dir(entry.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Instance settings.
#[derive(Clone, Debug)]
pub struct InstanceOptions {
    /// Ring-buffer size per CPU in KiB (default 8192: ~170 000 filemap
    /// events per CPU before the kernel starts dropping).
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
    /// Remove the instance from a detached process when it is dropped
    /// (default false: removed before `drop` returns). The rmdir waits for
    /// the kernel's RCU grace periods, about 0.1 s here, which `outrider
    /// run` would otherwise add to every run's wall time after the program
    /// exited. Tracing is stopped and every descriptor of the instance
    /// closed first either way; if the detached removal is killed, the
    /// next start removes the stale instance.
    pub detach_removal: bool,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            buffer_kb_per_cpu: 8192,
            name: format!("{INSTANCE_PREFIX}{}", std::process::id()),
            events: EVENTS
                .iter()
                .map(|(s, e)| (s.to_string(), e.to_string()))
                .collect(),
            follow_pid: None,
            detach_removal: false,
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
    page: Vec<u8>,
    detach_removal: bool,
    /// What was read so far.
    pub stats: SourceStats,
}

impl Instance {
    /// Create the instance (mounting tracefs and removing stale instances
    /// first), enable the events, and open every CPU's raw pipe.
    pub fn open(opts: &InstanceOptions) -> Result<Instance, TraceFsError> {
        let root = ensure_mounted()?;
        remove_stale_instances(&root);
        let path = root.join("instances").join(&opts.name);
        if !path.is_dir() {
            fs::create_dir(&path).map_err(io_err(&path))?;
        }
        // From here on, Drop removes the instance even on error.
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
            page: vec![0u8; page_size()],
            detach_removal: opts.detach_removal,
            stats: SourceStats::default(),
        };
        inst.layout = format::parse_header_page(&read_text(&root.join("events/header_page"))?)?;
        write_text(&path.join("tracing_on"), "0")?;
        write_text(&path.join("trace_clock"), "mono")?;
        write_text(
            &path.join("buffer_size_kb"),
            &opts.buffer_kb_per_cpu.to_string(),
        )?;
        if let Some(pid) = opts.follow_pid {
            write_text(&path.join("options/event-fork"), "1")?;
            write_text(&path.join("set_event_pid"), &pid.to_string())?;
        }
        let mut formats = Vec::new();
        for (sys, ev) in &opts.events {
            let dir = path.join("events").join(sys).join(ev);
            let fpath = dir.join("format");
            formats.push(format::parse_format(
                &read_text(&fpath)?,
                &fpath.display().to_string(),
            )?);
            write_text(&dir.join("enable"), "1")?;
        }
        inst.decoder = decode::Decoder::new(&formats)?;
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
        write_text(&path.join("tracing_on"), "1")?;
        Ok(inst)
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
        let mut pages = 0;
        for cpu in 0..self.cpus.len() {
            while pages < max_pages {
                match self.cpus[cpu].read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => {
                        pages += 1;
                        self.stats.pages += 1;
                        let decoder = &self.decoder;
                        let mut count = 0u64;
                        let loss = ring::parse_page(&self.page[..n], &self.layout, |ts, rec| {
                            if let Some(e) = decoder.decode(ts, rec) {
                                out.push(e);
                                count += 1;
                            }
                        })?;
                        self.stats.events += count;
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

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
        // rmdir fails with EBUSY while any of its files is open.
        self.cpus.clear();
        if self.detach_removal && remove_detached(&self.path) {
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

/// rmdir `path` (retrying while busy, up to 0.5 s) in a grandchild that
/// init adopts, so nobody waits for it; true when it was started. The
/// grandchild closes every descriptor first (a pipe it held open would
/// keep a reader of our output waiting) and makes only async-signal-safe
/// system calls.
fn remove_detached(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: after fork, the children only call async-signal-safe
    // functions (close_range, rmdir, nanosleep, _exit) on memory prepared
    // before it; the parent reaps the intermediate child.
    unsafe {
        let child = libc::fork();
        if child < 0 {
            return false;
        }
        if child == 0 {
            if libc::fork() == 0 {
                libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 10_000_000,
                };
                for _ in 0..50 {
                    if libc::rmdir(c.as_ptr()) == 0 {
                        break;
                    }
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
            }
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(child, &mut status, 0);
    }
    true
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}
