//! Built-in synthetic workloads: `--workload NAME[:k=v,...]`.
//!
//! Each workload models one benchmark from the papers in `shared/papers/`,
//! small by default (a whole [`suite`] simulates in about a second) and
//! scalable with parameters. Every workload is seeded (`seed`, default
//! fixed) and deterministic: the same spec always yields the same trace.
//!
//! | name | models | paper benchmark | parameters (defaults) | records |
//! |---|---|---|---|---|
//! | `seq` | one process reads a file start to end | flashy LFS/SlowThink sequential read; baseline | `size=64MiB req=4KiB fragment=0 start=0 think=0 seed=1` | 16384 |
//! | `reversed` | one process reads a file from its end to its start | DiskSeen §4.3 *reversed* (1 GB file) | as `seq` | 16384 |
//! | `strided` | reads `req` every `stride` bytes (every other block) | DiskSeen §4.3 *strided* (1 GB, 4 KB every 8 KB, small compute) | `size=64MiB req=4KiB stride=8KiB fragment=0 start=0 think=10us seed=1` | 8192 |
//! | `random` | uniform random aligned reads over a file | DiskSeen TPC-H Q17 / flashy LFS random phase; worst case | `size=256MiB req=4KiB count=4096 start=0 think=0 seed=1` | 4096 |
//! | `interleaved` | two processes, each reading its own tree of files sequentially, alternating | DiskSeen §4.3 *CVS*/*diff* (two datasets 50 GB apart) | `size=32MiB files=16 distance=50GiB burst=1 req=4KiB start=0 think=5us seed=1 procs=2` | 16384 |
//! | `tree-scan` | a source tree of small files in ext3-like block groups, inode reads before files, visited in name order | DiskSeen §4.3 *grep*/*diff* over a Linux tree; EPCM's many-small-files workloads | `files=2000 dirs=100 dirs_per_group=8 median=5KiB spread=1.2 group=128MiB order=name fragment=0 req=4KiB start=0 think=5us seed=1` | 6192 (175 metadata) |
//! | `slowthink` | 1 MB records with compute time between them | flashy §VI-A SlowThink | `size=64MiB record=1MiB think=2ms start=0 seed=1` | 64 |
//! | `lfs` | sequential read, random reads, sequential re-read of one large file | flashy §VI-A LFS (Sprite large-file benchmark, reads) | `size=64MiB req=64KiB rreq=8KiB count=2048 think=0 start=0 seed=1` | 4096 |
//! | `blast` | multi-phase sequential scan with gaps, varying compute, random reads between phases | flashy §VI-B BLAST (Fig. 4) | `size=64MiB phases=4 req=64KiB gap=2MiB random=64 think=100us start=0 seed=1` | 1152 |
//! | `mixed` | several of the above at once, separate processes in distinct regions, randomly interleaved | DiskSeen §4.5 concurrent *grep*/*diff*; flashy multi-application runs | `parts=seq+reversed+strided+random+tree-scan size=16MiB spacing=4GiB start=0 think=0 seed=1` | 20536 |
//! | `build` | make compiles 17 units (headers shared, Makefile order), then two libraries and a program | EPCM §4.2 Andrew phase 5 | `units=17 headers=24 sys=4 per_unit=6 source=431KiB exec=128KiB req=16KiB fragment=0 start=0 think=2ms seed=1` | ~320 (file-level) |
//! | `link` | ld links 180 fragmented objects in 51 commands, pages read out of order | EPCM §4.3 GNU ld | `dirs=12 per_dir=15 group=5 median=40KiB exec=128KiB fragment=16KiB start=0 think=1ms seed=1` | ~3000 |
//! | `traversal` | every file of a tree once, in readdir (hash) order | EPCM §4.4 glimpse | `files=2000 dirs=100 median=4KiB readdir=hash req=16KiB fragment=0 start=0 think=500us seed=1` | ~2400 |
//! | `patch-build` | a code base patched and rebuilt version by version (files added, removed, renamed); `from`/`to` pick versions, one file table for all | EPCM §4.5 SSH 1.2.18–1.2.31 | `units=40 headers=24 sys=4 per_unit=6 versions=13 from=0 to=0 change=0.1 exec=128KiB req=16KiB fragment=0 start=0 think=2ms seed=1` | ~600 per version |
//!
//! Suites ([`suite`], [`SUITE_NAMES`]): `paper-suite` (every workload at its
//! default size, plus fragmented `seq` and grep-ordered `tree-scan`) and
//! `paper-suite-large` (the papers' own sizes: 1 GiB files, a 17000-file
//! tree). A suite is a list of specs, not a trace: [`generate`] on a suite
//! name returns [`WorkloadError::Suite`] carrying the member list, so the
//! caller runs (and reports) each member separately instead of one
//! meaningless concatenation.
//!
//! Conventions shared by every workload:
//!
//! - **Records are file-level where files exist**: `file` is the index into
//!   `meta.files` plus one, `file_offset` the byte within it, and `offset`
//!   the physical byte from the file's extents ([`crate::FileInfo::physical`]);
//!   a request crossing an extent boundary is split into one record per
//!   extent. Metadata reads (inode tables, directory blocks) are raw device
//!   reads with `file == 0`. Only the file-level workloads (`build`,
//!   `link`, `patch-build`) write: objects and outputs, whose blocks the
//!   simulator allocates in the cache without a device read. Every request is 4 KiB-aligned and a multiple
//!   of 4 KiB long. One device (`dev == 0`).
//! - **Time**: `time_ns` never decreases; a process's consecutive requests
//!   are `think` apart (exactly, unless another process's request forces the
//!   clock on; pieces of one split request share a time). The simulator
//!   treats that gap as the process's think time. `think` accepts `0`,
//!   `500ns`, `5us`, `2ms`, `1s`; a non-zero number needs a unit.
//! - **Processes**: pids start at 1; `meta.processes` names each.
//! - **Layout**: files are allocated by [`layout::Allocator`] in creation
//!   order from `start`; `fragment=SIZE` cuts files into extents of that
//!   size with seeded gaps between them.

