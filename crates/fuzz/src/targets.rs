//! The fuzz targets: one per trace format reader, format detection, each
//! specification parser, and the daemon's socket protocol and
//! configuration; and the mutator that feeds them.

use crate::seeds;
use outrider_trace::{read_trace, Format, ReadOptions};
use std::path::{Path, PathBuf};

pub use outrider_trace::workloads::rng::SplitMix64 as Rng;

/// Every target, in run order.
pub const NAMES: &[&str] = &[
    "native",
    "lcs-csv",
    "oracle",
    "disksim",
    "spc",
    "msr",
    "blkparse",
    "lines",
    "strace",
    "detect",
    "size",
    "duration",
    "policy",
    "workload",
    "device",
    "daemon-request",
    "daemon-config",
];

/// Longest input the mutator builds (the text readers' line limit is 64 KiB).
const MAX_INPUT_BYTES: usize = 96 * 1024;

/// A stable per-target seed offset (FNV-1a of the name).
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// What a target parses.
enum Kind {
    /// A trace file read as this format (`None`: detected).
    Trace(Option<Format>),
    /// A specification string.
    Spec,
}

/// One target: its seeds and where its inputs are written.
pub struct Target {
    name: &'static str,
    kind: Kind,
    seeds: Vec<Vec<u8>>,
    path: PathBuf,
}

impl Target {
    /// The target called `name` (one of [`NAMES`]); trace inputs go to a
    /// file in `scratch`.
    pub fn new(name: &'static str, scratch: &Path) -> Self {
        let (kind, seeds) = match name {
            "detect" => (
                Kind::Trace(None),
                Format::ALL
                    .iter()
                    .flat_map(|&f| seeds::trace_seeds(f, scratch))
                    .collect(),
            ),
            "size" | "duration" | "policy" | "workload" | "device" | "daemon-request"
            | "daemon-config" => (Kind::Spec, seeds::spec_seeds(name)),
            format => {
                let f = Format::from_name(format).expect("NAMES lists only formats here");
                (Kind::Trace(Some(f)), seeds::trace_seeds(f, scratch))
            }
        };
        Target {
            name,
            kind,
            seeds,
            path: scratch.join(format!("input-{name}")),
        }
    }

    /// The target's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Does it parse specification strings (rather than trace files)?
    pub fn is_spec(&self) -> bool {
        matches!(self.kind, Kind::Spec)
    }

    /// Where trace inputs are written (for the hang report).
    pub fn input_path(&self) -> &Path {
        &self.path
    }

    /// Parse `input`; `true` if the parser accepted it.
    pub fn feed(&self, input: &[u8]) -> bool {
        match self.kind {
            Kind::Trace(format) => {
                std::fs::write(&self.path, input).expect("the scratch file is writable");
                let strict = ReadOptions {
                    format,
                    ..ReadOptions::default()
                };
                let lenient = ReadOptions {
                    lenient: true,
                    ..strict.clone()
                };
                let accepted = read_trace(&self.path, &strict).is_ok();
                let _ = read_trace(&self.path, &lenient);
                accepted
            }
            Kind::Spec => {
                let text = String::from_utf8_lossy(input);
                match self.name {
                    "size" => outrider_core::size::parse_size(&text).is_ok(),
                    "duration" => outrider_core::size::parse_duration_ns(&text).is_ok(),
                    "policy" => outrider_core::build_policy(&text).is_ok(),
                    "workload" => outrider_trace::workloads::generate(&text).is_ok(),
                    "device" => outrider_sim::device::build_device(&text).is_ok(),
                    // The daemon's socket protocol (one JSON line) and its
                    // configuration file.
                    "daemon-request" => {
                        let mut r = outrider_daemon::clients::LineReader::default();
                        matches!(
                            r.recv::<outrider_daemon::clients::Request>(input),
                            Ok(Some(_))
                        )
                    }
                    "daemon-config" => {
                        outrider_daemon::Config::parse(&text, Path::new("fuzz.toml")).is_ok()
                    }
                    other => unreachable!("no parser for target {other}"),
                }
            }
        }
    }

    /// A mutated copy of one of the seeds.
    pub fn mutate(&self, rng: &mut Rng) -> Vec<u8> {
        let mut b = self.seeds[rng.below(self.seeds.len() as u64) as usize].clone();
        let binary = matches!(
            self.kind,
            Kind::Trace(Some(Format::Native | Format::Oracle | Format::OraclePages))
        );
        for _ in 0..=rng.below(8) {
            mutate_once(&mut b, &self.seeds, binary, rng);
        }
        b.truncate(MAX_INPUT_BYTES);
        b
    }
}

/// A position in `0..=len`.
fn pos(rng: &mut Rng, len: usize) -> usize {
    rng.below(len as u64 + 1) as usize
}

/// One mutation of `b`.
fn mutate_once(b: &mut Vec<u8>, seeds: &[Vec<u8>], binary: bool, rng: &mut Rng) {
    let token = |rng: &mut Rng| seeds::TOKENS[rng.below(seeds::TOKENS.len() as u64) as usize];
    match rng.below(if binary { 10 } else { 8 }) {
        0 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = pos(rng, b.len());
            b.insert(i, rng.next_u64() as u8);
        }
        2 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            let n = (1 + rng.below(16) as usize).min(b.len() - i);
            b.drain(i..i + n);
        }
        3 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            let n = (1 + rng.below(64) as usize).min(b.len() - i);
            let piece = b[i..i + n].to_vec();
            let at = pos(rng, b.len());
            b.splice(at..at, piece);
        }
        4 => {
            let at = pos(rng, b.len());
            b.splice(at..at, token(rng).bytes());
        }
        5 => replace_number(b, token(rng), rng),
        6 => b.truncate(pos(rng, b.len())),
        7 => {
            let other = &seeds[rng.below(seeds.len() as u64) as usize];
            if !other.is_empty() {
                let i = rng.below(other.len() as u64) as usize;
                let n = (1 + rng.below(128) as usize).min(other.len() - i);
                let at = pos(rng, b.len());
                b.splice(at..at, other[i..i + n].iter().copied());
            }
        }
        _ if b.len() >= 8 => {
            // Binary formats: an edge value over 8 aligned-or-not bytes.
            const EDGES: [u64; 8] = [0, 1, u64::MAX, 1 << 63, u32::MAX as u64, 1 << 32, 4096, 40];
            let v = EDGES[rng.below(EDGES.len() as u64) as usize];
            let i = rng.below(b.len() as u64 - 7) as usize;
            let width = [1usize, 2, 4, 8][rng.below(4) as usize];
            b[i..i + width].copy_from_slice(&v.to_le_bytes()[..width]);
        }
        _ => {}
    }
}

/// Replace one run of ASCII digits in `b` (if any) by `token`.
fn replace_number(b: &mut Vec<u8>, token: &str, rng: &mut Rng) {
    let starts: Vec<usize> = (0..b.len())
        .filter(|&i| b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        return;
    }
    let s = starts[rng.below(starts.len() as u64) as usize];
    let e = (s..b.len())
        .find(|&i| !b[i].is_ascii_digit())
        .unwrap_or(b.len());
    b.splice(s..e, token.bytes());
}
