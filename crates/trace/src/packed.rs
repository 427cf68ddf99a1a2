//! Records left packed in their mapped file and decoded one at a time.
//!
//! An `oracle` / `oracle-pages` file (libCacheSim's oracleGeneral, 24
//! bytes a request) is 60% of the size of the same requests as 40-byte
//! [`Record`]s. Decoding it into a `Vec<Record>` first wrote 400 MiB for
//! the 10 M-request page trace and read it back three times (range checks,
//! process lists, the simulation): the decode, the checks and the page
//! faults on the fresh vector were a third of a whole `sim --cache 1%` run
//! (perf). [`PackedRecords`] instead checks every record once, in one pass
//! over the mapping, and [`RecordView::get`] decodes a record when it is
//! used (two loads, two multiplies).
//!
//! Code that wants a `&[Record]` still gets one: [`PackedRecords::slice`]
//! decodes the whole file once, on first use, and keeps it.

use crate::formats::oracle::{self, ObjId, RECORD_BYTES};
use crate::Record;
use outrider_core::BLOCK_SIZE;
use std::sync::OnceLock;

/// Whole, checked oracleGeneral records in a mapped file.
pub struct PackedRecords {
    map: memmap2::Mmap,
    len: usize,
    unit_ns: u64,
    obj_bytes: u64,
    /// The earliest request time, subtracted from every time (as the
    /// decoding readers do: times are relative to the trace's start).
    t0_ns: u64,
    /// One past the last 4 KiB block any record touches.
    end_block: u64,
    decoded: OnceLock<Vec<Record>>,
}

impl PackedRecords {
    /// `map` packed if it holds whole records every one of which decodes
    /// to a request within range, else `map` back (the caller decodes the
    /// file the ordinary way, which names the first bad record).
    pub(crate) fn check(
        map: memmap2::Mmap,
        unit_ns: u64,
        id: ObjId,
    ) -> Result<Self, memmap2::Mmap> {
        match time_and_end(&map, unit_ns, id.bytes()) {
            Some((t0_ns, end_block)) => Ok(PackedRecords {
                len: map.len() / RECORD_BYTES,
                map,
                unit_ns,
                obj_bytes: id.bytes(),
                t0_ns,
                end_block,
                decoded: OnceLock::new(),
            }),
            None => Err(map),
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Is it empty? (Never: an empty file is not packed.)
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Record `i`, decoded.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Record {
        let at = i * RECORD_BYTES;
        let b: &[u8; RECORD_BYTES] = self.map[at..at + RECORD_BYTES]
            .try_into()
            .expect("whole record");
        let (clock, obj_id, size) = oracle::fields(b);
        let time_ns = u64::from(clock) * self.unit_ns - self.t0_ns;
        Record::block(time_ns, 0, obj_id * self.obj_bytes, size, false, 0)
    }

    /// Every record, decoded once on first use and kept.
    pub fn slice(&self) -> &[Record] {
        self.decoded.get_or_init(|| self.decode_all())
    }

    /// Decode every record, window by window, each window leaving the
    /// process's resident set once decoded (the file stays in the page
    /// cache): the peak RSS of a command that wants the slice stays that
    /// of the decoded records, as when the reader decoded them.
    fn decode_all(&self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.len);
        let per_window = oracle::MAP_WINDOW_BYTES / RECORD_BYTES;
        for start in (0..self.len).step_by(per_window) {
            let end = (start + per_window).min(self.len);
            out.extend((start..end).map(|i| self.get(i)));
            let (at, bytes) = (start * RECORD_BYTES, (end - start) * RECORD_BYTES);
            // SAFETY: a read-only mapping of a file; MADV_DONTNEED only
            // drops this process's page-table entries for the window, and
            // a later access reads the file again. `at` is page-aligned
            // (a multiple of MAP_WINDOW_BYTES).
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, bytes)
            };
        }
        out
    }
}

/// Records ahead of the check that are prefetched (about 1 KiB).
const CHECK_LOOKAHEAD: usize = 48;

/// The earliest request time and the end block of whole, well-formed
/// records in `bytes`, or `None` if any is not (or there are none).
fn time_and_end(bytes: &[u8], unit_ns: u64, obj_bytes: u64) -> Option<(u64, u64)> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(RECORD_BYTES) {
        return None;
    }
    let (mut t0_ns, mut end_bytes) = (u64::MAX, 0);
    for (i, b) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        // The hardware prefetcher stops at each 4 KiB page of the file.
        if let Some(ahead) = bytes.get((i + CHECK_LOOKAHEAD) * RECORD_BYTES) {
            prefetch_read(ahead);
        }
        let (clock, obj_id, size) = oracle::fields(b.try_into().expect("exact chunk"));
        let time_ns = u64::from(clock).checked_mul(unit_ns)?;
        let offset = obj_id.checked_mul(obj_bytes)?;
        // `Record::check_ranges`: the byte range ends below 2^64.
        let end = offset.checked_add(u64::from(size));
        if size == 0 || end.is_none() {
            return None;
        }
        t0_ns = t0_ns.min(time_ns);
        end_bytes = end_bytes.max(end.unwrap_or(0));
    }
    Some((t0_ns, end_bytes.div_ceil(BLOCK_SIZE)))
}

/// Prefetch the cache line holding `r` (no effect where unsupported).
#[inline(always)]
pub fn prefetch_read<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, and `r` is a valid
    // reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (r as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Records by index, wherever they are kept: what the simulator reads
/// (a `match` per record; the branch always goes the same way).
#[derive(Clone, Copy)]
pub enum RecordView<'a> {
    /// Records in memory (owned or mapped native).
    Slice(&'a [Record]),
    /// Records packed in their file.
    Packed(&'a PackedRecords),
}

impl<'a> RecordView<'a> {
    /// Number of records.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            RecordView::Slice(s) => s.len(),
            RecordView::Packed(p) => p.len(),
        }
    }

    /// Are there none?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Record `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Record {
        match self {
            RecordView::Slice(s) => s[i],
            RecordView::Packed(p) => p.get(i),
        }
    }

    /// Hint the CPU to fetch record `i` (if there is one) into cache. The
    /// simulator asks for records far enough ahead that the load of each
    /// does not stall: it did, on 4 KiB page boundaries of the mapped file,
    /// for 14-17% of `sim` on the 10 M-request page trace (perf).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        match self {
            RecordView::Slice(s) => {
                if let Some(r) = s.get(i) {
                    prefetch_read(r);
                }
            }
            RecordView::Packed(p) => {
                if let Some(b) = p.map.get(i * RECORD_BYTES) {
                    prefetch_read(b);
                }
            }
        }
    }

    /// Every record, in order.
    pub fn iter(self) -> impl Iterator<Item = Record> + 'a {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// One past the last block a record touches, where known without a
    /// pass over the records (packed records).
    pub fn end_block_bound(&self) -> Option<u64> {
        match self {
            RecordView::Slice(_) => None,
            RecordView::Packed(p) => Some(p.end_block),
        }
    }

    /// Do all records carry one pid? (Packed formats have none: all 0.)
    pub fn one_pid(&self) -> bool {
        match self {
            RecordView::Slice(s) => {
                let first = s.first().map_or(0, |r| r.pid);
                s.iter().all(|r| r.pid == first)
            }
            RecordView::Packed(_) => true,
        }
    }
}
