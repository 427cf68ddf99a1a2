//! `posix_fadvise` and `readahead(2)`, in device-sized chunks.
//!
//! Both calls share one kernel path (`force_page_cache_ra`) that silently
//! truncates each call to max(`read_ahead_kb`, `max_sectors_kb`) of the
//! device — 8 MiB on this machine — and submits the I/O synchronously in the
//! caller (DESIGN.md "Kernel facts"). A range larger than the cap therefore
//! has to be cut into [`chunks`] and each chunk issued separately; the
//! [`crate::Pool`] issues them from worker threads so that submission does
//! not serialise on the caller.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::PathBuf;

use crate::cvt;

/// Readahead cap assumed when sysfs cannot tell: 8 MiB.
pub const DEFAULT_RA_CAP_BYTES: u64 = 8 << 20;

/// `posix_fadvise` advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `POSIX_FADV_NORMAL`: default readahead.
    Normal,
    /// `POSIX_FADV_RANDOM`: no readahead on this file.
    Random,
    /// `POSIX_FADV_SEQUENTIAL`: doubled readahead.
    Sequential,
    /// `POSIX_FADV_WILLNEED`: start reading the range (capped per call).
    WillNeed,
    /// `POSIX_FADV_DONTNEED`: drop clean, unmapped pages of the range.
    DontNeed,
    /// `POSIX_FADV_NOREUSE`.
    NoReuse,
}

impl Advice {
    fn raw(self) -> libc::c_int {
        match self {
            Advice::Normal => libc::POSIX_FADV_NORMAL,
            Advice::Random => libc::POSIX_FADV_RANDOM,
            Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
            Advice::WillNeed => libc::POSIX_FADV_WILLNEED,
            Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
            Advice::NoReuse => libc::POSIX_FADV_NOREUSE,
        }
    }
}

/// How to bring a range into the page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// `posix_fadvise(WILLNEED)`.
    WillNeed,
    /// `readahead(2)`.
    Readahead,
}

/// `posix_fadvise(fd, off, len, advice)`; `len == 0` means to the end of
/// the file. Not chunked: use [`fetch_chunks`] for large WILLNEED ranges.
pub fn advise(fd: BorrowedFd<'_>, off: u64, len: u64, advice: Advice) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed descriptor.
    let r = unsafe {
        libc::posix_fadvise(
            fd.as_raw_fd(),
            off as libc::off_t,
            len as libc::off_t,
            advice.raw(),
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `readahead(2)` of `[off, off + len)`. Not chunked (see [`fetch_chunks`]).
pub fn readahead(fd: BorrowedFd<'_>, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed descriptor.
    cvt(unsafe { libc::readahead(fd.as_raw_fd(), off as libc::off64_t, len as usize) } as _)?;
    Ok(())
}

/// Cut `[off, off + len)` into consecutive pieces of at most `cap` bytes
/// (`cap == 0` is treated as [`DEFAULT_RA_CAP_BYTES`]). Example: 20 MiB at
/// offset 0 with an 8 MiB cap → (0, 8 MiB), (8 MiB, 8 MiB), (16 MiB, 4 MiB).
pub fn chunks(off: u64, len: u64, cap: u64) -> impl Iterator<Item = (u64, u64)> {
    let cap = if cap == 0 { DEFAULT_RA_CAP_BYTES } else { cap };
    let end = off.saturating_add(len);
    let mut at = off;
    std::iter::from_fn(move || {
        (at < end).then(|| {
            let n = (end - at).min(cap);
            let piece = (at, n);
            at += n;
            piece
        })
    })
}

/// Fetch `[off, off + len)` in the calling thread, one call per chunk of at
/// most `cap` bytes.
pub fn fetch_chunks(
    fd: BorrowedFd<'_>,
    off: u64,
    len: u64,
    cap: u64,
    how: Fetch,
) -> io::Result<()> {
    for (o, n) in chunks(off, len, cap) {
        match how {
            Fetch::WillNeed => advise(fd, o, n, Advice::WillNeed)?,
            Fetch::Readahead => readahead(fd, o, n)?,
        }
    }
    Ok(())
}

/// The per-call readahead cap of the device holding the file behind `fd`:
/// max(`read_ahead_kb`, `max_sectors_kb`) × 1 KiB from
/// `/sys/dev/block/MAJ:MIN/queue/` (a partition's parent disk is used), or
/// [`DEFAULT_RA_CAP_BYTES`] when sysfs does not say (network or virtual
/// file systems).
pub fn ra_cap_bytes(fd: BorrowedFd<'_>) -> u64 {
    // SAFETY: fstat writes into a zeroed stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return DEFAULT_RA_CAP_BYTES;
    }
    ra_cap_for_dev(libc::major(st.st_dev), libc::minor(st.st_dev))
}

/// A `queue/` setting in KiB of the disk behind device `major:minor` (a
/// partition's parent disk); `None` when sysfs does not say.
fn queue_kb(major: u32, minor: u32, name: &str) -> Option<u64> {
    let mut dir = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if dir.join("partition").exists() {
        dir = dir.join("..");
    }
    std::fs::read_to_string(dir.join("queue").join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's largest readahead window on device `major:minor`, in
/// 4 KiB pages (`bdi->ra_pages` = `read_ahead_kb / 4`); `None` when sysfs
/// does not say (network or virtual file systems).
pub fn ra_window_pages(major: u32, minor: u32) -> Option<u64> {
    queue_kb(major, minor, "read_ahead_kb").map(|kb| kb / 4)
}

/// [`ra_cap_bytes`] for a device number.
pub fn ra_cap_for_dev(major: u32, minor: u32) -> u64 {
    let kb = |name: &str| queue_kb(major, minor, name);
    match (kb("read_ahead_kb"), kb("max_sectors_kb")) {
        (None, None) => DEFAULT_RA_CAP_BYTES,
        (a, b) => {
            let cap = a.unwrap_or(0).max(b.unwrap_or(0)) * 1024;
            if cap == 0 {
                DEFAULT_RA_CAP_BYTES
            } else {
                cap
            }
        }
    }
}
