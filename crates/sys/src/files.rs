//! Opening files named by a path outrider did not choose itself: a path
//! saved in a history, listed in a trace, or given as an argument.
//!
//! outrider often runs as root, and such a path may lead somewhere its
//! owner did not mean: a FIFO (a blocking `open` never returns, and the
//! run holding the store's lock hangs every later run), a terminal (which
//! would become our controlling terminal), or a symbolic link planted by
//! another user. So every such open here is
//! `O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC` (plus
//! `O_NOATIME` where permitted), and the first thing done with the
//! descriptor is an `fstat` that must say `S_ISREG`; only then is
//! `O_NONBLOCK` cleared. A path that is not a regular file is refused with
//! [`not_regular`]'s error, naming what it is.
//!
//! [`Follow::Magic`] is the one exception to `O_NOFOLLOW`: the
//! `/proc/PID/fd/N` and `/proc/PID/map_files/*` links, which are not
//! symbolic links but the kernel's names for a process's open files.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cvt;

/// Whether the last component of a path may be a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Refuse a symbolic link (`O_NOFOLLOW`): paths from a history, a
    /// list or a directory walk.
    Never,
    /// A `/proc/PID/fd/N` or `/proc/PID/map_files/*` magic link, followed
    /// to the process's open file.
    Magic,
}

/// The error for a path that exists but is not a regular file (`EINVAL`
/// with a message saying what it is).
pub fn not_regular(mode: libc::mode_t) -> io::Error {
    let what = match mode & libc::S_IFMT {
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        _ => "not a regular file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not a regular file"),
    )
}

/// `fstat` of an open descriptor.
pub fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: fstat writes into a zeroed stat buffer we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as libc::c_long)?;
    Ok(st)
}

/// Open `path` read-only for prefetching or inspection, safely (see the
/// module comment): never blocks on a FIFO or device, never follows a
/// final symbolic link unless `follow` is [`Follow::Magic`], and returns
/// only a regular file. `O_NOATIME` is used when the kernel permits it (we
/// own the file or are root).
pub fn open_regular(path: &Path, follow: Follow) -> io::Result<File> {
    let c = c_path(path.as_os_str())?;
    let mut flags = READ_FLAGS;
    if follow == Follow::Never {
        flags |= libc::O_NOFOLLOW;
    }
    let fd = match openat(libc::AT_FDCWD, &c, flags | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => openat(libc::AT_FDCWD, &c, flags)?,
        r => r?,
    };
    regular(fd)
}

/// [`open_regular`] of the entry `name` of directory `dir` (an `O_PATH`
/// descriptor, [`open_dir`]), its final symbolic link never followed,
/// and without `O_NOATIME`: for a look at who may open a file, which
/// reads none of it. (As a user who does not own the file, `O_NOATIME`
/// is refused, and the retry without it walked the path a second time.)
pub fn open_regular_in(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<File> {
    let c = c_path(name)?;
    regular(openat(dir.as_raw_fd(), &c, READ_FLAGS | libc::O_NOFOLLOW)?)
}

/// An `O_PATH` descriptor of directory `path` (symbolic links on the way
/// followed), to open its entries from ([`open_regular_in`]). Needs
/// search permission on the directories above it only.
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = c_path(path.as_os_str())?;
    let fd = openat(
        libc::AT_FDCWD,
        &c,
        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
    )?;
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The flags of every open here (see the module comment).
const READ_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

fn c_path(p: &std::ffi::OsStr) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `openat(2)`; a final symbolic link refused by `O_NOFOLLOW` is an
/// error that says so.
fn openat(dir: libc::c_int, path: &std::ffi::CStr, flags: libc::c_int) -> io::Result<libc::c_int> {
    // SAFETY: a NUL-terminated path; the flags create nothing.
    match cvt(unsafe { libc::openat(dir, path.as_ptr(), flags) } as libc::c_long) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && flags & libc::O_NOFOLLOW != 0 => {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link (not followed)",
            ))
        }
        r => r.map(|fd| fd as libc::c_int),
    }
}

/// The file of fresh descriptor `fd` if it is a regular one, its
/// `O_NONBLOCK` cleared.
fn regular(fd: libc::c_int) -> io::Result<File> {
    // SAFETY: a fresh descriptor we own.
    let file = unsafe { File::from_raw_fd(fd) };
    let st = fstat(&file)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular(st.st_mode));
    }
    clear_nonblock(&file);
    Ok(file)
}

/// Clear `O_NONBLOCK` once a descriptor is known to be a regular file
/// (which ignores it for reads): nothing downstream sees a surprising flag.
pub(crate) fn clear_nonblock(file: &File) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
}

/// The soft `RLIMIT_NOFILE` (1024 when it cannot be read).
pub fn nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        r.rlim_cur
    } else {
        1024
    }
}

/// `CLOCK_MONOTONIC` in ns (the clock of tracefs events' timestamps).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Bytes the calling thread had read from storage so far: the block
/// reads it submitted itself (its I/O accounting's `read_bytes`, which
/// `getrusage(RUSAGE_THREAD)` gives as `ru_inblock` in 512-byte units),
/// so page-cache hits and reads another task submitted count nothing.
/// 0 where the kernel keeps no such count.
pub fn thread_bytes_read() -> u64 {
    // SAFETY: an all-zero rusage is valid, and getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer; RUSAGE_THREAD is the calling thread.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_inblock.max(0) as u64 * 512
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread's count goes up by what it read from a file dropped from
    /// the cache, and not at all when it reads the file again from it.
    #[test]
    fn a_thread_counts_what_it_read_from_storage_and_not_cache_hits() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        f.sync_all().unwrap();
        // SAFETY: a valid descriptor; advice only.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let read = |f: &std::fs::File| {
            let before = thread_bytes_read();
            let mut buf = Vec::new();
            (&*f).read_to_end(&mut buf).unwrap();
            assert_eq!(buf.len(), 1 << 20);
            thread_bytes_read() - before
        };
        let cold = read(&f);
        assert!(cold >= 1 << 20, "read from the disk: {cold} bytes counted");
        std::io::Seek::rewind(&mut &f).unwrap();
        assert_eq!(read(&f), 0, "read again from the cache");
    }

    /// A FIFO must be refused at once, not block in `open` (a reader
    /// waiting for a writer that never comes).
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = std::env::temp_dir().join(format!("outrider-sys-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        let c = std::ffi::CString::new(d.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&d, Follow::Never).unwrap_err();
        std::fs::remove_file(&d).unwrap();
        assert!(e.to_string().contains("is a FIFO"), "{e}");
    }

    #[test]
    fn a_symbolic_link_is_not_followed_and_a_directory_is_refused() {
        let d = std::env::temp_dir().join(format!("outrider-sys-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), b"x").unwrap();
        std::os::unix::fs::symlink(d.join("f"), d.join("l")).unwrap();
        let link = open_regular(&d.join("l"), Follow::Never).unwrap_err();
        let dir = open_regular(&d, Follow::Never).unwrap_err();
        let file = open_regular(&d.join("f"), Follow::Never);
        std::fs::remove_dir_all(&d).unwrap();
        assert!(link.to_string().contains("symbolic link"), "{link}");
        assert!(dir.to_string().contains("a directory"), "{dir}");
        assert!(file.is_ok());
    }
}
