//! `outrider calibrate DEVICE-OR-FILE`: measure the maximum read throughput
//! flashy prefetching caps itself by (flashy §IV-C: "we measure the raw
//! throughput from each disk by reading a large, uncached file, and using
//! this as the maximum"), and fit the simulator's calibrated device model
//! to the disk ([`crate::devmodel`]: latency per request size, useful
//! queue depth, bandwidth; stored in `device-model.tsv` beside
//! `calibration.tsv`).
//!
//! Reads up to `--bytes` (default 1 GiB) from the start of the path in
//! `--block` pieces (default 1 MiB) with `O_DIRECT`, so the page cache
//! neither helps nor is disturbed. Where `O_DIRECT` is refused (tmpfs, some
//! FUSE file systems) it reads through the cache and says so: the number
//! is then only an upper bound (and no device model is fitted). The result
//! is stored in `calibration.tsv` under `$OUTRIDER_STATE_DIR` if set, else
//! `$XDG_STATE_HOME/outrider/` (default `~/.local/state/outrider/`), or
//! `/var/lib/outrider/` when run as root,
//! and reused on the next call for the same path unless `--force`.
//!
//! File format, one line per calibrated path, tab-separated:
//! `canonical-path  bytes_per_s  bytes_read  direct(0|1)  unix_time`.
//! Each O_DIRECT measurement is also stored under its device, as a line whose path
//! is `dev:MAJOR:MINOR` (the device a file lives on, or the block device
//! itself): `outrider run` looks devices up there (see [`for_run`]).

use crate::{devmodel, usage};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// `O_DIRECT` (not in std; the CLI links no libc crate).
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
pub const O_DIRECT: i32 = 0o200000;
#[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
pub const O_DIRECT: i32 = 0o40000;

/// Alignment O_DIRECT buffers need (the logical block size; 4 KiB covers
/// every common device).
const ALIGN: usize = 4096;

/// Bound on the lines kept in the calibration file.
const MAX_ENTRIES: usize = 1024;

/// `outrider calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Block device (e.g. /dev/nvme0n1) or a large file on it.
    pub path: PathBuf,
    /// How much to read (a size: 256MiB, 1GiB).
    #[arg(long, default_value = "1GiB")]
    pub bytes: String,
    /// Size of each read.
    #[arg(long, default_value = "1MiB")]
    pub block: String,
    /// Measure again even if a stored result exists.
    #[arg(long)]
    pub force: bool,
    /// Where results are stored (default: $XDG_STATE_HOME/outrider, or
    /// /var/lib/outrider as root).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    pub json: bool,
}

/// One calibration result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// Canonical path measured.
    pub path: String,
    /// Measured read throughput, bytes per second.
    pub bytes_per_s: u64,
    /// Bytes read to measure it.
    pub bytes_read: u64,
    /// Read with O_DIRECT (uncached).
    pub direct: bool,
    /// When (Unix seconds).
    pub unix_time: u64,
    /// Taken from the stored file rather than measured now.
    pub reused: bool,
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The default state directory: `$OUTRIDER_STATE_DIR` if set, else
/// `/var/lib/outrider` as root, else `$XDG_STATE_HOME/outrider`.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("OUTRIDER_STATE_DIR").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x));
    }
    if is_root() {
        return Some(PathBuf::from("/var/lib/outrider"));
    }
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("outrider"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/outrider"))
}

fn parse_line(line: &str) -> Option<Calibration> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 5 {
        return None;
    }
    Some(Calibration {
        path: f[0].to_string(),
        bytes_per_s: f[1].parse().ok()?,
        bytes_read: f[2].parse().ok()?,
        direct: f[3] == "1",
        unix_time: f[4].parse().ok()?,
        reused: true,
    })
}

/// The stored calibration of `path` in `dir`, if any (for the live
/// runtime: `max_read_bytes_per_s` of `DeviceInfo`).
pub fn lookup(dir: &Path, path: &Path) -> Option<Calibration> {
    let canon = std::fs::canonicalize(path).ok()?;
    let text = std::fs::read_to_string(dir.join("calibration.tsv")).ok()?;
    text.lines()
        .filter_map(parse_line)
        .find(|c| Path::new(&c.path) == canon)
}

