//! Format detection for `--format auto`: sniff the first 64 KiB (of the
//! decompressed stream, for a compressed file; see `source.rs`).
//!
//! Rules, in order:
//!
//! 1. Empty file: no format (an error).
//! 2. Starts with `OUTRIDR` (the native magic, any version): `native`.
//! 3. Binary (a NUL or other control byte, or not UTF-8): `oracle` if the
//!    length (when known: a regular file, or a stream that ended within
//!    the sniff) is a multiple of 24 and the first records (up to 1,000) are
//!    plausible: `obj_size` ≥ 1, `clock_time` never decreasing, and
//!    `next_access_vtime` either -1 or later than the record itself.
//!    Otherwise no format.
//! 4. Text: a header line decides (`version,time,op,size,lbn` → `lcs-csv`,
//!    `ASU,LBA,Size,Opcode,Timestamp` → `spc`,
//!    `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` →
//!    `msr`). Without one, the first 32 non-blank lines are each checked
//!    against every text reader's own line parser, and the first format
//!    (in the order lcs-csv, spc, msr, blkparse, strace, disksim, lines) that
//!    accepts all of them wins: a 5-field CSV with a hex opcode is
//!    `lcs-csv`; with `r`/`w` it is `spc`; a 7-field CSV with
//!    `Read`/`Write` is `msr`; lines starting `maj,min cpu seq time pid
//!    action` are `blkparse` (at least one such event is required; its
//!    summary lines are accepted); `[pid N] TIME syscall(...) = RESULT`
//!    lines (and their unfinished/resumed halves) are `strace`; five numbers separated by spaces are
//!    `disksim`; a single integer per line (with `#` comments) is `lines`.
//!
//! Detection reads only the start: a file that changes format later is
//! caught by the reader, record by record.

use super::source::Source;
use super::{blkparse, disksim, lcs_csv, lines, msr, oracle, spc, strace, text::Line, Format};
use crate::TraceError;
use std::path::Path;

/// Text lines checked.
const SNIFF_LINES: usize = 32;
/// Binary records checked.
const SNIFF_RECORDS: usize = 1000;

/// Text formats in the order detection prefers them.
const TEXT_ORDER: [Format; 7] = [
    Format::LcsCsv,
    Format::Spc,
    Format::Msr,
    Format::Blkparse,
    Format::Strace,
    Format::Disksim,
    Format::Lines,
];

/// Detect the format of the file at `path` from its first bytes (see the
/// module comment for the rules). Fails with
/// [`TraceError::UnknownFormat`] saying what was seen.
/// Detect the format of the file at `path` from its first bytes (see the
/// module comment for the rules). Fails with
/// [`TraceError::UnknownFormat`] saying what was seen. A pipe is consumed:
/// use [`read_trace`](super::read_trace), which detects and reads in one
/// pass, to read one.
pub fn detect_format(path: &Path) -> Result<Format, TraceError> {
    detect_source(path, &Source::open(path)?)
}

/// Detect the format of `source`, opened from `path`.
pub(crate) fn detect_source(path: &Path, source: &Source) -> Result<Format, TraceError> {
    let (head, len) = source.head(path)?;
    detect_bytes(&head, len).map_err(|why| TraceError::UnknownFormat {
        path: path.into(),
        why,
        known: Format::names(),
    })
}

/// Detect from the first bytes `head` of an input of `len` bytes (`None`:
/// unknown, longer than `head`).
pub(crate) fn detect_bytes(head: &[u8], len: Option<u64>) -> Result<Format, String> {
    if head.is_empty() {
        return Err("the input is empty".into());
    }
    if head.starts_with(&super::NATIVE_MAGIC[..7]) {
        return Ok(Format::Native);
    }
    let truncated = len.is_none_or(|len| (head.len() as u64) < len);
    match as_text(head, truncated) {
        Some(text) => detect_text(text, truncated),
        None => detect_binary(head, len),
    }
}

/// `head` as text, if it is text (the last character may be cut).
fn as_text(head: &[u8], truncated: bool) -> Option<&str> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if truncated && e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    text.chars()
        .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .then_some(text)
}

