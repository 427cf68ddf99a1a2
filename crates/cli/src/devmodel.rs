//! The calibrated device model's measurements and store (`outrider
//! calibrate` writes it, `outrider sim --device calibrated[:PATH]` reads
//! it). The model and its fit: `outrider_sim::device::Calibrated`.
//!
//! Measured with `O_DIRECT` on the calibrated path, at random 4 KiB-aligned
//! offsets over the whole file or device (seeded, so a calibration reads
//! the same places each time):
//!
//! | step | what | how long |
//! |---|---|---|
//! | latency | reads of 4, 16, 64, 256 KiB and 1 MiB, one at a time | ≤ 256 reads or 0.4 s per size |
//! | depth | 4 KiB reads from 1, 2, 4, 8, 16, 32 threads | 0.3 s per step |
//! | bandwidth | 1 MiB reads from 8 threads (and calibrate's sequential read) | 0.5 s |
//!
//! Store: `device-model.tsv` beside `calibration.tsv` in the state
//! directory, one line per calibrated path and per device
//! (`dev:MAJOR:MINOR`), tab-separated: `key latency_ns
//! transfer_bytes_per_s bandwidth_bytes_per_s depth knee_depth peak_iops
//! unix_time`. `calibrated` uses the most recent line; `calibrated:PATH`
//! the line of PATH, else of the device PATH lives on.

use crate::usage;
use outrider_sim::device::{fit_calibrated, CalibratedParams, Fit, Measurements};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// The store's file name, in the state directory.
pub const FILE: &str = "device-model.tsv";

/// Request sizes of the latency step.
const SIZES: [u64; 5] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];
/// Thread counts of the depth step.
const THREADS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Most reads per size in the latency step.
const MAX_LATENCY_READS: u32 = 256;
/// Time bounds of the steps.
const LATENCY_TIME: Duration = Duration::from_millis(400);
const DEPTH_TIME: Duration = Duration::from_millis(300);
const BANDWIDTH_TIME: Duration = Duration::from_millis(500);
/// Threads of the bandwidth step.
const BANDWIDTH_THREADS: u32 = 8;
/// Bound on the lines kept in the store.
const MAX_ENTRIES: usize = 1024;

/// One stored model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stored {
    /// Canonical path or `dev:MAJOR:MINOR`.
    pub key: String,
    /// Fixed cost of one request (ns).
    pub latency_ns: u64,
    /// Transfer rate of one request alone (bytes/s).
    pub transfer_bytes_per_s: u64,
    /// Shared bandwidth cap (bytes/s).
    pub bandwidth_bytes_per_s: u64,
    /// Model servers (requests overlapped).
    pub depth: u32,
    /// Fewest threads reaching 90% of the peak 4 KiB rate.
    pub knee_depth: u32,
    /// Peak random 4 KiB reads per second.
    pub peak_iops: u64,
    /// When (Unix seconds).
    pub unix_time: u64,
}

impl Stored {
    /// From a fit.
    pub fn new(key: String, f: &Fit, unix_time: u64) -> Self {
        Stored {
            key,
            latency_ns: f.params.latency_ns,
            transfer_bytes_per_s: f.params.transfer_bytes_per_s,
            bandwidth_bytes_per_s: f.params.bandwidth_bytes_per_s,
            depth: f.params.depth,
            knee_depth: f.knee_depth,
            peak_iops: f.peak_iops.round() as u64,
            unix_time,
        }
    }

    /// The model's constants.
    pub fn params(&self) -> CalibratedParams {
        CalibratedParams {
            latency_ns: self.latency_ns,
            transfer_bytes_per_s: self.transfer_bytes_per_s,
            bandwidth_bytes_per_s: self.bandwidth_bytes_per_s,
            depth: self.depth,
        }
    }

    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.key,
            self.latency_ns,
            self.transfer_bytes_per_s,
            self.bandwidth_bytes_per_s,
            self.depth,
            self.knee_depth,
            self.peak_iops,
            self.unix_time
        )
    }

    fn parse(line: &str) -> Option<Stored> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 8 {
            return None;
        }
        let s = Stored {
            key: f[0].to_string(),
            latency_ns: f[1].parse().ok()?,
            transfer_bytes_per_s: f[2].parse().ok()?,
            bandwidth_bytes_per_s: f[3].parse().ok()?,
            depth: f[4].parse().ok()?,
            knee_depth: f[5].parse().ok()?,
            peak_iops: f[6].parse().ok()?,
            unix_time: f[7].parse().ok()?,
        };
        s.params().check().ok().map(|()| s)
    }
}

/// Every valid line of the store in `dir` (none if absent).
pub fn load(dir: &Path) -> Vec<Stored> {
    std::fs::read_to_string(dir.join(FILE))
        .map(|t| t.lines().filter_map(Stored::parse).collect())
        .unwrap_or_default()
}

/// Store `s`, replacing the line of the same key.
pub fn store(dir: &Path, s: &Stored) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join(FILE);
    let mut lines: Vec<String> = load(dir)
        .into_iter()
        .filter(|o| o.key != s.key)
        .map(|o| o.line())
        .collect();
    lines.push(s.line());
    let skip = lines.len().saturating_sub(MAX_ENTRIES);
    let tmp = dir.join(format!("{FILE}.{}", std::process::id()));
    std::fs::write(&tmp, lines[skip..].join("\n") + "\n")
        .and_then(|()| std::fs::rename(&tmp, &file))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))
}