fn store(dir: &Path, c: &Calibration) -> anyhow::Result<()> {
    let file = dir.join("calibration.tsv");
    // The state directory: created 0700, refused if others can change it
    // (outrider_store::private).
    outrider_store::private_dir(&file).map_err(|e| anyhow::anyhow!("{e}"))?;
    let old = std::fs::read_to_string(&file).unwrap_or_default();
    let mut lines: Vec<String> = old
        .lines()
        .filter(|l| parse_line(l).is_some_and(|o| o.path != c.path))
        .map(String::from)
        .collect();
    lines.push(format!(
        "{}\t{}\t{}\t{}\t{}",
        c.path,
        c.bytes_per_s,
        c.bytes_read,
        u8::from(c.direct),
        c.unix_time
    ));
    let skip = lines.len().saturating_sub(MAX_ENTRIES);
    // An unpredictable temporary name, renamed over the file: never
    // written through a link planted at a guessable name.
    crate::outfile::write(&file, &(lines[skip..].join("\n") + "\n"))
}

/// A zeroed buffer of `len` bytes aligned to [`ALIGN`] (for O_DIRECT).
pub struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Self {
        let buf = vec![0u8; len + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        Aligned { buf, start, len }
    }
    pub fn slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

/// Read up to `want` bytes from the start of `path` in `block` pieces;
/// returns (bytes read, seconds, direct).
fn measure(path: &Path, want: u64, block: usize) -> anyhow::Result<(u64, f64, bool)> {
    let open = |flags: i32| OpenOptions::new().read(true).custom_flags(flags).open(path);
    let (mut f, direct): (File, bool) = match open(O_DIRECT) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(22) => (
            open(0).map_err(|e| usage(format!("{}: {e}", path.display())))?,
            false,
        ),
        Err(e) => return Err(usage(format!("{}: {e}", path.display()))),
    };
    let size = f
        .seek(SeekFrom::End(0))
        .and_then(|s| f.seek(SeekFrom::Start(0)).map(|_| s))
        .map_err(|e| usage(format!("{}: cannot seek: {e}", path.display())))?;
    let want = want.min(size) / ALIGN as u64 * ALIGN as u64;
    if want == 0 {
        return Err(usage(format!(
            "{}: holds {size} bytes; calibration needs at least 4 KiB to read",
            path.display()
        )));
    }
    let mut buf = Aligned::new(block);
    let mut done = 0u64;
    let t0 = Instant::now();
    while done < want {
        let n = ((want - done) as usize).min(block);
        let got = f
            .read(&mut buf.slice()[..n])
            .map_err(|e| anyhow::anyhow!("{}: read at {done}: {e}", path.display()))?;
        if got == 0 {
            break;
        }
        done += got as u64;
    }
    Ok((done, t0.elapsed().as_secs_f64(), direct))
}

/// Run `outrider calibrate`.
pub fn run(a: CalibrateArgs) -> anyhow::Result<()> {
    let want =
        outrider_core::size::parse_size(&a.bytes).map_err(|e| usage(format!("--bytes: {e}")))?;
    let block =
        outrider_core::size::parse_size(&a.block).map_err(|e| usage(format!("--block: {e}")))?;
    if block == 0 || block % ALIGN as u64 != 0 || block > 1 << 30 {
        return Err(usage(format!(
            "--block '{}': expected a multiple of 4KiB, at most 1GiB",
            a.block
        )));
    }
    let canon =
        std::fs::canonicalize(&a.path).map_err(|e| usage(format!("{}: {e}", a.path.display())))?;
    let dir = a.state_dir.clone().or_else(state_dir).ok_or_else(|| {
        usage("no state directory: set OUTRIDER_STATE_DIR, XDG_STATE_HOME or HOME, or pass --state-dir")
    })?;
    let c = match (a.force, lookup(&dir, &canon)) {
        (false, Some(c)) => c,
        _ => {
            let (bytes, secs, direct) = measure(&canon, want, block as usize)?;
            let c = Calibration {
                path: canon.display().to_string(),
                bytes_per_s: (bytes as f64 / secs.max(1e-9)) as u64,
                bytes_read: bytes,
                direct,
                unix_time: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                reused: false,
            };
            store(&dir, &c)?;
            if let Some(dev) = device_of(&canon).filter(|_| c.direct) {
                store(
                    &dir,
                    &Calibration {
                        path: dev_key(dev),
                        ..c.clone()
                    },
                )?;
            }
            c
        }
    };
    let model = model(&dir, &canon, &c, a.force)?;
    print_result(&c, model.as_ref(), &dir, a.json)
}

