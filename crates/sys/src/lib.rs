//! outrider-sys: the safe Linux system-call layer shared by the live runtime
//! and the application-directed prefetching library.
//!
//! Every function here is a thin, documented wrapper over one kernel
//! interface (DESIGN.md "Kernel facts a live prefetcher must respect"):
//!
//! - [`fiemap()`]: a file's extent map (`FS_IOC_FIEMAP`), logical → physical;
//! - [`cachestat()`]: page-cache residency of a byte range (`cachestat(2)`,
//!   Linux 6.5+) with a `mincore(2)` fallback on older kernels, and
//!   [`page_cached_nowait`], the `preadv2(RWF_NOWAIT)` probe;
//! - [`advise`], [`readahead`], [`fetch_chunks`]: `posix_fadvise` and
//!   `readahead(2)`, split into chunks no larger than the device's readahead
//!   cap ([`ra_cap_bytes`]), because the kernel silently truncates each call
//!   there;
//! - [`Pool`]: a bounded worker pool that issues those chunks, because the
//!   kernel submits the I/O of one call synchronously in the caller;
//! - [`memory`]: cgroup (v1 and v2) memory limits and `MemAvailable`;
//! - [`files`]: opening a path from a history, a list or an argument
//!   safely ([`open_regular`]: no FIFO, device or final symbolic link),
//!   the descriptor limit, the monotonic clock and what the calling
//!   thread read from storage ([`thread_bytes_read`]);
//! - [`handle`]: `name_to_handle_at`/`open_by_handle_at` and the mount
//!   points they need (`/proc/self/mountinfo`);
//! - [`launch`]: starting the program as its user (sudo), killed if
//!   outrider dies, with outrider's signals forwarded; [`access`]: could
//!   that user open a file?
//! - [`sched`]: the calling thread's nice value and scheduler slice.
//!
//! The one design decision a reader must know: **nothing here keeps policy
//! state.** Functions take a borrowed file descriptor and return plain data;
//! callers (outrider-live, outrider-directed) decide what to fetch. Errors
//! are [`std::io::Error`] carrying the errno, so callers can tell `ENOSYS`
//! and `EOPNOTSUPP` apart from real failures.
#![deny(missing_docs)]

/// `eprintln!` that never panics: a message to a closed or full stderr is
/// lost, nothing else (`eprintln!` panics when the write fails, and a
/// program outrider runs must not lose its supervisor to a closed pipe).
#[macro_export]
macro_rules! warnln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

pub mod access;
pub mod advise;
pub mod bpf;
pub mod cachestat;
pub mod detach;
pub mod dirwatch;
pub mod fdpass;
pub mod fiemap;
pub mod files;
pub mod handle;
pub mod launch;
pub mod memory;
pub mod pool;
pub mod sched;
pub mod taskstats;

pub use advise::{
    advise, chunks, fetch_chunks, ra_cap_bytes, ra_cap_for_dev, ra_window_pages, readahead, Advice,
    Fetch, DEFAULT_RA_CAP_BYTES,
};
pub use cachestat::{cachestat, cachestat_mincore, page_cached_nowait, CacheStat};
pub use fiemap::{fiemap, Extent};
pub use files::{monotonic_ns, nofile_limit, open_regular, thread_bytes_read, Follow};
pub use memory::{
    cgroup_memory, mem_available_bytes, memory_pressure, CgroupMemory, MemoryPressure,
};
pub use pool::Pool;

/// Page size assumed by the wrappers (4 KiB, DESIGN.md "Events and keys").
pub const PAGE_SIZE: u64 = 4096;

/// Turn a `-1` return into the thread's `errno` as an [`std::io::Error`].
pub(crate) fn cvt(ret: libc::c_long) -> std::io::Result<libc::c_long> {
    if ret == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}
