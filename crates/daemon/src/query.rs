//! What `outrider status`, `outrider apps` and `outrider forget` read and
//! change: the daemon's status file and process, and the launch sets in
//! its store. They work whether the daemon runs or not; the store's
//! writers (the daemon's saves, a `forget`) are serialised by SQLite.

use crate::config::{Config, DEFAULT_CONFIG};
use crate::daemon::{open_store, LaunchStatus, Status};
use crate::store::{launch_key, LAUNCH_PREFIX};
use outrider_store::Store;
use rusqlite::params;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The daemon as `outrider status` shows it.
#[derive(Debug, serde::Serialize)]
pub struct DaemonReport {
    /// A daemon process of the status file's pid is alive.
    pub running: bool,
    /// Its pid (the status file's, running or not).
    pub pid: Option<u32>,
    /// What it watches: "every program" or the executables.
    pub watching: Vec<String>,
    /// The history store.
    pub store: String,
    /// Its resident memory, bytes (running only).
    pub rss_bytes: Option<u64>,
    /// Its CPU time so far, seconds (running only).
    pub cpu_s: Option<f64>,
    /// How long it has run, seconds (running only).
    pub uptime_s: Option<f64>,
    /// The status file's counters (none before the daemon's first start,
    /// or when it is not this user's to read).
    pub status: Option<Status>,
    /// The status file is root's to read (it names every user's
    /// programs): the daemon was found among the processes instead, and
    /// no application is shown.
    pub status_root_only: bool,
    /// Per application, from the launches in the status file.
    pub apps: Vec<AppActivity>,
}

/// One application's recent launches.
#[derive(Debug, Default, PartialEq, serde::Serialize)]
pub struct AppActivity {
    /// The executable.
    pub exe: String,
    /// Launches seen.
    pub launches: u64,
    /// Launches that had a launch set replayed.
    pub replayed: u64,
    /// Pages the replays asked for.
    pub pages_requested: u64,
    /// Pages the launches read (cache hits included).
    pub pages_read: u64,
    /// Pages the launches had to bring in themselves (their misses).
    pub pages_missed: u64,
    /// Pages of the replayed sets the launches read.
    pub pages_used: u64,
    /// The benefit gate at the last launch (`full`, `reduced`, `off`).
    pub gate: String,
    /// The last judged replay's verdict (`paid`, `harmed`, `no_evidence`).
    pub verdict: String,
    /// Seconds of block-I/O wait a launch had in its window, median of
    /// the launches with no replay (delay accounting); `None` without one.
    pub io_wait_cold_s: Option<f64>,
    /// The same, median of the replayed launches.
    pub io_wait_replayed_s: Option<f64>,
    /// Stall time the replays saved, estimated: for each replayed launch,
    /// the unreplayed launches' median wait less its own, summed.
    pub stall_saved_s: Option<f64>,
}

/// One launch set in the store.
#[derive(Debug, PartialEq, serde::Serialize)]
pub struct LaunchSet {
    /// The executable.
    pub exe: String,
    /// Launches recorded into it.
    pub runs: u64,
    /// When it was last saved (Unix seconds).
    pub saved_unix: i64,
    /// Files in it.
    pub files: u64,
    /// Pages in it (what a replay asks for at most).
    pub pages: u64,
}

/// `outrider status`: the status file of `cfg`'s state directory and the
/// process it names. `config` is the file `cfg` came from: a user other
/// than root cannot read the status file, and the daemon is then found
/// among the processes by it ([`daemon_of_config`]).
pub fn report(cfg: &Config, config: &Path) -> DaemonReport {
    let text = std::fs::read_to_string(cfg.state_dir.join("status.json"));
    let root_only = text
        .as_ref()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    let status: Option<Status> = text.ok().and_then(|t| serde_json::from_str(&t).ok());
    let pid = match &status {
        Some(s) => Some(s.pid),
        None if root_only => daemon_of_config(config),
        None => None,
    };
    let proc = pid.and_then(daemon_process);
    DaemonReport {
        running: proc.is_some(),
        pid,
        watching: if cfg.watch.is_empty() {
            vec!["every program".into()]
        } else {
            cfg.watch.iter().map(|p| p.display().to_string()).collect()
        },
        store: cfg.store_path().display().to_string(),
        rss_bytes: proc.map(|p| p.rss_bytes),
        cpu_s: proc.map(|p| p.cpu_s),
        uptime_s: proc.map(|p| p.uptime_s),
        apps: status
            .as_ref()
            .map_or_else(Vec::new, |s| activity(&s.launches)),
        status,
        status_root_only: root_only,
    }
}

