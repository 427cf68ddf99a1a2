//! One process, one file: `seq`, `reversed`, `strided`, `random`.
//!
//! - `seq` reads the file from start to end in `req`-sized requests: the
//!   pattern every prefetcher must get right (flashy's LFS sequential phase
//!   and SlowThink, 1 MB records there; 4 KiB here so page-level policies
//!   see every page).
//! - `reversed` — DiskSeen §4.3: "a program that sequentially reads a 1GB
//!   file from its end to its beginning". Requests go from the last
//!   `req`-aligned chunk down to block 0; file-level readahead never
//!   triggers, and on a disk each request can cost a rotation.
//! - `strided` — DiskSeen §4.3: "reads a 1GB file in a strided fashion,
//!   reading every other 4KB of data from the beginning to the end of the
//!   file with a small amount of compute time after each read" — `req`
//!   bytes every `stride` bytes, `think=10us` of compute.
//! - `random` — uniform, aligned `req` reads over the file: nothing to
//!   predict (DiskSeen's TPC-H Q17 is "nearly random"; flashy's LFS has a
//!   random-read phase). A policy must not make this slower.
//!
//! Sizes default to 64 MiB (the papers use 1 GB: `size=1GiB`); the file is
//! allocated at `start`, fragmented into `fragment`-sized extents if set.

use super::{bad_value, check_blocks, check_req, Emitter, Entry, Nanos, WorkloadError};
use crate::{Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

outrider_core::params! {
    /// Parameters of `seq` and `reversed`.
    pub struct ScanParams {
        /// File size (DiskSeen used 1GiB).
        size: ByteSize = ByteSize(64 << 20),
        /// Request size, a multiple of 4KiB.
        req: ByteSize = ByteSize(4096),
        /// Extent size of a fragmented file; 0 = contiguous.
        fragment: ByteSize = ByteSize(0),
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Think time between consecutive requests.
        think: Nanos = Nanos(0),
        /// Seed (fragment gaps).
        seed: u64 = 1,
    }
}

outrider_core::params! {
    /// Parameters of `strided`.
    pub struct StridedParams {
        /// File size (DiskSeen used 1GiB).
        size: ByteSize = ByteSize(64 << 20),
        /// Bytes read per request, a multiple of 4KiB.
        req: ByteSize = ByteSize(4096),
        /// Distance between the starts of consecutive requests (8KiB = every other block).
        stride: ByteSize = ByteSize(8192),
        /// Extent size of a fragmented file; 0 = contiguous.
        fragment: ByteSize = ByteSize(0),
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Compute time after each read (DiskSeen: "a small amount").
        think: Nanos = Nanos(10_000),
        /// Seed (fragment gaps).
        seed: u64 = 1,
    }
}

outrider_core::params! {
    /// Parameters of `random`.
    pub struct RandomParams {
        /// File (region) size the reads fall in.
        size: ByteSize = ByteSize(256 << 20),
        /// Request size, a multiple of 4KiB; offsets are 4KiB-aligned.
        req: ByteSize = ByteSize(4096),
        /// Number of requests.
        count: u64 = 4096,
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Think time between consecutive requests.
        think: Nanos = Nanos(0),
        /// Seed (offsets).
        seed: u64 = 1,
    }
}

pub(super) const SEQ: Entry = Entry {
    name: "seq",
    summary: "one process reads a file sequentially (flashy LFS/SlowThink; the baseline)",
    specs: ScanParams::specs,
    generate: |t| scan("seq", t),
};

pub(super) const REVERSED: Entry = Entry {
    name: "reversed",
    summary: "one process reads a file from end to start (DiskSeen section 4.3 'reversed')",
    specs: ScanParams::specs,
    generate: |t| scan("reversed", t),
};

pub(super) const STRIDED: Entry = Entry {
    name: "strided",
    summary: "reads req bytes every stride bytes of a file (DiskSeen section 4.3 'strided')",
    specs: StridedParams::specs,
    generate: strided,
};

pub(super) const RANDOM: Entry = Entry {
    name: "random",
    summary: "uniform random aligned reads over a file (nothing to predict; must do no harm)",
    specs: RandomParams::specs,
    generate: random,
};

/// One file `NAME.dat` at `start`, and the trace's metadata for process 1.
fn one_file(name: &str, size: u64, fragment: u64, start: u64, seed: u64) -> TraceMeta {
    let mut a = super::Allocator::fragmented(start, fragment, seed);
    TraceMeta {
        source: String::new(),
        processes: vec![(1, name.to_string())],
        files: vec![a.file(format!("{name}.dat"), size)],
    }
}

fn check_size(name: &str, size: u64) -> Result<u64, WorkloadError> {
    if size == 0 {
        return Err(bad_value(name, "size", 0, "a positive size"));
    }
    Ok(super::align_up(size, BLOCK_SIZE))
}

fn scan(name: &str, text: &str) -> Result<Trace, WorkloadError> {
    let p = ScanParams::parse(name, text)?;
    check_req(name, p.req.0)?;
    let owned = check_size(name, p.size.0)?;
    let meta = one_file(name, p.size.0, p.fragment.0, p.start.0, p.seed);
    let mut em = Emitter::new(p.think.0);
    let req = p.req.0;
    if name == "seq" {
        for off in (0..owned).step_by(req as usize) {
            em.read_file(1, &meta.files, 0, off, req.min(owned - off));
        }
    } else {
        let mut end = owned;
        while end > 0 {
            let off = end.saturating_sub(req);
            em.read_file(1, &meta.files, 0, off, end - off);
            end = off;
        }
    }
    Ok(em.finish(meta))
}

fn strided(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "strided";
    let p = StridedParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    check_blocks(NAME, "stride", p.stride.0)?;
    if p.stride.0 < p.req.0 {
        return Err(bad_value(NAME, "stride", p.stride, "at least req"));
    }
    let owned = check_size(NAME, p.size.0)?;
    let meta = one_file(NAME, p.size.0, p.fragment.0, p.start.0, p.seed);
    let mut em = Emitter::new(p.think.0);
    for off in (0..owned).step_by(p.stride.0 as usize) {
        em.read_file(1, &meta.files, 0, off, p.req.0.min(owned - off));
    }
    Ok(em.finish(meta))
}

fn random(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "random";
    let p = RandomParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    let owned = check_size(NAME, p.size.0)?;
    if p.req.0 > owned {
        return Err(bad_value(NAME, "req", p.req, "at most size"));
    }
    let meta = one_file(NAME, p.size.0, 0, p.start.0, p.seed);
    let mut em = Emitter::new(p.think.0);
    let mut rng = super::rng::SplitMix64::new(p.seed);
    let slots = (owned - p.req.0) / BLOCK_SIZE + 1;
    for _ in 0..p.count {
        let off = rng.below(slots) * BLOCK_SIZE;
        em.read_file(1, &meta.files, 0, off, p.req.0);
    }
    Ok(em.finish(meta))
}
