//! Unprivileged clients: `outrider run -- CMD` by a user who is not root,
//! served by the daemon through a Unix socket.
//!
//! The kernel's page-cache events are root's to read, so without the
//! daemon such a user gets no prefetching. With it:
//!
//! 1. The client connects to [`crate::Config::socket`] (mode 0666) and
//!    sends a [`Request`]: the command line (only to name the
//!    application), the policy, its budget and history choices.
//! 2. The daemon takes the client's identity from the socket
//!    (`SO_PEERCRED`: pid, uid; `SO_PEERPIDFD` pins the pid to the process
//!    that connected) — never from the request — and starts a helper
//!    process (`outrider daemon --serve-client`, the connection as its
//!    standard input), at most [`crate::Config::max_clients`] at once and
//!    [`crate::Config::max_clients_per_user`] per user; over either, the
//!    client is told so and runs its program unprefetched.
//! 3. The helper acts for the client ([`outrider_sys::launch::act_for`]:
//!    the client's fs uid, fs gid and supplementary groups read from
//!    `/proc/PID/status`, and it must be the uid the socket gave), sets up
//!    tracing that follows the client's pid and what it forks, loads the
//!    user's history (`<state_dir>/users/<uid>.db`: one user's history
//!    never names another's files) and replies [`Reply::Ready`].
//! 4. The client starts CMD itself — as itself, with its own terminal,
//!    environment, limits and namespaces — waits for it, and sends
//!    [`Exit`]. The helper ran the same lifecycle as a root
//!    `outrider run` ([`outrider_live::lifecycle::run_program`]) and
//!    replies [`Reply::Done`] with the summary, which the client prints.
//!
//! **What the daemon does for a client is what the client could do.**
//! Every file prefetched for it is opened through a path checked by a
//! thread holding the client's own file-system identity (raw `setgroups`,
//! `setfsgid`, `setfsuid` on that thread, which also drops
//! `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH` from it;
//! [`outrider_sys::access`]): a file named in a history, or held open by
//! a set-user-ID program in the client's tree, that the client cannot
//! open is not touched, and counted as refused. Nothing is opened by
//! inode number for a client, and the metadata walk runs with the
//! client's identity. The reply carries counts and times only, never a
//! file name. A request is one line of JSON of at most
//! [`MAX_LINE`] bytes with only the known fields (`deny_unknown_fields`:
//! a request naming files to read is refused, not ignored).

use crate::config::Config;
use outrider_sys::launch::Credentials;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The environment variable naming the socket for `outrider run`
/// (default [`DEFAULT_SOCKET`]).
pub const SOCKET_ENV: &str = "OUTRIDER_SOCKET";
/// Where `outrider run` looks for the daemon by default.
pub const DEFAULT_SOCKET: &str = "/run/outrider/daemon.sock";
/// The longest message line, bytes.
pub const MAX_LINE: usize = 64 << 10;

/// What a client asks for.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The command line (names the application; the client runs it).
    pub argv: Vec<String>,
    /// The policy, `NAME[:k=v,...]`.
    pub policy: String,
    /// Budget for prefetched-but-unused data, bytes (capped by the daemon
    /// at a quarter of the memory available to the program).
    pub budget_bytes: u64,
    /// I/O worker threads (1 to 4).
    pub workers: usize,
    /// Neither read nor write history.
    pub no_history: bool,
    /// Keep the history under this name.
    pub app_key: Option<String>,
    /// Walk the history's directories ahead of the program.
    pub metadata_walk: bool,
}

/// The daemon's replies.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "reply", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    /// Tracing is on: start the program.
    Ready,
    /// Not served (busy, a bad request): run the program unprefetched.
    Refused {
        /// Why.
        why: String,
    },
    /// The run's summary.
    Done {
        /// The text `outrider run` prints.
        summary: String,
        /// The summary as JSON (`--json-file`).
        json: serde_json::Value,
    },
}

/// The client's report that the program ended.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Exit {
    /// Its exit code (128 + signal when killed).
    pub code: u8,
}

/// Write `msg` as one line.
pub fn send<T: Serialize>(mut w: impl Write, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)
}

/// Bytes read but not yet taken as a line.
#[derive(Default)]
pub struct LineReader {
    buf: Vec<u8>,
}