/// The launches of the status file, summed per executable, most
/// launched first.
pub fn activity(launches: &[LaunchStatus]) -> Vec<AppActivity> {
    let mut by_exe: BTreeMap<&str, AppActivity> = BTreeMap::new();
    for l in launches {
        let a = by_exe.entry(&l.exe).or_insert_with(|| AppActivity {
            exe: l.exe.clone(),
            ..AppActivity::default()
        });
        a.launches += 1;
        if let Some(r) = &l.replay {
            a.replayed += 1;
            a.pages_requested += r.pages_requested;
        }
        a.pages_read += l.read_pages;
        a.pages_missed += l.missed_pages;
        a.pages_used += l.used_pages;
        a.gate.clone_from(&l.gate);
        if !l.verdict.is_empty() {
            a.verdict.clone_from(&l.verdict);
        }
    }
    let mut out: Vec<AppActivity> = by_exe.into_values().collect();
    for a in &mut out {
        stall_estimate(a, launches);
    }
    out.sort_by(|a, b| b.launches.cmp(&a.launches).then(a.exe.cmp(&b.exe)));
    out
}

/// Fill in `a`'s block-I/O waits and the stall time its replays saved,
/// from the launches' delay accounting: the launches with no replay
/// (the first, the gate's probes, a set not yet saved) are the baseline.
fn stall_estimate(a: &mut AppActivity, launches: &[LaunchStatus]) {
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for l in (launches.iter()).filter(|l| l.exe == a.exe && l.finished && !l.io_wait_glitch) {
        if let Some(w) = l.io_wait_s {
            match l.replay {
                Some(_) => warm.push(w),
                None => cold.push(w),
            }
        }
    }
    a.io_wait_cold_s = median(&mut cold);
    a.io_wait_replayed_s = median(&mut warm);
    a.stall_saved_s = a
        .io_wait_cold_s
        .filter(|_| !warm.is_empty())
        .map(|base| warm.iter().map(|w| base - w).sum());
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// What `/proc` says of a live daemon process.
#[derive(Clone, Copy)]
struct Proc {
    rss_bytes: u64,
    cpu_s: f64,
    uptime_s: f64,
}

/// `pid` when it is alive and an `outrider daemon` (a recycled pid is
/// another program).
fn daemon_process(pid: u32) -> Option<Proc> {
    daemon_config(pid)?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: state is 3,
    // utime 14, stime 15, starttime 22 (proc(5)).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    // SAFETY: sysconf takes a name and returns a number.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Some(Proc {
        rss_bytes: rss_kib * 1024,
        cpu_s: (field(14)? + field(15)?) / hz,
        uptime_s: uptime - field(22)? / hz,
    })
}

/// The configuration file of process `pid` if it is an `outrider daemon`
/// (its helpers run as `/proc/self/exe`, a boot replay or a config check
/// are no daemon). A relative path is taken from our own directory: the
/// daemon's is not ours to read.
fn daemon_config(pid: u32) -> Option<PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .collect();
    let (exe, args) = args.split_first()?;
    if !(exe.ends_with(b"outrider") || exe.ends_with(b"outrider-tools")) {
        return None;
    }
    let sub = args.iter().position(|a| *a == b"daemon")?;
    let rest = &args[sub + 1..];
    let once = [&b"--replay-boot"[..], b"--check-config", b"--serve-client"];
    if rest
        .iter()
        .any(|a| once.contains(a) || a.starts_with(b"--follow"))
    {
        return None;
    }
    let config = rest
        .windows(2)
        .find(|w| w[0] == b"--config")
        .map(|w| w[1])
        .or_else(|| rest.iter().find_map(|a| a.strip_prefix(b"--config=")))
        .unwrap_or(DEFAULT_CONFIG.as_bytes());
    Some(canonical(Path::new(std::ffi::OsStr::from_bytes(config))))
}

/// The `outrider daemon` process whose configuration is `config`, if any.
pub fn daemon_of_config(config: &Path) -> Option<u32> {
    let want = canonical(config);
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| daemon_config(pid).is_some_and(|c| c == want))
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `outrider apps`: the launch sets of the store, most recently saved
/// first.
pub fn launch_sets(cfg: &Config) -> Result<Vec<LaunchSet>, String> {
    launch_sets_in(&query_store(cfg, "apps")?)
}

/// The store for `outrider COMMAND`; a user other than root is told that
/// it is root's (it names every user's programs and files), not given
/// SQLite's error.
fn query_store(cfg: &Config, command: &str) -> Result<Store, String> {
    let path = cfg.store_path();
    match std::fs::File::open(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
            "{}: the history store is root's to read (it names every user's programs and files): run `sudo outrider {command}`",
            path.display()
        )),
        _ => open_store(cfg),
    }
}

