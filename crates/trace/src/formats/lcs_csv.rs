//! `lcs-csv`: libCacheSim's CloudPhysics block-trace CSV
//! (1a1a11a/libCacheSim `data/cloudPhysicsIO.csv`).
//!
//! ```text
//! version,time,op,size,lbn
//! 1,5633898,2a,512,42932745
//! ```
//!
//! - `version`: the VMware vscsi trace version (ignored, must be an integer).
//! - `time`: an integer timestamp. **Unit: seconds**, although the shared
//!   README says microseconds. The sample's times run from 5,633,898 to
//!   5,641,098: a span of exactly 7,200 units, i.e. two hours if seconds and
//!   7.2 ms if microseconds; 6,754 distinct values carry 113,872 requests,
//!   up to 2,513 with the same value, which is a plausible burst per second
//!   and an impossible one per microsecond. The oracleGeneral file converted
//!   from it stores the same values as its `clock_time`, which libCacheSim
//!   defines in seconds. [`ReadOptions::time_unit_ns`](super::ReadOptions)
//!   overrides the unit (`1000` for µs).
//! - `op`: the SCSI opcode in hex. Reads: `28` READ(10), `08` READ(6),
//!   `a8` READ(12), `88` READ(16). Writes: `2a` WRITE(10), `0a` WRITE(6),
//!   `aa` WRITE(12), `8a` WRITE(16). Any other opcode (SYNCHRONIZE CACHE,
//!   UNMAP, INQUIRY, …) moves no data to or from the medium: the line is
//!   counted in `ReadReport::ignored`, not an error. The sample holds only
//!   `28` (46,974) and `2a` (66,898).
//! - `size`: bytes. `lbn`: start address in 512-byte sectors.
//!
//! The header is optional; a first line that is neither a header nor a
//! data row is a bad record. The writer produces the same layout (times
//! in whole seconds, `version` 1); see [`write`].

use super::text::{self, mul, show, size32, split_fields, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};
use std::io::Write;
use std::path::Path;

/// The header line, as libCacheSim ships it.
pub(crate) const HEADER: &str = "version,time,op,size,lbn";

/// Default time unit: seconds (see the module comment).
const TIME_UNIT_NS: u64 = 1_000_000_000;

/// Bytes per `lbn` unit.
const SECTOR_BYTES: u64 = 512;

/// What a SCSI opcode does to the medium.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ScsiOp {
    /// READ(6/10/12/16).
    Read,
    /// WRITE(6/10/12/16).
    Write,
    /// Any other command.
    Other,
}

/// Classify a SCSI opcode.
pub(crate) fn scsi_op(code: u8) -> ScsiOp {
    match code {
        0x08 | 0x28 | 0xa8 | 0x88 => ScsiOp::Read,
        0x0a | 0x2a | 0xaa | 0x8a => ScsiOp::Write,
        _ => ScsiOp::Other,
    }
}

/// Is `line` the header (any case, any spacing)?
pub(crate) fn is_header(line: &str) -> bool {
    let names: Vec<String> = line
        .split(',')
        .map(|f| f.trim().to_ascii_lowercase())
        .collect();
    names == HEADER.split(',').collect::<Vec<_>>()
}

/// Parse one data row.
pub(crate) fn parse_row(line: &str, unit_ns: u64) -> Result<Line, String> {
    let [version, time, op, size, lbn] = split_fields::<5>(line, ',', HEADER)?;
    uint(version, "version")?;
    let time = uint(time, "time")?;
    let op = op.strip_prefix("0x").unwrap_or(op);
    let code = u8::from_str_radix(op, 16).map_err(|_| {
        format!(
            "expected op (a SCSI opcode in hex, e.g. 28 or 2a), found {}",
            show(op)
        )
    })?;
    let size = uint(size, "size")?;
    let lbn = uint(lbn, "lbn (512-byte sectors)")?;
    let write = match scsi_op(code) {
        ScsiOp::Read => false,
        ScsiOp::Write => true,
        // Commands that move no data may carry size 0: only the fields'
        // syntax is checked.
        ScsiOp::Other => return Ok(Line::Ignored),
    };
    let size = size32(size, "size")?;
    let offset = mul(lbn, SECTOR_BYTES, "lbn")?;
    let time_ns = mul(time, unit_ns, "time")?;
    Ok(Line::Record(Record::block(
        time_ns, 0, offset, size, write, 0,
    )))
}

/// Read a whole lcs-csv file.
pub(crate) fn read(ctx: &mut Ctx<'_>, unit_ns: Option<u64>) -> Result<Trace, TraceError> {
    let unit = unit_ns.unwrap_or(TIME_UNIT_NS);
    let mut first = true;
    let mut records = text::read_lines(ctx, |_, line| {
        if std::mem::take(&mut first) && is_header(line) {
            return Ok(Line::Skip);
        }
        parse_row(line, unit)
    })?;
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}

/// Write `trace` as lcs-csv with a header.
///
/// Lossy where the layout has no room: times become whole seconds (the
/// reader's unit), pids and files are dropped, and an offset that is not a
/// multiple of 512 is rounded down to its sector with the size grown by the
/// difference (the request still covers the same 4 KiB blocks). A trace
/// with more than one device is refused: the layout has no device column
/// and merging address spaces would change every result.
pub(crate) fn write(path: &Path, trace: &Trace) -> Result<(), TraceError> {
    let records = &trace.records[..];
    if let Some(r) = records.iter().find(|r| r.dev != records[0].dev) {
        return Err(TraceError::Unsupported {
            path: path.into(),
            format: "lcs-csv",
            why: format!(
                "the trace uses devices {} and {}, and lcs-csv has no device column",
                records[0].dev, r.dev
            ),
        });
    }
    super::write_atomic(path, |w| {
        writeln!(w, "{HEADER}")?;
        for r in records {
            let lbn = r.offset / SECTOR_BYTES;
            let size = u64::from(r.size.max(1)) + r.offset % SECTOR_BYTES;
            let op = if r.is_write() { "2a" } else { "28" };
            writeln!(w, "1,{},{op},{size},{lbn}", r.time_ns / TIME_UNIT_NS)?;
        }
        Ok(())
    })
}