mod compile;
mod flashy_apps;
pub mod layout;
mod link;
mod mixed;
mod patch_build;
pub mod rng;
mod single;
mod traversal;
mod tree;
mod two_trees;

use crate::{FileInfo, Record, Trace, TraceMeta};
use outrider_core::params::{render_help, ParamError, ParamSpec, ParamValue};
use outrider_core::BLOCK_SIZE;
use std::fmt;

pub use layout::{align_up, layout, Allocator};

/// Why a workload specification could not be generated.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadError {
    /// No workload or suite of that name.
    UnknownWorkload {
        /// The name given.
        name: String,
    },
    /// A parameter was wrong (unknown key, bad value, bad combination).
    Param(ParamError),
    /// `NAME:help` was asked for: not an error, the help text to print.
    Help(String),
    /// The workload would exceed [`MAX_RECORDS`] requests.
    TooLarge {
        /// The specification.
        spec: String,
    },
    /// The name is a suite: run each member spec on its own.
    Suite {
        /// The suite's name.
        name: String,
        /// Its member specs, as [`suite`] returns them.
        members: Vec<String>,
    },
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::UnknownWorkload { name } => write!(
                f,
                "unknown workload '{name}'; known workloads: {}; suites: {}",
                WORKLOAD_NAMES.join(", "),
                SUITE_NAMES.join(", ")
            ),
            WorkloadError::Param(ParamError::UnknownKey { policy, key, valid }) => {
                write!(
                    f,
                    "workload '{policy}' has no parameter '{key}'; valid keys: "
                )?;
                let list: Vec<String> = valid
                    .iter()
                    .map(|p| format!("{} (default {})", p.key, p.default))
                    .collect();
                f.write_str(&list.join(", "))
            }
            WorkloadError::Param(ParamError::BadValue {
                policy,
                key,
                value,
                expected,
            }) => write!(
                f,
                "workload '{policy}': parameter '{key}={value}': expected {expected}"
            ),
            WorkloadError::Param(ParamError::Malformed { policy, item }) => write!(
                f,
                "workload '{policy}': '{item}' is not a parameter setting; expected key=value"
            ),
            WorkloadError::Param(ParamError::Duplicate { policy, key }) => write!(
                f,
                "workload '{policy}': parameter '{key}' is given more than once"
            ),
            WorkloadError::Param(ParamError::Conflict { policy, why }) => {
                write!(f, "workload '{policy}': {why}")
            }
            WorkloadError::Help(text) => f.write_str(text),
            WorkloadError::TooLarge { spec } => write!(
                f,
                "workload '{spec}' would generate more than {MAX_RECORDS} requests; \
                 use a smaller size or count"
            ),
            WorkloadError::Suite { name, members } => write!(
                f,
                "'{name}' is a suite of {} workloads, not one trace; expand it with \
                 suite(\"{name}\") and run each member: {}",
                members.len(),
                members.join(" ")
            ),
        }
    }
}

