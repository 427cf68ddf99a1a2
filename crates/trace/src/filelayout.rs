//! On-disk layout for file-level traces (EPCM issue: "each file gets an
//! on-disk layout and its size from the trace, so the device model charges
//! real seeks").
//!
//! A file-level trace knows, for each request, the file and the byte within
//! it, but not where the file lies on disk. [`lay_out`] gives every file of
//! the trace an extent list with the [`crate::workloads::Allocator`]: files
//! in **creation order** (their order in `meta.files`, i.e. first open),
//! each starting on a 4 KiB block, contiguous (`fragment_bytes == 0`) or cut
//! into extents of `fragment_bytes` with seeded gaps; then every record's
//! physical `offset` is recomputed and a request crossing an extent
//! boundary is split into one record per extent. Raw records (`file == 0`)
//! are kept as they are.

use crate::workloads::Allocator;
use crate::{Record, Trace};

/// Lay out the files of `trace` (sizes from `meta.files`) from device byte
/// `start`, contiguous or fragmented, and recompute the records' physical
/// offsets. See the module documentation.
pub fn lay_out(trace: &Trace, start: u64, fragment_bytes: u64, seed: u64) -> Trace {
    let mut alloc = Allocator::fragmented(start, fragment_bytes, seed);
    let mut meta = trace.meta.clone();
    for f in &mut meta.files {
        let mut laid = alloc.file(std::mem::take(&mut f.path), f.size);
        laid.dev = f.dev;
        *f = laid;
    }
    let mut out = Vec::with_capacity(trace.records.len());
    for r in trace.records.iter() {
        if r.file == 0 {
            out.push(*r);
            continue;
        }
        let Some(info) = meta.files.get(r.file as usize - 1) else {
            continue;
        };
        let end = r.file_offset + u64::from(r.size);
        let mut off = r.file_offset;
        while off < end {
            let i = info
                .extents
                .partition_point(|e| e.file_offset + e.len <= off);
            let Some(e) = info.extents.get(i) else {
                break; // beyond the file: cannot be placed
            };
            let piece = (e.file_offset + e.len).min(end) - off;
            out.push(Record {
                offset: e.phys_offset + (off - e.file_offset),
                file_offset: off,
                size: piece as u32,
                ..*r
            });
            off += piece;
        }
    }
    Trace::new(meta, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileInfo, TraceMeta};

    fn trace() -> Trace {
        let meta = TraceMeta {
            files: vec![
                FileInfo {
                    path: "a".into(),
                    size: 10_000,
                    ..FileInfo::default()
                },
                FileInfo {
                    path: "b".into(),
                    size: 4096,
                    ..FileInfo::default()
                },
            ],
            ..TraceMeta::default()
        };
        let r = |file, file_offset, size| Record {
            file,
            file_offset,
            size,
            ..Record::default()
        };
        Trace::new(meta, vec![r(1, 0, 10_000), r(2, 0, 100)])
    }

    #[test]
    fn contiguous_in_creation_order() {
        let t = lay_out(&trace(), 0, 0, 1);
        let got: Vec<(u64, u64, u32)> = t
            .records
            .iter()
            .map(|r| (r.offset, r.file_offset, r.size))
            .collect();
        // a owns 3 blocks (12 KiB) from 0; b starts at 12 KiB.
        assert_eq!(got, vec![(0, 0, 10_000), (12288, 0, 100)]);
    }

    #[test]
    fn fragmented_files_split_requests_at_extents() {
        let t = lay_out(&trace(), 0, 4096, 1);
        let a: Vec<&Record> = t.records.iter().filter(|r| r.file == 1).collect();
        assert_eq!(a.len(), 3);
        assert_eq!(a.iter().map(|r| u64::from(r.size)).sum::<u64>(), 10_000);
        assert!(a.windows(2).all(|w| w[1].offset > w[0].offset + 4096));
    }
}
