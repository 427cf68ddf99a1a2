//! Shared machinery for the text formats: a bounded line reader, the
//! lenient/strict error policy, and exact number parsing.
//!
//! Every text reader is a function from one line to a [`Line`]; this module
//! owns everything else, so all formats agree on what a line is (LF or CRLF
//! terminated, the last one may lack its newline), on blank lines (always
//! ignored), on line length (at most [`MAX_LINE_BYTES`], longer is a bad
//! record, never an unbounded allocation) and on encoding (UTF-8; anything
//! else is a bad record).

use super::source::Source;
use crate::{Record, TraceError};
use std::io::BufRead;
use std::path::Path;

/// Longest line any text format accepts (64 KiB).
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// Error policy and counters for one read.
pub(crate) struct Ctx<'a> {
    /// The file being read (for messages).
    pub path: &'a Path,
    /// Skip bad records instead of failing.
    pub lenient: bool,
    /// Bad records skipped (lenient mode).
    pub skipped: u64,
    /// Well-formed lines that are not read/write requests (counted).
    pub ignored: u64,
    /// The first bad record skipped in lenient mode, as its error message
    /// (said when every record was bad).
    pub first_bad: Option<String>,
    /// Where the bytes come from (a file, or a decompressed or piped
    /// stream that can be read once).
    pub source: Source,
}

impl<'a> Ctx<'a> {
    /// A context for `path`, whose bytes come from `source`.
    pub fn new(path: &'a Path, lenient: bool, source: Source) -> Self {
        Ctx {
            path,
            lenient,
            skipped: 0,
            ignored: 0,
            first_bad: None,
            source,
        }
    }

    /// A buffered reader over the input's bytes from the start.
    pub fn reader(&mut self) -> Result<Box<dyn BufRead + Send>, TraceError> {
        self.source.reader(self.path)
    }

    /// Record `record` is bad: count it (lenient) or fail.
    pub fn bad(&mut self, record: u64, expected: String) -> Result<(), TraceError> {
        if self.lenient {
            self.skipped += 1;
            if self.first_bad.is_none() {
                self.first_bad = Some(format!("record {record}: {expected}"));
            }
            Ok(())
        } else {
            Err(self.error(record, expected))
        }
    }

    /// The error for record `record`, regardless of leniency.
    pub fn error(&self, record: u64, expected: String) -> TraceError {
        TraceError::Bad {
            path: self.path.into(),
            record,
            expected,
        }
    }

    /// An I/O error on this file.
    pub fn io(&self, e: std::io::Error) -> TraceError {
        TraceError::io(self.path, e)
    }
}

/// What a line parser made of one line.
pub(crate) enum Line {
    /// A request.
    Record(Record),
    /// A line the format defines as carrying no request (header, comment,
    /// summary); not counted.
    Skip,
    /// A well-formed event that is not a read or a write (e.g. a blkparse
    /// flush); counted in [`Ctx::ignored`].
    Ignored,
}

/// Feed every non-blank line of `path` (1-based line numbers) to `parse`.
/// A parser's `Err(expected)` becomes a bad record handled by `ctx`.
pub(crate) fn read_lines(
    ctx: &mut Ctx<'_>,
    mut parse: impl FnMut(u64, &str) -> Result<Line, String>,
) -> Result<Vec<Record>, TraceError> {
    let mut reader = ctx.reader()?;
    let mut buf = Vec::with_capacity(256);
    let mut out = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let Some(too_long) = next_line(&mut reader, &mut buf).map_err(|e| ctx.io(e))? else {
            break;
        };
        line_no += 1;
        if too_long {
            ctx.bad(
                line_no,
                format!("expected a line of at most {MAX_LINE_BYTES} bytes, found a longer one"),
            )?;
            continue;
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(s) => s.strip_suffix('\r').unwrap_or(s),
            Err(e) => {
                let at = e.valid_up_to();
                ctx.bad(
                    line_no,
                    format!(
                        "expected UTF-8 text, found byte 0x{:02x} at column {}",
                        buf[at],
                        at + 1
                    ),
                )?;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse(line_no, line) {
            Ok(Line::Record(r)) => match r.check_ranges() {
                Ok(()) => out.push(r),
                Err(expected) => ctx.bad(line_no, expected)?,
            },
            Ok(Line::Skip) => {}
            Ok(Line::Ignored) => ctx.ignored += 1,
            Err(expected) => ctx.bad(line_no, expected)?,
        }
    }
    Ok(out)
}

/// Read one line (without its `\n`) into `buf`, keeping at most
/// [`MAX_LINE_BYTES`]. `None` at end of file; `Some(true)` if the line was
/// longer than the limit (the rest is consumed and dropped).
fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    let mut seen = false;
    let mut too_long = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(seen.then_some(too_long));
        }
        seen = true;
        let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], i + 1, true),
            None => (avail, avail.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        if chunk.len() > room {
            too_long = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        r.consume(used);
        if done {
            return Ok(Some(too_long));
        }
    }
}

