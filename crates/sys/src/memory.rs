//! How much memory the page cache may use: cgroup limits and `MemAvailable`.
//!
//! Page cache is charged to the memory cgroup of the task that reads it in
//! (DESIGN.md "Kernel facts"), so a prefetcher inside a limited cgroup must
//! size itself to the cgroup, not to the machine. [`cgroup_memory`] finds the
//! memory cgroup of a process from `/proc/PID/cgroup`, the controller's mount
//! point from `/proc/self/mountinfo`, and reads the limit — cgroup v1
//! `memory.limit_in_bytes`, v2 `memory.max` — taking the smallest limit
//! along the path to the root (limits are hierarchical). v1 is used when its
//! memory controller is mounted (then the v2 hierarchy has no memory
//! controller), v2 otherwise.

use std::io;
use std::path::{Path, PathBuf};

/// v1 reports "no limit" as a huge page-rounded number; anything at or
/// above this is treated as unlimited.
const V1_UNLIMITED: u64 = 1 << 62;

/// A process's memory cgroup and what it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMemory {
    /// 1 or 2.
    pub version: u8,
    /// The cgroup's directory under the controller's mount point.
    pub dir: PathBuf,
    /// It is the hierarchy's root (the mount point itself).
    pub is_root: bool,
    /// Smallest limit on the path from this cgroup to the root; `None` when
    /// unlimited.
    pub limit_bytes: Option<u64>,
    /// Memory charged to the cgroup now (v1 `memory.usage_in_bytes`, v2
    /// `memory.current`).
    pub usage_bytes: u64,
    /// Anonymous memory charged to it (v1 `total_rss`, v2 `anon` in
    /// `memory.stat`): what the page cache cannot reclaim.
    pub anon_bytes: u64,
}

impl CgroupMemory {
    /// Bytes the page cache can occupy in this cgroup: limit − anonymous
    /// memory, or `None` when unlimited.
    pub fn cache_room_bytes(&self) -> Option<u64> {
        self.limit_bytes.map(|l| l.saturating_sub(self.anon_bytes))
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available_bytes() -> io::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    parse_meminfo_kb(&text, "MemAvailable:")
        .map(|kb| kb * 1024)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "/proc/meminfo: no MemAvailable line",
            )
        })
}

/// Memory pressure (PSI, `/proc/pressure/memory`): how long some task
/// waited on memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryPressure {
    /// Percent of the last 10 s.
    pub some_avg10: f64,
    /// Microseconds in all, since boot.
    pub some_total_us: u64,
}

/// The machine's memory pressure now; `None` without PSI.
pub fn memory_pressure() -> Option<MemoryPressure> {
    parse_pressure(&std::fs::read_to_string("/proc/pressure/memory").ok()?)
}

/// Parse the `some` line of a PSI file.
pub fn parse_pressure(text: &str) -> Option<MemoryPressure> {
    let line = text.lines().find_map(|l| l.strip_prefix("some "))?;
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
    };
    Some(MemoryPressure {
        some_avg10: field("avg10")?.parse().ok()?,
        some_total_us: field("total")?.parse().ok()?,
    })
}

fn parse_meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The memory cgroup of `pid` (`None`: the calling process), or `Ok(None)`
/// when no memory controller is mounted.
pub fn cgroup_memory(pid: Option<u32>) -> io::Result<Option<CgroupMemory>> {
    match memory_cgroup_of(pid)? {
        Some((version, mount, path)) => read_cgroup(version, &mount, &path).map(Some),
        None => Ok(None),
    }
}

/// The directory of the memory cgroup of `pid` (`None`: the calling
/// process), without reading its limits; `Ok(None)` as [`cgroup_memory`].
pub fn cgroup_memory_dir(pid: Option<u32>) -> io::Result<Option<PathBuf>> {
    Ok(memory_cgroup_of(pid)?.map(|(_, mount, path)| join(&mount, &path)))
}

/// (controller version, its mount point, the cgroup's path under it).
fn memory_cgroup_of(pid: Option<u32>) -> io::Result<Option<(u8, PathBuf, String)>> {
    let proc = match pid {
        Some(p) => format!("/proc/{p}/cgroup"),
        None => "/proc/self/cgroup".to_string(),
    };
    let cgroups = std::fs::read_to_string(&proc)?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    let (v1_mount, v2_mount) = parse_mounts(&mountinfo);
    let (v1_path, v2_path) = parse_proc_cgroup(&cgroups);
    if let (Some(mount), Some(path)) = (v1_mount, v1_path) {
        return Ok(Some((1, mount, path)));
    }
    if let (Some(mount), Some(path)) = (v2_mount, v2_path) {
        if join(&mount, &path).join("memory.max").exists() || path == "/" {
            return Ok(Some((2, mount, path)));
        }
    }
    Ok(None)
}

