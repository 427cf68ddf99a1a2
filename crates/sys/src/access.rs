//! Could the program's user open this file? Asked before outrider, as
//! root, prefetches a file for a program that runs as another user
//! ([`crate::launch`]): root's own opens (by handle especially) ignore
//! permissions, and prefetching a file the user could not read would
//! leak what it is and make it resident for them.
//!
//! How: one helper thread takes the user's file-system identity — raw
//! `setgroups`, `setfsgid` and `setfsuid` system calls, which (unlike the
//! libc wrappers, which apply them to every thread) change only the
//! calling thread — and opens each path asked about, as the kernel would
//! for the user: search permission on every directory, read permission on
//! the file, ACLs and LSMs included (a change of fsuid away from 0 drops
//! the file-system capabilities, `CAP_DAC_OVERRIDE` and
//! `CAP_DAC_READ_SEARCH`, from the thread). The open is
//! [`crate::files::open_regular`]'s (no FIFO, no final symbolic link), and
//! the answer is yes only if it leads to the expected (device, inode).
//! Comparing mode bits instead would miss directory permissions and ACLs.
//!
//! [`AsUser`] is the same mechanism on the caller's own thread, switched
//! around each open: `sudo outrider stat DIR` lists directories and opens
//! files as the user (so it cannot reveal the names and sizes inside a
//! directory the user cannot read), and asks `cachestat` as root.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;

use crate::launch::Credentials;

/// Files to look at (path, dev, ino), and where the answers go, in order.
type Request = (Vec<(PathBuf, u64, u64)>, mpsc::Sender<Vec<bool>>);

/// A thread with another user's file-system identity that answers
/// [`Self::can_open`].
///
/// A process forked from the one that made it (the background history
/// saver) has no helper thread: there each question is answered on the
/// calling thread, its identity switched around the open ([`AsUser`]).
#[derive(Debug)]
pub struct AccessChecker {
    tx: Mutex<mpsc::Sender<Request>>,
    creds: Credentials,
    pid: u32,
}

impl AccessChecker {
    /// Start the helper thread as `creds`; an error when the identity
    /// could not be taken (then nothing may be opened for the user).
    pub fn new(creds: &Credentials) -> std::io::Result<AccessChecker> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let kept = creds.clone();
        let creds = creds.clone();
        std::thread::Builder::new()
            .name("outrider-access".into())
            .spawn(move || {
                let ok = become_user(&creds);
                let failed = ok.is_err();
                let _ = ready_tx.send(ok);
                if failed {
                    return;
                }
                for (files, reply) in rx {
                    let _ = reply.send(files.iter().map(|(p, d, i)| opens_as(p, *d, *i)).collect());
                }
            })?;
        ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("the access thread died"))??;
        Ok(AccessChecker {
            tx: Mutex::new(tx),
            creds: kept,
            pid: std::process::id(),
        })
    }

    /// Can the user open `path` for reading, and is it the file (`dev`,
    /// `ino`)? False on any doubt.
    pub fn can_open(&self, path: &Path, dev: u64, ino: u64) -> bool {
        self.can_open_all(&[(path.to_path_buf(), dev, ino)]) == [true]
    }

    /// [`Self::can_open`] of each of `files` (path, dev, ino), in order,
    /// in one exchange with the helper thread: a replay of a set of
    /// 31 000 files asked one file at a time would wake the helper and
    /// wait for its answer 31 000 times.
    pub fn can_open_all(&self, files: &[(PathBuf, u64, u64)]) -> Vec<bool> {
        if std::process::id() != self.pid {
            let Ok(u) = AsUser::new(&self.creds) else {
                return vec![false; files.len()];
            };
            let open = |(p, d, i): &(PathBuf, u64, u64)| u.run(|| Ok(opens_as(p, *d, *i)));
            return files.iter().map(|f| open(f).unwrap_or(false)).collect();
        }
        let (reply, answer) = mpsc::channel();
        let sent = (self.tx.lock()).is_ok_and(|tx| tx.send((files.to_vec(), reply)).is_ok());
        match sent.then(|| answer.recv().ok()).flatten() {
            Some(a) if a.len() == files.len() => a,
            _ => vec![false; files.len()],
        }
    }
}

fn opens_as(path: &Path, dev: u64, ino: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    crate::files::open_regular(path, crate::files::Follow::Never)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.dev() == dev && m.ino() == ino)
}

