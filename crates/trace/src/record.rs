//! The in-memory trace: fixed-size records and their metadata.

use crate::packed::{PackedRecords, RecordView};
use outrider_core::BLOCK_SIZE;

/// `Record::op` value for a read.
pub const OP_READ: u8 = 0;
/// `Record::op` value for a write.
pub const OP_WRITE: u8 = 1;

/// One request, 40 bytes, `#[repr(C)]` so the native format can map it.
///
/// `offset` is the physical byte offset on device `dev`. Requests that
/// belong to a file also carry `file` (non-zero, an index into
/// [`TraceMeta::files`] plus one) and `file_offset`; for raw block requests
/// `file == 0` and `file_offset == offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Record {
    /// Issue time in nanoseconds from the trace's start.
    pub time_ns: u64,
    /// Physical byte offset on the device.
    pub offset: u64,
    /// Byte offset within `file` (== `offset` when `file == 0`).
    pub file_offset: u64,
    /// File number (0 = raw device).
    pub file: u32,
    /// Size in bytes (at least 1).
    pub size: u32,
    /// Process id (0 when the trace has none).
    pub pid: u32,
    /// Device number (0 when the trace has one device).
    pub dev: u16,
    /// [`OP_READ`] or [`OP_WRITE`].
    pub op: u8,
    /// Reserved, 0.
    pub flags: u8,
}

const _: () = assert!(std::mem::size_of::<Record>() == 40);

impl Record {
    /// A raw block read or write.
    pub fn block(time_ns: u64, dev: u16, offset: u64, size: u32, write: bool, pid: u32) -> Self {
        Record {
            time_ns,
            offset,
            file_offset: offset,
            file: 0,
            size: size.max(1),
            pid,
            dev,
            op: if write { OP_WRITE } else { OP_READ },
            flags: 0,
        }
    }

    /// Is this a write?
    pub fn is_write(&self) -> bool {
        self.op == OP_WRITE
    }

    /// First 4 KiB block on the device.
    pub fn first_block(&self) -> u64 {
        self.offset / BLOCK_SIZE
    }

    /// Number of 4 KiB blocks the byte range touches (at least 1). Exact
    /// for records that pass [`Record::check_ranges`] (every reader checks).
    pub fn block_count(&self) -> u32 {
        let end = self.offset.saturating_add(u64::from(self.size.max(1)));
        (end.div_ceil(BLOCK_SIZE) - self.first_block()) as u32
    }

    /// Both byte ranges, on the device and in the file, must end at or
    /// below 2^64: a request that wraps past the top of the address space
    /// would otherwise become one at offset 0 when split into pages.
    pub fn check_ranges(&self) -> Result<(), String> {
        let size = u64::from(self.size.max(1));
        for (what, start) in [("offset", self.offset), ("file offset", self.file_offset)] {
            if start.checked_add(size).is_none() {
                return Err(format!(
                    "expected a request ending below 2^64 bytes, found {what} {start} + size {size}"
                ));
            }
        }
        Ok(())
    }

    /// First 4 KiB page within the file.
    pub fn first_page(&self) -> u64 {
        self.file_offset / BLOCK_SIZE
    }
}

/// One contiguous piece of a file on the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset within the file.
    pub file_offset: u64,
    /// Physical byte offset on the device.
    pub phys_offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// A file known to the trace, with its on-disk layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileInfo {
    /// Path or name.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Device the file lives on.
    pub dev: u16,
    /// Extents in file order.
    pub extents: Vec<Extent>,
}

impl FileInfo {
    /// Physical byte offset of byte `file_offset`, if mapped.
    pub fn physical(&self, file_offset: u64) -> Option<u64> {
        let i = self
            .extents
            .partition_point(|e| e.file_offset + e.len <= file_offset);
        let e = self.extents.get(i)?;
        (e.file_offset <= file_offset).then(|| e.phys_offset + (file_offset - e.file_offset))
    }
}

/// What a trace knows besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceMeta {
    /// Where it came from (file name or workload spec).
    pub source: String,
    /// Command names by pid, where known.
    pub processes: Vec<(u32, String)>,
    /// Files, indexed by `Record::file - 1`.
    pub files: Vec<FileInfo>,
}

/// Record storage: owned or memory-mapped.
pub enum Records {
    /// Parsed or generated in memory.
    Owned(Vec<Record>),
    /// Mapped from a native trace file; `start` is the byte offset of the
    /// first record, `len` the number of records.
    Mapped {
        /// The mapping.
        map: memmap2::Mmap,
        /// Byte offset of the first record.
        start: usize,
        /// Number of records.
        len: usize,
    },
    /// Left packed in their mapped file (`oracle`, `oracle-pages`),
    /// decoded when read: see [`crate::packed`].
    Packed(PackedRecords),
}