/// What `outrider calibrate` prints: one JSON object, or a sentence per
/// result.
fn print_result(
    c: &Calibration,
    model: Option<&devmodel::Stored>,
    dir: &Path,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            c: &'a Calibration,
            model: Option<&'a devmodel::Stored>,
        }
        let out = Out { c, model };
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!(
            "{}: {:.1} MB/s over {} ({}{}), stored in {}",
            c.path,
            c.bytes_per_s as f64 / 1e6,
            outrider_core::size::ByteSize(c.bytes_read),
            if c.direct {
                "O_DIRECT"
            } else {
                "through the page cache: an upper bound"
            },
            if c.reused {
                ", measured earlier; --force to measure again"
            } else {
                ""
            },
            dir.join("calibration.tsv").display()
        );
        if let Some(m) = model {
            println!(
                "device model: {:.1} µs + size / {:.0} MB/s per request, {} at once \
                 (90% of the peak {} reads/s from {} threads), {:.0} MB/s shared; \
                 stored in {} (`outrider sim --device calibrated`)",
                m.latency_ns as f64 / 1e3,
                m.transfer_bytes_per_s as f64 / 1e6,
                m.depth,
                m.peak_iops,
                m.knee_depth,
                m.bandwidth_bytes_per_s as f64 / 1e6,
                dir.join(devmodel::FILE).display()
            );
        }
    }
    Ok(())
}

/// The device model of `canon` (see [`devmodel`]): stored, or measured
/// now (with `force`, or when none is stored) and stored under the path
/// and its device. Needs `O_DIRECT`: through the page cache there is no
/// device to model.
fn model(
    dir: &Path,
    canon: &Path,
    c: &Calibration,
    force: bool,
) -> anyhow::Result<Option<devmodel::Stored>> {
    let key = canon.display().to_string();
    if !force {
        if let Some(s) = devmodel::load(dir).into_iter().find(|s| s.key == key) {
            return Ok(Some(s));
        }
    }
    if !c.direct {
        outrider_sys::warnln!(
            "outrider: {}: O_DIRECT refused; no device model measured",
            canon.display()
        );
        return Ok(None);
    }
    let size = File::open(canon)
        .and_then(|mut f| f.seek(SeekFrom::End(0)))
        .map_err(|e| usage(format!("{}: {e}", canon.display())))?;
    let fit = devmodel::measure(canon, size, c.bytes_per_s as f64)?;
    let s = devmodel::Stored::new(key, &fit, c.unix_time);
    devmodel::store(dir, &s)?;
    if let Some(dev) = device_key_of(canon) {
        devmodel::store(
            dir,
            &devmodel::Stored {
                key: dev,
                ..s.clone()
            },
        )?;
    }
    Ok(Some(s))
}

/// (major, minor) of a user-space `dev_t` (glibc's encoding).
pub fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// The key a device's calibration is stored under: `dev:MAJOR:MINOR`.
pub fn dev_key(dev: u64) -> String {
    let (ma, mi) = major_minor(dev);
    format!("dev:{ma}:{mi}")
}

/// The store key of the device `path` lives on (`dev:MAJOR:MINOR`).
pub fn device_key_of(path: &Path) -> Option<String> {
    device_of(path).map(dev_key)
}

/// The device `path` lives on, or the block device it is.
fn device_of(path: &Path) -> Option<u64> {
    let m = std::fs::metadata(path).ok()?;
    Some(if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    })
}

/// The device node of block device `major:minor`: `/dev/block/M:m` where
/// udev made it, else `/dev/` + the `DEVNAME` sysfs gives.
fn block_node(major: u64, minor: u64) -> PathBuf {
    let link = PathBuf::from(format!("/dev/block/{major}:{minor}"));
    if link.exists() {
        return link;
    }
    std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent"))
        .ok()
        .and_then(|u| {
            u.lines().find_map(|l| {
                l.strip_prefix("DEVNAME=")
                    .map(|n| PathBuf::from("/dev").join(n))
            })
        })
        .unwrap_or(link)
}

/// Smallest file `outrider run` calibrates from when the device node
/// cannot be read.
pub const MIN_CALIBRATE_FILE: u64 = 64 << 20;

/// How much `outrider run` reads to calibrate a device it has no stored
/// result for.
pub const RUN_CALIBRATE_BYTES: u64 = 256 << 20;

/// The stored calibration of device `dev` in `dir`.
pub fn lookup_dev(dir: &Path, dev: u64) -> Option<Calibration> {
    let key = dev_key(dev);
    let text = std::fs::read_to_string(dir.join("calibration.tsv")).ok()?;
    text.lines().filter_map(parse_line).find(|c| c.path == key)
}

