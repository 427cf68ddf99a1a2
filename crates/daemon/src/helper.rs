//! The helpers the daemon starts, one process each: one serves a client
//! of the daemon (`outrider daemon --serve-client`, the connection on
//! its standard input; the protocol and the rules are
//! [`crate::clients`]'), one follows a program whose launch window ended
//! while it still ran (`outrider daemon --follow PID`, [`follow`]) with
//! the configuration's `follow_policy` (`auto` unless set) for the rest of
//! its run, as its user.

use crate::clients::{self, Exit, LineReader, Peer, Reply, Request};
use crate::config::Config;
use outrider_core::{build_policy, PolicyError};
use outrider_live::controller::{check_live, default_budget_bytes, ControllerOptions};
use outrider_live::lifecycle::{self, Ended, RunOptions, TracingSetup};
use outrider_live::session::Attached;
use outrider_live::source::SourceChoice;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// I/O workers a client may ask for at most.
const MAX_CLIENT_WORKERS: usize = 4;

/// Follow process `pid` (started elsewhere, still running after its
/// launch window) until it exits: the live runtime's lifecycle, as
/// `outrider run --policy` would run it with the configuration's
/// `follow_policy` (`auto` by default: history of its earlier runs, else
/// stride detection), acting for the process's user, its history in
/// that user's store under its command line (with that store's shared
/// history, when the policy keeps one: DiskSeen's block table).
/// Errors are logged by the caller.
pub fn follow(cfg: &Config, pid: u32) -> Result<(), String> {
    let pidfd = outrider_live::session::pidfd(pid).ok_or(format!("pid {pid}: gone"))?;
    let cmd: Vec<OsString> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map_err(|e| format!("pid {pid}: {e}"))?
        .split(|&c| c == 0)
        .filter(|w| !w.is_empty())
        .map(|w| OsString::from(String::from_utf8_lossy(w).into_owned()))
        .collect();
    if cmd.is_empty() {
        return Err(format!(
            "pid {pid}: no command line (a kernel thread, or gone)"
        ));
    }
    let creds =
        outrider_sys::launch::Credentials::of_pid(pid).map_err(|e| format!("pid {pid}: {e}"))?;
    let uid = creds.as_ref().map_or(0, |c| c.uid);
    if let Some(c) = creds {
        if !outrider_sys::launch::act_for(c) {
            return Err("this helper already acts for another user".into());
        }
    }
    let policy = build_policy(&cfg.follow_policy).map_err(|e| e.to_string())?;
    let opts = RunOptions {
        cmd,
        policy_spec: cfg.follow_policy.clone(),
        controller: ControllerOptions {
            budget_bytes: default_budget_bytes(Some(pid), 0.25).max(1),
            ..ControllerOptions::default()
        },
        history: Some(clients::user_store(cfg, uid)),
        app_key: None,
        metadata_walk: false,
        wait_for_save: false,
        orig_cgroup: outrider_sys::cgroup_memory(None)
            .ok()
            .flatten()
            .map(|c| c.dir),
        cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
    };
    let tracing = TracingSetup::following(policy.interests(), SourceChoice::Auto, pid)
        .map_err(|e| format!("tracing: {e}"))?;
    let mut program = Followed { pid, pidfd };
    let ended = lifecycle::run_program(
        &opts,
        policy,
        tracing,
        outrider_live::session::Program::Attached(&mut program),
    )
    .map_err(|e| e.to_string())?;
    if let Ended::Ran(o) = ended {
        let argv0 = opts.cmd[0].to_string_lossy();
        crate::daemon::log(format!(
            "outrider daemon: followed pid {pid}: {}",
            o.summary(&argv0).trim_end().replace('\n', "; ")
        ));
        if o.history.save == "background" {
            // The saver child holds the store's lock; nothing else to do.
            std::process::exit(0);
        }
    }
    Ok(())
}

/// A program followed after its launch: not our child, so its exit is
/// seen on its pidfd and its status is not known (reported as 0).
struct Followed {
    pid: u32,
    pidfd: std::os::fd::OwnedFd,
}

impl Attached for Followed {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn start(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if outrider_sys::launch::last_signal().is_some() {
            return Ok(Some(ExitStatus::from_raw(libc::SIGTERM)));
        }
        let mut p = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&self.pidfd),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        Ok((n > 0).then(|| ExitStatus::from_raw(0)))
    }

    fn wake_fd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }
}

/// Serve the client on standard input; errors are logged by the caller.
pub fn serve(cfg: &Config) -> Result<(), String> {
    let conn = UnixStream::from(
        std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("the client connection: {e}"))?,
    );
    let who = clients::peer(conn.as_fd()).map_err(|e| format!("the client's identity: {e}"))?;
    let mut lines = LineReader::default();
    let req: Request = match lines.recv(&conn) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(()),
        Err(e) => return refuse(&conn, &who, format!("bad request: {e}")),
    };
    match prepare(cfg, &who, &req) {
        Ok((opts, policy)) => run(conn, lines, who, &req, opts, policy),
        Err(why) => refuse(&conn, &who, why),
    }
}