/// The launch sets of `store`, most recently saved first.
pub fn launch_sets_in(store: &Store) -> Result<Vec<LaunchSet>, String> {
    let c = store.connection();
    let mut q = c
        .prepare(
            "SELECT app_key, runs, saved_unix, accesses,
                    (SELECT COUNT(*) FROM app_files f WHERE f.app_key = r.app_key)
             FROM app_runs r WHERE app_key LIKE 'exe:%' ORDER BY saved_unix DESC, app_key",
        )
        .map_err(|e| e.to_string())?;
    let rows = q
        .query_map([], |r| {
            let key: String = r.get(0)?;
            let blob: Vec<u8> = r.get(3)?;
            let pages = outrider_store::decode_accesses(&blob)
                .map_or(0, |l| l.iter().map(|a| u64::from(a.pages)).sum());
            Ok(LaunchSet {
                exe: key[LAUNCH_PREFIX.len()..].to_string(),
                runs: r.get::<_, i64>(1)? as u64,
                saved_unix: r.get(2)?,
                files: r.get::<_, i64>(4)? as u64,
                pages,
            })
        })
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// `outrider forget`: remove the launch set of `exe` (every launch set
/// when `None`, and the store's shared history too, e.g. DiskSeen's block
/// table, [`outrider_store::SHARED_KEY`]: it is learned from the same
/// programs); returns how many launch sets were removed. An executable
/// with no launch set is an error that names it.
pub fn forget(cfg: &Config, exe: Option<&str>) -> Result<u64, String> {
    forget_in(&query_store(cfg, "forget")?, exe)
}

/// [`forget`] in `store`.
pub fn forget_in(store: &Store, exe: Option<&str>) -> Result<u64, String> {
    let pattern = exe.map_or_else(|| format!("{LAUNCH_PREFIX}%"), launch_key);
    let c = store.connection();
    let tx = c.unchecked_transaction().map_err(|e| e.to_string())?;
    let mut removed = 0;
    for table in ["app_files", "models", "app_runs"] {
        // LIKE with the key escaped would be needed for a path holding
        // `%` or `_`; one executable is matched exactly instead.
        let sql = match exe {
            Some(_) => format!("DELETE FROM {table} WHERE app_key = ?1"),
            None => format!("DELETE FROM {table} WHERE app_key LIKE ?1"),
        };
        removed = tx
            .execute(&sql, params![pattern])
            .map_err(|e| e.to_string())? as u64;
    }
    if exe.is_none() {
        tx.execute(
            "DELETE FROM models WHERE app_key = ?1",
            params![outrider_store::SHARED_KEY],
        )
        .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())?;
    match exe {
        Some(e) if removed == 0 => Err(format!(
            "{}: no launch set of {e} (`outrider apps` lists them)",
            store.path().display()
        )),
        _ => Ok(removed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launchset::ReplayStats;
    use outrider_store::{AccessRecord, AppHistory};

    fn set(files: usize, pages: &[u32]) -> AppHistory {
        AppHistory {
            files: (0..files)
                .map(|i| outrider_store::FileRecord {
                    id: i as u32,
                    dev: 1,
                    ino: i as u64 + 1,
                    handle: None,
                    path: format!("/f{i}"),
                    size: 4096,
                    mtime_ns: 0,
                    mapped: false,
                })
                .collect(),
            accesses: pages
                .iter()
                .enumerate()
                .map(|(i, &p)| AccessRecord {
                    file: 0,
                    page: i as u64 * 100,
                    pages: p,
                })
                .collect(),
            ..AppHistory::default()
        }
    }

    #[test]
    fn apps_lists_launch_sets_with_their_files_and_pages_and_forget_removes_them() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut s = Store::open(dir.path().join("h.db")).unwrap();
        let g = outrider_driver::benefit::Gate::default();
        crate::store::save(
            &mut s,
            &launch_key("/usr/bin/a"),
            &set(2, &[3, 4]),
            (&g, &Default::default()),
            &Default::default(),
        )
        .unwrap();
        crate::store::save(
            &mut s,
            &launch_key("/usr/bin/b_c"),
            &set(1, &[1]),
            (&g, &Default::default()),
            &Default::default(),
        )
        .unwrap();
        crate::store::save(
            &mut s,
            crate::store::BOOT_KEY,
            &set(5, &[9]),
            (&g, &Default::default()),
            &Default::default(),
        )
        .unwrap();
        s.merge_shared("diskseen.block-table", |_| Some(vec![1]))
            .unwrap();
        let mut sets = launch_sets_in(&s).unwrap();
        sets.sort_by(|a, b| a.exe.cmp(&b.exe));
        assert_eq!(
            sets.len(),
            2,
            "neither the boot set nor the shared history is an application's"
        );
        assert_eq!(
            (
                sets[0].exe.as_str(),
                sets[0].files,
                sets[0].pages,
                sets[0].runs
            ),
            ("/usr/bin/a", 2, 7, 1)
        );
        assert_eq!((sets[1].exe.as_str(), sets[1].pages), ("/usr/bin/b_c", 1));
        // `_` is a LIKE wildcard: one executable is matched exactly.
        let e = forget_in(&s, Some("/usr/bin/b%c")).unwrap_err();
        assert!(e.contains("no launch set of /usr/bin/b%c"), "{e}");
        assert_eq!(forget_in(&s, Some("/usr/bin/b_c")).unwrap(), 1);
        assert_eq!(launch_sets_in(&s).unwrap().len(), 1);
        assert!(
            s.load_shared("diskseen.block-table").unwrap().is_some(),
            "forgetting one application keeps the shared history"
        );
        assert!(s.load_run(&launch_key("/usr/bin/b_c")).unwrap().is_none());
        assert_eq!(forget_in(&s, None).unwrap(), 1);
        assert!(launch_sets_in(&s).unwrap().is_empty());
        assert_eq!(
            s.load_shared("diskseen.block-table").unwrap(),
            None,
            "forget --all forgets the shared history"
        );
        assert!(
            s.load_run(crate::store::BOOT_KEY).unwrap().is_some(),
            "forget --all keeps the boot set"
        );
    }

    #[test]
    fn activity_sums_launches_per_executable() {
        let l = |id, exe: &str, replayed: Option<u64>, read, missed| LaunchStatus {
            id,
            exe: exe.into(),
            known: replayed.is_some(),
            replay: replayed.map(|p| ReplayStats {
                pages_requested: p,
                ..ReplayStats::default()
            }),
            read_pages: read,
            missed_pages: missed,
            used_pages: replayed.map_or(0, |p| p / 2),
            gate: "full".into(),
            verdict: if replayed.is_some() {
                "paid".into()
            } else {
                String::new()
            },
            finished: true,
            ..LaunchStatus::default()
        };
        let waited = |mut s: LaunchStatus, w: f64| {
            s.io_wait_s = Some(w);
            s
        };
        let mut gated = waited(l(4, "/a", None, 100, 90), 0.25);
        gated.gate = "off".into();
        // A wait the kernel got wrong for one of its tasks: only a part.
        let mut glitched = waited(l(5, "/b", None, 10, 10), 0.01);
        glitched.io_wait_glitch = true;
        let a = activity(&[
            glitched,
            waited(l(1, "/b", None, 10, 10), 0.5),
            waited(l(2, "/a", None, 100, 90), 0.75),
            waited(l(3, "/a", Some(80), 100, 5), 0.125),
            gated,
        ]);
        assert_eq!(
            a,
            vec![
                AppActivity {
                    exe: "/a".into(),
                    launches: 3,
                    replayed: 1,
                    pages_requested: 80,
                    pages_read: 300,
                    pages_missed: 185,
                    pages_used: 40,
                    gate: "off".into(),
                    verdict: "paid".into(),
                    // Unreplayed launches waited 0.75 and 0.25 s (median
                    // 0.5); the replayed one 0.125 s: 0.375 s saved.
                    io_wait_cold_s: Some(0.5),
                    io_wait_replayed_s: Some(0.125),
                    stall_saved_s: Some(0.375),
                },
                AppActivity {
                    exe: "/b".into(),
                    launches: 2,
                    pages_read: 20,
                    pages_missed: 20,
                    gate: "full".into(),
                    io_wait_cold_s: Some(0.5),
                    ..AppActivity::default()
                },
            ]
        );
    }

    #[test]
    fn a_status_file_of_a_dead_or_foreign_pid_is_not_a_running_daemon() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let cfg = Config {
            state_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let config = dir.path().join("daemon.toml");
        assert!(!report(&cfg, &config).running && report(&cfg, &config).status.is_none());
        // Our own pid: alive, but a test binary, not `outrider daemon`.
        let st = Status {
            pid: std::process::id(),
            ..Status::default()
        };
        std::fs::write(
            dir.path().join("status.json"),
            serde_json::to_string(&st).unwrap(),
        )
        .unwrap();
        let r = report(&cfg, &config);
        assert_eq!(r.pid, Some(std::process::id()));
        assert!(!r.running && r.rss_bytes.is_none());
        assert_eq!(r.watching, vec!["every program".to_string()]);
    }
}
