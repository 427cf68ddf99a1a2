//! The security model of a root tool, end to end through the binary: the
//! program runs as the sudo user, dies with outrider and receives its
//! signals; outputs are checked before it starts and never written
//! through a planted symbolic link; `stat` never blocks on a FIFO nor
//! reports a false 0%. Tests needing root (a second user, tracefs) say
//! so and skip without it; the second user (`outrider-test`, in group
//! `outrider-test-grp`) is created by the test if missing and reused.

mod common;
use common::*;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_outrider");

fn id_of(args: &[&str]) -> Option<u32> {
    let o = Command::new("id").args(args).output().ok()?;
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

/// (uid, gid, gid of its supplementary group) of the test user, created
/// with `useradd` if missing; `None` when not root.
fn test_user() -> Option<(u32, u32, u32)> {
    static USER: OnceLock<Option<(u32, u32, u32)>> = OnceLock::new();
    *USER.get_or_init(|| {
        if !is_root() {
            return None;
        }
        let run = |c: &[&str]| {
            let _ = Command::new(c[0])
                .args(&c[1..])
                .stderr(Stdio::null())
                .status();
        };
        run(&["groupadd", "-f", "outrider-test-grp"]);
        if id_of(&["-u", "outrider-test"]).is_none() {
            run(&[
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "outrider-test",
            ]);
        }
        run(&["usermod", "-a", "-G", "outrider-test-grp", "outrider-test"]);
        let uid = id_of(&["-u", "outrider-test"]).expect("useradd made the test user");
        let gid = id_of(&["-g", "outrider-test"]).expect("the test user has a group");
        let grp = String::from_utf8_lossy(
            &Command::new("getent")
                .args(["group", "outrider-test-grp"])
                .output()
                .unwrap()
                .stdout,
        )
        .split(':')
        .nth(2)
        .and_then(|g| g.trim().parse().ok())
        .expect("groupadd made the group");
        Some((uid, gid, grp))
    })
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// `mkfifo p; timeout 5 outrider stat p` used to time out (124): the FIFO
/// is refused at once with exit 2, naming it.
#[test]
fn stat_of_a_fifo_is_refused_at_once() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p");
    mkfifo(&p);
    for cmd in ["stat", "warm", "evict"] {
        let o = Command::new("timeout")
            .args(["20", BIN, cmd])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert!(stderr(&o).contains("is a FIFO"), "{}", stderr(&o));
    }
}

/// Like env, timeout and sudo: 127 for a command that does not exist,
/// 126 for one that cannot be executed (it used to be 2 for both).
#[test]
fn a_missing_or_unexecutable_program_exits_127_or_126() {
    let d = tempfile::tempdir().unwrap();
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--",
        "no-such-command-outrider",
    ]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no-such-command-outrider"),
        "{}",
        stderr(&o)
    );
    let f = d.path().join("not-executable");
    std::fs::write(&f, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = outrider(&["run", "-q", "--no-history", "--", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
}

/// `--workers 20000` aborted (134) and the program never ran: now a clear
/// argument error, exit 2, before anything runs.
#[test]
fn workers_out_of_range_is_an_argument_error() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let m = marker.to_str().unwrap();
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--workers",
        "20000",
        "--",
        "touch",
        m,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--workers"), "{}", stderr(&o));
    assert!(!marker.exists());
}

/// An unwritable `--json-file FILE` or `record --out FILE` used to replace the
/// program's exit code with 1 after it ran (and lose the recording): it
/// is an error before the program starts.
#[test]
fn unwritable_outputs_fail_before_the_program_runs() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let m = marker.to_str().unwrap();
    let bad = d.path().join("no/such/dir/out");
    let b = bad.to_str().unwrap();
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--json-file",
        b,
        "--",
        "touch",
        m,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(b), "{}", stderr(&o));
    let o = outrider(&["record", "--out", b, "--", "touch", m]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--json-file",
        d.path().to_str().unwrap(),
        "--",
        "touch",
        m,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!marker.exists(), "the program never ran");
}