impl LineReader {
    /// The next line from `r` (blocking), parsed; `Ok(None)` at a clean end.
    pub fn recv<T: for<'de> Deserialize<'de>>(
        &mut self,
        r: impl Read,
    ) -> Result<Option<T>, String> {
        match self.read_line(r) {
            Ok(Some(line)) => parse_line(&line).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// What is readable now from a non-blocking `r`: a parsed line, or
    /// `Ok(None)` when none is complete yet; `Err` at the end of the
    /// connection or on a bad message.
    pub fn poll<T: for<'de> Deserialize<'de>>(
        &mut self,
        r: impl Read,
    ) -> Result<Option<T>, String> {
        match self.read_line(r) {
            Ok(Some(line)) => parse_line(&line).map(Some),
            Ok(None) => Err("the connection ended".into()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The next whole line; `Ok(None)` at a clean end of `r`.
    fn read_line(&mut self, mut r: impl Read) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(line) = self.take_line().map_err(std::io::Error::other)? {
                return Ok(Some(line));
            }
            let mut chunk = [0u8; 4096];
            match r.read(&mut chunk) {
                Ok(0) if self.buf.is_empty() => return Ok(None),
                Ok(0) => {
                    return Err(std::io::Error::other(
                        "the connection ended inside a message",
                    ))
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn take_line(&mut self) -> Result<Option<Vec<u8>>, String> {
        match self.buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                Ok(Some(line))
            }
            None if self.buf.len() > MAX_LINE => {
                Err(format!("a message longer than {MAX_LINE} bytes"))
            }
            None => Ok(None),
        }
    }
}

fn parse_line<T: for<'de> Deserialize<'de>>(line: &[u8]) -> Result<T, String> {
    if line.len() > MAX_LINE + 1 {
        return Err(format!("a message longer than {MAX_LINE} bytes"));
    }
    serde_json::from_slice(line).map_err(|e| format!("a malformed message: {e}"))
}

/// Who is at the other end of `sock`.
#[derive(Debug)]
pub struct Peer {
    /// Its pid when it connected.
    pub pid: u32,
    /// Its uid when it connected.
    pub uid: u32,
    /// A pidfd of that very process (`SO_PEERPIDFD`, Linux 6.5), if the
    /// kernel gives one.
    pub pidfd: Option<OwnedFd>,
}

/// `SO_PEERPIDFD` (not in every libc release yet).
const SO_PEERPIDFD: libc::c_int = 77;

/// The identity the kernel recorded for the peer of `sock`.
pub fn peer(sock: BorrowedFd<'_>) -> std::io::Result<Peer> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `fd`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    // SAFETY: a fresh descriptor the kernel gave us.
    let pidfd = (r == 0 && fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    Ok(Peer {
        pid: cred.pid as u32,
        uid: cred.uid,
        pidfd,
    })
}

impl Peer {
    /// Is the process that connected still the one at [`Peer::pid`]
    /// (alive, and not a new process given the same pid)?
    pub fn still_there(&self) -> bool {
        match &self.pidfd {
            Some(fd) => pidfd_pid(fd.as_fd()) == Some(self.pid),
            None => Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }

    /// The client's file-system identity now, if it is the uid the socket
    /// gave (`None` for root).
    pub fn credentials(&self) -> Result<Option<Credentials>, String> {
        let creds = Credentials::of_pid(self.pid)
            .map_err(|e| format!("reading the client's identity: {e}"))?;
        let fs_uid = creds.as_ref().map_or(0, |c| c.uid);
        if fs_uid != self.uid || !self.still_there() {
            return Err("the client's identity changed since it connected".into());
        }
        Ok(creds)
    }
}

/// The pid a pidfd refers to (`/proc/self/fdinfo`), `None` once it exited.
fn pidfd_pid(fd: BorrowedFd<'_>) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    let pid: i64 = info
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))?
        .trim()
        .parse()
        .ok()?;
    u32::try_from(pid).ok().filter(|&p| p > 0)
}

/// Runs being served, in all and per uid.
#[derive(Default)]
struct Counts {
    total: usize,
    per_uid: rustc_hash::FxHashMap<u32, usize>,
}

/// The daemon's socket: a thread accepting clients and starting a helper
/// for each. The socket file is removed when dropped.
pub struct Listener {
    path: PathBuf,
}

impl Listener {
    /// Bind `cfg.socket` (a stale socket file is replaced; its directory
    /// is created, mode 0755) and accept on a thread of its own. Each
    /// client is served by `outrider daemon --serve-client --config
    /// CONFIG`.
    pub fn start(cfg: &Config, config: &Path) -> Result<Listener, String> {
        let path = cfg.socket.clone();
        let named = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent() {
            if !dir.exists() {
                std::fs::create_dir_all(dir).map_err(named)?;
                set_mode(dir, 0o755).map_err(named)?;
            }
        }
        if UnixStream::connect(&path).is_ok() {
            return Err(format!(
                "{}: another daemon answers on this socket",
                path.display()
            ));
        }
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(named)?;
        // Any user may connect: who it is comes from the kernel.
        set_mode(&path, 0o666).map_err(named)?;
        let counts = Arc::new(Mutex::new(Counts::default()));
        let (cfg, config) = (cfg.clone(), config.to_path_buf());
        std::thread::Builder::new()
            .name("outrider-clients".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    admit(conn, &cfg, &config, &counts);
                }
            })
            .map_err(|e| format!("starting the client thread: {e}"))?;
        Ok(Listener { path })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
}

/// Start a helper for `conn` unless a bound is reached (then tell it).
fn admit(conn: UnixStream, cfg: &Config, config: &Path, counts: &Arc<Mutex<Counts>>) {
    let Ok(who) = peer(conn.as_fd()) else {
        return;
    };
    let refuse = |why: String| {
        crate::daemon::log(format!(
            "outrider daemon: client uid {} pid {}: {why}",
            who.uid, who.pid
        ));
        let _ = send(&conn, &Reply::Refused { why });
    };
    {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        let mine = c.per_uid.get(&who.uid).copied().unwrap_or(0);
        if c.total >= cfg.max_clients {
            return refuse(format!("{} runs served already (max_clients)", c.total));
        }
        if mine >= cfg.max_clients_per_user {
            return refuse(format!(
                "{mine} runs of this user served already (max_clients_per_user)"
            ));
        }
        c.total += 1;
        *c.per_uid.entry(who.uid).or_insert(0) += 1;
    }
    let helper = std::process::Command::new("/proc/self/exe")
        .arg("daemon")
        .arg("--serve-client")
        .arg("--config")
        .arg(config)
        .stdin(std::process::Stdio::from(OwnedFd::from(
            match conn.try_clone() {
                Ok(c) => c,
                Err(e) => return release(counts, who.uid, Some(e.to_string()), &conn),
            },
        )))
        .stdout(std::process::Stdio::null())
        .spawn();
    match helper {
        Ok(mut child) => {
            let counts = Arc::clone(counts);
            let uid = who.uid;
            let _ = std::thread::Builder::new()
                .name("outrider-client".into())
                .spawn(move || {
                    let _ = child.wait();
                    release(&counts, uid, None, &conn);
                });
        }
        Err(e) => release(
            counts,
            who.uid,
            Some(format!("starting its helper: {e}")),
            &conn,
        ),
    }
}

/// A served run ended (or never started: `why`, told to the client).
fn release(counts: &Arc<Mutex<Counts>>, uid: u32, why: Option<String>, conn: &UnixStream) {
    if let Some(why) = why {
        crate::daemon::log(format!("outrider daemon: client uid {uid}: {why}"));
        let _ = send(conn, &Reply::Refused { why });
    }
    let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
    c.total = c.total.saturating_sub(1);
    if let Some(n) = c.per_uid.get_mut(&uid) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            c.per_uid.remove(&uid);
        }
    }
}

/// The socket `outrider run` uses: `$OUTRIDER_SOCKET`, else
/// [`DEFAULT_SOCKET`].
pub fn socket_path() -> PathBuf {
    std::env::var_os(SOCKET_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_SOCKET), PathBuf::from)
}

/// A connection to the daemon, if one answers at [`socket_path`].
pub fn connect() -> Option<UnixStream> {
    UnixStream::connect(socket_path()).ok()
}

/// The store of `uid`'s runs under the daemon.
pub fn user_store(cfg: &Config, uid: u32) -> PathBuf {
    cfg.state_dir.join("users").join(format!("{uid}.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_one_line_each() {
        let (a, b) = UnixStream::pair().unwrap();
        let req = Request {
            argv: vec!["grep".into(), "-r".into()],
            policy: "auto".into(),
            budget_bytes: 1 << 30,
            workers: 2,
            no_history: false,
            app_key: None,
            metadata_walk: true,
        };
        send(&a, &req).unwrap();
        send(&a, &Reply::Ready).unwrap();
        send(&a, &Exit { code: 3 }).unwrap();
        drop(a);
        let mut r = LineReader::default();
        assert_eq!(r.recv::<Request>(&b).unwrap(), Some(req));
        assert_eq!(r.recv::<Reply>(&b).unwrap(), Some(Reply::Ready));
        assert_eq!(r.recv::<Exit>(&b).unwrap(), Some(Exit { code: 3 }));
        assert_eq!(r.recv::<Exit>(&b).unwrap(), None, "a clean end");
    }

    #[test]
    fn unknown_fields_and_long_lines_are_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut w = &a;
        w.write_all(b"{\"argv\":[\"cat\"],\"policy\":\"auto\",\"budget_bytes\":1,\"workers\":1,\"no_history\":false,\"app_key\":null,\"metadata_walk\":true,\"files\":[\"/etc/shadow\"]}\n").unwrap();
        let e = LineReader::default().recv::<Request>(&b).unwrap_err();
        assert!(e.contains("unknown field `files`"), "{e}");
        let long = vec![b'x'; MAX_LINE + 10];
        let t = std::thread::spawn(move || {
            let _ = (&a).write_all(&long);
        });
        let e = LineReader::default().recv::<Request>(&b).unwrap_err();
        assert!(e.contains("longer than"), "{e}");
        drop(b);
        t.join().unwrap();
    }

    #[test]
    fn a_peer_is_who_connected() {
        let (a, _b) = UnixStream::pair().unwrap();
        let p = peer(a.as_fd()).unwrap();
        assert_eq!(p.pid, std::process::id());
        // SAFETY: no preconditions.
        assert_eq!(p.uid, unsafe { libc::geteuid() });
        assert!(p.still_there());
        let creds = p.credentials().unwrap();
        assert_eq!(creds.map(|c| c.uid).unwrap_or(0), p.uid);
    }
}
