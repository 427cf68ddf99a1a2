//! Per-task delay accounting through the kernel's taskstats interface
//! (generic netlink family `TASKSTATS`, `Documentation/accounting/
//! taskstats.rst`): the time each task waited for block I/O
//! (`blkio_delay_total`, ns), for a task that exited (a listener
//! registered for every CPU gets each task's totals as it exits) or one
//! that runs (asked by thread id).
//!
//! The kernel accounts the delays only while `kernel.task_delayacct` is
//! 1 ([`enable`]); it is 0 by default. Hand-written: no maintained crate
//! speaks taskstats, and it is two message shapes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// `/proc/sys/kernel/task_delayacct`.
const SYSCTL: &str = "/proc/sys/kernel/task_delayacct";

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_ATTR_PID: u16 = 1;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
/// `struct taskstats`: `blkio_delay_total` (u64) lies at this offset in
/// every version (after version, ac_exitcode, ac_flag, ac_nice,
/// cpu_count, cpu_delay_total, blkio_count).
const BLKIO_DELAY_OFFSET: usize = 40;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;

/// Turn delay accounting on; returns what it was (to put back with
/// [`restore`]).
pub fn enable() -> io::Result<bool> {
    let was = std::fs::read_to_string(SYSCTL)?.trim() == "1";
    if !was {
        std::fs::write(SYSCTL, "1")?;
    }
    Ok(was)
}

/// Put delay accounting back as [`enable`] found it.
pub fn restore(was: bool) {
    if !was {
        let _ = std::fs::write(SYSCTL, "0");
    }
}

/// One task's block-I/O wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskDelay {
    /// The thread id.
    pub tid: u32,
    /// Nanoseconds it waited for block I/O (reads of the page cache's
    /// misses, page faults on files included), over its life so far.
    pub blkio_ns: u64,
}

/// A taskstats socket: either listening to every task's exit
/// ([`Taskstats::exits`]) or answering questions ([`Taskstats::query`]).
pub struct Taskstats {
    fd: OwnedFd,
    family: u16,
    seq: u32,
    buf: Vec<u8>,
}

impl Taskstats {
    /// A socket that asks about tasks ([`Taskstats::of`]).
    pub fn query() -> io::Result<Taskstats> {
        let mut t = Taskstats::open()?;
        t.family = t.family_id()?;
        Ok(t)
    }

