//! The C ABI (`include/outrider.h`, `liboutrider_directed.so`): libprefetch's Fig. 6
//! interface. Every function takes the client pointer returned by
//! `outrider_register_client`; none may be called on one client from two
//! threads at once. Functions return `-1` and set `errno` on failure.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::RawFd;

use crate::client::{borrow_fd, Client, Entry, Event, Reason};
use crate::Mode;

/// `outrider_entry`: one access-list entry.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OutriderEntry {
    /// File descriptor of a registered region.
    pub fd: c_int,
    /// Byte offset of the access.
    pub offset: u64,
    /// Non-zero: a marked entry.
    pub marked: c_int,
}

/// `outrider_stats`: counters (see [`crate::Stats`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct OutriderStats {
    /// Tracked reads.
    pub tracked_reads: u64,
    /// Rounds planned.
    pub rounds: u64,
    /// Rounds started by a premature eviction.
    pub premature_rounds: u64,
    /// Low-list callbacks.
    pub low_callbacks: u64,
    /// Strayed callbacks.
    pub stray_callbacks: u64,
    /// Pages requested by rounds.
    pub round_pages: u64,
    /// Infill pages.
    pub infill_pages: u64,
    /// Pages dropped with DONTNEED.
    pub dropped_pages: u64,
    /// Current reorder buffer, pages.
    pub buffer_pages: u64,
    /// Infill limit in use, pages (`infill=auto`: from the device probe).
    pub infill_limit_pages: u64,
    /// Rounds left to the kernel's readahead (read in file order).
    pub readahead_rounds: u64,
}

/// `outrider_callback`: `(client, user, reason, fd, offset, marked_fd,
/// marked_offset)`; reason 1 = list low, 2 = strayed; `marked_fd` is -1 when
/// no marked entry has been accessed.
pub type OutriderCallback =
    Option<unsafe extern "C" fn(*mut Client, *mut c_void, c_int, c_int, u64, c_int, u64)>;

struct UserPtr(*mut c_void);
// SAFETY: the pointer is only handed back to the application's callback,
// on the thread that makes the tracked read.
unsafe impl Send for UserPtr {}

fn set_errno(e: c_int) {
    // SAFETY: writing the thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// Create a client with `callback` and `user` (libprefetch `register_client`),
/// configured from the `OUTRIDER_DIRECTED` environment variable (`k=v,...`)
/// if set. Returns NULL (errno EINVAL) on a bad setting.
///
/// # Safety
/// `callback` must be safe to call with `user` from tracked reads.
#[no_mangle]
pub unsafe extern "C" fn outrider_register_client(
    callback: OutriderCallback,
    user: *mut c_void,
) -> *mut Client {
    let params = std::env::var("OUTRIDER_DIRECTED").unwrap_or_default();
    let mut client = match Client::from_params(&params) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("outrider: OUTRIDER_DIRECTED: {e}");
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
    };
    if let Some(cb) = callback {
        let user = UserPtr(user);
        client.set_callback(move |c: &mut Client, ev: &Event| {
            let u = &user;
            let reason = match ev.reason {
                Reason::Low => 1,
                Reason::Strayed => 2,
            };
            let (mfd, moff) = ev.last_marked.unwrap_or((-1, 0));
            // SAFETY: the application promised the callback is callable.
            unsafe {
                cb(
                    c as *mut Client,
                    u.0,
                    reason,
                    ev.current.0,
                    ev.current.1,
                    mfd,
                    moff,
                )
            };
        });
    }
    Box::into_raw(Box::new(client))
}

/// Replace the client's settings with `params` (`k=v,...`, see
/// [`crate::Config`]). Call it right after `outrider_register_client`, never
/// from a callback: regions and the access list are reset (the callback is
/// kept). Returns 0, or -1 (errno EINVAL, message on stderr).
///
/// # Safety
/// `c` from `outrider_register_client`; `params` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn outrider_configure(c: *mut Client, params: *const c_char) -> c_int {
    let (Some(c), false) = (c.as_mut(), params.is_null()) else {
        set_errno(libc::EINVAL);
        return -1;
    };
    let text = CStr::from_ptr(params).to_string_lossy();
    match Client::from_params(&text) {
        Ok(mut n) => {
            n.take_callback_from(c);
            *c = n;
            0
        }
        Err(e) => {
            eprintln!("outrider: {e}");
            set_errno(libc::EINVAL);
            -1
        }
    }
}

/// Track reads of `[offset, offset + len)` of `fd` (libprefetch
/// `register_region`). Returns 0 or -1 with errno.
///
/// # Safety
/// `c` from `outrider_register_client`; `fd` open.
#[no_mangle]
pub unsafe extern "C" fn outrider_register_region(
    c: *mut Client,
    fd: c_int,
    offset: u64,
    len: u64,
) -> c_int {
    let Some(c) = c.as_mut() else {
        set_errno(libc::EINVAL);
        return -1;
    };
    match c.register_region(borrow_fd(fd), offset, len) {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e.raw_os_error().unwrap_or(libc::EIO));
            -1
        }
    }
}

