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
//!
//! `oracle-pages` is the same layout with `obj_id` counted in 4 KiB pages:
//! libCacheSim's block prefetchers (OBL, `cache/prefetch/OBL.c`) take the
//! next block to be `obj_id + 1`, so a page stream fed to them must number
//! pages, not sectors. outrider writes it from any trace whose requests are
//! single pages on one device (`trace convert --split-pages --to
//! oracle-pages`), with `clock_time` in seconds and `next_access_vtime`
//! computed, so both simulators can replay the same file.

use super::source::{read_full, Source};
use super::text::{self, mul, Ctx};
use crate::packed::PackedRecords;
use crate::{Record, Trace, TraceError, TraceMeta};
use outrider_core::BLOCK_SIZE;
use rustc_hash::FxHashMap;
use std::io::Write;
use std::path::Path;

/// What `obj_id` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjId {
    /// 512-byte sectors (`oracle`).
    Sector,
    /// 4 KiB pages (`oracle-pages`).
    Page,
}

impl ObjId {
    /// Bytes one `obj_id` unit stands for.
    pub(crate) fn bytes(self) -> u64 {
        match self {
            ObjId::Sector => 512,
            ObjId::Page => BLOCK_SIZE,
        }
    }
}

/// Bytes per record.
pub(crate) const RECORD_BYTES: usize = 24;

/// Bytes of a mapped file decoded at a time: whole records and whole
/// 4 KiB pages (12 MiB = 512 x lcm(24, 4096)).
pub(crate) const MAP_WINDOW_BYTES: usize = 512 * 3 * 4096;

/// Records decoded per read (192 KiB).
const CHUNK_RECORDS: usize = 8192;

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

