//! Decoding one page read from `per_cpu/cpuN/trace_pipe_raw`: the kernel's
//! ring-buffer page format (`kernel/trace/ring_buffer.c`, described by
//! `events/header_page` and `events/header_event`), the same logic as
//! libtraceevent's `kbuffer-parse.c`.
//!
//! A page is a header (base timestamp, commit word) and a run of events.
//! Each event starts with a 32-bit word: `type_len` in the low 5 bits and a
//! 27-bit time delta above them.
//! - `type_len` 1..=28: a data record of `type_len * 4` bytes follows;
//! - 0: the next u32 is the record length (+4), then the record;
//! - 29 padding (the next u32 is its length; a zero delta and length mean
//!   the rest of the page is empty);
//! - 30 time extend: delta = next u32 << 27 | time_delta;
//! - 31 absolute time stamp (same encoding; the top bits come from the
//!   current time).
//!
//! The commit word holds the data length in its low 27 bits and two flags:
//! bit 31 "events were lost before this page" and bit 30 "their count is
//! stored after the data" (an unsigned long). Lost events make the stream
//! untrustworthy; the caller reports them and degrades.

use super::format::PageLayout;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// What the page header said about lost events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageLoss {
    /// Events were lost before this page.
    pub missed: bool,
    /// Their number, when the kernel stored it.
    pub count: Option<u64>,
}

/// A page could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError(pub String);

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "trace_pipe_raw page: {}", self.0)
    }
}

impl std::error::Error for PageError {}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

