//! `traversal`: a glimpse index of a document tree (EPCM §4.4): "a linear
//! traversal of all the files in a large directory structure… The order of
//! files in their directory determines the order in which files are
//! accessed. The large majority of files see only one access."
//!
//! The model: `dirs` directories of `files` files in all (lognormal sizes,
//! median `median`), created (and laid out) directory by directory, each
//! directory's files in a seeded creation order, contiguous or fragmented
//! (`fragment`). The traversal visits directories in creation order and,
//! within one, files in **directory order** — the order `readdir` returns,
//! which for a hashed directory (ext3 htree) is a seeded permutation of the
//! creation order (`readdir=hash`, default) or the creation order itself
//! (`readdir=creation`, a linear on-disk scan). Each directory's block is a
//! raw read (metadata, no file event), then every file is read whole in
//! `req` requests, with `think` (indexing work) between requests. One
//! process (pid 1). Defaults: 2000 files, ~4200 records.

use super::compile::lognormal;
use super::rng::SplitMix64;
use super::{bad_value, check_req, Allocator, Emitter, Entry, Nanos, WorkloadError};
use crate::{FileInfo, Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

outrider_core::params! {
    /// Parameters of `traversal`.
    pub struct TraversalParams {
        /// Regular files.
        files: u64 = 2000,
        /// Directories.
        dirs: u64 = 100,
        /// Median file size (lognormal, sigma 1.0).
        median: ByteSize = ByteSize(4 << 10),
        /// Order within a directory: hash (readdir of an htree directory) or creation.
        readdir: String = "hash".to_string(),
        /// Request size, a multiple of 4KiB.
        req: ByteSize = ByteSize(16 << 10),
        /// Extent size of fragmented files; 0 = contiguous in creation order.
        fragment: ByteSize = ByteSize(0),
        /// Physical byte offset of the first directory.
        start: ByteSize = ByteSize(0),
        /// Think (indexing) time between requests.
        think: Nanos = Nanos(500_000),
        /// Seed (sizes, creation and readdir orders, fragment gaps).
        seed: u64 = 1,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "traversal",
    summary: "glimpse-like indexing: every file of a tree once, in directory order \
              (EPCM section 4.4)",
    specs: TraversalParams::specs,
    generate,
};

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "traversal";
    let p = TraversalParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    if p.dirs == 0 || p.files < p.dirs {
        return Err(bad_value(
            NAME,
            "files",
            p.files,
            "at least dirs (and dirs >= 1)",
        ));
    }
    let hashed = match p.readdir.as_str() {
        "hash" => true,
        "creation" => false,
        other => return Err(bad_value(NAME, "readdir", other, "hash or creation")),
    };
    if p.median.0 == 0 {
        return Err(bad_value(NAME, "median", 0, "a positive size"));
    }
    let mut rng = SplitMix64::new(p.seed);
    let mut alloc = Allocator::fragmented(p.start.0, p.fragment.0, rng.next_u64());
    let mut files: Vec<FileInfo> = Vec::with_capacity(p.files as usize);
    // (directory block, files in readdir order)
    let mut dirs: Vec<(u64, Vec<usize>)> = Vec::new();
    for d in 0..p.dirs {
        let n = p.files / p.dirs + u64::from(d < p.files % p.dirs);
        let block = alloc.raw(1);
        let mut names: Vec<u64> = (0..n).collect();
        rng.shuffle(&mut names); // creation order
        let first = files.len();
        for f in names {
            let size = lognormal(&mut rng, p.median.0, 1.0);
            files.push(alloc.file(format!("doc/d{d:03}/f{f:04}.txt"), size));
        }
        let mut order: Vec<usize> = (first..files.len()).collect();
        if hashed {
            rng.shuffle(&mut order);
        }
        dirs.push((block, order));
    }
    let mut em = Emitter::new(p.think.0);
    for (block, order) in &dirs {
        em.read_raw(1, *block, BLOCK_SIZE);
        for &f in order {
            let owned = files[f].size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE;
            let mut off = 0;
            while off < owned {
                let len = p.req.0.min(owned - off);
                em.read_file(1, &files, f, off, len);
                off += len;
            }
        }
    }
    Ok(em.finish(TraceMeta {
        source: String::new(),
        processes: vec![(1, "glimpseindex".into())],
        files,
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_file_is_read_once_in_directory_order() {
        let t = super::super::generate("traversal:files=50,dirs=5").unwrap();
        let mut seen = vec![];
        for r in t.records.iter().filter(|r| r.file > 0) {
            if seen.last() != Some(&r.file) {
                assert!(!seen.contains(&r.file), "file {} read twice", r.file);
                seen.push(r.file);
            }
        }
        assert_eq!(seen.len(), 50);
        // Hash order differs from creation (file index) order; creation
        // order is ascending.
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_ne!(seen, sorted);
        let t = super::super::generate("traversal:files=50,dirs=5,readdir=creation").unwrap();
        let firsts: Vec<u32> = t
            .records
            .iter()
            .filter(|r| r.file > 0)
            .map(|r| r.file)
            .collect();
        assert!(firsts.windows(2).all(|w| w[0] <= w[1]));
    }
}