/// Turn `--device calibrated` / `calibrated:PATH` into the explicit model
/// specification from the store; any other device is returned unchanged.
pub fn resolve_device(spec: &str) -> anyhow::Result<String> {
    let target = match spec.split_once(':') {
        None if spec == "calibrated" => None,
        Some(("calibrated", rest)) if !rest.contains('=') => Some(rest),
        _ => return Ok(spec.to_string()),
    };
    let dir = crate::calibrate::state_dir().ok_or_else(|| {
        usage("--device calibrated: no state directory (set OUTRIDER_STATE_DIR, XDG_STATE_HOME or HOME)")
    })?;
    let all = load(&dir);
    let file = dir.join(FILE);
    let found = match target {
        None => all.iter().max_by_key(|s| s.unix_time),
        Some(path) => {
            let canon = std::fs::canonicalize(path)
                .map_err(|e| usage(format!("--device {spec}: {path}: {e}")))?;
            let dev_key = crate::calibrate::device_key_of(&canon);
            all.iter()
                .find(|s| Path::new(&s.key) == canon)
                .or_else(|| all.iter().find(|s| Some(&s.key) == dev_key.as_ref()))
        }
    };
    let s = found.ok_or_else(|| {
        let what = target.map_or("any device".to_string(), |p| format!("{p} (or its device)"));
        usage(format!(
            "--device {spec}: no calibrated model of {what} in {}; run `outrider calibrate {}` first (as the user that runs sim)",
            file.display(),
            target.unwrap_or("DEVICE-OR-FILE")
        ))
    })?;
    Ok(s.params().spec())
}

/// A small deterministic generator for read offsets (splitmix64).
struct Offsets(u64);

impl Offsets {
    /// A 4 KiB-aligned offset of a `len`-byte read within `size` bytes.
    fn next(&mut self, size: u64, len: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let slots = (size.saturating_sub(len) / 4096).max(1);
        (z % slots) * 4096
    }
}

fn open_direct(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(crate::calibrate::O_DIRECT)
        .open(path)
        .map_err(|e| {
            usage(format!(
                "{}: cannot open with O_DIRECT: {e}",
                path.display()
            ))
        })
}

/// Random `len`-byte reads of `path` (size `size`) from `threads` threads
/// until `time` passes or each made `max_reads`; returns (reads, seconds).
fn random_reads(
    path: &Path,
    size: u64,
    len: u64,
    threads: u32,
    time: Duration,
    max_reads: u32,
) -> anyhow::Result<(u64, f64)> {
    let t0 = Instant::now();
    let counts = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> anyhow::Result<u64> {
                    let f = open_direct(path)?;
                    let mut buf = crate::calibrate::Aligned::new(len as usize);
                    let mut gen = Offsets(0x5eed + u64::from(t) * 7919 + len);
                    let mut n = 0u64;
                    while n < u64::from(max_reads) && t0.elapsed() < time {
                        let off = gen.next(size, len);
                        f.read_at(buf.slice(), off).map_err(|e| {
                            anyhow::anyhow!("{}: read at {off}: {e}", path.display())
                        })?;
                        n += 1;
                    }
                    Ok(n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("calibration thread panicked"))
            .collect::<anyhow::Result<Vec<u64>>>()
    })?;
    Ok((counts.iter().sum(), t0.elapsed().as_secs_f64()))
}

/// Measure `path` (`size` bytes) and fit the model; `seq_bytes_per_s` is
/// calibrate's sequential read.
pub fn measure(path: &Path, size: u64, seq_bytes_per_s: f64) -> anyhow::Result<Fit> {
    if size < 2 << 20 {
        return Err(usage(format!(
            "{}: holds {size} bytes; the device model needs at least 2 MiB to read",
            path.display()
        )));
    }
    let mut m = Measurements {
        bandwidth_bytes_per_s: seq_bytes_per_s,
        ..Measurements::default()
    };
    for len in SIZES {
        let (n, secs) = random_reads(path, size, len, 1, LATENCY_TIME, MAX_LATENCY_READS)?;
        m.latency.push((len, secs * 1e9 / n.max(1) as f64));
    }
    for t in THREADS {
        let (n, secs) = random_reads(path, size, 4096, t, DEPTH_TIME, u32::MAX)?;
        m.iops.push((t, n as f64 / secs));
    }
    let (n, secs) = random_reads(
        path,
        size,
        1 << 20,
        BANDWIDTH_THREADS,
        BANDWIDTH_TIME,
        u32::MAX,
    )?;
    m.bandwidth_bytes_per_s = m
        .bandwidth_bytes_per_s
        .max(n as f64 * f64::from(1 << 20) / secs);
    fit_calibrated(&m)
        .map_err(|e| anyhow::anyhow!("{}: cannot fit a device model: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> Stored {
        Stored {
            key: "/data/big".into(),
            latency_ns: 80_000,
            transfer_bytes_per_s: 500_000_000,
            bandwidth_bytes_per_s: 1_500_000_000,
            depth: 8,
            knee_depth: 8,
            peak_iops: 90_711,
            unix_time: 5,
        }
    }

    #[test]
    fn the_store_keeps_one_line_per_key_and_skips_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        store(dir.path(), &line()).unwrap();
        store(
            dir.path(),
            &Stored {
                key: "dev:8:1".into(),
                ..line()
            },
        )
        .unwrap();
        store(dir.path(), &Stored { depth: 4, ..line() }).unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        std::fs::write(dir.path().join(FILE), text + "garbage\tline\n").unwrap();
        let all = load(dir.path());
        assert_eq!(all.len(), 2);
        assert_eq!(all.iter().find(|s| s.key == "/data/big").unwrap().depth, 4);
    }

    #[test]
    fn offsets_are_aligned_and_inside() {
        let mut g = Offsets(1);
        for _ in 0..1000 {
            let o = g.next(10 << 20, 1 << 20);
            assert_eq!(o % 4096, 0);
            assert!(o + (1 << 20) <= 10 << 20);
        }
    }
}