fn read_uint(b: &[u8], at: usize, size: usize) -> Option<u64> {
    let s = b.get(at..at + size)?;
    Some(match size {
        1 => u64::from(s[0]),
        2 => u64::from(u16::from_le_bytes(s.try_into().ok()?)),
        4 => u64::from(u32::from_le_bytes(s.try_into().ok()?)),
        8 => u64::from_le_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

/// Decode one page, calling `each(timestamp_ns, record)` for every data
/// record in order. Returns what the header said about lost events.
pub fn parse_page(
    page: &[u8],
    layout: &PageLayout,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<PageLoss, PageError> {
    let mut ts = read_uint(page, layout.timestamp.0, layout.timestamp.1)
        .ok_or_else(|| PageError(format!("short page: {} bytes", page.len())))?;
    let commit = read_uint(page, layout.commit.0, layout.commit.1)
        .ok_or_else(|| PageError(format!("short page: {} bytes", page.len())))?;
    let size = (commit & COMMIT_MASK) as usize;
    let start = layout.data_offset;
    let end = start + size;
    if end > page.len() {
        return Err(PageError(format!(
            "commit says {size} data bytes but the page has {}",
            page.len().saturating_sub(start)
        )));
    }
    let mut loss = PageLoss {
        missed: commit & MISSED_EVENTS != 0,
        count: None,
    };
    if loss.missed && commit & MISSED_STORED != 0 {
        loss.count = read_uint(page, end, layout.commit.1);
    }
    let mut at = start;
    while at + 4 <= end {
        let word = read_u32(page, at).expect("bounds checked");
        let type_len = word & 0x1f;
        let delta = u64::from(word >> 5);
        at += 4;
        match type_len {
            TYPE_PADDING => {
                let len = read_u32(page, at).unwrap_or(0) as usize;
                if delta == 0 && len == 0 {
                    break; // the rest of the page is empty
                }
                ts += delta;
                at += len;
            }
            TYPE_TIME_EXTEND => {
                let hi = u64::from(read_u32(page, at).ok_or_else(|| trunc(at))?);
                ts += (hi << TS_SHIFT) | delta;
                at += 4;
            }
            TYPE_TIME_STAMP => {
                let hi = u64::from(read_u32(page, at).ok_or_else(|| trunc(at))?);
                let abs = (hi << TS_SHIFT) | delta;
                // Absolute stamps keep 59 bits; the rest comes from `ts`.
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                at += 4;
            }
            0 => {
                let len = read_u32(page, at).ok_or_else(|| trunc(at))? as usize;
                let len = (len.saturating_sub(4) + 3) & !3;
                at += 4;
                ts += delta;
                let rec = page.get(at..at + len).ok_or_else(|| trunc(at))?;
                each(ts, rec);
                at += len;
            }
            n => {
                let len = n as usize * 4;
                ts += delta;
                let rec = page.get(at..at + len).ok_or_else(|| trunc(at))?;
                each(ts, rec);
                at += len;
            }
        }
    }
    Ok(loss)
}

fn trunc(at: usize) -> PageError {
    PageError(format!("event at byte {at} runs past the page's data"))
}

/// Read an unsigned field of `size` bytes at `offset` of a record (0 when
/// the record is too short, which a format mismatch would cause).
pub fn field_u64(rec: &[u8], offset: usize, size: usize) -> u64 {
    read_uint(rec, offset, size).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: PageLayout = PageLayout {
        timestamp: (0, 8),
        commit: (8, 8),
        data_offset: 16,
        data_size: 4080,
    };

    fn header(w: &mut Vec<u8>, type_len: u32, delta: u32) {
        w.extend_from_slice(&((delta << 5) | type_len).to_le_bytes());
    }

    /// Build a page with base time 1000: a 8-byte record (delta 5), a time
    /// extend of (1 << 27) + 3, a long record (type_len 0, 120 bytes)
    /// with delta 2, and end-of-page padding.
    fn sample_page(commit_flags: u64, lost: Option<u64>) -> Vec<u8> {
        let mut d = Vec::new();
        header(&mut d, 2, 5);
        d.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        header(&mut d, TYPE_TIME_EXTEND, 3);
        d.extend_from_slice(&1u32.to_le_bytes());
        header(&mut d, 0, 2);
        d.extend_from_slice(&(124u32).to_le_bytes());
        d.extend(std::iter::repeat_n(9u8, 120));
        let size = d.len() as u64;
        let mut p = Vec::new();
        p.extend_from_slice(&1000u64.to_le_bytes());
        p.extend_from_slice(&(size | commit_flags).to_le_bytes());
        p.extend_from_slice(&d);
        if let Some(n) = lost {
            p.extend_from_slice(&n.to_le_bytes());
        }
        p.resize(4096, 0);
        p
    }

    #[test]
    fn decodes_records_and_time_deltas() {
        let page = sample_page(0, None);
        let mut got = Vec::new();
        let loss = parse_page(&page, &LAYOUT, |ts, rec| got.push((ts, rec.to_vec()))).unwrap();
        assert_eq!(loss, PageLoss::default());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (1005, vec![1, 2, 3, 4, 5, 6, 7, 8]));
        // 1005 + ((1 << 27) | 3) + 2
        assert_eq!(got[1].0, 1005 + (1 << 27) + 3 + 2);
        assert_eq!(got[1].1, vec![9u8; 120]);
    }

    #[test]
    fn reports_lost_events_with_stored_count() {
        let page = sample_page(MISSED_EVENTS | MISSED_STORED, Some(77));
        let loss = parse_page(&page, &LAYOUT, |_, _| {}).unwrap();
        assert_eq!(
            loss,
            PageLoss {
                missed: true,
                count: Some(77)
            }
        );
        let page = sample_page(MISSED_EVENTS, None);
        let loss = parse_page(&page, &LAYOUT, |_, _| {}).unwrap();
        assert_eq!(
            loss,
            PageLoss {
                missed: true,
                count: None
            }
        );
    }

    #[test]
    fn corrupt_commit_is_an_error_not_a_panic() {
        let mut page = sample_page(0, None);
        page[8..16].copy_from_slice(&5000u64.to_le_bytes());
        let e = parse_page(&page, &LAYOUT, |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("commit says 5000"), "{e}");
        let e = parse_page(&page[..4], &LAYOUT, |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("short page"), "{e}");
    }
}
