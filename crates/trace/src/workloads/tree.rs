//! `tree-scan`: a source tree of small files read by *grep* or *diff*.
//!
//! DiskSeen §4.3 (Figs. 8–9): "In each cylinder group inode blocks are
//! located at the beginning, followed by file data blocks. Before a file is
//! accessed, its inode must be inspected, so we see many lines dropping down
//! from file data blocks to inode blocks"; and "*diff* accesses these
//! files/directories in strict alphabetical order", while the files "are
//! not necessarily laid out in alphabetical order of their names" — *grep*
//! "scans files essentially in the order of their disk layout". EPCM's
//! benchmarks (Andrew compile, Glimpse indexing of /usr/doc) are the same
//! many-small-files shape.
//!
//! The model (ext2/ext3 on a fresh file system, the tree unpacked by tar):
//!
//! - **Tree**: `dirs` directories `d000..`, `files` files spread evenly
//!   over them (`dNNN/fNNNN.c`). Sizes are lognormal, median `median`,
//!   shape `spread` (σ of ln size; 1.2 gives mean ≈ 2× median, like a Linux
//!   tree: 236 MB / 17000 files ≈ 14 KiB mean, ~5 KiB median), clamped to
//!   [64 B, 2 MiB]. (The one transcendental call, `f64::exp`, comes from
//!   the platform's libm; a last-ulp difference there could move a size by
//!   a byte on another platform, never on the same one.)
//! - **Creation order** (tar's): directories in a seeded shuffled order,
//!   and each directory's files in a seeded shuffled order — not name order.
//! - **Layout**: directories, in creation order, fill block groups of
//!   `dirs_per_group` each; group g starts at `start + g·group` (later if
//!   the previous group overflowed). A group opens with its inode table
//!   (`INODE_TABLE_BLOCKS`, ext3's default 16384 × 128-byte inodes per
//!   128 MiB group, longer if needed), then per directory one directory
//!   block followed by its files' data, in creation order, contiguous or
//!   fragmented (`fragment`). Inodes are numbered in creation order within
//!   the group, 32 per 4 KiB block.
//! - **Reading** (`order`): `name` (*diff*, *CVS*): directories and files in
//!   name order; `layout` (*grep*): both in creation order, i.e. ascending on
//!   disk. Visiting a directory reads its inode block and its directory
//!   block; each file then needs its inode block, and its data is read in
//!   `req` requests. Metadata reads are raw (`file == 0`). The inode cache
//!   keeps inodes once read, so **each inode block is read once**, the first
//!   time any inode in it is needed — what a block trace of grep shows.
//!
//! Approximate where ext3 is: no indirect blocks, no journal, one block
//! per directory, Orlov's group spreading reduced to "fill groups in order".
//!
//! Defaults: 2000 files in 100 directories (8 per group, 13 groups),
//! median 5 KiB → 6192 records (175 of them metadata), spanning 1.6 GB.

