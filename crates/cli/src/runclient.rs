//! `outrider run` by a user who is not root, served by `outrider daemon`
//! through its socket ([`outrider_daemon::clients`] has the protocol and
//! the rules): the daemon traces the program and prefetches for it as
//! this user; the program is started here, as this user, and the summary
//! the daemon returns is printed as a root run prints its own. When the
//! daemon refuses or goes away, the program runs unprefetched (said on
//! stderr), never not at all.

use crate::runcmd::{budget_bytes, cannot_run, RunArgs};
use crate::usage;
use outrider_daemon::clients::{self, Exit, LineReader, Reply, Request};
use outrider_sys::launch;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

/// How long the daemon may take to set up tracing before the program
/// starts without it.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long the daemon may take to send the summary after the program
/// ended.
const SUMMARY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Run `a.cmd` with the daemon at the other end of `conn` prefetching.
pub fn run(conn: UnixStream, a: &RunArgs) -> anyhow::Result<u8> {
    if a.history.is_some() {
        return Err(usage(
            "--history: a run served by the daemon keeps its history in the daemon's store, \
             one per user; leave --history out (or give --no-history)"
                .to_string(),
        ));
    }
    let req = Request {
        argv: a
            .cmd
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect(),
        policy: a.policy.clone(),
        budget_bytes: budget_bytes(&a.budget)?,
        workers: a.workers,
        no_history: a.no_history,
        app_key: a.app_key.clone(),
        metadata_walk: !a.no_metadata_walk,
    };
    // A daemon that hangs must not hang the user: bounded waits, then
    // the program runs unprefetched (or its summary is missing).
    conn.set_read_timeout(Some(READY_WAIT))?;
    let mut lines = LineReader::default();
    let answer = clients::send(&conn, &req)
        .map_err(|e| e.to_string())
        .and_then(|()| lines.recv::<Reply>(&conn));
    match answer {
        Ok(Some(Reply::Ready)) => {}
        Ok(Some(Reply::Refused { why })) => {
            outrider_sys::warnln!(
                "outrider: the daemon did not take this run ({why}); running without prefetching"
            );
            return Ok(run_child(&a.cmd));
        }
        Ok(_) | Err(_) => {
            outrider_sys::warnln!(
                "outrider: the daemon did not answer; running without prefetching"
            );
            return Ok(run_child(&a.cmd));
        }
    }
    let code = run_child(&a.cmd);
    conn.set_read_timeout(Some(SUMMARY_WAIT))?;
    let done = clients::send(&conn, &Exit { code })
        .map_err(|e| e.to_string())
        .and_then(|()| lines.recv::<Reply>(&conn));
    match done {
        Ok(Some(Reply::Done { summary, json })) => {
            if !a.quiet {
                let _ = std::io::Write::write_all(&mut std::io::stderr(), summary.as_bytes());
            }
            if let Some(path) = &a.json {
                crate::outfile::write(path, &format!("{json}\n"))?;
            }
        }
        _ => outrider_sys::warnln!("outrider: the daemon returned no summary"),
    }
    Ok(code)
}

/// Start the program as we are, pass our signals on, and return its exit
/// code as a shell reports it (127/126 when it could not start).
fn run_child(cmd: &[std::ffi::OsString]) -> u8 {
    launch::install_signal_handlers();
    let mut child = match launch::command(&cmd[0], &cmd[1..], None).spawn() {
        Ok(c) => c,
        Err(e) => return cannot_run(cmd, &e),
    };
    let exit_fd = outrider_live::session::pidfd(child.id());
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return outrider_live::session::exit_code(&st),
            Ok(None) => {}
            Err(_) => return 1,
        }
        launch::forward_pending(child.id());
        // Woken by the exit at once with a pidfd; without one, polled.
        let wait = if exit_fd.is_some() { 100 } else { 5 };
        outrider_live::session::pause(
            exit_fd.as_ref().map(|f| f.as_fd()),
            std::time::Duration::from_millis(wait),
        );
    }
}
