//! `native`: outrider's own binary trace format, version 1.
//!
//! The record section is the in-memory `[Record]` itself, so a plain
//! native trace is memory-mapped and replayed without parsing or copying.
//! All integers are little-endian.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "OUTRIDR1"
//!      8     4  u32 format version (1)
//!     12     4  u32 flags: bit 0 = record section is one zstd frame;
//!                  other bits reserved (a reader refuses bits it does not know)
//!     16     8  u64 record count
//!     24     8  u64 metadata length in bytes
//!     32     8  u64 record section offset (a multiple of 8)
//!     40     8  u64 record section length in bytes (count × 40 unless compressed)
//!     48     -  metadata: UTF-8 JSON
//!               {"source": "...", "processes": [[pid, "name"], ...],
//!                "files": [{"path": "...", "size": N, "dev": D,
//!                           "extents": [[file_offset, phys_offset, len], ...]}]}
//!      …     -  zero padding up to the record section offset
//!      …     -  records, 40 bytes each, `Record`'s fields in declaration order:
//!               u64 time_ns, u64 offset, u64 file_offset, u32 file, u32 size,
//!               u32 pid, u16 dev, u8 op, u8 flags
//! ```
//!
//! The file is mapped from offset 0, so the mapping is page-aligned and a
//! record section offset that is a multiple of 8 satisfies `Record`'s
//! alignment (the SAFETY condition of `Records::Mapped`). The reader checks
//! magic, version, flags, that the lengths add up to the file's length, and
//! every record (op is read or write, size ≥ 1, file index within the
//! metadata's files), so later code may index `meta.files` without checks.
//! A compressed section is decompressed into `Records::Owned`, as is any
//! trace on a big-endian host or one read leniently with bad records.
//!
//! Mapping assumes the file is not truncated or rewritten while mapped
//! (as with any mmap); [`write_native`] never rewrites in place: it writes
//! a temporary file and renames it.

use super::source::Source;
use super::text::Ctx;
use crate::record::{OP_READ, OP_WRITE};
use crate::{Extent, FileInfo, Record, Records, Trace, TraceError, TraceMeta};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;

/// The first 8 bytes of a native trace.
pub const NATIVE_MAGIC: [u8; 8] = *b"OUTRIDR1";
/// The native format version this build writes and reads.
pub const NATIVE_VERSION: u32 = 1;

/// Header length in bytes.
const HEADER_BYTES: usize = 48;
/// Flag: record section is zstd-compressed.
const FLAG_ZSTD: u32 = 1;
/// Bytes per record.
const RECORD_BYTES: usize = std::mem::size_of::<Record>();
/// zstd level for `--zstd` (fast, ~3–5× on block traces).
const ZSTD_LEVEL: i32 = 3;

/// Metadata as stored (a mirror of `TraceMeta`, so the in-memory types need
/// no serde derive).
#[derive(Serialize, Deserialize)]
struct MetaJson {
    source: String,
    processes: Vec<(u32, String)>,
    files: Vec<FileJson>,
}

#[derive(Serialize, Deserialize)]
struct FileJson {
    path: String,
    size: u64,
    dev: u16,
    extents: Vec<[u64; 3]>,
}

impl From<&TraceMeta> for MetaJson {
    fn from(m: &TraceMeta) -> Self {
        MetaJson {
            source: m.source.clone(),
            processes: m.processes.clone(),
            files: m
                .files
                .iter()
                .map(|f| FileJson {
                    path: f.path.clone(),
                    size: f.size,
                    dev: f.dev,
                    extents: f
                        .extents
                        .iter()
                        .map(|e| [e.file_offset, e.phys_offset, e.len])
                        .collect(),
                })
                .collect(),
        }
    }
}

