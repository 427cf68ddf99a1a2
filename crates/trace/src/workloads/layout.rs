//! On-disk layout model: where a synthetic workload's files live, so the
//! simulator charges real seeks (DESIGN.md "Physical cost, not counts").
//!
//! The model is a bump allocator over the device's byte space, the way a
//! fresh ext2/ext3 allocates: files are placed **in creation order**, each
//! starting on a 4 KiB block, one after the other. Two departures are
//! available:
//!
//! - **groups**: [`Allocator::skip_to`] starts a new region (an ext3 block
//!   group, a second source tree) further on, leaving a gap;
//! - **fragmentation**: with [`Allocator::fragmented`] a file is cut into
//!   extents of `extent_bytes` and the allocator skips a seeded-random gap of
//!   1 block up to one extent's length after each extent (space taken by
//!   other, unread files), so a file-sequential read is no longer
//!   disk-sequential.
//!
//! Extents always cover whole blocks: a 5000-byte file owns 2 blocks (8 KiB),
//! so a page-sized read of its last page maps entirely inside the file.

use super::rng::SplitMix64;
use crate::{Extent, FileInfo};
use outrider_core::BLOCK_SIZE;

/// Round `x` up to a multiple of `a` (`a > 0`).
pub fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Allocates files and raw blocks from a moving cursor on one device.
#[derive(Clone, Debug)]
pub struct Allocator {
    cursor: u64,
    dev: u16,
    fragment: Option<(u64, SplitMix64)>,
}

impl Allocator {
    /// Contiguous allocation from byte `start` (rounded up to a block).
    pub fn contiguous(start: u64) -> Self {
        Allocator {
            cursor: align_up(start, BLOCK_SIZE),
            dev: 0,
            fragment: None,
        }
    }

    /// Fragmented allocation from `start`: extents of `extent_bytes`
    /// (rounded up to a block) separated by seeded gaps of 1 block up to
    /// `extent_bytes`. `extent_bytes == 0` means contiguous.
    pub fn fragmented(start: u64, extent_bytes: u64, seed: u64) -> Self {
        let mut a = Allocator::contiguous(start);
        if extent_bytes > 0 {
            a.fragment = Some((align_up(extent_bytes, BLOCK_SIZE), SplitMix64::new(seed)));
        }
        a
    }

    /// The next free byte.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Move the cursor forward to `offset` (block-aligned); never backwards.
    pub fn skip_to(&mut self, offset: u64) {
        self.cursor = self.cursor.max(align_up(offset, BLOCK_SIZE));
    }

    /// Reserve `blocks` contiguous raw blocks (metadata); returns the first
    /// byte. Never fragmented.
    pub fn raw(&mut self, blocks: u64) -> u64 {
        let at = self.cursor;
        self.cursor += blocks * BLOCK_SIZE;
        at
    }

    /// Allocate a file of `size` bytes and return its description.
    pub fn file(&mut self, path: impl Into<String>, size: u64) -> FileInfo {
        let owned = align_up(size.max(1), BLOCK_SIZE);
        let mut extents: Vec<Extent> = Vec::new();
        let mut done = 0;
        while done < owned {
            let len = match &self.fragment {
                Some((ext, _)) => (*ext).min(owned - done),
                None => owned - done,
            };
            match extents.last_mut() {
                Some(e) if e.phys_offset + e.len == self.cursor => e.len += len,
                _ => extents.push(Extent {
                    file_offset: done,
                    phys_offset: self.cursor,
                    len,
                }),
            }
            self.cursor += len;
            done += len;
            if let Some((ext, rng)) = &mut self.fragment {
                if done < owned {
                    self.cursor += (1 + rng.below(*ext / BLOCK_SIZE)) * BLOCK_SIZE;
                }
            }
        }
        FileInfo {
            path: path.into(),
            size,
            dev: self.dev,
            extents,
        }
    }
}

/// Lay out groups of files (name, size) in creation order from `start`:
/// contiguous within a group, each group starting at least `group_gap`
/// bytes after the previous group's start (further if the previous group
/// overflowed), and with `fragment` > 0 fragmented into extents of that
/// size (seeded by `seed`). Returns the files in the order given.
pub fn layout(
    start: u64,
    groups: &[Vec<(String, u64)>],
    group_gap: u64,
    fragment: u64,
    seed: u64,
) -> Vec<FileInfo> {
    let mut a = Allocator::fragmented(start, fragment, seed);
    let mut out = Vec::new();
    let mut group_start = a.cursor();
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            group_start = align_up(a.cursor().max(group_start + group_gap), BLOCK_SIZE);
            a.skip_to(group_start);
        }
        out.extend(g.iter().map(|(name, size)| a.file(name.clone(), *size)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_files_follow_each_other_on_block_boundaries() {
        let mut a = Allocator::contiguous(1000);
        let f = a.file("a", 5000);
        let g = a.file("b", 4096);
        assert_eq!(f.extents.len(), 1);
        assert_eq!((f.extents[0].phys_offset, f.extents[0].len), (4096, 8192));
        assert_eq!(g.physical(0), Some(4096 + 8192));
        assert_eq!(a.cursor(), 4096 + 8192 + 4096);
    }

    #[test]
    fn fragmented_files_have_gapped_extents_covering_the_file() {
        let mut a = Allocator::fragmented(0, 16384, 3);
        let f = a.file("f", 100_000);
        assert_eq!(f.extents.len(), 7); // 25 blocks in extents of 4 blocks
        let mut next = 0;
        for w in f.extents.windows(2) {
            assert!(w[1].phys_offset > w[0].phys_offset + w[0].len);
            assert!(w[1].phys_offset - (w[0].phys_offset + w[0].len) <= 16384);
        }
        for e in &f.extents {
            assert_eq!(e.file_offset, next);
            next += e.len;
        }
        assert_eq!(next, 25 * 4096);
    }

    #[test]
    fn groups_start_a_gap_apart() {
        let g = vec![vec![("a".to_string(), 4096)], vec![("b".to_string(), 4096)]];
        let files = layout(0, &g, 1 << 20, 0, 0);
        assert_eq!(files[0].physical(0), Some(0));
        assert_eq!(files[1].physical(0), Some(1 << 20));
    }
}