impl Records {
    /// Number of records (without decoding packed ones).
    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// Are there none?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records by index, as the simulator reads them (packed ones are
    /// not decoded all at once).
    pub fn view(&self) -> RecordView<'_> {
        match self {
            Records::Packed(p) => RecordView::Packed(p),
            other => RecordView::Slice(other),
        }
    }
}

impl std::ops::Deref for Records {
    type Target = [Record];
    fn deref(&self) -> &[Record] {
        match self {
            Records::Owned(v) => v,
            Records::Mapped { map, start, len } => {
                let bytes = &map[*start..*start + len * std::mem::size_of::<Record>()];
                // SAFETY: `Record` is `repr(C)`, 40 bytes, every bit pattern
                // is valid (integers only); the native reader checked that
                // `start` is 8-byte aligned within a page-aligned mapping and
                // that the file holds `len` whole records.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<Record>(), *len) }
            }
            Records::Packed(p) => p.slice(),
        }
    }
}

/// A whole trace: records and metadata.
pub struct Trace {
    /// Process names and file layouts.
    pub meta: TraceMeta,
    /// The requests, in issue order.
    pub records: Records,
}

impl Trace {
    /// A trace from owned records.
    pub fn new(meta: TraceMeta, records: Vec<Record>) -> Self {
        Trace {
            meta,
            records: Records::Owned(records),
        }
    }

    /// A trace of packed records (no metadata: the packed formats have none).
    pub fn packed(records: PackedRecords) -> Self {
        Trace {
            meta: TraceMeta::default(),
            records: Records::Packed(records),
        }
    }

    /// Split every request into single 4 KiB-page requests (each page one
    /// access, as libCacheSim does for block traces). Records are expected
    /// to pass [`Record::check_ranges`]; the arithmetic saturates rather
    /// than wrap for one that does not.
    pub fn split_pages(&self) -> Trace {
        let mut out = Vec::with_capacity(self.records.len());
        for r in self.records.iter() {
            let first = r.first_block();
            for i in 0..u64::from(r.block_count()) {
                let page = |first: u64| first.saturating_add(i).saturating_mul(BLOCK_SIZE);
                out.push(Record {
                    offset: page(first),
                    file_offset: page(r.first_page()),
                    size: BLOCK_SIZE as u32,
                    ..*r
                });
            }
        }
        Trace::new(self.meta.clone(), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_arithmetic_covers_partial_blocks() {
        // 512 bytes at sector 7 (byte 3584) touches only block 0;
        // 1024 bytes there spans blocks 0 and 1.
        let r = Record::block(0, 0, 3584, 512, false, 0);
        assert_eq!((r.first_block(), r.block_count()), (0, 1));
        let r = Record::block(0, 0, 3584, 1024, false, 0);
        assert_eq!((r.first_block(), r.block_count()), (0, 2));
    }

    #[test]
    fn a_request_wrapping_past_2_pow_64_fails_the_range_check() {
        // An MSR read at offset 2^64-1 once became a page at offset 0.
        let r = Record::block(0, 0, u64::MAX, 4096, false, 0);
        assert!(r.check_ranges().unwrap_err().contains("below 2^64"));
        assert_eq!(r.block_count(), 1);
        let ok = Record::block(0, 0, u64::MAX - 4096, 4096, false, 0);
        assert_eq!(ok.check_ranges(), Ok(()));
        let split = Trace::new(TraceMeta::default(), vec![ok]).split_pages();
        assert!(split.records.iter().all(|p| p.offset >= u64::MAX - 8191));
    }

    #[test]
    fn split_pages_makes_one_record_per_block() {
        let t = Trace::new(
            TraceMeta::default(),
            vec![Record::block(5, 0, 4096, 3 * 4096 + 1, true, 7)],
        );
        let s = t.split_pages();
        let blocks: Vec<u64> = s.records.iter().map(|r| r.first_block()).collect();
        assert_eq!(blocks, vec![1, 2, 3, 4]);
        assert!(s
            .records
            .iter()
            .all(|r| r.is_write() && r.pid == 7 && r.size == 4096));
    }

    #[test]
    fn extent_lookup() {
        let f = FileInfo {
            extents: vec![
                Extent {
                    file_offset: 0,
                    phys_offset: 1 << 20,
                    len: 8192,
                },
                Extent {
                    file_offset: 8192,
                    phys_offset: 5 << 20,
                    len: 4096,
                },
            ],
            ..FileInfo::default()
        };
        assert_eq!(f.physical(4096), Some((1 << 20) + 4096));
        assert_eq!(f.physical(8192), Some(5 << 20));
        assert_eq!(f.physical(12288), None);
    }
}