fn refuse(conn: &UnixStream, who: &Peer, why: String) -> Result<(), String> {
    let _ = clients::send(conn, &Reply::Refused { why: why.clone() });
    Err(format!("client uid {} pid {}: {why}", who.uid, who.pid))
}

/// Check the request and take the client's identity; the run's options.
fn prepare(
    cfg: &Config,
    who: &Peer,
    req: &Request,
) -> Result<(RunOptions, outrider_core::BoxedPolicy), String> {
    if req.argv.is_empty() {
        return Err("no command given".into());
    }
    let policy = build_policy(&req.policy).map_err(|e| match e {
        PolicyError::Help(_) => "a policy's help is not a policy".to_string(),
        e => format!("--policy: {e}"),
    })?;
    check_live(policy.as_ref()).map_err(|e| format!("--policy: {e}"))?;
    let creds = who.credentials()?;
    if let Some(c) = creds.clone() {
        if !outrider_sys::launch::act_for(c) {
            return Err("this helper already acts for another user".into());
        }
    }
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", who.pid)).ok();
    // A client may ask for less than the budget `outrider run` takes by
    // default, not more.
    let cap = default_budget_bytes(Some(who.pid), 0.25);
    let opts = RunOptions {
        cmd: req.argv.iter().map(OsString::from).collect(),
        policy_spec: req.policy.clone(),
        controller: ControllerOptions {
            budget_bytes: req.budget_bytes.clamp(1, cap.max(1)),
            workers: req.workers.clamp(1, MAX_CLIENT_WORKERS),
            ..ControllerOptions::default()
        },
        history: (!req.no_history).then(|| clients::user_store(cfg, who.uid)),
        app_key: req.app_key.clone(),
        metadata_walk: req.metadata_walk,
        wait_for_save: false,
        orig_cgroup: outrider_sys::cgroup_memory(None)
            .ok()
            .flatten()
            .map(|c| c.dir),
        cwd,
    };
    Ok((opts, policy))
}

fn run(
    conn: UnixStream,
    lines: LineReader,
    who: Peer,
    req: &Request,
    opts: RunOptions,
    policy: outrider_core::BoxedPolicy,
) -> Result<(), String> {
    let tracing = TracingSetup::following(policy.interests(), SourceChoice::Auto, who.pid)
        .map_err(|e| format!("tracing: {e}"))?;
    conn.set_nonblocking(true)
        .map_err(|e| format!("the client connection: {e}"))?;
    let mut client = Client {
        conn,
        lines,
        who,
        gone: false,
    };
    let ended = lifecycle::run_program(
        &opts,
        policy,
        tracing,
        outrider_live::session::Program::Attached(&mut client),
    )
    .map_err(|e| e.to_string())?;
    if client.gone {
        return Ok(());
    }
    let _ = client.conn.set_nonblocking(false);
    let reply = match ended {
        Ended::Ran(o) => {
            let argv0 = req.argv.first().map_or("", String::as_str);
            let reply = Reply::Done {
                summary: o.summary(argv0),
                json: o.json(&opts.cmd),
            };
            let _ = clients::send(&client.conn, &reply);
            if o.history.save == "background" {
                // The saver child holds the store's lock; nothing else to do.
                std::process::exit(0);
            }
            return Ok(());
        }
        Ended::Interrupted(_) => Reply::Refused {
            why: "the daemon is stopping".into(),
        },
        Ended::CannotRun(e) => Reply::Refused { why: e.to_string() },
    };
    let _ = clients::send(&client.conn, &reply);
    Ok(())
}

/// The client's program, as the session sees it.
struct Client {
    conn: UnixStream,
    lines: LineReader,
    who: Peer,
    /// The client left (or the daemon is stopping) before reporting an
    /// exit: nothing to reply.
    gone: bool,
}

impl Attached for Client {
    fn pid(&self) -> u32 {
        self.who.pid
    }

    fn start(&mut self) -> std::io::Result<()> {
        self.conn.set_nonblocking(false)?;
        let sent = clients::send(&self.conn, &Reply::Ready);
        self.conn.set_nonblocking(true)?;
        sent
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if outrider_sys::launch::last_signal().is_some() {
            // The daemon is stopping: stop tracing; the program runs on.
            self.gone = true;
            return Ok(Some(ExitStatus::from_raw(libc::SIGTERM)));
        }
        // The client holds the only other end of the connection (it is
        // not inherited by the program): its end is the client's.
        match self.lines.poll::<Exit>(&self.conn) {
            Ok(Some(e)) => Ok(Some(ExitStatus::from_raw(i32::from(e.code) << 8))),
            Ok(None) => Ok(None),
            Err(_) => {
                self.gone = true;
                Ok(Some(ExitStatus::from_raw(libc::SIGKILL)))
            }
        }
    }

    fn wake_fd(&self) -> BorrowedFd<'_> {
        self.conn.as_fd()
    }
}
