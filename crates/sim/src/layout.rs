//! File-page → block translation for the simulator (the "layout model" of
//! DESIGN.md): a file's pages map to device blocks through the extents the
//! trace or workload recorded.

use outrider_core::{FileId, BLOCK_SIZE};
use outrider_trace::TraceMeta;

/// Bits of the cache key that hold the LBN; the device number sits above.
pub const LBN_BITS: u32 = 48;

/// The cache key of a block: `dev << 48 | lbn`.
#[inline]
pub fn block_key(dev: u32, lbn: u64) -> u64 {
    (u64::from(dev) << LBN_BITS) | (lbn & ((1 << LBN_BITS) - 1))
}

/// Device and LBN of a cache key.
#[inline]
pub fn split_key(key: u64) -> (u32, u64) {
    ((key >> LBN_BITS) as u32, key & ((1 << LBN_BITS) - 1))
}

/// The files of a trace with their extents.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    files: Vec<outrider_trace::FileInfo>,
}

impl Layout {
    /// The layout recorded in a trace's metadata.
    pub fn from_meta(meta: &TraceMeta) -> Self {
        Layout {
            files: meta.files.clone(),
        }
    }

    /// Call `f(dev, lbn, blocks)` for each physically contiguous piece of
    /// pages `page .. page + pages` of `file`. Pages past the end of the
    /// file, or not mapped, are skipped. [`FileId::RAW`] pages are blocks of
    /// device 0.
    pub fn map_range(&self, file: FileId, page: u64, pages: u32, mut f: impl FnMut(u32, u64, u32)) {
        if file == FileId::RAW {
            f(0, page, pages);
            return;
        }
        let Some(info) = usize::try_from(file.0)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| self.files.get(i))
        else {
            return;
        };
        let end_page = (page + u64::from(pages)).min(info.size.div_ceil(BLOCK_SIZE));
        let mut p = page;
        while p < end_page {
            let Some(phys) = info.physical(p * BLOCK_SIZE) else {
                p += 1;
                continue;
            };
            // Extend while the next page is physically adjacent.
            let mut n = 1u64;
            while p + n < end_page
                && info.physical((p + n) * BLOCK_SIZE) == Some(phys + n * BLOCK_SIZE)
            {
                n += 1;
            }
            f(u32::from(info.dev), phys / BLOCK_SIZE, n as u32);
            p += n;
        }
    }

    /// The block of one page, if mapped.
    pub fn block_of(&self, file: FileId, page: u64) -> Option<(u32, u64)> {
        let mut out = None;
        self.map_range(file, page, 1, |d, l, _| out = Some((d, l)));
        out
    }
}