impl From<MetaJson> for TraceMeta {
    fn from(m: MetaJson) -> Self {
        TraceMeta {
            source: m.source,
            processes: m.processes,
            files: m
                .files
                .into_iter()
                .map(|f| FileInfo {
                    path: f.path,
                    size: f.size,
                    dev: f.dev,
                    extents: f
                        .extents
                        .into_iter()
                        .map(|[file_offset, phys_offset, len]| Extent {
                            file_offset,
                            phys_offset,
                            len,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// `r` as its 40 on-disk bytes.
pub(crate) fn encode(r: &Record) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&r.time_ns.to_le_bytes());
    b[8..16].copy_from_slice(&r.offset.to_le_bytes());
    b[16..24].copy_from_slice(&r.file_offset.to_le_bytes());
    b[24..28].copy_from_slice(&r.file.to_le_bytes());
    b[28..32].copy_from_slice(&r.size.to_le_bytes());
    b[32..36].copy_from_slice(&r.pid.to_le_bytes());
    b[36..38].copy_from_slice(&r.dev.to_le_bytes());
    b[38] = r.op;
    b[39] = r.flags;
    b
}

/// The record in 40 on-disk bytes.
pub(crate) fn decode(b: &[u8]) -> Record {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
    Record {
        time_ns: u64_at(0),
        offset: u64_at(8),
        file_offset: u64_at(16),
        file: u32_at(24),
        size: u32_at(28),
        pid: u32_at(32),
        dev: u16::from_le_bytes([b[36], b[37]]),
        op: b[38],
        flags: b[39],
    }
}

/// Why `r` is not a valid record of a trace with `files` files.
fn check(r: &Record, files: usize) -> Result<(), String> {
    if r.op != OP_READ && r.op != OP_WRITE {
        return Err(format!("expected op 0 (read) or 1 (write), found {}", r.op));
    }
    if r.size == 0 {
        return Err("expected size of at least 1 byte, found 0".into());
    }
    if r.file as usize > files {
        return Err(format!(
            "expected file 0 (raw) or 1..={files} (the metadata's files), found {}",
            r.file
        ));
    }
    Ok(())
}

/// Write `trace` to `path` in the native format, the record section
/// zstd-compressed if `compress`. Writes a temporary file next to `path`
/// and renames it, so readers never see a partial file.
pub fn write_native(path: &Path, trace: &Trace, compress: bool) -> Result<(), TraceError> {
    let meta = serde_json::to_vec(&MetaJson::from(&trace.meta))
        .map_err(|e| TraceError::io(path, std::io::Error::other(e)))?;
    let records = &trace.records[..];
    let start = (HEADER_BYTES + meta.len()).next_multiple_of(8);
    let packed = if compress {
        let mut enc = zstd::stream::Encoder::new(Vec::new(), ZSTD_LEVEL)
            .map_err(|e| TraceError::io(path, e))?;
        for r in records {
            enc.write_all(&encode(r))
                .map_err(|e| TraceError::io(path, e))?;
        }
        Some(enc.finish().map_err(|e| TraceError::io(path, e))?)
    } else {
        None
    };
    let section_len = match &packed {
        Some(p) => p.len() as u64,
        None => (records.len() * RECORD_BYTES) as u64,
    };
    let mut header = [0u8; HEADER_BYTES];
    header[0..8].copy_from_slice(&NATIVE_MAGIC);
    header[8..12].copy_from_slice(&NATIVE_VERSION.to_le_bytes());
    let flags = if compress { FLAG_ZSTD } else { 0 };
    header[12..16].copy_from_slice(&flags.to_le_bytes());
    header[16..24].copy_from_slice(&(records.len() as u64).to_le_bytes());
    header[24..32].copy_from_slice(&(meta.len() as u64).to_le_bytes());
    header[32..40].copy_from_slice(&(start as u64).to_le_bytes());
    header[40..48].copy_from_slice(&section_len.to_le_bytes());
    super::write_atomic(path, |w| {
        w.write_all(&header)?;
        w.write_all(&meta)?;
        w.write_all(&vec![0u8; start - HEADER_BYTES - meta.len()])?;
        match &packed {
            Some(p) => w.write_all(p)?,
            None => {
                for r in records {
                    w.write_all(&encode(r))?;
                }
            }
        }
        Ok(())
    })
}

/// The fixed header, decoded.
struct Header {
    flags: u32,
    count: u64,
    meta_len: u64,
    start: u64,
    section_len: u64,
}

/// Read and check the header of a file of `len` bytes.
fn header(ctx: &Ctx<'_>, b: &[u8], len: u64) -> Result<Header, TraceError> {
    let bad = |what: String| ctx.error(0, what);
    if b.len() < HEADER_BYTES {
        return Err(bad(format!(
            "expected a {HEADER_BYTES}-byte native header, found a {len}-byte file"
        )));
    }
    if b[0..8] != NATIVE_MAGIC {
        return Err(bad(format!(
            "expected magic `OUTRIDR1`, found {:?}",
            String::from_utf8_lossy(&b[0..8])
        )));
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let version = u32_at(8);
    if version != NATIVE_VERSION {
        return Err(bad(if version > NATIVE_VERSION {
            format!(
                "expected native format version {NATIVE_VERSION}, found {version}: \
                 the file was written by a newer outrider; upgrade to read it"
            )
        } else {
            format!("expected native format version {NATIVE_VERSION}, found {version}")
        }));
    }
    let h = Header {
        flags: u32_at(12),
        count: u64_at(16),
        meta_len: u64_at(24),
        start: u64_at(32),
        section_len: u64_at(40),
    };
    if h.flags & !FLAG_ZSTD != 0 {
        return Err(bad(format!(
            "expected flags with only bit 0 (zstd) set, found {:#x}: written by a newer outrider?",
            h.flags
        )));
    }
    let meta_end = (HEADER_BYTES as u64).checked_add(h.meta_len);
    if meta_end.is_none_or(|e| e > len) {
        return Err(bad(format!(
            "expected {} bytes of metadata after the header, found a {len}-byte file",
            h.meta_len
        )));
    }
    if !h.start.is_multiple_of(8) || meta_end.is_none_or(|e| h.start < e) || h.start > len {
        return Err(bad(format!(
            "expected a record section offset that is a multiple of 8 between the metadata's \
             end and the file's end ({len}), found {}",
            h.start
        )));
    }
    if h.flags & FLAG_ZSTD == 0 {
        let want = h.count.checked_mul(RECORD_BYTES as u64);
        if want != Some(h.section_len) {
            return Err(bad(format!(
                "expected a record section of {} × {RECORD_BYTES} bytes, found a length of {}",
                h.count, h.section_len
            )));
        }
    }
    Ok(h)
}

/// Read a native trace: map the records if plain, decompress if zstd. A
/// streamed input (compressed file, pipe) is read into memory first and
/// its records copied out of it.
pub(crate) fn read(ctx: &mut Ctx<'_>) -> Result<Trace, TraceError> {
    let Source::File { len } = ctx.source else {
        let mut bytes = Vec::new();
        ctx.reader()?
            .read_to_end(&mut bytes)
            .map_err(|e| ctx.io(e))?;
        let (meta, h) = parse_head(ctx, &bytes)?;
        return records_of(ctx, Input::Bytes(bytes), meta, &h);
    };
    let file = std::fs::File::open(ctx.path).map_err(|e| ctx.io(e))?;
    if len < HEADER_BYTES as u64 {
        let mut bytes = Vec::new();
        (&file).read_to_end(&mut bytes).map_err(|e| ctx.io(e))?;
        header(ctx, &bytes, bytes.len() as u64)?;
    }
    // SAFETY: mapping a file is sound as long as nobody truncates or
    // rewrites it while mapped; outrider never rewrites a trace in place
    // (write_native renames a new file over it). See the module comment.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ctx.io(e))?;
    let (meta, h) = parse_head(ctx, &map)?;
    records_of(ctx, Input::Map(map), meta, &h)
}

/// Check the header of `b` (the whole input), decode its metadata and
/// check that the record section ends where the input does.
fn parse_head(ctx: &Ctx<'_>, b: &[u8]) -> Result<(TraceMeta, Header), TraceError> {
    let len = b.len() as u64;
    let h = header(ctx, b, len)?;
    let meta_bytes = &b[HEADER_BYTES..HEADER_BYTES + h.meta_len as usize];
    let meta: TraceMeta = serde_json::from_slice::<MetaJson>(meta_bytes)
        .map_err(|e| ctx.error(0, format!("expected JSON metadata, found an error: {e}")))?
        .into();
    let available = len - h.start;
    if h.section_len != available {
        // Name the first record that is missing (or say what is extra).
        let record = if h.flags & FLAG_ZSTD == 0 && h.section_len > available {
            available / RECORD_BYTES as u64 + 1
        } else {
            0
        };
        return Err(ctx.error(
            record,
            format!(
                "expected a {}-byte record section ({} records) at offset {}, found {available} \
                 bytes to the end of the file ({})",
                h.section_len,
                h.count,
                h.start,
                if h.section_len > available {
                    "truncated"
                } else {
                    "extra bytes"
                }
            ),
        ));
    }
    Ok((meta, h))
}

/// The whole input: a file mapping or bytes read from a stream.
enum Input {
    Map(memmap2::Mmap),
    Bytes(Vec<u8>),
}

impl std::ops::Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Map(m) => m,
            Input::Bytes(b) => b,
        }
    }
}

/// The trace in `input` (header checked by [`parse_head`]). A mapped plain
/// section whose every record is valid stays in place
/// ([`Records::Mapped`]); anything else is decoded into memory.
fn records_of(
    ctx: &mut Ctx<'_>,
    input: Input,
    meta: TraceMeta,
    h: &Header,
) -> Result<Trace, TraceError> {
    let files = meta.files.len();
    let start = h.start as usize;
    if h.flags & FLAG_ZSTD != 0 {
        let records = decompress(ctx, &input[start..], h, files)?;
        return Ok(Trace::new(meta, records));
    }
    let too_big = |_| {
        ctx.error(
            0,
            "expected a trace that fits in this machine's address space".into(),
        )
    };
    let count = usize::try_from(h.count).map_err(too_big)?;
    let end = count
        .checked_mul(RECORD_BYTES)
        .and_then(|n| n.checked_add(start));
    let bytes = end.and_then(|end| input.get(start..end)).unwrap_or(&[]);
    let mut all_good = true;
    for (i, chunk) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        if let Err(e) = check(&decode(chunk), files) {
            ctx.bad(i as u64 + 1, e)?;
            all_good = false;
        }
    }
    let whole = bytes.len() == count * RECORD_BYTES;
    if all_good && whole && count > 0 && cfg!(target_endian = "little") {
        if let Input::Map(map) = input {
            let records = Records::Mapped {
                map,
                start,
                len: count,
            };
            return Ok(Trace { meta, records });
        }
    }
    let records = bytes
        .chunks_exact(RECORD_BYTES)
        .map(decode)
        .filter(|r| check(r, files).is_ok())
        .collect();
    Ok(Trace::new(meta, records))
}

/// Decompress and check a zstd record section.
fn decompress(
    ctx: &mut Ctx<'_>,
    section: &[u8],
    h: &Header,
    files: usize,
) -> Result<Vec<Record>, TraceError> {
    let bad = |ctx: &Ctx<'_>, e: std::io::Error| {
        ctx.error(
            0,
            format!("expected a zstd-compressed record section, found an error: {e}"),
        )
    };
    let want = h.count.checked_mul(RECORD_BYTES as u64);
    let mut dec = zstd::stream::read::Decoder::with_buffer(section)
        .map_err(|e| bad(ctx, e))?
        .single_frame();
    let mut records = Vec::with_capacity(h.count.min(1 << 20) as usize);
    let mut buf = [0u8; RECORD_BYTES];
    let mut n = 0u64;
    loop {
        let got = super::source::read_full(&mut dec, &mut buf).map_err(|e| bad(ctx, e))?;
        if got == 0 {
            break;
        }
        n += 1;
        if got < RECORD_BYTES || n > h.count {
            return Err(ctx.error(
                n,
                format!(
                    "expected {} records ({} bytes) in the compressed section, found more or \
                     a partial record",
                    h.count,
                    want.unwrap_or(u64::MAX)
                ),
            ));
        }
        let r = decode(&buf);
        match check(&r, files) {
            Ok(()) => records.push(r),
            Err(e) => ctx.bad(n, e)?,
        }
    }
    if n != h.count {
        return Err(ctx.error(
            n + 1,
            format!(
                "expected {} records in the compressed section, found {n} (truncated)",
                h.count
            ),
        ));
    }
    Ok(records)
}