/// Little-endian `u32` at byte `i` of a record.
#[inline(always)]
fn u32_at(b: &[u8; RECORD_BYTES], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Little-endian `u64` at byte `i` of a record.
#[inline(always)]
fn u64_at(b: &[u8; RECORD_BYTES], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

/// The fields a request needs: `clock_time`, `obj_id`, `obj_size`.
#[inline(always)]
pub(crate) fn fields(b: &[u8; RECORD_BYTES]) -> (u32, u64, u32) {
    (u32_at(b, 0), u64_at(b, 4), u32_at(b, 12))
}

impl OracleRecord {
    /// Decode 24 little-endian bytes.
    pub fn decode(b: &[u8; RECORD_BYTES]) -> Self {
        OracleRecord {
            clock_time: u32_at(b, 0),
            obj_id: u64_at(b, 4),
            obj_size: u32_at(b, 12),
            next_access_vtime: u64_at(b, 16) as i64,
        }
    }

    /// As a request, or what was expected.
    fn to_record(self, unit_ns: u64, id: ObjId) -> Result<Record, String> {
        if self.obj_size == 0 {
            return Err("expected obj_size of at least 1 byte, found 0".into());
        }
        let what = match id {
            ObjId::Sector => "obj_id (512-byte sectors)",
            ObjId::Page => "obj_id (4 KiB pages)",
        };
        let offset = mul(self.obj_id, id.bytes(), what)?;
        let time_ns = mul(u64::from(self.clock_time), unit_ns, "clock_time")?;
        Ok(Record::block(time_ns, 0, offset, self.obj_size, false, 0))
    }
}

/// Read a whole oracleGeneral file: mapped when it is a plain file (no
/// copy through `read`: copying cost a fifth of a whole `sim` run of the
/// 10 M-request page trace, perf), else in chunks from the stream.
pub(crate) fn read(
    ctx: &mut Ctx<'_>,
    unit_ns: Option<u64>,
    id: ObjId,
) -> Result<Trace, TraceError> {
    let unit = unit_ns.unwrap_or(TIME_UNIT_NS);
    let len = ctx.source.len();
    let whole = len.unwrap_or(0) / RECORD_BYTES as u64;
    // Capacity from the length, bounded so a lying size cannot exhaust memory.
    let mut records = Vec::with_capacity(whole.min(1 << 24) as usize);
    let mut d = Decoder {
        unit,
        id,
        n: 0,
        len,
    };
    if let Source::File { .. } = ctx.source {
        let file = std::fs::File::open(ctx.path).map_err(|e| ctx.io(e))?;
        // Populated: one call maps every page of the (usually cached) file;
        // faulting them in one by one was 3% of `sim` on the page trace.
        // SAFETY: mapping a file is sound as long as nobody truncates or
        // rewrites it while mapped; the map lives as long as the trace read
        // from it (packed) or ends before returning, and outrider never
        // rewrites a trace in place.
        let map =
            unsafe { memmap2::MmapOptions::new().populate().map(&file) }.map_err(|e| ctx.io(e))?;
        let _ = map.advise(memmap2::Advice::Sequential);
        // Well-formed files stay packed (see `packed.rs`); a file with a
        // bad record is decoded here, which names it.
        let map = match PackedRecords::check(map, unit, id) {
            Ok(packed) => return Ok(Trace::packed(packed)),
            Err(map) => map,
        };
        for start in (0..map.len()).step_by(MAP_WINDOW_BYTES) {
            let end = (start + MAP_WINDOW_BYTES).min(map.len());
            d.decode(ctx, &map[start..end], &mut records)?;
            // Decoded windows leave the process's resident set (the file
            // stays in the page cache): mapped whole, the file added its
            // size to the peak RSS on top of the decoded records.
            // SAFETY: a read-only mapping of a file; MADV_DONTNEED only
            // drops this process's page-table entries for the window, which
            // nothing borrows any more (the slice above ended), and a later
            // access would read the file again. `start` is page-aligned
            // (a multiple of MAP_WINDOW_BYTES).
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    } else {
        let mut reader = ctx.reader()?;
        // Whole chunks of records per read: one call per record cost a
        // fifth of reading the 10 M-request page trace.
        let mut chunk = vec![0u8; CHUNK_RECORDS * RECORD_BYTES];
        loop {
            let got = read_full(&mut reader, &mut chunk).map_err(|e| ctx.io(e))?;
            d.decode(ctx, &chunk[..got], &mut records)?;
            if got < chunk.len() {
                break;
            }
        }
    }
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}

/// Decodes records, numbering them across calls.
struct Decoder {
    unit: u64,
    id: ObjId,
    /// Records seen so far (for 1-based record numbers in messages).
    n: u64,
    /// The input's length, when known.
    len: Option<u64>,
}

impl Decoder {
    /// Decode `bytes` into `out`; trailing bytes short of a record are a
    /// truncated last record (callers pass whole records except at the end).
    fn decode(
        &mut self,
        ctx: &mut Ctx<'_>,
        bytes: &[u8],
        out: &mut Vec<Record>,
    ) -> Result<(), TraceError> {
        let mut whole = bytes.chunks_exact(RECORD_BYTES);
        for b in whole.by_ref() {
            self.n += 1;
            let b: &[u8; RECORD_BYTES] = b.try_into().expect("exact chunk");
            match OracleRecord::decode(b).to_record(self.unit, self.id) {
                Ok(r) => out.push(r),
                Err(expected) => ctx.bad(self.n, expected)?,
            }
        }
        let rest = whole.remainder().len();
        if rest > 0 {
            self.n += 1;
            let n = self.n;
            ctx.bad(
                n,
                format!(
                    "expected a {RECORD_BYTES}-byte record, found {rest} bytes at the end of \
                     the input (truncated: its length {} is not a multiple of {RECORD_BYTES})",
                    self.len
                        .unwrap_or((n - 1) * RECORD_BYTES as u64 + rest as u64)
                ),
            )?;
        }
        Ok(())
    }
}

/// Write `trace` as `oracle-pages`: one record per request, each of which
/// must be one 4 KiB page on one device (the format has neither ranges nor
/// devices; writes become reads, as the format has no operation).
pub(crate) fn write_pages(path: &Path, trace: &Trace) -> Result<(), TraceError> {
    let records = &trace.records[..];
    let refuse = |why: String| TraceError::Unsupported {
        path: path.into(),
        format: "oracle-pages",
        why,
    };
    if let Some((i, r)) = records.iter().enumerate().find(|(_, r)| {
        r.dev != 0 || r.offset % BLOCK_SIZE != 0 || r.block_count() != 1 || r.file != 0
    }) {
        return Err(refuse(format!(
            "request {} is not one aligned 4 KiB page of a raw device 0 (offset {}, size {}, \
             device {}, file {}): convert with --split-pages",
            i + 1,
            r.offset,
            r.size,
            r.dev,
            r.file
        )));
    }
    let next = next_access(records);
    super::write_atomic(path, |w| {
        for (r, next) in records.iter().zip(next) {
            let secs = u32::try_from(r.time_ns / TIME_UNIT_NS).unwrap_or(u32::MAX);
            w.write_all(&secs.to_le_bytes())?;
            w.write_all(&r.first_block().to_le_bytes())?;
            w.write_all(&(BLOCK_SIZE as u32).to_le_bytes())?;
            w.write_all(&next.to_le_bytes())?;
        }
        Ok(())
    })
}

/// For each request, the index of the next request for the same page, or
/// -1 (oracleGeneral's `next_access_vtime`).
fn next_access(records: &[Record]) -> Vec<i64> {
    let mut next = vec![-1i64; records.len()];
    let mut seen: FxHashMap<u64, i64> = FxHashMap::default();
    for (i, r) in records.iter().enumerate().rev() {
        if let Some(j) = seen.insert(r.first_block(), i as i64) {
            next[i] = j;
        }
    }
    next
}
