//! File handles: `name_to_handle_at(2)` / `open_by_handle_at(2)`, and the
//! mount-point descriptors they need (found in `/proc/self/mountinfo`).
//!
//! A handle names an inode together with its generation, so a file
//! deleted and its inode reused fails with `ESTALE` instead of opening
//! the wrong file — what a history saved across runs needs. Opening by
//! handle needs `CAP_DAC_READ_SEARCH` (`EPERM` otherwise) and bypasses
//! path permissions: callers that open for a less privileged program check
//! its access separately (`crate::access`).
//!
//! Every descriptor returned is a regular file, opened
//! `O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC` (`O_NOATIME` where
//! permitted) and checked with `fstat` before use, like
//! [`crate::files::open_regular`]: a handle may name a FIFO. Unlike
//! `open_regular`, `O_NONBLOCK` is left set: a regular file's buffered
//! reads, `fadvise` and `FIEMAP` ignore it, and clearing it cost two
//! system calls per file on the path where a tree walker's every new file
//! is opened (the `fstat` result is returned for the same reason).

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

/// Largest handle accepted (MAX_HANDLE_SZ).
pub const MAX_HANDLE_BYTES: usize = 128;

#[repr(C)]
struct Handle {
    bytes: libc::c_uint,
    kind: libc::c_int,
    data: [u8; MAX_HANDLE_BYTES],
}

/// The handle of the file open at `fd`: (type, bytes, mount id), or
/// `None` when the file system gives none.
pub fn name_to_handle(fd: BorrowedFd<'_>) -> Option<(i32, Vec<u8>, i32)> {
    let mut h = Handle {
        bytes: MAX_HANDLE_BYTES as libc::c_uint,
        kind: 0,
        data: [0; MAX_HANDLE_BYTES],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `h` is a file_handle header followed by MAX_HANDLE_BYTES
    // bytes, as handle_bytes says; the path is an empty C string used
    // with AT_EMPTY_PATH on a valid descriptor.
    let r = unsafe {
        libc::name_to_handle_at(
            fd.as_raw_fd(),
            c"".as_ptr(),
            (&mut h as *mut Handle).cast::<libc::file_handle>(),
            &mut mount_id,
            libc::AT_EMPTY_PATH,
        )
    };
    if r != 0 || h.bytes as usize > MAX_HANDLE_BYTES {
        return None;
    }
    Some((h.kind, h.data[..h.bytes as usize].to_vec(), mount_id))
}

/// One line of `/proc/self/mountinfo`, the fields outrider uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountLine {
    /// Mount id (field 1).
    pub id: i32,
    /// `major:minor` of the device (field 3).
    pub dev: String,
    /// The mount's root inside its file system (field 4).
    pub root: PathBuf,
    /// Where it is mounted (field 5), octal escapes decoded.
    pub mount_point: PathBuf,
    /// File-system type (first field after the `-` separator).
    pub fstype: String,
}

/// Parse one mountinfo line; `None` when it is malformed.
pub fn parse_mountinfo_line(line: &str) -> Option<MountLine> {
    let f: Vec<&str> = line.split(' ').collect();
    let dash = f.iter().position(|x| *x == "-")?;
    if dash < 6 {
        return None;
    }
    Some(MountLine {
        id: f[0].parse().ok()?,
        dev: f[2].to_string(),
        root: unescape(f[3]),
        mount_point: unescape(f[4]),
        fstype: f.get(dash + 1)?.to_string(),
    })
}

/// Decode mountinfo's octal escapes (`\040` for a space).
fn unescape(p: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = p.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).ok();
            if let Some(v) = digits.and_then(|d| u8::from_str_radix(d, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

fn mount_lines() -> Vec<MountLine> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| t.lines().filter_map(parse_mountinfo_line).collect())
        .unwrap_or_default()
}

/// A descriptor of a mount point for `open_by_handle_at` (which refuses
/// an `O_PATH` descriptor): a directory, or a regular file for a file bind
/// mount; never a device or FIFO (opened `O_NONBLOCK` and checked).
fn open_mount_point(p: &std::path::Path) -> Option<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let md = std::fs::metadata(p).ok()?;
    if !(md.is_dir() || md.is_file()) {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(p)
        .ok()?;
    let md = f.metadata().ok()?;
    (md.is_dir() || md.is_file()).then(|| OwnedFd::from(f))
}

/// Descriptors of mount points by mount id (from
/// `/proc/self/mountinfo`), opened on first use.
#[derive(Debug, Default)]
pub struct Mounts {
    fds: HashMap<i32, Option<Arc<OwnedFd>>>,
    by_dev: HashMap<u64, Option<OwnedFd>>,
}