/// Maximum read throughput (bytes/s) of the devices a run will likely read
/// — those of the working directory and of every command argument that
/// names an existing path — for flashy's cap (§IV-C, `on_start`'s devices).
/// A device with a stored result reuses it; one without is measured once,
/// now, by reading [`RUN_CALIBRATE_BYTES`] of its block device with
/// `O_DIRECT` — or, where the node cannot be opened (a container), of the
/// first file of at least [`MIN_CALIBRATE_FILE`] the command names on that
/// device — and the result is stored (a read through the page cache is not
/// a measurement of the device and is not used). A device that cannot be measured
/// (no block device node, not permitted) is left out with a warning: the
/// policy then runs uncapped.
pub fn for_run(args: &[std::ffi::OsString], quiet: bool) -> Vec<(u64, u64)> {
    let mut devs: Vec<u64> = Vec::new();
    // Large regular files named by the command, per device: what to read
    // when the device node itself cannot be opened (a container).
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    let cwd = std::env::current_dir().ok();
    let paths = cwd
        .into_iter()
        .chain(args.iter().take(64).map(PathBuf::from))
        .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m)));
    for (p, m) in paths {
        let d = if m.file_type().is_block_device() {
            m.rdev()
        } else {
            m.dev()
        };
        if !devs.contains(&d) {
            devs.push(d);
        }
        if m.is_file() && m.len() >= MIN_CALIBRATE_FILE {
            files.push((d, p));
        }
    }
    let Some(dir) = state_dir() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for dev in devs {
        if let Some(c) = lookup_dev(&dir, dev) {
            out.push((dev, c.bytes_per_s));
            continue;
        }
        let (ma, mi) = major_minor(dev);
        let mut node = block_node(ma, mi);
        let mut got = measure(&node, RUN_CALIBRATE_BYTES, 1 << 20);
        if got.is_err() {
            // §IV-C: "reading a large, uncached file" — O_DIRECT, so the
            // page cache is neither used nor filled.
            if let Some((_, f)) = files.iter().find(|(d, _)| *d == dev) {
                node = f.clone();
                got = measure(&node, RUN_CALIBRATE_BYTES, 1 << 20);
            }
        }
        match got {
            Ok((bytes, secs, direct)) if bytes > 0 && direct => {
                let c = Calibration {
                    path: dev_key(dev),
                    bytes_per_s: (bytes as f64 / secs.max(1e-9)) as u64,
                    bytes_read: bytes,
                    direct,
                    unix_time: SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs()),
                    reused: false,
                };
                if !quiet {
                    outrider_sys::warnln!(
                        "outrider: calibrated {}: {:.1} MB/s (stored in {})",
                        node.display(),
                        c.bytes_per_s as f64 / 1e6,
                        dir.join("calibration.tsv").display()
                    );
                }
                if let Err(e) = store(&dir, &c) {
                    outrider_sys::warnln!("outrider: warning: {e}");
                }
                out.push((dev, c.bytes_per_s));
            }
            Ok(_) | Err(_) => {
                outrider_sys::warnln!(
                    "outrider: warning: cannot calibrate device {ma}:{mi} (run `outrider calibrate` on it); its throughput cap is not applied"
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_split_as_glibc_does() {
        // makedev(254, 0) = 0xfe00; makedev(0x1103, 65537) puts the high
        // bits of both numbers above bit 32.
        assert_eq!(major_minor(0xfe00), (254, 0));
        assert_eq!(major_minor(0x8_01), (8, 1));
        let (ma, mi) = (
            std::hint::black_box(0x1103u64),
            std::hint::black_box(65537u64),
        );
        let dev = (ma & 0xfff) << 8 | (ma & !0xfff) << 32 | (mi & 0xff) | (mi & !0xff) << 12;
        assert_eq!(major_minor(dev), (0x1103, 65537));
        assert_eq!(dev_key(0xfe00), "dev:254:0");
    }

    #[test]
    fn a_device_calibration_is_stored_beside_the_path_and_found_by_device() {
        let dir = std::env::temp_dir().join(format!("outrider-cal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let c = Calibration {
            path: "/data/big".into(),
            bytes_per_s: 2_000_000_000,
            bytes_read: 1 << 30,
            direct: true,
            unix_time: 1,
            reused: false,
        };
        store(&dir, &c).unwrap();
        store(
            &dir,
            &Calibration {
                path: dev_key(0xfe00),
                ..c.clone()
            },
        )
        .unwrap();
        // A second measurement of the same device replaces the first.
        store(
            &dir,
            &Calibration {
                path: dev_key(0xfe00),
                bytes_per_s: 1_500_000_000,
                ..c.clone()
            },
        )
        .unwrap();
        let got = lookup_dev(&dir, 0xfe00).unwrap();
        assert_eq!((got.bytes_per_s, got.reused), (1_500_000_000, true));
        assert!(lookup_dev(&dir, 0x801).is_none());
        let text = std::fs::read_to_string(dir.join("calibration.tsv")).unwrap();
        assert_eq!(text.lines().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
