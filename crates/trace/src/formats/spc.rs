//! `spc`: the Storage Performance Council CSV layout of the UMass trace
//! repository (Financial1/2, WebSearch1–3).
//!
//! ```text
//! ASU,LBA,Size,Opcode,Timestamp
//! 0,303567,3584,w,0.000000
//! ```
//!
//! `ASU` (application storage unit) becomes the device number; `LBA` is in
//! 512-byte sectors; `Size` in bytes; `Opcode` is `r` or `w` in any case;
//! `Timestamp` is seconds as a decimal, made relative to the earliest
//! request. The header line is optional.

use super::text::{self, decimal_ns, dev16, mul, show, size32, split_fields, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};

/// The layout (and optional header).
pub(crate) const HEADER: &str = "ASU,LBA,Size,Opcode,Timestamp";

/// Default time unit: seconds.
const TIME_UNIT_NS: u64 = 1_000_000_000;

/// Is `line` the header?
pub(crate) fn is_header(line: &str) -> bool {
    let names: Vec<&str> = line.split(',').map(str::trim).collect();
    names.len() == 5
        && names
            .iter()
            .zip(HEADER.split(','))
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Parse `r`/`w` (any case); `Some(true)` for a write.
pub(crate) fn opcode(s: &str) -> Option<bool> {
    match s {
        "r" | "R" => Some(false),
        "w" | "W" => Some(true),
        _ => None,
    }
}

/// Parse one data row.
pub(crate) fn parse_row(line: &str, unit_ns: u64) -> Result<Line, String> {
    let [asu, lba, size, op, time] = split_fields::<5>(line, ',', HEADER)?;
    let dev = dev16(uint(asu, "ASU")?, "ASU")?;
    let offset = mul(uint(lba, "LBA (512-byte sectors)")?, 512, "LBA")?;
    let size = size32(uint(size, "Size (bytes)")?, "Size")?;
    let write = opcode(op).ok_or_else(|| format!("expected Opcode r or w, found {}", show(op)))?;
    let time_ns = decimal_ns(time, unit_ns, "Timestamp (seconds)")?;
    Ok(Line::Record(Record::block(
        time_ns, dev, offset, size, write, 0,
    )))
}

/// Read a whole SPC file.
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