/// Root used to write through a symbolic link planted at `--json-file FILE`,
/// at `record --out`'s guessable temporary name and at `trace convert`'s.
/// Now each output replaces the path with a new private file; the link's
/// target (another user's file here) is untouched.
#[test]
fn outputs_replace_a_planted_symlink_never_write_through_it() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    if let Some((uid, _, _)) = test_user() {
        std::os::unix::fs::chown(&victim, Some(uid), None).unwrap();
    }
    let json = d.path().join("out.json");
    std::os::unix::fs::symlink(&victim, &json).unwrap();
    let o = outrider(&[
        "run",
        "-q",
        "--no-history",
        "--json-file",
        json.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let md = std::fs::symlink_metadata(&json).unwrap();
    assert!(md.is_file(), "the link was replaced by a regular file");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["exit_code"].as_u64(), Some(0));
    let trace = d.path().join("t.trc");
    std::fs::write(&trace, "0 0 8 8 1\n").unwrap();
    let converted = d.path().join("t.otr");
    std::os::unix::fs::symlink(&victim, &converted).unwrap();
    let o = outrider(&[
        "trace",
        "convert",
        trace.to_str().unwrap(),
        converted.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&converted).unwrap().is_file());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    if is_root() {
        assert_eq!(md.mode() & 0o777, 0o600, "root's outputs are private");
    }
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `record` wrote the paths and disk extents of files such as
/// /etc/shadow into a 0644 trace: as root it is 0600.
#[test]
fn record_writes_a_private_trace_as_root() {
    if !is_root() {
        eprintln!("skipped: record needs root for tracefs");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r.trace");
    let o = outrider(&[
        "record",
        "--out",
        out.to_str().unwrap(),
        "--",
        "cat",
        "/etc/hostname",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
}

/// `sudo outrider run -- CMD` used to run CMD as root: with SUDO_UID and
/// SUDO_GID set it runs as that user with the user's groups; `--as-root`
/// keeps root on purpose.
#[test]
fn under_sudo_the_program_runs_as_the_invoking_user() {
    let Some((uid, gid, grp)) = test_user() else {
        eprintln!("skipped: needs root to create a second user");
        return;
    };
    let as_sudo = |extra: &[&str], what: &str| -> String {
        let mut args = vec!["run", "-q", "--no-history"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "id", what]);
        let o = Command::new(BIN)
            .args(&args)
            .env("SUDO_UID", uid.to_string())
            .env("SUDO_GID", gid.to_string())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(as_sudo(&[], "-u"), uid.to_string());
    assert_eq!(as_sudo(&[], "-g"), gid.to_string());
    let groups = as_sudo(&[], "-G");
    assert!(groups.split(' ').any(|g| g == grp.to_string()), "{groups}");
    assert!(
        !groups.split(' ').any(|g| g == "0"),
        "no root group: {groups}"
    );
    assert_eq!(as_sudo(&["--as-root"], "-u"), "0");
}

/// Wait until `p` holds a pid.
fn pid_in(p: &Path) -> i32 {
    let t = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the program started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGTERM sent to
/// outrider used to leave the program running (or, for SIGHUP, SIGUSR1
/// and SIGALRM, kill outrider and orphan it): each reaches the program,
/// whose exit code comes back.
#[test]
fn signals_sent_to_outrider_reach_the_program() {
    let d = tempfile::tempdir().unwrap();
    for sig in ["HUP", "INT", "QUIT", "USR1", "USR2", "ALRM", "TERM"] {
        let pidfile = d.path().join(format!("pid-{sig}"));
        let script = format!(
            "trap 'exit 42' {sig}; echo $$ > {}; while :; do sleep 0.05; done",
            pidfile.display()
        );
        let mut child = Command::new(BIN)
            .args(["run", "-q", "--no-history", "--", "sh", "-c", &script])
            .stderr(Stdio::null())
            // Its own process group, as when started from a shell script.
            .process_group(0)
            .spawn()
            .unwrap();
        pid_in(&pidfile);
        let num = match sig {
            "HUP" => libc::SIGHUP,
            "INT" => libc::SIGINT,
            "QUIT" => libc::SIGQUIT,
            "USR1" => libc::SIGUSR1,
            "USR2" => libc::SIGUSR2,
            "ALRM" => libc::SIGALRM,
            _ => libc::SIGTERM,
        };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, num) };
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(42), "SIG{sig}");
    }
}

/// `kill -9` of outrider used to leave the program running with ppid 1:
/// it is killed with outrider (PR_SET_PDEATHSIG).
#[test]
fn the_program_dies_with_outrider() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let mut child = Command::new(BIN)
        .args(["run", "-q", "--no-history", "--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = pid_in(&pidfile);
    child.kill().unwrap();
    child.wait().unwrap();
    let t = Instant::now();
    let gone = loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        // Gone, or a zombie waiting for init to reap it.
        if state.is_none_or(|s| s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'))) {
            break true;
        }
        if t.elapsed() > Duration::from_secs(60) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !gone {
        // SAFETY: clean up the orphan before failing.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "the program outlived outrider");
}

/// As a non-root user, on a readable file the user does not own, the
/// kernel refuses cachestat (EPERM): `stat` used to print `0/N pages
/// 0.0%` with exit 0 for a fully resident file. It says "unknown" with
/// the reason and exits 1.
#[test]
fn stat_as_another_user_reports_unknown_not_a_false_zero() {
    let Some((uid, gid, _)) = test_user() else {
        eprintln!("skipped: needs root to create a second user");
        return;
    };
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = d.path().join("rootfile");
    std::fs::write(&f, vec![7u8; 8 * 4096]).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(outrider(&["warm", f.to_str().unwrap()]).status.success());
    let o = Command::new(BIN)
        .args(["stat", f.to_str().unwrap()])
        .uid(uid)
        .gid(gid)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.contains("unknown") && out.contains(f.to_str().unwrap()),
        "{out}"
    );
    assert!(!out.contains("0.0%"), "{out}");
    let o = Command::new(BIN)
        .args(["stat", "--json", "-v", f.to_str().unwrap()])
        .uid(uid)
        .gid(gid)
        .output()
        .unwrap();
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert!(first["resident_pages"].is_null(), "{first}");
    assert!(
        first["unknown"].as_str().unwrap().contains("cachestat"),
        "{first}"
    );
}

/// Without root, `outrider run` runs the program unprefetched and says
/// what would prefetch for it (sudo, or the daemon).
#[test]
fn a_user_without_root_is_told_how_to_get_prefetching() {
    let Some((uid, gid, _)) = test_user() else {
        eprintln!("skipped: needs root to create a second user");
        return;
    };
    let o = Command::new(BIN)
        .args(["run", "--no-history", "--", "id", "-u"])
        .env("HOME", "/nonexistent")
        .uid(uid)
        .gid(gid)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), uid.to_string());
    assert!(
        err.contains("not root")
            && err.contains("sudo outrider run")
            && err.contains("systemctl enable --now outrider"),
        "{err}"
    );
}

/// `sudo outrider stat DIR` used to list, as root, a directory the user
/// cannot read (names, sizes): under sudo the walk lists and opens as the
/// invoking user; residency of what the user can read is still known
/// (cachestat as root). `--as-root` walks as root.
#[test]
fn under_sudo_stat_sees_only_what_the_user_can_open() {
    let Some((uid, gid, _)) = test_user() else {
        eprintln!("skipped: needs root to create a second user");
        return;
    };
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = d.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(private.join("secret-name"), b"x").unwrap();
    let public = d.path().join("public");
    std::fs::write(&public, vec![1u8; 4 * 4096]).unwrap();
    let sudo_stat = |extra: &[&str], path: &Path| -> Output {
        let mut args = vec!["stat", "-v", "--json"];
        args.extend_from_slice(extra);
        Command::new(BIN)
            .args(&args)
            .arg(path)
            .env("SUDO_UID", uid.to_string())
            .env("SUDO_GID", gid.to_string())
            .output()
            .unwrap()
    };
    let o = sudo_stat(&[], &private);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("Permission denied"), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("secret-name"));
    let o = sudo_stat(&[], &public);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert!(first["resident_pages"].is_u64(), "{first}");
    let o = sudo_stat(&["--as-root"], &private);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("secret-name"));
}
