//! `lines`: one block number per line, the layout of the LIRS/LIRS2
//! buffer-cache traces (zhongch4g/LIRS2 `traces/*.trc`).
//!
//! ```text
//! # optional comment
//! 0
//! 1
//! ```
//!
//! Each line is one 4 KiB read of that block (offset = block × 4096). Blank
//! lines and lines starting with `#` are ignored. The format has no time:
//! every request has `time_ns` 0 (a driver that needs time gives it one).
//!
//! Sample note: `lirs_cs.trc` lacks a final newline, so it holds 6,781
//! requests although `wc -l` says 6,780; `lirs_multi2.trc` holds 26,311.

use super::text::{self, mul, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};
use outrider_core::BLOCK_SIZE;

/// Parse one line.
pub(crate) fn parse_line(line: &str) -> Result<Line, String> {
    let t = line.trim();
    if t.starts_with('#') {
        return Ok(Line::Skip);
    }
    let block = text::uint(t, "a block number")?;
    let offset = mul(block, BLOCK_SIZE, "block number × 4096")?;
    Ok(Line::Record(Record::block(
        0,
        0,
        offset,
        BLOCK_SIZE as u32,
        false,
        0,
    )))
}

/// Read a whole block-number file.
pub(crate) fn read(ctx: &mut Ctx<'_>) -> Result<Trace, TraceError> {
    let records = text::read_lines(ctx, |_, line| parse_line(line))?;
    Ok(Trace::new(TraceMeta::default(), records))
}