    /// A non-blocking socket that receives every task's totals as it
    /// exits, on every CPU ([`Taskstats::exited`]).
    pub fn exits() -> io::Result<Taskstats> {
        let mut t = Taskstats::query()?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| format!("0-{}", cpus - 1));
        let mut mask = cpus.into_bytes();
        mask.push(0);
        t.request(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, &mask)?;
        t.expect_ack()?;
        // SAFETY: a valid descriptor; flags only.
        unsafe {
            let fl = libc::fcntl(t.fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(t.fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        Ok(t)
    }

    fn open() -> io::Result<Taskstats> {
        // SAFETY: plain socket creation.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed sockaddr_nl is valid (nl_pid 0: the kernel picks).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: a valid address of its size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let tv = libc::timeval {
            tv_sec: QUERY_TIMEOUT.as_secs() as libc::time_t,
            tv_usec: 0,
        };
        // SAFETY: a valid timeval of its size; a receive timeout bounds
        // every blocking reply.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        Ok(Taskstats {
            fd,
            family: GENL_ID_CTRL,
            seq: 0,
            buf: vec![0; 64 << 10],
        })
    }

    /// The `TASKSTATS` family's id.
    fn family_id(&mut self) -> io::Result<u16> {
        let cmd = CTRL_CMD_GETFAMILY;
        self.send(GENL_ID_CTRL, cmd, CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")?;
        let n = self.recv()?;
        let msg = first_message(&self.buf[..n])?;
        (attrs(&msg[NLMSG_HDRLEN + GENL_HDRLEN..]))
            .find(|(t, _)| *t == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, v)| v.get(..2))
            .map(|v| u16::from_ne_bytes([v[0], v[1]]))
            .ok_or_else(|| io::Error::other("taskstats: no family id in the reply"))
    }

    /// Thread `tid`'s totals so far; `None` when it is gone.
    pub fn of(&mut self, tid: u32) -> io::Result<Option<TaskDelay>> {
        self.request(TASKSTATS_CMD_ATTR_PID, &tid.to_ne_bytes())?;
        let n = self.recv()?;
        match first_message(&self.buf[..n]) {
            Ok(msg) => Ok(delays(msg).next()),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The tasks that exited since the last call (an exits socket); an
    /// overrun socket loses some, as a full ring loses events.
    pub fn exited(&mut self, out: &mut Vec<TaskDelay>) {
        loop {
            let n = self.recv_now();
            if n <= 0 {
                let e = io::Error::last_os_error();
                if n < 0 && e.raw_os_error() == Some(libc::ENOBUFS) {
                    continue; // overrun: what was lost is lost
                }
                return;
            }
            for msg in messages(&self.buf[..n as usize]) {
                out.extend(delays(msg));
            }
        }
    }

    fn request(&mut self, attr: u16, value: &[u8]) -> io::Result<()> {
        self.send(self.family, TASKSTATS_CMD_GET, attr, value)
    }

    fn send(&mut self, ty: u16, cmd: u8, attr: u16, value: &[u8]) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let attr_len = 4 + value.len();
        let len = NLMSG_HDRLEN + GENL_HDRLEN + align4(attr_len);
        let mut m = Vec::with_capacity(len);
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
        m.extend_from_slice(&self.seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[cmd, 1, 0, 0]);
        m.extend_from_slice(&(attr_len as u16).to_ne_bytes());
        m.extend_from_slice(&attr.to_ne_bytes());
        m.extend_from_slice(value);
        m.resize(len, 0);
        // SAFETY: a buffer of its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), m.as_ptr().cast(), m.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn recv(&mut self) -> io::Result<usize> {
        // SAFETY: a buffer of its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// The kernel's answer to a registration: an error message with
    /// error 0 (no reply at all is fine too).
    fn expect_ack(&mut self) -> io::Result<()> {
        let n = self.recv_now();
        if n <= 0 {
            return Ok(());
        }
        first_message(&self.buf[..n as usize]).map(drop)
    }

    /// One datagram into the buffer if one waits: its length, else 0 or
    /// -1 (errno set).
    fn recv_now(&mut self) -> isize {
        // SAFETY: a buffer of its length; no wait.
        unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                libc::MSG_DONTWAIT,
            )
        }
    }
}

/// How long a query waits at most (the socket's receive timeout).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(1);

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The netlink messages in a datagram.
fn messages(mut b: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let len = u32::from_ne_bytes(b.get(..4)?.try_into().ok()?) as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return None;
        }
        let (m, rest) = b.split_at(len);
        b = rest.get(align4(len) - len..).unwrap_or(&[]);
        Some(m)
    })
}

/// The first message, or the error it carries.
fn first_message(b: &[u8]) -> io::Result<&[u8]> {
    let m = messages(b)
        .next()
        .ok_or_else(|| io::Error::other("taskstats: a short reply"))?;
    if u16::from_ne_bytes([m[4], m[5]]) == NLMSG_ERROR {
        let err = m
            .get(16..20)
            .map_or(0, |e| i32::from_ne_bytes(e.try_into().unwrap()));
        if err != 0 {
            return Err(io::Error::from_raw_os_error(-err));
        }
    }
    Ok(m)
}

/// The attributes (type, value) of an attribute area.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u16::from_ne_bytes(b.get(..2)?.try_into().ok()?) as usize;
        let ty = u16::from_ne_bytes(b.get(2..4)?.try_into().ok()?) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let value = &b[4..len];
        b = b.get(align4(len)..).unwrap_or(&[]);
        Some((ty, value))
    })
}

