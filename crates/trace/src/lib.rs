//! outrider-trace: trace readers and writers, and the built-in synthetic
//! workloads.
//!
//! The one design decision a reader must know: **every input becomes one
//! in-memory (or memory-mapped) slice of fixed-size [`Record`]s plus a small
//! [`TraceMeta`]** (process names, file layouts). The simulator iterates the
//! slice directly: no per-request allocation, no dynamic dispatch, which is
//! what lets it replay more than ten million requests a second. Text formats
//! are parsed once into that slice; the `native` format is the slice itself
//! on disk, mapped without copying. One exception: a plain `oracle` /
//! `oracle-pages` file stays packed in its mapping (24 bytes a request) and
//! the simulator decodes each record as it reaches it ([`packed`]); a caller
//! that wants the slice gets it decoded once, on first use.
//!
//! Records keep byte offsets and sizes as the source gave them; conversion
//! to 4 KiB blocks happens in [`Record::first_block`] / [`Record::block_count`].
#![deny(missing_docs)]

pub mod error;
pub mod filelayout;
pub mod formats;
pub mod packed;
pub mod record;
pub mod stats;
pub mod workloads;

pub use error::TraceError;
pub use formats::{
    detect_format, read_trace, write_atomic, write_native, write_trace, Compression, Format,
    ReadOptions, ReadReport, NATIVE_MAGIC, NATIVE_VERSION,
};
pub use packed::{PackedRecords, RecordView};
pub use record::{Extent, FileInfo, Record, Records, Trace, TraceMeta};
pub use stats::TraceStats;
