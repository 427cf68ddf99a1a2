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
}