impl std::error::Error for WorkloadError {}

impl From<ParamError> for WorkloadError {
    fn from(e: ParamError) -> Self {
        WorkloadError::Param(e)
    }
}

/// A bad-value error for `workload`'s `key`.
pub(crate) fn bad_value(
    workload: &str,
    key: &str,
    value: impl fmt::Display,
    expected: &str,
) -> WorkloadError {
    WorkloadError::Param(ParamError::BadValue {
        policy: workload.into(),
        key: key.into(),
        value: value.to_string(),
        expected: expected.into(),
    })
}

/// Check that a size parameter is a positive multiple of 4 KiB.
pub(crate) fn check_blocks(workload: &str, key: &str, bytes: u64) -> Result<(), WorkloadError> {
    if bytes == 0 || bytes & (BLOCK_SIZE - 1) != 0 {
        return Err(bad_value(
            workload,
            key,
            outrider_core::size::ByteSize(bytes),
            "a positive multiple of 4KiB",
        ));
    }
    Ok(())
}

/// Check a request size: a positive multiple of 4 KiB, at most 1 GiB
/// (a record's size is 32 bits).
pub(crate) fn check_req(workload: &str, bytes: u64) -> Result<(), WorkloadError> {
    check_blocks(workload, "req", bytes)?;
    if bytes > 1 << 30 {
        return Err(bad_value(
            workload,
            "req",
            outrider_core::size::ByteSize(bytes),
            "at most 1GiB",
        ));
    }
    Ok(())
}

/// A duration in nanoseconds, written `0`, `500ns`, `5us` (or `5µs`),
/// `2ms`, `1s` ([`outrider_core::size::parse_duration_ns`]: a non-zero
/// number needs a unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nanos(pub u64);

impl ParamValue for Nanos {
    fn parse_param(text: &str) -> Result<Self, String> {
        outrider_core::size::parse_duration_ns(text)
            .map(Nanos)
            .map_err(|e| format!("a duration such as 0, 500ns, 5us, 2ms or 1s ({e})"))
    }
    fn show_param(&self) -> String {
        let n = self.0;
        for (scale, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if n >= scale && n / scale * scale == n {
                return format!("{}{unit}", n / scale);
            }
        }
        if n == 0 {
            "0".into()
        } else {
            format!("{n}ns")
        }
    }
}

/// Builds the record list: one clock, per-process think time, and file
/// reads mapped (and split) through the files' extents.
pub(crate) struct Emitter {
    records: Vec<Record>,
    pub(crate) think_ns: u64,
    now_ns: u64,
    last_ns: Vec<(u32, u64)>,
}

impl Emitter {
    /// An emitter whose processes think `think_ns` between requests.
    pub(crate) fn new(think_ns: u64) -> Self {
        Emitter {
            records: Vec::new(),
            think_ns,
            now_ns: 0,
            last_ns: Vec::new(),
        }
    }

    /// Issue time of `pid`'s next request: `think` after its previous one,
    /// but never before the last request issued by anyone.
    fn tick(&mut self, pid: u32) -> u64 {
        let t = match self.last_ns.iter_mut().find(|(p, _)| *p == pid) {
            Some((_, last)) => {
                let t = self.now_ns.max(*last + self.think_ns);
                *last = t;
                t
            }
            None => {
                self.last_ns.push((pid, self.now_ns));
                self.now_ns
            }
        };
        self.now_ns = t;
        t
    }

    /// One read by `pid` of `len` bytes at `file_offset` in `files[index]`,
    /// split at extent boundaries.
    pub(crate) fn read_file(
        &mut self,
        pid: u32,
        files: &[FileInfo],
        index: usize,
        file_offset: u64,
        len: u64,
    ) {
        if self.records.len() >= MAX_RECORDS {
            return;
        }
        debug_assert!((file_offset | len) & (BLOCK_SIZE - 1) == 0 && len > 0);
        let t = self.tick(pid);
        let f = &files[index];
        let (mut off, end) = (file_offset, file_offset + len);
        while off < end {
            let i = f.extents.partition_point(|e| e.file_offset + e.len <= off);
            let e = &f.extents[i];
            let piece = (e.file_offset + e.len).min(end) - off;
            self.records.push(Record {
                time_ns: t,
                offset: e.phys_offset + (off - e.file_offset),
                file_offset: off,
                file: index as u32 + 1,
                size: piece as u32,
                pid,
                dev: f.dev,
                op: crate::record::OP_READ,
                flags: 0,
            });
            off += piece;
        }
    }