/// Give this thread (only) `creds`' supplementary groups.
fn set_thread_groups(creds: &Credentials) -> std::io::Result<()> {
    // SAFETY: a raw system call with a valid group array; it changes the
    // groups of the calling thread only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            creds.groups.len(),
            creds.groups.as_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Set this thread's file-system ids; returns the previous ones.
fn set_fs_ids(uid: libc::uid_t, gid: libc::gid_t) -> std::io::Result<(libc::uid_t, libc::gid_t)> {
    // SAFETY: raw system calls changing the calling thread's fs ids only.
    unsafe {
        let old_gid = libc::syscall(libc::SYS_setfsgid, gid) as libc::gid_t;
        let old_uid = libc::syscall(libc::SYS_setfsuid, uid) as libc::uid_t;
        // setfs*id report no error; read the ids back (-1 changes nothing).
        let now_gid = libc::syscall(libc::SYS_setfsgid, -1i32) as libc::gid_t;
        let now_uid = libc::syscall(libc::SYS_setfsuid, -1i32) as libc::uid_t;
        if (now_uid, now_gid) != (uid, gid) {
            libc::syscall(libc::SYS_setfsuid, old_uid);
            libc::syscall(libc::SYS_setfsgid, old_gid);
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        Ok((old_uid, old_gid))
    }
}

/// Give this thread (only) `creds`' groups and file-system ids, for the
/// rest of its life (threads it starts inherit them).
pub fn become_user(creds: &Credentials) -> std::io::Result<()> {
    set_thread_groups(creds)?;
    set_fs_ids(creds.uid, creds.gid).map(drop)
}

/// Run file-system operations on the calling thread as another user
/// (see the module comment). Create it on the thread that will use it.
#[derive(Debug)]
pub struct AsUser {
    uid: libc::uid_t,
    gid: libc::gid_t,
}

impl AsUser {
    /// Give the calling thread `creds`' supplementary groups (kept: while
    /// the thread's fsuid is root, groups do not matter to its access).
    pub fn new(creds: &Credentials) -> std::io::Result<AsUser> {
        set_thread_groups(creds)?;
        Ok(AsUser {
            uid: creds.uid,
            gid: creds.gid,
        })
    }

    /// Run `f` with the user's file-system ids, then restore ours. An
    /// error (`EPERM`) when the ids could not be taken; `f` did not run.
    pub fn run<T>(&self, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let (uid, gid) = set_fs_ids(self.uid, self.gid)?;
        let r = f();
        // Returning to our own ids cannot fail; if it did, the thread
        // would keep the user's (fewer) rights, the safe direction.
        let _ = set_fs_ids(uid, gid);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// As `nobody`, a file in a root-only directory does not open; once
    /// the directory may be searched and the file read, it does (root
    /// only: taking another identity needs it).
    #[test]
    fn a_user_opens_only_what_its_permissions_allow() {
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        let nobody = Credentials {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        let c = AccessChecker::new(&nobody).unwrap();
        let perm =
            |m| std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(m)).unwrap();
        perm(0o700);
        assert!(
            !c.can_open(&p, md.dev(), md.ino()),
            "a directory nobody may not search"
        );
        perm(0o711);
        assert!(c.can_open(&p, md.dev(), md.ino()));
        assert!(!c.can_open(&p, md.dev(), md.ino() + 1), "another file");
        let (this, other) = (
            (p.clone(), md.dev(), md.ino()),
            (p.clone(), md.dev(), md.ino() + 1),
        );
        let both = [other.clone(), this.clone(), other, this];
        assert_eq!(c.can_open_all(&both), [false, true, false, true]);
        assert!(c.can_open_all(&[]).is_empty());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(
            !c.can_open(&p, md.dev(), md.ino()),
            "a file only root reads"
        );
        assert!(std::fs::File::open(&p).is_ok(), "this thread is still root");
        // In a forked child (no helper thread there) the answers stay.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        // SAFETY: the child only runs the checks and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let ok = c.can_open(&p, md.dev(), md.ino());
            perm(0o700);
            let denied = !c.can_open(&p, md.dev(), md.ino());
            // SAFETY: leaving the forked child at once.
            unsafe { libc::_exit(if ok && denied { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(status, 0, "a forked child answers on its own thread");
    }
}
