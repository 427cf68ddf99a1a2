//! `msr`: the MSR Cambridge block traces (SNIA IOTTA, Narayanan et al.,
//! "Write off-loading", FAST'08).
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166372003061629,wdev,2,Write,3875307520,4096,2315
//! ```
//!
//! `Timestamp` is a Windows FILETIME (100 ns ticks since 1601), made
//! relative to the earliest request; `DiskNumber` becomes the device number
//! (the hostname is checked to be present but not kept: each published file
//! holds one host); `Type` is `Read` or `Write` (any case); `Offset` and
//! `Size` are bytes; `ResponseTime` (100 ns ticks) must be an integer and is
//! not kept. The published files have no header; one is accepted.

use super::text::{self, dev16, mul, show, size32, split_fields, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};

/// The layout (and optional header).
pub(crate) const HEADER: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";

/// Nanoseconds per FILETIME tick.
const TICK_NS: u64 = 100;

/// Is `line` the header?
pub(crate) fn is_header(line: &str) -> bool {
    let names: Vec<&str> = line.split(',').map(str::trim).collect();
    names.len() == 7
        && names
            .iter()
            .zip(HEADER.split(','))
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Parse `Read`/`Write` (any case); `Some(true)` for a write.
pub(crate) fn op_type(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("read") {
        Some(false)
    } else if s.eq_ignore_ascii_case("write") {
        Some(true)
    } else {
        None
    }
}

/// Parse one data row.
pub(crate) fn parse_row(line: &str) -> Result<Line, String> {
    let [time, host, disk, op, offset, size, response] = split_fields::<7>(line, ',', HEADER)?;
    let time_ns = mul(
        uint(time, "Timestamp (100 ns ticks)")?,
        TICK_NS,
        "Timestamp",
    )?;
    if host.is_empty() {
        return Err("expected a Hostname, found an empty field".into());
    }
    let dev = dev16(uint(disk, "DiskNumber")?, "DiskNumber")?;
    let write =
        op_type(op).ok_or_else(|| format!("expected Type Read or Write, found {}", show(op)))?;
    let offset = uint(offset, "Offset (bytes)")?;
    let size = size32(uint(size, "Size (bytes)")?, "Size")?;
    uint(response, "ResponseTime (100 ns ticks)")?;
    Ok(Line::Record(Record::block(
        time_ns, dev, offset, size, write, 0,
    )))
}

/// Read a whole MSR file.
pub(crate) fn read(ctx: &mut Ctx<'_>) -> Result<Trace, TraceError> {
    let mut first = true;
    let mut records = text::read_lines(ctx, |_, line| {
        if std::mem::take(&mut first) && is_header(line) {
            return Ok(Line::Skip);
        }
        parse_row(line)
    })?;
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}