    /// One raw device read (metadata) by `pid`.
    pub(crate) fn read_raw(&mut self, pid: u32, offset: u64, len: u64) {
        if self.records.len() >= MAX_RECORDS {
            return;
        }
        let t = self.tick(pid);
        self.records
            .push(Record::block(t, 0, offset, len as u32, false, pid));
    }

    /// The finished trace.
    pub(crate) fn finish(self, meta: TraceMeta) -> Trace {
        Trace::new(meta, self.records)
    }
}

/// Most requests a workload generates (2^25, 1.25 GiB of records); the
/// emitter stops there and [`generate`] reports [`WorkloadError::TooLarge`].
/// `paper-suite-large`'s largest member has 2^18.
pub const MAX_RECORDS: usize = 1 << 25;

/// Upper bounds on parameters by key, checked before a workload is built
/// so that no size, count or offset can overflow the layout arithmetic or
/// ask for more memory than a machine has: offsets within 1 PiB (the device
/// models hold 4 PiB), sizes up to 64 GiB (the papers' largest is 16 GiB),
/// counts up to [`MAX_RECORDS`] requests, 256 versions of `patch-build`
/// (EPCM §4.5 used 13; each version rebuilds the tree) and 2^16 of
/// anything else (files, directories, units: the papers' largest tree has
/// 17 000 files).
const BOUNDS: &[(&[&str], u64)] = &[
    (&["start", "distance", "spacing", "gap"], 1 << 50),
    (
        &[
            "size", "source", "exec", "median", "record", "req", "rreq", "stride", "fragment",
        ],
        1 << 36,
    ),
    (&["count", "random"], MAX_RECORDS as u64),
    (
        &[
            "files",
            "dirs",
            "dirs_per_group",
            "burst",
            "per_dir",
            "per_unit",
            "units",
            "headers",
            "sys",
            "phases",
            "procs",
        ],
        1 << 16,
    ),
    (&["versions", "from", "to"], 256),
];

/// Check `params` (`k=v,...`) of workload `name` against [`BOUNDS`]. Values
/// that do not parse are left to the workload's own parser.
fn check_bounds(name: &str, params: &str) -> Result<(), WorkloadError> {
    for item in params.split(',') {
        let Some((k, v)) = item.split_once('=') else {
            continue;
        };
        let k = k.trim();
        // `group` is a size in tree-scan and a count in link: both fit 2^50.
        let limit = if k == "group" {
            Some(1 << 50)
        } else {
            BOUNDS
                .iter()
                .find(|(keys, _)| keys.contains(&k))
                .map(|b| b.1)
        };
        // The workloads' own parsers take `+5` as 5 (u64::from_str): so do
        // the bounds, or `units=+4294967295` slips past them.
        let value =
            outrider_core::size::parse_size(v).or_else(|_| v.trim().parse::<u64>().map_err(|_| ()));
        let (Some(limit), Ok(value)) = (limit, value) else {
            continue;
        };
        if value > limit {
            let shown = outrider_core::size::ByteSize(limit);
            return Err(bad_value(name, k, v.trim(), &format!("at most {shown}")));
        }
    }
    Ok(())
}

/// One registered workload.
struct Entry {
    name: &'static str,
    summary: &'static str,
    specs: fn() -> Vec<ParamSpec>,
    generate: fn(&str) -> Result<Trace, WorkloadError>,
}

const REGISTRY: &[Entry] = &[
    single::SEQ,
    single::REVERSED,
    single::STRIDED,
    single::RANDOM,
    two_trees::ENTRY,
    tree::ENTRY,
    mixed::ENTRY,
    compile::ENTRY,
    link::ENTRY,
    traversal::ENTRY,
    patch_build::ENTRY,
    flashy_apps::SLOWTHINK,
    flashy_apps::LFS,
    flashy_apps::BLAST,
];

/// Names of every workload [`generate`] builds (suites excluded: see
/// [`SUITE_NAMES`]).
pub const WORKLOAD_NAMES: &[&str] = &[
    "seq",
    "reversed",
    "strided",
    "random",
    "interleaved",
    "tree-scan",
    "mixed",
    "build",
    "link",
    "traversal",
    "patch-build",
    "slowthink",
    "lfs",
    "blast",
];