/// `request_prefetching` (§4.2): `mode` 0 replace, 1 append, 2 replace after
/// the last accessed marked entry, optionally or-ed with `OUTRIDER_DONE`
/// (0x100: the whole list has been handed over, no more low-list
/// callbacks until it is replaced). Returns the number of entries accepted.
///
/// # Safety
/// `c` from `outrider_register_client`; `entries` points at `n` entries.
#[no_mangle]
pub unsafe extern "C" fn outrider_request_prefetching(
    c: *mut Client,
    entries: *const OutriderEntry,
    n: usize,
    mode: c_int,
) -> isize {
    let Some(c) = c.as_mut() else {
        set_errno(libc::EINVAL);
        return -1;
    };
    let mode_flags = mode;
    if mode & !0x1ff != 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    let mode = match mode & 0xff {
        0 => Mode::Replace,
        1 => Mode::Append,
        2 => Mode::AfterMark,
        _ => {
            set_errno(libc::EINVAL);
            return -1;
        }
    };
    let slice = if n == 0 || entries.is_null() {
        &[][..]
    } else {
        std::slice::from_raw_parts(entries, n)
    };
    let list: Vec<Entry> = slice
        .iter()
        .map(|e| Entry {
            fd: e.fd as RawFd,
            offset: e.offset,
            marked: e.marked != 0,
        })
        .collect();
    let n = c.request_prefetching(&list, mode);
    if mode_flags & 0x100 != 0 {
        c.list_done();
    }
    n as isize
}

/// Stop tracking reads until `outrider_unignore_accesses` (nested).
///
/// # Safety
/// `c` from `outrider_register_client`.
#[no_mangle]
pub unsafe extern "C" fn outrider_ignore_accesses(c: *mut Client) {
    if let Some(c) = c.as_mut() {
        c.ignore_accesses();
    }
}

/// Undo one `outrider_ignore_accesses`.
///
/// # Safety
/// `c` from `outrider_register_client`.
#[no_mangle]
pub unsafe extern "C" fn outrider_unignore_accesses(c: *mut Client) {
    if let Some(c) = c.as_mut() {
        c.unignore_accesses();
    }
}

/// `pread` through the client.
///
/// # Safety
/// `c` from `outrider_register_client`; `buf` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn outrider_pread(
    c: *mut Client,
    fd: c_int,
    buf: *mut c_void,
    n: usize,
    offset: i64,
) -> isize {
    if let Some(c) = c.as_mut() {
        if offset >= 0 {
            c.note_access(fd, offset as u64, n as u64);
        }
    }
    libc::pread(fd, buf, n, offset as libc::off_t)
}

/// `read` through the client.
///
/// # Safety
/// `c` from `outrider_register_client`; `buf` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn outrider_read(
    c: *mut Client,
    fd: c_int,
    buf: *mut c_void,
    n: usize,
) -> isize {
    if let Some(c) = c.as_mut() {
        c.track_at_position(fd, n as u64);
    }
    libc::read(fd, buf, n)
}

/// `readv` through the client.
///
/// # Safety
/// `c` from `outrider_register_client`; `iov` points at `iovcnt` buffers.
#[no_mangle]
pub unsafe extern "C" fn outrider_readv(
    c: *mut Client,
    fd: c_int,
    iov: *const libc::iovec,
    iovcnt: c_int,
) -> isize {
    if let (Some(c), false) = (c.as_mut(), iov.is_null()) {
        let total: usize = (0..iovcnt.max(0) as usize)
            .map(|i| (*iov.add(i)).iov_len)
            .sum();
        c.track_at_position(fd, total as u64);
    }
    libc::readv(fd, iov, iovcnt)
}

/// Copy the client's counters into `out`. Returns 0 or -1.
///
/// # Safety
/// `c` from `outrider_register_client`; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn outrider_get_stats(c: *const Client, out: *mut OutriderStats) -> c_int {
    let (Some(c), Some(out)) = (c.as_ref(), out.as_mut()) else {
        set_errno(libc::EINVAL);
        return -1;
    };
    let s = c.stats();
    *out = OutriderStats {
        tracked_reads: s.tracked_reads,
        rounds: s.rounds,
        premature_rounds: s.premature_rounds,
        low_callbacks: s.low_callbacks,
        stray_callbacks: s.stray_callbacks,
        round_pages: s.round_pages,
        infill_pages: s.infill_pages,
        dropped_pages: s.dropped_pages,
        buffer_pages: s.buffer_pages,
        infill_limit_pages: s.infill_limit_pages,
        readahead_rounds: s.readahead_rounds,
    };
    0
}

/// Free a client (its duplicated descriptors are closed).
///
/// # Safety
/// `c` from `outrider_register_client`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn outrider_free_client(c: *mut Client) {
    if !c.is_null() {
        drop(Box::from_raw(c));
    }
}
