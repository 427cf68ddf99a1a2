//! Trace formats: detection and dispatch to the per-format readers.
//! (Being filled in: see the per-format modules.)

use crate::{Trace, TraceError};
use std::path::Path;

/// A trace format outrider reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// outrider's own binary format.
    Native,
    /// libCacheSim / CloudPhysics CSV.
    LcsCsv,
    /// libCacheSim oracleGeneral binary.
    Oracle,
    /// DiskSim / MQSim ASCII.
    Disksim,
    /// UMass SPC CSV.
    Spc,
    /// MSR Cambridge CSV.
    Msr,
    /// blkparse default text output.
    Blkparse,
    /// One block number per line.
    Lines,
}

/// How to read a trace.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Format, or `None` to detect.
    pub format: Option<Format>,
    /// Skip bad records (counting them) instead of failing.
    pub lenient: bool,
}

/// Detect the format of a file from its first bytes.
pub fn detect_format(path: &Path) -> Result<Format, TraceError> {
    Err(TraceError::UnknownFormat {
        path: path.into(),
        why: "not implemented".into(),
        known: String::new(),
    })
}

/// Read a whole trace.
pub fn read_trace(path: &Path, _opts: &ReadOptions) -> Result<Trace, TraceError> {
    detect_format(path).map(|_| unreachable!())
}
