//! Trace errors: every message names the file, the record (line) and what
//! was expected.

use std::path::PathBuf;

/// Why a trace could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A record (line) is malformed.
    #[error("{path}: record {record}: {expected}")]
    Bad {
        /// The file.
        path: PathBuf,
        /// 1-based record or line number (0 for a header).
        record: u64,
        /// What was expected, and what was found.
        expected: String,
    },
    /// The format could not be detected.
    #[error("{path}: cannot detect the trace format ({why}); pass --format with one of: {known}")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What was seen.
        why: String,
        /// Known format names.
        known: String,
    },
    /// A format name (`--format NAME`) that outrider does not know.
    #[error("unknown trace format '{name}'; valid formats: {known}")]
    UnknownFormatName {
        /// The name given.
        name: String,
        /// Known format names, comma-separated.
        known: String,
    },
    /// A `csv:MAPPING` format whose mapping is malformed.
    #[error("--format '{spec}': {why} (e.g. csv:time=1:us,op=3,lbn=5,size=4)")]
    BadFormatSpec {
        /// The format as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// The trace cannot be expressed in the requested output format.
    #[error("{path}: cannot write as {format}: {why}")]
    Unsupported {
        /// The output file.
        path: PathBuf,
        /// The output format's name.
        format: &'static str,
        /// Why not.
        why: String,
    },
}

impl TraceError {
    /// An [`TraceError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.into(),
            source,
        }
    }
}