impl Mounts {
    /// A descriptor of an ext2/3/4 mount of device `dev` whose root is
    /// the file system's root.
    fn ext4_fd(&mut self, dev: u64) -> Option<BorrowedFd<'_>> {
        self.by_dev
            .entry(dev)
            .or_insert_with(|| {
                let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
                let m = mount_lines().into_iter().find(|m| {
                    m.dev == want
                        && m.root == std::path::Path::new("/")
                        && matches!(m.fstype.as_str(), "ext4" | "ext3" | "ext2")
                })?;
                open_mount_point(&m.mount_point)
            })
            .as_ref()
            .map(|f| f.as_fd())
    }

    fn fd(&mut self, mount_id: i32) -> Option<BorrowedFd<'_>> {
        self.fds
            .entry(mount_id)
            .or_insert_with(|| {
                let m = mount_lines().into_iter().find(|m| m.id == mount_id)?;
                open_mount_point(&m.mount_point).map(Arc::new)
            })
            .as_ref()
            .map(|f| f.as_fd())
    }

    /// The mount's descriptor, shared (for workers that open by handle
    /// themselves).
    pub fn fd_shared(&mut self, mount_id: i32) -> Option<Arc<OwnedFd>> {
        self.fd(mount_id)?;
        self.fds.get(&mount_id)?.clone()
    }
}

/// Open inode `ino` of device `dev` read-only without knowing a path:
/// on ext2/3/4, a `FILEID_INO32_GEN` handle with generation 0 names
/// the inode whatever its generation (ext4's `ext4_nfs_get_inode` skips
/// the check for 0). Needs `CAP_DAC_READ_SEARCH`; other file systems:
/// `ENOTSUP`. The caller verifies (dev, ino) with `fstat`.
pub fn open_by_ino(mounts: &mut Mounts, dev: u64, ino: u64) -> std::io::Result<(File, libc::stat)> {
    let ino32 = u32::try_from(ino).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let mfd = mounts
        .ext4_fd(dev)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOTSUP))?
        .as_raw_fd();
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&ino32.to_le_bytes());
    open_handle_stat(mfd, 1, &bytes)
}

/// Open the file of a handle read-only (`O_NOATIME` where permitted).
/// Needs `CAP_DAC_READ_SEARCH` (`EPERM` otherwise); `ESTALE` when the
/// file was deleted (its inode freed or reused).
pub fn open_by_handle(
    mounts: &mut Mounts,
    mount_id: i32,
    kind: i32,
    bytes: &[u8],
) -> std::io::Result<File> {
    open_by_handle_stat(mounts, mount_id, kind, bytes).map(|(f, _)| f)
}

/// [`open_by_handle`], with the `fstat` it checked the file with.
pub fn open_by_handle_stat(
    mounts: &mut Mounts,
    mount_id: i32,
    kind: i32,
    bytes: &[u8],
) -> std::io::Result<(File, libc::stat)> {
    if bytes.len() > MAX_HANDLE_BYTES {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mfd = mounts
        .fd(mount_id)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?
        .as_raw_fd();
    open_handle_stat(mfd, kind, bytes)
}

/// `open_by_handle_at` on the mount descriptor `mfd`; only a regular file
/// is returned (see the module comment).
pub fn open_handle_at(mfd: i32, kind: i32, bytes: &[u8]) -> std::io::Result<File> {
    open_handle_stat(mfd, kind, bytes).map(|(f, _)| f)
}

/// [`open_handle_at`], with the `fstat` it checked the file with.
pub fn open_handle_stat(mfd: i32, kind: i32, bytes: &[u8]) -> std::io::Result<(File, libc::stat)> {
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let r = match open_handle_flags(mfd, kind, bytes, flags | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            open_handle_flags(mfd, kind, bytes, flags)
        }
        r => r,
    }?;
    let file = File::from(r);
    let st = crate::files::fstat(&file)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(crate::files::not_regular(st.st_mode));
    }
    Ok((file, st))
}

/// `open_by_handle_at(mfd, handle, flags)`, whatever the file's type.
pub fn open_handle_flags(
    mfd: i32,
    kind: i32,
    bytes: &[u8],
    flags: i32,
) -> std::io::Result<OwnedFd> {
    if bytes.len() > MAX_HANDLE_BYTES {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut h = Handle {
        bytes: bytes.len() as libc::c_uint,
        kind,
        data: [0; MAX_HANDLE_BYTES],
    };
    h.data[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: `h` is a valid file_handle of `bytes` bytes; `mfd` is an
    // open descriptor of the file system.
    let r = unsafe {
        libc::open_by_handle_at(
            mfd,
            (&mut h as *mut Handle).cast::<libc::file_handle>(),
            flags,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_parse_with_escapes() {
        let l = "36 25 8:1 / /mnt/my\\040disk rw,relatime shared:1 - ext4 /dev/sda1 rw";
        let m = parse_mountinfo_line(l).unwrap();
        assert_eq!(m.id, 36);
        assert_eq!(m.dev, "8:1");
        assert_eq!(m.root, PathBuf::from("/"));
        assert_eq!(m.mount_point, PathBuf::from("/mnt/my disk"));
        assert_eq!(m.fstype, "ext4");
        assert!(parse_mountinfo_line("garbage").is_none());
        // A backslash before multi-byte UTF-8 is kept as it is.
        let l = "1 2 0:1 / /m\\é\\\\ rw - tmpfs x rw";
        assert_eq!(
            parse_mountinfo_line(l).unwrap().mount_point,
            PathBuf::from("/m\\é\\\\")
        );
        assert!(parse_mountinfo_line("x 1 2 3 4 5 - ext4").is_none());
    }
}