use super::rng::SplitMix64;
use super::{bad_value, check_blocks, check_req, Allocator, Emitter, Entry, Nanos, WorkloadError};
use crate::{FileInfo, Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

/// Inode-table blocks per group: ext3's default 16384 inodes of 128 B per
/// 128 MiB group = 512 blocks (2 MiB).
pub const INODE_TABLE_BLOCKS: u64 = 512;
/// Inodes per 4 KiB inode-table block (128-byte inodes).
pub const INODES_PER_BLOCK: u64 = 32;
/// Largest file the size model produces.
pub const MAX_FILE_BYTES: u64 = 2 << 20;
/// Smallest file the size model produces.
pub const MIN_FILE_BYTES: u64 = 64;

outrider_core::params! {
    /// Parameters of `tree-scan`.
    pub struct TreeParams {
        /// Number of regular files (a Linux 2.6.11 tree has about 17000).
        files: u64 = 2000,
        /// Number of directories.
        dirs: u64 = 100,
        /// Directories per block group.
        dirs_per_group: u64 = 8,
        /// Median file size (lognormal).
        median: ByteSize = ByteSize(5 << 10),
        /// Lognormal shape: sigma of ln(size); 0 = every file median-sized.
        spread: f64 = 1.2,
        /// Block-group size (ext3: 128MiB).
        group: ByteSize = ByteSize(128 << 20),
        /// Visit order: name (diff, CVS) or layout (grep).
        order: String = "name".to_string(),
        /// Extent size of fragmented files; 0 = contiguous.
        fragment: ByteSize = ByteSize(0),
        /// Request size, a multiple of 4KiB.
        req: ByteSize = ByteSize(4096),
        /// Physical byte offset of the first group.
        start: ByteSize = ByteSize(0),
        /// Think time between consecutive requests (grep's scan work).
        think: Nanos = Nanos(5_000),
        /// Seed (sizes, creation order, fragment gaps).
        seed: u64 = 1,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "tree-scan",
    summary: "small files in ext3-like groups with inode tables, read in name order (diff) \
              or layout order (grep) (DiskSeen section 4.3 grep/diff/CVS)",
    specs: TreeParams::specs,
    generate,
};

/// One directory as laid out: its inode, its directory block, its files
/// (indices into the file list) in creation order.
struct Dir {
    name_index: u64,
    inode_block: u64,
    dir_block: u64,
    files: Vec<(u64, usize, u64)>, // (name index, file index, inode block)
}

fn file_size(rng: &mut SplitMix64, median: u64, spread: f64) -> u64 {
    let s = median as f64 * (spread * rng.normal()).exp();
    (s.round() as u64).clamp(MIN_FILE_BYTES, MAX_FILE_BYTES)
}

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "tree-scan";
    let p = TreeParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    check_blocks(NAME, "group", p.group.0)?;
    if p.dirs == 0 || p.files < p.dirs {
        return Err(bad_value(
            NAME,
            "files",
            p.files,
            "at least dirs (and dirs >= 1)",
        ));
    }
    if p.dirs_per_group == 0 {
        return Err(bad_value(NAME, "dirs_per_group", 0, "at least 1"));
    }
    if !(0.0..=4.0).contains(&p.spread) {
        return Err(bad_value(NAME, "spread", p.spread, "between 0 and 4"));
    }
    let by_name = match p.order.as_str() {
        "name" => true,
        "layout" => false,
        other => return Err(bad_value(NAME, "order", other, "name or layout")),
    };
    if p.median.0 == 0 {
        return Err(bad_value(NAME, "median", 0, "a positive size"));
    }
    let mut rng = SplitMix64::new(p.seed);

    // The tree in name order: sizes drawn in name order.
    let per_dir = |d: u64| p.files / p.dirs + u64::from(d < p.files % p.dirs);
    let sizes: Vec<Vec<u64>> = (0..p.dirs)
        .map(|d| {
            (0..per_dir(d))
                .map(|_| file_size(&mut rng, p.median.0, p.spread))
                .collect()
        })
        .collect();

    // Creation order.
    let mut dir_order: Vec<u64> = (0..p.dirs).collect();
    rng.shuffle(&mut dir_order);

    // Layout, group by group.
    let mut alloc = Allocator::fragmented(p.start.0, p.fragment.0, rng.next_u64());
    let mut files: Vec<FileInfo> = Vec::with_capacity(p.files as usize);
    let mut dirs: Vec<Dir> = Vec::with_capacity(p.dirs as usize);
    for (g, chunk) in dir_order.chunks(p.dirs_per_group as usize).enumerate() {
        alloc.skip_to(p.start.0 + g as u64 * p.group.0);
        let inodes: u64 = chunk.iter().map(|&d| 1 + per_dir(d)).sum();
        let table = alloc.raw(INODE_TABLE_BLOCKS.max(inodes.div_ceil(INODES_PER_BLOCK)));
        let mut ino = 0u64;
        let mut inode_block = || {
            ino += 1;
            table + (ino - 1) / INODES_PER_BLOCK * BLOCK_SIZE
        };
        for &d in chunk {
            let dir_inode = inode_block();
            let dir_block = alloc.raw(1);
            let mut order: Vec<u64> = (0..per_dir(d)).collect();
            rng.shuffle(&mut order);
            let mut entries = Vec::with_capacity(order.len());
            for f in order {
                let size = sizes[d as usize][f as usize];
                entries.push((f, files.len(), inode_block()));
                files.push(alloc.file(format!("d{d:03}/f{f:04}.c"), size));
            }
            dirs.push(Dir {
                name_index: d,
                inode_block: dir_inode,
                dir_block,
                files: entries,
            });
        }
    }

    // Reading.
    if by_name {
        dirs.sort_by_key(|d| d.name_index);
        for d in &mut dirs {
            d.files.sort_by_key(|f| f.0);
        }
    }
    let mut em = Emitter::new(p.think.0);
    let mut inode_read = std::collections::HashSet::new();
    let mut inode = |em: &mut Emitter, block: u64| {
        if inode_read.insert(block) {
            em.read_raw(1, block, BLOCK_SIZE);
        }
    };
    for d in &dirs {
        inode(&mut em, d.inode_block);
        em.read_raw(1, d.dir_block, BLOCK_SIZE);
        for &(_, fi, ib) in &d.files {
            inode(&mut em, ib);
            let owned = files[fi].size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE;
            for off in (0..owned).step_by(p.req.0 as usize) {
                em.read_file(1, &files, fi, off, p.req.0.min(owned - off));
            }
        }
    }
    let command = if by_name { "diff" } else { "grep" };
    let meta = TraceMeta {
        source: String::new(),
        processes: vec![(1, command.into())],
        files,
    };
    Ok(em.finish(meta))
}
