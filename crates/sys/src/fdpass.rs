//! Handing descriptors from a parked process to the next run over an
//! abstract Unix socket (`SCM_RIGHTS`), root to root only: both ends check
//! the other's credentials (`SO_PEERCRED`), so another user can neither
//! claim what is parked nor pose as the parker.
//!
//! The parker's side ([`Offer::serve`]) runs in a forked child and makes
//! only async-signal-safe calls on memory prepared before the fork.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Most descriptors one hand-over carries.
pub const MAX_FDS: usize = 32;

/// `sockaddr_un` for the abstract name `name` (no leading NUL: it is
/// added) and its length.
fn address(name: &[u8]) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if name.is_empty() || name.len() + 1 > addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "abstract socket name empty or too long",
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &s) in addr.sun_path[1..].iter_mut().zip(name) {
        *d = s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
    Ok((addr, len as libc::socklen_t))
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just created and own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The uid of the process at the other end of `fd`. Async-signal-safe.
fn peer_uid(fd: RawFd) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a ucred-sized buffer and its length.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// Descriptors offered under an abstract name: bound and listening now,
/// handed to the first root client by [`Offer::serve`].
pub struct Offer {
    listener: OwnedFd,
    fds: Vec<RawFd>,
    cmsg: Vec<u64>,
    byte: u8,
}

impl Offer {
    /// Bind `name` and prepare to hand over `fds` (at most [`MAX_FDS`];
    /// the caller keeps them open until the fork). Fails with
    /// `AddrInUse` while another offer holds the name.
    pub fn bind(name: &[u8], fds: &[RawFd]) -> io::Result<Offer> {
        assert!(
            !fds.is_empty() && fds.len() <= MAX_FDS,
            "1 to MAX_FDS descriptors"
        );
        let listener = socket()?;
        let (addr, len) = address(name)?;
        // SAFETY: a valid address of the length given; results checked.
        unsafe {
            if libc::bind(
                listener.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            ) != 0
                || libc::listen(listener.as_raw_fd(), 4) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        let bytes = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE is arithmetic.
        let space = unsafe { libc::CMSG_SPACE(bytes) } as usize;
        Ok(Offer {
            listener,
            fds: fds.to_vec(),
            cmsg: vec![0u64; space.div_ceil(8)],
            byte: 0,
        })
    }

    /// The listening descriptor (to keep across the fork).
    pub fn listener(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Wait up to `linger` for a client whose uid is 0 and hand it the
    /// descriptors; true when handed over. Clients of another uid are
    /// turned away. Async-signal-safe (for a forked child).
    pub fn serve(&mut self, linger: Duration) -> bool {
        let deadline = now_ms() + linger.as_millis() as i64;
        loop {
            let left = deadline - now_ms();
            if left <= 0 {
                return false;
            }
            let mut p = libc::pollfd {
                fd: self.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd; poll, accept4, close are async-signal-safe.
            let c = unsafe {
                if libc::poll(&mut p, 1, left.min(i32::MAX as i64) as i32) <= 0 {
                    continue;
                }
                libc::accept4(
                    self.listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if c < 0 {
                continue;
            }
            let sent = peer_uid(c) == Some(0) && self.send(c);
            // SAFETY: the accepted descriptor, closed once.
            unsafe { libc::close(c) };
            if sent {
                return true;
            }
        }
    }

    /// Send one byte with the descriptors attached. Async-signal-safe: the
    /// control buffer was allocated by `bind`.
    fn send(&mut self, sock: RawFd) -> bool {
        let bytes = std::mem::size_of_val(&self.fds[..]);
        let mut iov = libc::iovec {
            iov_base: (&mut self.byte as *mut u8).cast(),
            iov_len: 1,
        };
        // SAFETY: msghdr is plain data; the control buffer is CMSG_SPACE
        // bytes for this many descriptors, 8-byte aligned (u64s), and the
        // header written through CMSG_FIRSTHDR lies inside it.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = self.cmsg.as_mut_ptr().cast();
            msg.msg_controllen = self.cmsg.len() * 8;
            let h = libc::CMSG_FIRSTHDR(&msg);
            (*h).cmsg_level = libc::SOL_SOCKET;
            (*h).cmsg_type = libc::SCM_RIGHTS;
            (*h).cmsg_len = libc::CMSG_LEN(bytes as u32) as usize;
            std::ptr::copy_nonoverlapping(
                self.fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(h),
                bytes,
            );
            libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) == 1
        }
    }
}

/// CLOCK_MONOTONIC in milliseconds. Async-signal-safe.
fn now_ms() -> i64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec * 1000 + t.tv_nsec / 1_000_000
}

/// Claim what is offered under `name`: `None` when nothing is (or the
/// offer is not root's, or nothing came within `timeout`).
pub fn claim(name: &[u8], timeout: Duration) -> io::Result<Option<Vec<OwnedFd>>> {
    let sock = socket()?;
    let (addr, len) = address(name)?;
    // SAFETY: a valid address of the length given.
    let r = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        )
    };
    if r != 0 {
        return Ok(None);
    }
    if peer_uid(sock.as_raw_fd()) != Some(0) {
        return Ok(None);
    }
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    let mut byte = 0u8;
    let mut iov = libc::iovec {
        iov_base: (&mut byte as *mut u8).cast(),
        iov_len: 1,
    };
    let bytes = (MAX_FDS * std::mem::size_of::<RawFd>()) as u32;
    // SAFETY: CMSG_SPACE is arithmetic.
    let mut cmsg = vec![0u64; (unsafe { libc::CMSG_SPACE(bytes) } as usize).div_ceil(8)];
    // SAFETY: a timeval option; msghdr is plain data pointing to our live
    // buffers; received headers are walked with the CMSG macros within
    // msg_controllen.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = cmsg.len() * 8;
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) != 1 {
            return Ok(None);
        }
        let mut fds = Vec::new();
        let mut h = libc::CMSG_FIRSTHDR(&msg);
        while !h.is_null() {
            if (*h).cmsg_level == libc::SOL_SOCKET && (*h).cmsg_type == libc::SCM_RIGHTS {
                let n = ((*h).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                let data = libc::CMSG_DATA(h).cast::<RawFd>();
                for i in 0..n {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            h = libc::CMSG_NXTHDR(&msg, h);
        }
        Ok(Some(fds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    #[test]
    fn a_descriptor_reaches_the_claimer_and_the_name_is_then_free() {
        let name = format!("outrider-fdpass-test-{}", std::process::id());
        let path = std::env::temp_dir().join(&name);
        let mut f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        f.write_all(b"handed over").unwrap();
        let mut offer = Offer::bind(name.as_bytes(), &[f.as_raw_fd()]).unwrap();
        assert_eq!(
            Offer::bind(name.as_bytes(), &[f.as_raw_fd()])
                .err()
                .map(|e| e.kind()),
            Some(io::ErrorKind::AddrInUse),
            "one offer per name"
        );
        let server = std::thread::spawn(move || {
            let served = offer.serve(Duration::from_secs(5));
            drop(offer);
            served
        });
        let root = unsafe { libc::geteuid() } == 0;
        let got = claim(name.as_bytes(), Duration::from_secs(5)).unwrap();
        if !root {
            // The offer is not root's: refused on both ends.
            assert!(got.is_none());
            return;
        }
        assert!(server.join().unwrap());
        let fds = got.expect("the offer was root's");
        assert_eq!(fds.len(), 1);
        let mut g = std::fs::File::from(fds.into_iter().next().unwrap());
        g.rewind().unwrap();
        let mut s = String::new();
        g.read_to_string(&mut s).unwrap();
        assert_eq!(s, "handed over");
        assert!(claim(name.as_bytes(), Duration::from_millis(50))
            .unwrap()
            .is_none());
    }
}
