//! Who may read and change a history store.
//!
//! A store holds command lines (arguments such as `--db-password=...`),
//! working directories and the paths of files read, and root's prefetcher
//! acts on what it says. So it must be private to the user running
//! outrider:
//!
//! - a directory created for a store is `0700`; an existing one must be
//!   owned by the running user (or by root) and not writable by others
//!   (group-writable only when the group is the user's own primary
//!   group); a directory named `outrider` that the user owns (the default
//!   state directories) is made `0700`;
//! - the store file is created `0600` with `O_EXCL | O_NOFOLLOW`; an
//!   existing one, and its `-wal` and `-shm` files, must be regular files
//!   (not symbolic links) owned by the running user, and are made `0600`
//!   (SQLite gives new `-wal`/`-shm` files the store's own mode);
//! - the lock file beside it ([`open_lock`]) likewise.
//!
//! Anything else is refused with [`StoreError::Unsafe`] naming the path
//! and what is wrong, and outrider runs without history.

use crate::StoreError;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

fn egid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::getegid() }
}

fn unsafe_store(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::Unsafe {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// The directory of `store`, created `0700` if missing, checked (see the
/// module comment).
pub fn private_dir(store: &Path) -> Result<PathBuf, StoreError> {
    let dir = match store.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| unsafe_store(&dir, format!("cannot create the directory: {e}")))?;
    }
    let md = fs::metadata(&dir).map_err(|e| unsafe_store(&dir, e.to_string()))?;
    if !md.is_dir() {
        return Err(unsafe_store(&dir, "is not a directory"));
    }
    let me = euid();
    if md.uid() != me && md.uid() != 0 {
        return Err(unsafe_store(
            &dir,
            format!(
                "the directory belongs to uid {}, not to this user (uid {me}); refusing a \
                 store another user can replace",
                md.uid()
            ),
        ));
    }
    let mode = md.mode();
    let group_ok = md.uid() == me && md.gid() == egid();
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && !group_ok) {
        return Err(unsafe_store(
            &dir,
            format!(
                "the directory is writable by other users (mode {:o}); refusing a store they \
                 can replace",
                mode & 0o7777
            ),
        ));
    }
    if md.uid() == me && dir.file_name().is_some_and(|n| n == "outrider") && mode & 0o077 != 0 {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| unsafe_store(&dir, format!("cannot make it private: {e}")))?;
    }
    Ok(dir)
}

/// Check an existing store-owned file (`path` exists): a regular file of
/// ours, made `0600`.
fn check_file(path: &Path, md: &fs::Metadata) -> Result<(), StoreError> {
    if md.file_type().is_symlink() {
        return Err(unsafe_store(
            path,
            "is a symbolic link; refusing to follow it",
        ));
    }
    if !md.is_file() {
        return Err(unsafe_store(path, "is not a regular file"));
    }
    if md.uid() != euid() {
        return Err(unsafe_store(
            path,
            format!(
                "belongs to uid {}, not to this user (uid {}); refusing a store another user \
                 can write",
                md.uid(),
                euid()
            ),
        ));
    }
    if md.mode() & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))
            .map_err(|e| unsafe_store(path, format!("cannot make it private: {e}")))?;
    }
    Ok(())
}

/// Prepare `store` for SQLite: its directory checked, the file created
/// `0600` or checked, and its `-wal`/`-shm` files checked.
pub fn prepare(store: &Path) -> Result<(), StoreError> {
    private_dir(store)?;
    match fs::symlink_metadata(store) {
        Ok(md) => check_file(store, &md)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match create_private(store, false) {
                Ok(_) => {}
                // Created by another run since: check what is there.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let md = fs::symlink_metadata(store)
                        .map_err(|e| unsafe_store(store, e.to_string()))?;
                    check_file(store, &md)?;
                }
                Err(e) => return Err(unsafe_store(store, e.to_string())),
            }
        }
        Err(e) => return Err(unsafe_store(store, e.to_string())),
    }
    for suffix in ["-wal", "-shm"] {
        let mut p = store.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        if let Ok(md) = fs::symlink_metadata(&p) {
            check_file(&p, &md)?;
        }
    }
    Ok(())
}

/// Create `path` `0600`: `O_EXCL` unless `reuse`, always `O_NOFOLLOW`
/// and non-blocking; an existing file must be a regular file of ours.
fn create_private(path: &Path, reuse: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC);
    if reuse {
        o.create(true);
    } else {
        o.create_new(true);
    }
    let f = o.open(path)?;
    let md = f.metadata()?;
    if !md.is_file() || md.uid() != euid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: not a regular file of this user (uid {}, owner {})",
                path.display(),
                euid(),
                md.uid()
            ),
        ));
    }
    Ok(f)
}

/// The lock file of `store` (`<store>.lock`), opened read-write for
/// `flock`: created `0600` in the checked directory, never through a
/// symbolic link, and only a regular file of this user.
pub fn open_lock(store: &Path) -> Result<File, StoreError> {
    private_dir(store)?;
    let mut name = store.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    create_private(&path, true).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => unsafe_store(&path, "is a symbolic link; refusing to follow it"),
        _ => unsafe_store(&path, e.to_string()),
    })
}