/// Make times relative to the earliest request (times in source units are
/// often absolute: filetime, epoch seconds, a device's uptime).
pub(crate) fn relative_times(records: &mut [Record]) {
    if let Some(min) = records.iter().map(|r| r.time_ns).min() {
        for r in records {
            r.time_ns -= min;
        }
    }
}

/// `s` shortened for an error message.
pub(crate) fn show(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("`{}…`", &s[..i]),
        None => format!("`{s}`"),
    }
}

/// Split `line` at `sep` into exactly `N` trimmed fields.
pub(crate) fn split_fields<'a, const N: usize>(
    line: &'a str,
    sep: char,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut n = 0;
    for f in line.split(sep) {
        if n < N {
            out[n] = f.trim();
        }
        n += 1;
    }
    if n == N {
        Ok(out)
    } else {
        Err(format!(
            "expected {N} fields `{layout}`, found {n}: {}",
            show(line)
        ))
    }
}

/// Split `line` at runs of whitespace into exactly `N` fields.
pub(crate) fn split_ws<'a, const N: usize>(
    line: &'a str,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut n = 0;
    for f in line.split_whitespace() {
        if n < N {
            out[n] = f;
        }
        n += 1;
    }
    if n == N {
        Ok(out)
    } else {
        Err(format!(
            "expected {N} whitespace-separated fields `{layout}`, found {n}: {}",
            show(line)
        ))
    }
}

/// An unsigned decimal integer.
pub(crate) fn uint(s: &str, what: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected {what} (an unsigned integer), found {}", show(s)))
}

/// `a * b`, or an error naming `what`.
pub(crate) fn mul(a: u64, b: u64, what: &str) -> Result<u64, String> {
    a.checked_mul(b)
        .ok_or_else(|| format!("expected {what} below 2^64 bytes, found {a} × {b}"))
}

/// `v` as a `u32` request size, at least 1 byte.
pub(crate) fn size32(v: u64, what: &str) -> Result<u32, String> {
    match u32::try_from(v) {
        Ok(0) => Err(format!("expected {what} of at least 1 byte, found 0")),
        Ok(s) => Ok(s),
        Err(_) => Err(format!(
            "expected {what} below 4 GiB (one request), found {v} bytes"
        )),
    }
}

/// `v` as a device number.
pub(crate) fn dev16(v: u64, what: &str) -> Result<u16, String> {
    u16::try_from(v).map_err(|_| format!("expected {what} at most 65535, found {v}"))
}

/// An exact non-negative decimal (`12`, `0.000123456`, `1.5e3`) in units of
/// `unit_ns` nanoseconds, converted to nanoseconds without floating point
/// (fractions of a nanosecond are truncated).
pub(crate) fn decimal_ns(s: &str, unit_ns: u64, what: &str) -> Result<u64, String> {
    let err = || {
        format!(
            "expected {what} (a non-negative decimal number), found {}",
            show(s)
        )
    };
    let big = || {
        format!(
            "expected {what} below 2^64 ns (584 years), found {}",
            show(s)
        )
    };
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| err())?),
        None => (t, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(err());
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    // value = digits × 10^(exp − frac.len()) × unit_ns
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 38 {
        return Err(big());
    }
    let m: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| err())?
    };
    let scale = i64::from(exp) - frac.len() as i64;
    let mut v = m.checked_mul(u128::from(unit_ns)).ok_or_else(big)?;
    if scale >= 0 {
        if m != 0 {
            let p = u32::try_from(scale)
                .ok()
                .and_then(|e| 10u128.checked_pow(e));
            v = p.and_then(|p| v.checked_mul(p)).ok_or_else(big)?;
        }
    } else {
        let p = u32::try_from(-scale)
            .ok()
            .and_then(|e| 10u128.checked_pow(e));
        v = match p {
            Some(p) => v / p,
            None => 0,
        };
    }
    u64::try_from(v).map_err(|_| big())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_ns_is_exact() {
        assert_eq!(decimal_ns("0.000123456", 1_000_000_000, "t"), Ok(123_456));
        assert_eq!(decimal_ns("12", 1_000, "t"), Ok(12_000));
        assert_eq!(decimal_ns("1.5e3", 1, "t"), Ok(1_500));
        assert_eq!(decimal_ns("2.5E-1", 1_000_000_000, "t"), Ok(250_000_000));
        assert_eq!(decimal_ns(".5", 10, "t"), Ok(5));
        assert_eq!(decimal_ns("0e999999", 10, "t"), Ok(0));
        assert!(decimal_ns("1e999999", 10, "t").is_err());
        assert!(decimal_ns("-1", 10, "t").is_err());
        assert!(decimal_ns(".", 10, "t").is_err());
        assert!(decimal_ns("99999999999999999999", 1, "t").is_err());
        assert!(decimal_ns("nan", 1, "t").is_err());
    }

    #[test]
    fn split_counts_fields() {
        assert_eq!(
            split_fields::<3>("a, b,c", ',', "x,y,z"),
            Ok(["a", "b", "c"])
        );
        let e = split_fields::<3>("a,b", ',', "x,y,z").unwrap_err();
        assert!(
            e.contains("expected 3 fields") && e.contains("found 2"),
            "{e}"
        );
    }
}