/// The per-task totals a taskstats message carries (its
/// `TASKSTATS_TYPE_AGGR_PID`; the thread group's aggregate that follows
/// a group's last exit is not taken, so nothing is counted twice).
fn delays(msg: &[u8]) -> impl Iterator<Item = TaskDelay> + '_ {
    let body = msg.get(NLMSG_HDRLEN + GENL_HDRLEN..).unwrap_or(&[]);
    attrs(body)
        .filter(|(t, _)| *t == TASKSTATS_TYPE_AGGR_PID)
        .filter_map(|(_, nested)| {
            let mut tid = None;
            let mut blkio = None;
            for (t, v) in attrs(nested) {
                match t {
                    TASKSTATS_TYPE_PID => {
                        tid = v
                            .get(..4)
                            .map(|x| u32::from_ne_bytes(x.try_into().unwrap()))
                    }
                    TASKSTATS_TYPE_STATS => {
                        blkio = v
                            .get(BLKIO_DELAY_OFFSET..BLKIO_DELAY_OFFSET + 8)
                            .map(|x| u64::from_ne_bytes(x.try_into().unwrap()))
                    }
                    _ => {}
                }
            }
            Some(TaskDelay {
                tid: tid?,
                blkio_ns: blkio?,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        // SAFETY: no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// A message as the kernel sends it: header, genl header, one
    /// AGGR_PID holding PID and a `struct taskstats` with `blkio` at
    /// its offset.
    fn message(tid: u32, blkio: u64) -> Vec<u8> {
        let mut stats = vec![0u8; 352];
        stats[BLKIO_DELAY_OFFSET..BLKIO_DELAY_OFFSET + 8].copy_from_slice(&blkio.to_ne_bytes());
        let mut nested = Vec::new();
        for (t, v) in [
            (TASKSTATS_TYPE_PID, tid.to_ne_bytes().to_vec()),
            (TASKSTATS_TYPE_STATS, stats),
        ] {
            nested.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
            nested.extend_from_slice(&t.to_ne_bytes());
            nested.extend_from_slice(&v);
            nested.resize(align4(nested.len()), 0);
        }
        let mut body = Vec::new();
        body.extend_from_slice(&((4 + nested.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&(TASKSTATS_TYPE_AGGR_PID | 0x8000).to_ne_bytes());
        body.extend_from_slice(&nested);
        let len = NLMSG_HDRLEN + GENL_HDRLEN + body.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&[0u8; 12]);
        m.extend_from_slice(&[2, 1, 0, 0]);
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn a_message_gives_its_task_and_its_block_io_wait() {
        let mut two = message(42, 7_000_000);
        two.extend(message(43, 0));
        let got: Vec<TaskDelay> = messages(&two).flat_map(delays).collect();
        assert_eq!(
            got,
            [
                TaskDelay {
                    tid: 42,
                    blkio_ns: 7_000_000
                },
                TaskDelay {
                    tid: 43,
                    blkio_ns: 0
                }
            ]
        );
        // Cut anywhere: no panic, no task invented.
        for cut in 0..two.len() {
            let n = messages(&two[..cut]).flat_map(delays).count();
            assert!(n <= 2);
        }
    }

    #[test]
    fn an_exiting_reader_reports_its_wait_for_the_disk() {
        if !is_root() {
            eprintln!("skipped: taskstats and task_delayacct need root");
            return;
        }
        let was = enable().unwrap();
        let mut exits = Taskstats::exits().expect("registered for exits");
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let path = dir.path().join("cold");
        std::fs::write(&path, vec![5u8; 16 << 20]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        f.sync_all().unwrap();
        // SAFETY: a valid descriptor; drops the file's clean pages.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let child = std::process::Command::new("cat")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(child.success());
        let mut seen = Vec::new();
        for _ in 0..50 {
            exits.exited(&mut seen);
            if seen.iter().any(|d| d.blkio_ns > 0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        restore(was);
        assert!(
            seen.iter().any(|d| d.blkio_ns > 0),
            "cat read 16 MiB from the disk: {seen:?}"
        );
    }

    #[test]
    fn the_kernel_answers_for_a_running_thread() {
        if !is_root() {
            eprintln!("skipped: taskstats queries need root here");
            return;
        }
        let mut t = Taskstats::query().expect("TASKSTATS family");
        // SAFETY: no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        let d = t.of(me).unwrap().expect("this thread runs");
        assert_eq!(d.tid, me);
        assert_eq!(t.of(u32::MAX / 2).unwrap(), None, "no such thread");
    }
}