fn detect_binary(head: &[u8], len: Option<u64>) -> Result<Format, String> {
    let size = oracle::RECORD_BYTES as u64;
    if let Some(len) = len.filter(|l| !l.is_multiple_of(size)) {
        return Err(format!(
            "binary data, not native (no OUTRIDR magic) and not oracleGeneral \
             (length {len} is not a multiple of {size})"
        ));
    }
    let mut last_time = 0;
    for (i, chunk) in head
        .chunks_exact(oracle::RECORD_BYTES)
        .take(SNIFF_RECORDS)
        .enumerate()
    {
        let Ok(b) = chunk.try_into() else { break };
        let r = oracle::OracleRecord::decode(b);
        let vtime_ok = r.next_access_vtime == -1 || r.next_access_vtime > i as i64;
        if r.obj_size == 0 || r.clock_time < last_time || !vtime_ok {
            return Err(format!(
                "binary data, not native (no OUTRIDR magic) and not oracleGeneral \
                 (record {} is implausible: {r:?})",
                i + 1
            ));
        }
        last_time = r.clock_time;
    }
    Ok(Format::Oracle)
}

fn detect_text(text: &str, truncated: bool) -> Result<Format, String> {
    let mut all: Vec<&str> = text.lines().collect();
    if truncated && !text.ends_with('\n') {
        all.pop(); // cut mid-line
    }
    let mut data = all
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .take(SNIFF_LINES);
    let Some(first) = data.next() else {
        return Err("no non-blank line in the first 64 KiB".into());
    };
    if lcs_csv::is_header(first) {
        return Ok(Format::LcsCsv);
    }
    if spc::is_header(first) {
        return Ok(Format::Spc);
    }
    if msr::is_header(first) {
        return Ok(Format::Msr);
    }
    let mut candidates = TEXT_ORDER.to_vec();
    let mut blk_event = false;
    for (n, line) in std::iter::once(first).chain(data).enumerate() {
        if blkparse::dev_pair(line.split_whitespace().next().unwrap_or("")).is_some() {
            blk_event = true;
        }
        candidates.retain(|&f| accepts(f, line));
        if candidates.is_empty() {
            return Err(format!(
                "non-blank line {} matches no text format: {}",
                n + 1,
                super::text::show(line)
            ));
        }
    }
    candidates
        .into_iter()
        .find(|&f| f != Format::Blkparse || blk_event)
        .ok_or_else(|| "only blkparse summary lines, no events".into())
}

/// Does `format`'s reader accept `line` (as data, or as a line the format
/// defines as skippable)?
fn accepts(format: Format, line: &str) -> bool {
    let is_record = |r: Result<Line, String>| matches!(r, Ok(Line::Record(_) | Line::Ignored));
    match format {
        Format::LcsCsv => is_record(lcs_csv::parse_row(line, 1)),
        Format::Spc => is_record(spc::parse_row(line, 1)),
        Format::Msr => is_record(msr::parse_row(line)),
        Format::Disksim => is_record(disksim::parse_line(line, 1)),
        Format::Lines => lines::parse_line(line).is_ok(),
        Format::Strace => strace::accepts_line(line),
        Format::Blkparse => {
            let first = line.split_whitespace().next().unwrap_or("");
            let event = blkparse::dev_pair(first).is_some() && line.split_whitespace().count() >= 6;
            (event || blkparse::is_summary(line)) && blkparse::parse_line(line, "Q", 1).is_ok()
        }
        Format::Native | Format::Oracle | Format::OraclePages | Format::Csv(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rules() {
        let d = |s: &str| detect_bytes(s.as_bytes(), Some(s.len() as u64));
        assert_eq!(
            d("version,time,op,size,lbn\n1,2,28,512,7\n"),
            Ok(Format::LcsCsv)
        );
        assert_eq!(d("1,2,2a,512,7\n"), Ok(Format::LcsCsv));
        assert_eq!(d("0,303567,3584,w,0.000000\n"), Ok(Format::Spc));
        assert_eq!(
            d("128166372003061629,wdev,2,Write,3875307520,4096,2315\n"),
            Ok(Format::Msr)
        );
        assert_eq!(d("11413000 0 657728 16 1\n"), Ok(Format::Disksim));
        assert_eq!(
            d("  8,0    1       11     0.000123456  4321  Q   R 2048 + 8 [grep]\n"),
            Ok(Format::Blkparse)
        );
        assert_eq!(d("# blocks\n12\n13\n"), Ok(Format::Lines));
        assert_eq!(
            d("42  10:00:00.000001 openat(AT_FDCWD, \"a.h\", O_RDONLY) = 3\n42  10:00:00.000002 read(3,  <unfinished ...>\n"),
            Ok(Format::Strace)
        );
        assert!(d("hello world\n").is_err());
        assert!(d("").is_err());
        assert!(d("CPU0 (8,0):\n").is_err());
    }
}
