//! Page-cache residency of a file range.
//!
//! `cachestat(2)` (Linux 6.5+, syscall 451 on every architecture) counts
//! cached, dirty, writeback, evicted and recently evicted pages without a
//! mapping; libc has no wrapper, so it is called by number. On `ENOSYS`
//! [`cachestat`] remembers the fact and falls back to [`cachestat_mincore`]
//! (which needs a mapping, counts only pages whose read completed, and since
//! Linux 5.0 reports every page resident for files the caller neither owns
//! nor can write — DESIGN.md "Kernel facts"). [`page_cached_nowait`] is the
//! third probe, `preadv2(RWF_NOWAIT)` of one byte.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{cvt, PAGE_SIZE};

/// `__NR_cachestat` (generic syscall table: same number on x86-64, arm64...).
const SYS_CACHESTAT: libc::c_long = 451;

/// Set once `cachestat(2)` answered `ENOSYS`.
static NO_CACHESTAT: AtomicBool = AtomicBool::new(false);

/// Page counts for a byte range (`struct cachestat`), in 4 KiB pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStat {
    /// Pages resident in the page cache.
    pub cache: u64,
    /// Resident pages that are dirty.
    pub dirty: u64,
    /// Pages under writeback.
    pub writeback: u64,
    /// Pages evicted from the cache (shadow entries present).
    pub evicted: u64,
    /// Evicted pages that were recently evicted (would be refaults).
    pub recently_evicted: u64,
}

#[repr(C)]
struct RawRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct RawStat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Residency of bytes `[off, off + len)` of `fd` (`len == 0`: to the end of
/// the file). Uses `cachestat(2)`, or [`cachestat_mincore`] where the kernel
/// lacks it (then only `cache` is filled in).
pub fn cachestat(fd: BorrowedFd<'_>, off: u64, len: u64) -> io::Result<CacheStat> {
    if !NO_CACHESTAT.load(Ordering::Relaxed) {
        let range = RawRange { off, len };
        let mut st = RawStat::default();
        // SAFETY: both pointers are valid for the call; flags must be 0.
        let r = cvt(unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                fd.as_raw_fd(),
                &range as *const RawRange,
                &mut st as *mut RawStat,
                0u32,
            )
        });
        match r {
            Ok(_) => {
                return Ok(CacheStat {
                    cache: st.nr_cache,
                    dirty: st.nr_dirty,
                    writeback: st.nr_writeback,
                    evicted: st.nr_evicted,
                    recently_evicted: st.nr_recently_evicted,
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                NO_CACHESTAT.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(e),
        }
    }
    cachestat_mincore(fd, off, len)
}

/// Size of the file behind `fd` in bytes.
fn file_size(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: fstat writes into a zeroed stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as libc::c_long)?;
    Ok(st.st_size as u64)
}

/// The `mincore(2)` fallback of [`cachestat`]: maps the range read-only,
/// asks which pages are resident, unmaps. Only `cache` is filled in. Pages
/// past the end of the file count as absent.
pub fn cachestat_mincore(fd: BorrowedFd<'_>, off: u64, len: u64) -> io::Result<CacheStat> {
    let size = file_size(fd)?;
    let first = off / PAGE_SIZE * PAGE_SIZE;
    let end = if len == 0 {
        size
    } else {
        off.saturating_add(len).min(size)
    };
    if end <= first {
        return Ok(CacheStat::default());
    }
    let map_len = (end - first) as usize;
    // SAFETY: a fresh shared read-only mapping of the file range; it is only
    // passed to mincore and unmapped before returning.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            first as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let pages = map_len.div_ceil(PAGE_SIZE as usize);
    let mut vec = vec![0u8; pages];
    // SAFETY: `vec` has one byte per page of the mapping.
    let r = unsafe { libc::mincore(addr, map_len, vec.as_mut_ptr()) };
    let err = io::Error::last_os_error();
    // SAFETY: unmapping exactly what was mapped above.
    unsafe { libc::munmap(addr, map_len) };
    if r != 0 {
        return Err(err);
    }
    Ok(CacheStat {
        cache: vec.iter().filter(|b| **b & 1 != 0).count() as u64,
        ..CacheStat::default()
    })
}

/// Is the byte at `off` cached? Probes with a one-byte
/// `preadv2(RWF_NOWAIT)`: `EAGAIN` means not cached. Caveat: on a miss the
/// kernel may still start readahead for the page (NOWAIT is not NOIO).
/// Offsets at or past the end of the file answer `false`.
pub fn page_cached_nowait(fd: BorrowedFd<'_>, off: u64) -> io::Result<bool> {
    let mut byte = 0u8;
    let iov = libc::iovec {
        iov_base: &mut byte as *mut u8 as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: one iovec over a live local byte.
    let r = unsafe {
        libc::preadv2(
            fd.as_raw_fd(),
            &iov,
            1,
            off as libc::off_t,
            libc::RWF_NOWAIT,
        )
    };
    if r >= 0 {
        return Ok(r > 0);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EAGAIN) {
        Ok(false)
    } else {
        Err(e)
    }
}
