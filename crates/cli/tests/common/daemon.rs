//! Helpers shared by the `outrider daemon` test files (`daemon.rs`,
//! `daemon_dirs.rs`, `daemon_clients.rs`, `daemon_trees.rs`, ...): a daemon started on a configuration and stopped
//! when dropped, its status file polled, every cache dropped under a
//! lock.

use super::{is_root, outrider, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Tests that drop every cache, or count every event the daemon decodes,
/// take this first (as in live.rs).
///
/// A static is one per test binary (each is a process of its own), and
/// that is enough: `cargo test` runs a package's test binaries one after
/// another ("each target compiles to a special executable ... and then is
/// run serially", cargo-test(1)), so only the tests of one binary, on
/// libtest's threads, can run at the same time. (A runner that starts
/// binaries or tests side by side, such as cargo-nextest, or two `cargo
/// test`s at once, is not served by it.)
static COLD: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn cold_lock() -> std::sync::MutexGuard<'static, ()> {
    COLD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Written back first: dirty pages (the data files the test just wrote)
/// are not dropped.
pub fn drop_caches() {
    // SAFETY: no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3").expect("root drops caches");
}

/// Write `path` back and drop it from the cache: a launch that reads it
/// then reads from the disk, as a launch the daemon learns from does (one
/// that reads from memory is not recorded).
pub fn evict(path: &Path) {
    evict_first(path, 0);
}

/// Drop the first `bytes` of `path` from the page cache (0: all of it).
pub fn evict_first(path: &Path, bytes: i64) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: a valid descriptor; advice only.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, bytes, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "DONTNEED of {}", path.display());
}

/// A daemon on `config`, stopped (SIGTERM) when dropped.
pub struct Daemon(Child);

impl Daemon {
    /// Its process id.
    #[allow(dead_code)] // not every test binary asks
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Start it and wait for its first status file (tracing is on then).
    pub fn start(config: &Path, state: &Path) -> Daemon {
        let before = status(state).map(|s| s["pid"].clone());
        let child = Command::new(env!("CARGO_BIN_EXE_outrider"))
            .args(["daemon", "--config", &config.display().to_string()])
            .spawn()
            .expect("the daemon starts");
        let pid = Value::from(child.id());
        let d = Daemon(child);
        wait_for(state, "the daemon's first status", |s| {
            s["pid"] == pid && Some(&s["pid"]) != before.as_ref()
        });
        d
    }

    pub fn signal(&mut self, sig: i32) -> std::process::ExitStatus {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.0.id() as i32, sig) };
        self.0.wait().unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            self.signal(libc::SIGTERM);
        }
    }
}

pub fn status(state: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(state.join("status.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The events the daemon decoded, in its status `s`.
pub fn events(s: &Value) -> u64 {
    s["events"].as_u64().unwrap()
}

/// The status file once the daemon rewrote it (at most a second after a
/// change): what it counted up to now.
pub fn rewritten(state: &Path) -> Value {
    let file = state.join("status.json");
    let mtime = || std::fs::metadata(&file).and_then(|m| m.modified()).ok();
    let (was, t0) = (mtime(), Instant::now());
    while mtime() == was && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    status(state).expect("a status file")
}

/// Poll the status file until `ok` holds (at most 30 s); the status then.
pub fn wait_for(state: &Path, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some(s) = status(state).filter(|s| ok(s)) {
            return s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "waiting for {what}: {:?}",
            status(state)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The launch of process `pid` in the status, once saved.
pub fn saved_launch(state: &Path, pid: u32) -> Value {
    launch_once(state, pid, "saved")
}

/// The launch of process `pid` in the status, once its window ended.
pub fn finished_launch(state: &Path, pid: u32) -> Value {
    launch_once(state, pid, "finished")
}

/// The launch of process `pid` in the status, once its field `flag` is
/// true.
fn launch_once(state: &Path, pid: u32, flag: &str) -> Value {
    let launch = |s: &Value| {
        let l = s["launches"].as_array()?.iter();
        l.clone()
            .find(|l| l["pid"] == pid && l[flag] == true)
            .cloned()
    };
    launch(&wait_for(state, &format!("launch {pid} {flag}"), |s| {
        launch(s).is_some()
    }))
    .expect("found")
}

/// The real python3 (not a wrapper script), if there is one.
pub fn python() -> Option<PathBuf> {
    std::fs::canonicalize("/usr/bin/python3").ok()
}

/// A configuration in `dir`: short windows (`launch_window_s = 3`),
/// every launch recorded (`repeat_window_s = 0`) and no socket, unless
/// `extra` sets them.
pub fn write_config(dir: &Path, extra: &str) -> (PathBuf, PathBuf) {
    let state = dir.join("state");
    let cfg = dir.join("daemon.toml");
    let unless_set = |key: &str, line: &'static str| if extra.contains(key) { "" } else { line };
    let repeat = unless_set("repeat_window_s", "repeat_window_s = 0\n");
    let window = unless_set("launch_window_s", "launch_window_s = 3\n");
    // Not the machine's socket: a test's daemon neither takes it from
    // an installed service nor serves that service's clients.
    let socket = unless_set("socket", "socket = \"\"\n");
    std::fs::write(
        &cfg,
        format!(
            "state_dir = \"{}\"\n{window}save_interval_s = 0.2\n{repeat}{socket}{extra}",
            state.display()
        ),
    )
    .unwrap();
    (cfg, state)
}

/// Percent of `path` in the page cache (`outrider stat`, as root).
pub fn resident_pct(path: &Path) -> f64 {
    let o = outrider(&["stat", "--json", &path.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["resident_pct"].as_f64().unwrap()
}

/// Root and the real python3: a temporary directory and a configuration
/// in it that watches python3 (plus `extra`); `None` (the test skipped)
/// otherwise.
pub fn watching_python(extra: &str) -> Option<(PathBuf, tempfile::TempDir, PathBuf, PathBuf)> {
    let Some(py) = python().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and /usr/bin/python3");
        return None;
    };
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (cfg, state) = write_config(
        dir.path(),
        &format!("watch = [\"{}\"]\n{extra}", py.display()),
    );
    Some((py, dir, cfg, state))
}

/// The process id of a `python3 -c code` run to its successful end.
pub fn python_ran(py: &Path, code: &str) -> u32 {
    let mut c = Command::new(py).args(["-c", code]).spawn().unwrap();
    assert!(c.wait().unwrap().success(), "python3 -c {code}");
    c.id()
}

/// [`watching_python`], a file of `mib` MiB in its directory (not in
/// the cache), the cold lock held and the daemon started. The lock comes before the daemon:
/// the variables of a pattern are dropped last to first, so the daemon
/// has stopped (and put `task_delayacct` back) before the next test
/// takes the lock and starts its own.
#[allow(clippy::type_complexity)]
pub fn python_and_data(
    extra: &str,
    mib: usize,
) -> Option<(
    PathBuf,
    tempfile::TempDir,
    PathBuf,
    PathBuf,
    std::sync::MutexGuard<'static, ()>,
    Daemon,
)> {
    let (py, dir, cfg, state) = watching_python(extra)?;
    let cold = cold_lock();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; mib << 20]).unwrap();
    evict(&data);
    let d = Daemon::start(&cfg, &state);
    Some((py, dir, state, data, cold, d))
}
