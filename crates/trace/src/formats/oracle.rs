//! `oracle`: libCacheSim's oracleGeneral binary trace
//! (1a1a11a/libCacheSim `data/cloudPhysicsIO.oracleGeneral.bin`).
//!
//! Packed little-endian records of 24 bytes, no header:
//!
//! ```text
//! offset 0   u32 clock_time          seconds
//! offset 4   u64 obj_id              block traces: start address, 512-byte sectors
//! offset 12  u32 obj_size            bytes
//! offset 16  i64 next_access_vtime   index of the object's next request, -1 if none
//! ```
//!
//! The format has no operation: every request is a read. For block traces
//! `obj_id` is the start sector (the sample's first record has obj_id
//! 42,932,745 and size 512, the CSV's first lbn and size).
//!
//! Sample surprise: libCacheSim objects have one size, so the converter
//! stored each object's *first* size on every request for it. 13,671 of the
//! sample's 113,872 records carry a size that differs from the CSV row they
//! came from (e.g. sector 3,345,071: 16,384 bytes in the CSV, 4,096 here).
//! Times and addresses agree with the CSV on every record.
//!
//! A file whose length is not a multiple of 24 ends in a truncated record,
//! which is a bad record (its 1-based number is `len / 24 + 1`).

use super::source::read_full;
use super::text::{self, mul, Ctx};
use crate::{Record, Trace, TraceError, TraceMeta};

/// Bytes per record.
pub(crate) const RECORD_BYTES: usize = 24;

/// Default time unit: seconds.
const TIME_UNIT_NS: u64 = 1_000_000_000;

/// One decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OracleRecord {
    /// `clock_time`.
    pub clock_time: u32,
    /// `obj_id`.
    pub obj_id: u64,
    /// `obj_size`.
    pub obj_size: u32,
    /// `next_access_vtime`.
    pub next_access_vtime: i64,
}

impl OracleRecord {
    /// Decode 24 little-endian bytes.
    pub fn decode(b: &[u8; RECORD_BYTES]) -> Self {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        OracleRecord {
            clock_time: u32_at(0),
            obj_id: u64_at(4),
            obj_size: u32_at(12),
            next_access_vtime: u64_at(16) as i64,
        }
    }

    /// As a request, or what was expected.
    fn to_record(self, unit_ns: u64) -> Result<Record, String> {
        if self.obj_size == 0 {
            return Err("expected obj_size of at least 1 byte, found 0".into());
        }
        let offset = mul(self.obj_id, 512, "obj_id (512-byte sectors)")?;
        let time_ns = mul(u64::from(self.clock_time), unit_ns, "clock_time")?;
        Ok(Record::block(time_ns, 0, offset, self.obj_size, false, 0))
    }
}

/// Read a whole oracleGeneral file.
pub(crate) fn read(ctx: &mut Ctx<'_>, unit_ns: Option<u64>) -> Result<Trace, TraceError> {
    let unit = unit_ns.unwrap_or(TIME_UNIT_NS);
    let len = ctx.source.len();
    let whole = len.unwrap_or(0) / RECORD_BYTES as u64;
    let mut reader = ctx.reader()?;
    // Capacity from the length, bounded so a lying size cannot exhaust memory.
    let mut records = Vec::with_capacity(whole.min(1 << 24) as usize);
    let mut buf = [0u8; RECORD_BYTES];
    let mut n = 0u64;
    loop {
        let got = read_full(&mut reader, &mut buf).map_err(|e| ctx.io(e))?;
        if got == 0 {
            break;
        }
        n += 1;
        if got < RECORD_BYTES {
            ctx.bad(
                n,
                format!(
                    "expected a {RECORD_BYTES}-byte record, found {got} bytes at the end of \
                     the input (truncated: its length {} is not a multiple of {RECORD_BYTES})",
                    len.unwrap_or((n - 1) * RECORD_BYTES as u64 + got as u64)
                ),
            )?;
            break;
        }
        match OracleRecord::decode(&buf).to_record(unit) {
            Ok(r) => records.push(r),
            Err(expected) => ctx.bad(n, expected)?,
        }
    }
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}
