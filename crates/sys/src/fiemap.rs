//! A file's extent map through `FS_IOC_FIEMAP` (linux/fiemap.h).
//!
//! One ioctl returns at most as many extents as the caller made room for, so
//! [`fiemap`] asks in batches of [`EXTENTS_PER_CALL`] and continues after the
//! last extent returned until the kernel flags one `FIEMAP_EXTENT_LAST` (or
//! returns none). `FIEMAP_FLAG_SYNC` is set so delayed-allocation data gets
//! physical addresses before it is mapped.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Extents fetched per ioctl (56 bytes each: a 28 KiB buffer).
pub const EXTENTS_PER_CALL: usize = 512;

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Flush dirty data before mapping.
const FIEMAP_FLAG_SYNC: u32 = 0x1;

/// This is the file's last extent.
pub const FLAG_LAST: u32 = 0x1;
/// Data location unknown (physical is meaningless).
pub const FLAG_UNKNOWN: u32 = 0x2;
/// Delayed allocation: no physical block yet.
pub const FLAG_DELALLOC: u32 = 0x4;
/// Data is inline in the inode (physical is meaningless).
pub const FLAG_DATA_INLINE: u32 = 0x200;
/// Allocated but unwritten (reads return zeros without device I/O).
pub const FLAG_UNWRITTEN: u32 = 0x800;
/// Shared with another file (reflink).
pub const FLAG_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct RawFiemap<const N: usize> {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; N],
}

impl<const N: usize> RawFiemap<N> {
    fn new() -> Self {
        RawFiemap {
            fm_start: 0,
            fm_length: 0,
            fm_flags: 0,
            fm_mapped_extents: 0,
            fm_extent_count: 0,
            fm_reserved: 0,
            fm_extents: [RawExtent::default(); N],
        }
    }
}

/// Extents asked for by the first call, from a buffer on the stack: most
/// files have one or a few, and zeroing the 28 KiB batch buffer for each
/// of a tree walk's small files was most of the call's cost.
const FIRST_CALL_EXTENTS: usize = 8;

/// One mapped extent, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset within the file.
    pub logical: u64,
    /// Byte offset on the device holding the file system.
    pub physical: u64,
    /// Length in bytes.
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags ([`FLAG_LAST`], [`FLAG_UNWRITTEN`], ...).
    pub flags: u32,
}

impl Extent {
    /// Physical byte address of file byte `offset`, if this extent maps it
    /// and its physical address is meaningful.
    pub fn physical_of(&self, offset: u64) -> Option<u64> {
        let usable = self.flags & (FLAG_UNKNOWN | FLAG_DELALLOC | FLAG_DATA_INLINE) == 0;
        (usable && offset >= self.logical && offset < self.logical + self.length)
            .then(|| self.physical + (offset - self.logical))
    }
}

/// Every extent of the open file `fd`, in logical order. Holes are simply
/// absent. Fails with `EOPNOTSUPP` on file systems without FIEMAP (tmpfs).
pub fn fiemap(fd: BorrowedFd<'_>) -> io::Result<Vec<Extent>> {
    let mut out = Vec::new();
    let mut small = RawFiemap::<FIRST_CALL_EXTENTS>::new();
    let Some(mut start) = batch(fd, &mut small, 0, &mut out)? else {
        return Ok(out);
    };
    // More: the 28 KiB buffer, on the heap.
    let mut req: Box<RawFiemap<EXTENTS_PER_CALL>> = Box::new(RawFiemap::new());
    while let Some(next) = batch(fd, &mut req, start, &mut out)? {
        start = next;
    }
    Ok(out)
}

/// One `FS_IOC_FIEMAP` call from file offset `start`, its extents
/// appended to `out`; the offset to continue from when there are more.
fn batch<const N: usize>(
    fd: BorrowedFd<'_>,
    req: &mut RawFiemap<N>,
    start: u64,
    out: &mut Vec<Extent>,
) -> io::Result<Option<u64>> {
    req.fm_start = start;
    req.fm_length = u64::MAX - start;
    req.fm_flags = FIEMAP_FLAG_SYNC;
    req.fm_mapped_extents = 0;
    req.fm_extent_count = N as u32;
    // SAFETY: `req` is a properly laid out `struct fiemap` with room for
    // `fm_extent_count` extents; the kernel writes at most that many.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_FIEMAP as _, req as *mut RawFiemap<N>) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = (req.fm_mapped_extents as usize).min(N);
    if n == 0 {
        return Ok(None);
    }
    let mut last = false;
    for e in &req.fm_extents[..n] {
        out.push(Extent {
            logical: e.fe_logical,
            physical: e.fe_physical,
            length: e.fe_length,
            flags: e.fe_flags,
        });
        last |= e.fe_flags & FLAG_LAST != 0;
    }
    let tail = &req.fm_extents[n - 1];
    let next = tail.fe_logical.saturating_add(tail.fe_length);
    Ok((!last && next > start).then_some(next))
}