fn join(mount: &Path, path: &str) -> PathBuf {
    mount.join(path.trim_start_matches('/'))
}

fn read_cgroup(version: u8, mount: &Path, path: &str) -> io::Result<CgroupMemory> {
    let dir = join(mount, path);
    let (limit_file, usage_file, anon_key) = if version == 1 {
        (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_rss",
        )
    } else {
        ("memory.max", "memory.current", "anon")
    };
    // Smallest limit from this cgroup up to the mount point.
    let mut limit: Option<u64> = None;
    let mut d = dir.clone();
    loop {
        if let Ok(text) = std::fs::read_to_string(d.join(limit_file)) {
            if let Some(l) = parse_limit(&text) {
                limit = Some(limit.map_or(l, |m| m.min(l)));
            }
        }
        if d == mount || !d.pop() || !d.starts_with(mount) {
            break;
        }
    }
    let usage = std::fs::read_to_string(dir.join(usage_file))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let anon = std::fs::read_to_string(dir.join("memory.stat"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some(anon_key))
                    .then(|| it.next()?.parse().ok())
                    .flatten()
            })
        })
        .unwrap_or(0);
    Ok(CgroupMemory {
        version,
        is_root: dir == mount,
        dir,
        limit_bytes: limit,
        usage_bytes: usage,
        anon_bytes: anon,
    })
}

/// A limit file's value: `max` (v2) or a number ≥ 2^62 (v1) is unlimited.
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|&v| v < V1_UNLIMITED)
}

/// From `/proc/PID/cgroup`: the v1 memory controller's path and the v2
/// (unified, `0::`) path.
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == "0" && ctrls.is_empty() {
            v2 = Some(path.to_string());
        } else if ctrls.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_string());
        }
    }
    (v1, v2)
}

/// From `/proc/self/mountinfo`: the mount point of the v1 hierarchy that
/// carries the memory controller, and of the v2 hierarchy.
pub fn parse_mounts(text: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount) = left.split_whitespace().nth(4) else {
            continue;
        };
        let mut r = right.split_whitespace();
        let fstype = r.next().unwrap_or("");
        let _source = r.next();
        let opts = r.next().unwrap_or("");
        match fstype {
            "cgroup" if opts.split(',').any(|o| o == "memory") => {
                v1.get_or_insert_with(|| PathBuf::from(mount));
            }
            "cgroup2" => {
                v2.get_or_insert_with(|| PathBuf::from(mount));
            }
            _ => {}
        }
    }
    (v1, v2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_lines_parse() {
        let t = "some avg10=12.50 avg60=3.00 avg300=0.10 total=123456\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=99\n";
        assert_eq!(
            parse_pressure(t),
            Some(MemoryPressure {
                some_avg10: 12.5,
                some_total_us: 123456
            })
        );
        assert_eq!(parse_pressure("full avg10=1 total=2\n"), None);
        assert_eq!(parse_pressure("some avg10=x total=2\n"), None);
    }

    // Regression: v1's "unlimited" value must not be mistaken for a limit.
    #[test]
    fn limits_parse_unlimited_as_none() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("268435456\n"), Some(256 << 20));
    }

    #[test]
    fn proc_cgroup_finds_v1_memory_and_v2_paths() {
        let text =
            "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/x\n0::/user.slice\n";
        assert_eq!(
            parse_proc_cgroup(text),
            (Some("/process_api/abc".into()), Some("/user.slice".into()))
        );
    }

    #[test]
    fn mountinfo_finds_controller_mounts() {
        let text = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                    31 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                    32 25 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(
            parse_mounts(text),
            (
                Some(PathBuf::from("/sys/fs/cgroup/memory")),
                Some(PathBuf::from("/sys/fs/cgroup/unified"))
            )
        );
    }

    #[test]
    fn meminfo_parses_kib() {
        let text = "MemTotal:       24683520 kB\nMemAvailable:   24368000 kB\n";
        assert_eq!(parse_meminfo_kb(text, "MemAvailable:"), Some(24_368_000));
    }
}