/// Names of the suites [`suite`] expands.
pub const SUITE_NAMES: &[&str] = &["paper-suite", "paper-suite-large"];

fn entry(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// The member specs of a named suite, in report order; `None` if `name` is
/// not a suite.
///
/// - `paper-suite`: every workload at its default (small) size, plus
///   `seq` on a fragmented file and `tree-scan` in layout order (*grep*;
///   the default name order is *diff*).
/// - `paper-suite-large`: the same at the papers' sizes (DiskSeen: 1 GB
///   files, a Linux 2.6.11 tree of ~17000 files / 236 MB).
pub fn suite(name: &str) -> Option<Vec<String>> {
    let members: &[&str] = match name {
        "paper-suite" => &[
            "seq",
            "seq:fragment=64KiB",
            "reversed",
            "strided",
            "random",
            "interleaved",
            "tree-scan",
            "tree-scan:order=layout",
            "mixed",
            "build",
            "link",
            "traversal",
            "patch-build",
            "slowthink",
            "lfs",
            "blast",
        ],
        "paper-suite-large" => &[
            "seq:size=1GiB",
            "seq:size=1GiB,fragment=64KiB",
            "reversed:size=1GiB",
            "strided:size=1GiB",
            "random:size=1GiB,count=65536",
            "interleaved:size=256MiB,files=256",
            "tree-scan:files=17000,dirs=1000,dirs_per_group=64",
            "tree-scan:files=17000,dirs=1000,dirs_per_group=64,order=layout",
            "mixed:size=256MiB",
            "build:units=170,source=4310KiB,req=4KiB",
            "link:dirs=120",
            "traversal:files=20000,dirs=1000",
            "patch-build:to=13,req=4KiB",
            "slowthink:size=16GiB",
            "lfs:size=1GiB,count=16384",
            "blast:size=2GiB,phases=8,gap=16MiB",
        ],
        _ => return None,
    };
    Some(members.iter().map(|s| s.to_string()).collect())
}

/// The help text of one workload or suite (what `NAME:help` prints).
pub fn workload_help(name: &str) -> Result<String, WorkloadError> {
    let name = name.trim();
    if let Some(members) = suite(name) {
        let mut s = format!("{name}: a suite; run each member on its own:\n");
        for m in members {
            s.push_str(&format!("  {m}\n"));
        }
        return Ok(s);
    }
    let e = entry(name).ok_or_else(|| WorkloadError::UnknownWorkload { name: name.into() })?;
    Ok(render_help(e.name, e.summary, &(e.specs)()))
}

/// Generate a workload from `NAME[:k=v,...]`. `NAME:help` returns
/// [`WorkloadError::Help`]; a suite name returns [`WorkloadError::Suite`].
pub fn generate(spec: &str) -> Result<Trace, WorkloadError> {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    if params.trim() == "help" {
        return Err(WorkloadError::Help(workload_help(name)?));
    }
    if let Some(members) = suite(name) {
        return Err(WorkloadError::Suite {
            name: name.into(),
            members,
        });
    }
    let e = entry(name).ok_or_else(|| WorkloadError::UnknownWorkload { name: name.into() })?;
    check_bounds(name, params)?;
    let mut t = (e.generate)(params)?;
    if t.records.len() >= MAX_RECORDS {
        return Err(WorkloadError::TooLarge {
            spec: spec.trim().into(),
        });
    }
    t.meta.source = spec.trim().to_string();
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_and_names_agree() {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        assert_eq!(names, WORKLOAD_NAMES);
    }

    #[test]
    fn sizes_counts_and_offsets_past_their_bounds_are_errors() {
        // seq:size=1TiB once aborted allocating 10 GiB of records; a start
        // near 2^64 wrapped the layout to offset 0.
        for spec in [
            "seq:size=1TiB",
            "seq:start=1152921504606846976",
            "random:count=4294967296000",
        ] {
            let e = generate(spec).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|e| e.contains("at most")),
                "{spec}: {e:?}"
            );
        }
        let e = generate("seq:start=18446744073709551615")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn nanos_round_trip() {
        for s in ["0", "500ns", "5us", "2ms", "1s"] {
            assert_eq!(Nanos::parse_param(s).unwrap().show_param(), s);
        }
        assert_eq!(Nanos::parse_param("5µs"), Ok(Nanos(5000)));
        assert!(Nanos::parse_param("5 parsecs").is_err());
    }
}
