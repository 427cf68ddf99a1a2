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

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;

use crate::launch::Credentials;

type Request = (PathBuf, u64, u64, mpsc::Sender<bool>);

/// A thread with another user's file-system identity that answers
/// [`Self::can_open`].
#[derive(Debug)]
pub struct AccessChecker {
    tx: Mutex<mpsc::Sender<Request>>,
}

impl AccessChecker {
    /// Start the helper thread as `creds`; an error when the identity
    /// could not be taken (then nothing may be opened for the user).
    pub fn new(creds: &Credentials) -> std::io::Result<AccessChecker> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel();
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
                for (path, dev, ino, reply) in rx {
                    let _ = reply.send(opens_as(&path, dev, ino));
                }
            })?;
        ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("the access thread died"))??;
        Ok(AccessChecker { tx: Mutex::new(tx) })
    }

    /// Can the user open `path` for reading, and is it the file (`dev`,
    /// `ino`)? False on any doubt.
    pub fn can_open(&self, path: &Path, dev: u64, ino: u64) -> bool {
        let (reply, answer) = mpsc::channel();
        let sent = self
            .tx
            .lock()
            .map(|tx| tx.send((path.to_path_buf(), dev, ino, reply)).is_ok())
            .unwrap_or(false);
        sent && answer.recv().unwrap_or(false)
    }
}

fn opens_as(path: &Path, dev: u64, ino: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    crate::files::open_regular(path, crate::files::Follow::Never)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.dev() == dev && m.ino() == ino)
}

/// Give this thread (only) `creds`' groups and file-system ids.
fn become_user(creds: &Credentials) -> std::io::Result<()> {
    // SAFETY: raw system calls with a valid group array; they change the
    // credentials of the calling thread only.
    unsafe {
        if libc::syscall(
            libc::SYS_setgroups,
            creds.groups.len(),
            creds.groups.as_ptr(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        libc::syscall(libc::SYS_setfsgid, creds.gid);
        libc::syscall(libc::SYS_setfsuid, creds.uid);
        // setfs*id report no error; read the ids back (-1 changes nothing).
        let gid = libc::syscall(libc::SYS_setfsgid, -1i32) as libc::gid_t;
        let uid = libc::syscall(libc::SYS_setfsuid, -1i32) as libc::uid_t;
        if (uid, gid) != (creds.uid, creds.gid) {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
    }
    Ok(())
}
