//! `outrider run` by a user who is not root, served through the socket of
//! `outrider daemon` against the real kernel: the program runs as that
//! user, and the daemon prefetches with the user's rights and never
//! beyond them. Needs root (a second user, tracing): skipped without it.

mod common;

use common::daemon::{
    cold_lock, drop_caches, python, resident_pct, saved_launch, status, wait_for, write_config,
    Daemon,
};
use common::{is_root, stderr};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A user created for the test (`useradd`; removed when dropped), or
/// `nobody` where users cannot be created.
struct TestUser {
    name: Option<String>,
    uid: u32,
    gid: u32,
}

impl TestUser {
    fn create() -> TestUser {
        let name = format!("ortest{}", std::process::id());
        let made = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                &name,
            ])
            .status()
            .is_ok_and(|s| s.success());
        let id = |flag: &str, who: &str| -> u32 {
            let o = Command::new("id").args([flag, who]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
        };
        let who = if made { name.as_str() } else { "nobody" };
        TestUser {
            uid: id("-u", who),
            gid: id("-g", who),
            name: made.then_some(name),
        }
    }

    /// `prog args` as this user (no supplementary groups), the daemon's
    /// socket in its environment.
    fn command(&self, prog: &str, args: &[&str], socket: &Path) -> Command {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new(prog);
        c.args(args)
            .env("OUTRIDER_SOCKET", socket)
            .uid(self.uid)
            .gid(self.gid);
        c
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        if let Some(n) = &self.name {
            let _ = Command::new("userdel").arg(n).status();
        }
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `outrider run` by a user who is not root goes through the daemon's
/// socket: the program runs as that user and the summary comes back. The
/// daemon acts for the user with the user's own rights: a file named in
/// the user's history that the user can no longer open is not prefetched
/// (while the same history with the file open to the user is), a request
/// naming files is refused, and a launch set recorded from root's launch
/// of an executable is replayed for the user's launch without the file
/// only root may read.
#[test]
fn an_unprivileged_client_is_served_as_itself_and_never_beyond_its_rights() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let _cold = cold_lock();
    let user = TestUser::create();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    set_mode(dir.path(), 0o755);
    let cat = std::fs::canonicalize("/usr/bin/cat").unwrap();
    let socket = dir.path().join("sock/daemon.sock");
    // Sets replayed whole whatever files their launch was given: root's
    // `cat closed` set, replayed for the user's `cat ./a`, is kept from
    // the root-only file by the access check alone.
    let (cfg, state) = write_config(
        dir.path(),
        &format!(
            "watch = [\"{}\"]\nsocket = \"{}\"\nargument_roots = false\n",
            cat.display(),
            socket.display()
        ),
    );
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    set_mode(&data, 0o755);
    for name in ["a", "open", "closed"] {
        std::fs::write(data.join(name), vec![7u8; 8 << 20]).unwrap();
        set_mode(&data.join(name), 0o644);
    }
    // A state directory others may enter: the files in it must keep
    // them out themselves.
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o755);
    let exe = env!("CARGO_BIN_EXE_outrider");
    let _d = Daemon::start(&cfg, &state);
    assert!(
        socket.exists(),
        "the daemon listens at {}",
        socket.display()
    );

    // The program runs as the user; the summary is the daemon's.
    let o = user
        .command(exe, &["run", "--", "sh", "-c", "id -u"], &socket)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        user.uid.to_string()
    );
    let err = stderr(&o);
    assert!(
        err.contains("outrider: sh ran") && err.contains(&format!("users/{}.db", user.uid)),
        "{err}"
    );

    // The status file and the store are root's (they name every user's
    // programs): the user is told the daemon runs, and to ask root for
    // the rest.
    for f in ["status.json", "history.db"] {
        use std::os::unix::fs::MetadataExt;
        let mode = std::fs::metadata(state.join(f)).unwrap().mode();
        assert_eq!(mode & 0o077, 0, "{f}: mode {mode:o}");
    }
    let cfg_arg = cfg.to_str().unwrap();
    let o = user
        .command(exe, &["status", "--config", cfg_arg], &socket)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("running, pid") && out.contains("sudo outrider status"),
        "{out}{}",
        stderr(&o)
    );
    let o = user
        .command(exe, &["apps", "--config", cfg_arg], &socket)
        .output()
        .unwrap();
    assert!(
        !o.status.success() && o.stdout.is_empty() && stderr(&o).contains("sudo outrider apps"),
        "{}",
        stderr(&o)
    );

    // Two histories alike: read `a`, then `open` (or `closed`).
    let run = |key: &str, script: &str| {
        let o = user
            .command(
                exe,
                &["run", "--app-key", key, "--", "sh", "-c", script],
                &socket,
            )
            .current_dir(&data)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    for _ in 0..2 {
        for key in ["open", "closed"] {
            drop_caches();
            run(key, &format!("cat a {key} > /dev/null"));
            std::thread::sleep(Duration::from_millis(300)); // the background save
        }
    }
    set_mode(&data.join("closed"), 0o600);
    for key in ["open", "closed"] {
        drop_caches();
        let err = run(key, "cat a > /dev/null; sleep 0.5");
        std::thread::sleep(Duration::from_millis(300));
        let pct = resident_pct(&data.join(key));
        if key == "open" {
            assert!(
                pct >= 10.0,
                "the file the user may read is prefetched: {pct}%\n{err}"
            );
        } else {
            assert_eq!(pct, 0.0, "the file only root may read stays out: {err}");
            assert!(err.contains("dropped 1)"), "{err}");
        }
    }

    // A request that names files is refused, and reads nothing.
    drop_caches();
    let script = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\n\
         s.sendall(b'{{\"argv\":[\"cat\"],\"policy\":\"auto\",\"budget_bytes\":1,\"workers\":1,\
         \"no_history\":false,\"app_key\":null,\"metadata_walk\":true,\"files\":[\"{}\"]}}\\n')\n\
         print(s.recv(4096).decode())\n",
        socket.display().to_string(),
        data.join("closed").display()
    );
    let py = python().expect("/usr/bin/python3 (Debian's, not a per-user shim)");
    let o = user
        .command(py.to_str().unwrap(), &["-c", &script], &socket)
        .output()
        .unwrap();
    let reply = String::from_utf8_lossy(&o.stdout);
    assert!(
        reply.contains("\"refused\"") && reply.contains("unknown field `files`"),
        "{reply} {}",
        stderr(&o)
    );
    assert_eq!(resident_pct(&data.join("closed")), 0.0);

    // Root's launches of cat read the closed file from the disk (two in a
    // row, so the set replays it; a launch that reads from memory is not
    // recorded); the user's launch of cat replays that launch set
    // without it.
    // `cat closed -`, alive until its standard input closes: a cat of a
    // cached file can exit before the daemon reads its `/proc/PID/exe`,
    // and then it is no launch (one `.ci/run` waited for it in vain).
    for _ in 0..2 {
        drop_caches();
        let mut root_cat = Command::new(&cat)
            .arg(data.join("closed"))
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let root_pid = root_cat.id();
        std::thread::sleep(Duration::from_millis(300));
        drop(root_cat.stdin.take());
        assert!(root_cat.wait().unwrap().success());
        saved_launch(&state, root_pid);
    }
    let s = status(&state).unwrap();
    let before = s["launches"].as_array().unwrap().len();
    drop_caches();
    // `cat ./a -` (a path: the same application as root's `cat
    // /…/closed`): alive until its standard input closes, so the replay
    // (which stops when its launcher exits) runs its course.
    let mut c = user.command(cat.to_str().unwrap(), &["./a", "-"], &socket);
    let mut c = c
        .current_dir(&data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = c.id();
    std::thread::sleep(Duration::from_millis(1500));
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let s = wait_for(&state, "the user's launch of cat replayed", |s| {
        s["launches"].as_array().is_some_and(|l| {
            l.len() > before && l.iter().any(|l| l["pid"] == pid && !l["replay"].is_null())
        })
    });
    let l = s["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["pid"] == pid)
        .unwrap()
        .clone();
    assert_eq!(l["known"], true, "{l}");
    let r = &l["replay"];
    assert!(r["files_dropped"].as_u64().unwrap() >= 1, "{l}");
    assert!(
        r["files_kept"].as_u64().unwrap() >= 1,
        "cat itself and its libraries: {l}"
    );
    assert!(r["pages_requested"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(resident_pct(&data.join("closed")), 0.0, "{l}");
}
