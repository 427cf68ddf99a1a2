//! The applications of flashy prefetching's evaluation (§VI-A), as
//! synthetic single-process read workloads: `slowthink`, `lfs`, `blast`.
//!
//! - `slowthink` — "reads from a file in 1 MB records and performs several
//!   iterations of difference computations on the read bytes. By varying
//!   the number of iterations performed, we can control the application's
//!   run time and I/O throughput": `record` reads with `think` of compute
//!   after each.
//! - `lfs` — the Sprite LFS large-file benchmark's reads (Rosenblum and
//!   Ousterhout 1992; flashy uses a 100 GB file): a sequential read of the
//!   file, `count` random reads of `rreq`, and a sequential re-read. The
//!   benchmark's write phases are left out (flashy prefetches reads only;
//!   the simulator does not charge write-back).
//! - `blast` — a BLAST-like database scan (flashy Fig. 4: "stages that
//!   consist of sequential reads, seeks, random reads ... the varying slopes
//!   show that the throughput ... is not entirely constant"): the file is
//!   cut into `phases` segments; each phase scans its segment sequentially
//!   but skips the segment's last `gap` bytes, with a compute time that
//!   changes from phase to phase (`think` × 1, 3, 2, 4, ...), followed by
//!   `random` random 4 KiB reads anywhere in the file.
//!
//! Small by default (64 MiB) so that `paper-suite` stays quick; the
//! benchmark `bench/flashy.sh` runs them at 1 GiB and more.

use super::{bad_value, check_req, Emitter, Entry, Nanos, WorkloadError};
use crate::{Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

outrider_core::params! {
    /// Parameters of `slowthink`.
    pub struct SlowThinkParams {
        /// File size.
        size: ByteSize = ByteSize(64 << 20),
        /// Record (request) size (flashy: 1 MB).
        record: ByteSize = ByteSize(1 << 20),
        /// Compute time after each record.
        think: Nanos = Nanos(2_000_000),
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Seed (unused: the workload has no randomness).
        seed: u64 = 1,
    }
}

outrider_core::params! {
    /// Parameters of `lfs`.
    pub struct LfsParams {
        /// File size (flashy: 100 GB).
        size: ByteSize = ByteSize(64 << 20),
        /// Request size of the sequential phases.
        req: ByteSize = ByteSize(64 << 10),
        /// Request size of the random phase.
        rreq: ByteSize = ByteSize(8 << 10),
        /// Random reads in the random phase.
        count: u64 = 2048,
        /// Think time between requests.
        think: Nanos = Nanos(0),
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Seed (random offsets).
        seed: u64 = 1,
    }
}

outrider_core::params! {
    /// Parameters of `blast`.
    pub struct BlastParams {
        /// Database file size (flashy: 12 GB).
        size: ByteSize = ByteSize(64 << 20),
        /// Number of scan phases.
        phases: u64 = 4,
        /// Request size of the scans.
        req: ByteSize = ByteSize(64 << 10),
        /// Bytes skipped at the end of each phase's segment.
        gap: ByteSize = ByteSize(2 << 20),
        /// Random 4KiB reads after each phase.
        random: u64 = 64,
        /// Base compute time per request (times 1, 3, 2, 4 by phase).
        think: Nanos = Nanos(100_000),
        /// Physical byte offset of the file.
        start: ByteSize = ByteSize(0),
        /// Seed (random reads).
        seed: u64 = 1,
    }
}

pub(super) const SLOWTHINK: Entry = Entry {
    name: "slowthink",
    summary: "reads a file in 1 MB records with compute time between them (flashy section VI-A SlowThink)",
    specs: SlowThinkParams::specs,
    generate: slowthink,
};

pub(super) const LFS: Entry = Entry {
    name: "lfs",
    summary:
        "large file: sequential read, random reads, sequential re-read (flashy section VI-A LFS)",
    specs: LfsParams::specs,
    generate: lfs,
};

pub(super) const BLAST: Entry = Entry {
    name: "blast",
    summary: "multi-phase sequential database scan with gaps, varying rates and random reads (flashy Fig. 4 BLAST)",
    specs: BlastParams::specs,
    generate: blast,
};

fn one_file(name: &str, size: u64, start: u64) -> Result<(TraceMeta, u64), WorkloadError> {
    if size == 0 {
        return Err(bad_value(name, "size", 0, "a positive size"));
    }
    let mut a = super::Allocator::contiguous(start);
    let meta = TraceMeta {
        source: String::new(),
        processes: vec![(1, name.to_string())],
        files: vec![a.file(format!("{name}.dat"), size)],
    };
    Ok((meta, super::align_up(size, BLOCK_SIZE)))
}

/// Sequential reads of `[from, to)` in `req` pieces.
fn scan(em: &mut Emitter, meta: &TraceMeta, from: u64, to: u64, req: u64) {
    let mut off = from;
    while off < to {
        let n = req.min(to - off);
        em.read_file(1, &meta.files, 0, off, n);
        off += n;
    }
}

fn slowthink(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "slowthink";
    let p = SlowThinkParams::parse(NAME, text)?;
    let req = p.record.0;
    if req == 0 || req % BLOCK_SIZE != 0 || req > 1 << 30 {
        return Err(bad_value(
            NAME,
            "record",
            p.record,
            "a multiple of 4KiB, at most 1GiB",
        ));
    }
    let (meta, owned) = one_file(NAME, p.size.0, p.start.0)?;
    let mut em = Emitter::new(p.think.0);
    scan(&mut em, &meta, 0, owned, req);
    Ok(em.finish(meta))
}

fn lfs(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "lfs";
    let p = LfsParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    if p.rreq.0 == 0 || p.rreq.0 % BLOCK_SIZE != 0 || p.rreq.0 > p.size.0 {
        return Err(bad_value(
            NAME,
            "rreq",
            p.rreq,
            "a multiple of 4KiB, at most size",
        ));
    }
    let (meta, owned) = one_file(NAME, p.size.0, p.start.0)?;
    let mut em = Emitter::new(p.think.0);
    scan(&mut em, &meta, 0, owned, p.req.0);
    let mut rng = super::rng::SplitMix64::new(p.seed);
    let slots = (owned - p.rreq.0) / BLOCK_SIZE + 1;
    for _ in 0..p.count {
        let off = rng.below(slots) * BLOCK_SIZE;
        em.read_file(1, &meta.files, 0, off, p.rreq.0);
    }
    scan(&mut em, &meta, 0, owned, p.req.0);
    Ok(em.finish(meta))
}

fn blast(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "blast";
    let p = BlastParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    if p.phases == 0 || p.phases > 1 << 20 {
        return Err(bad_value(NAME, "phases", p.phases, "1 to 1048576"));
    }
    let (meta, owned) = one_file(NAME, p.size.0, p.start.0)?;
    let seg = super::align_up(owned / p.phases, BLOCK_SIZE);
    if p.gap.0 % BLOCK_SIZE != 0 || p.gap.0 >= seg {
        return Err(bad_value(
            NAME,
            "gap",
            p.gap,
            "a multiple of 4KiB smaller than size / phases",
        ));
    }
    let mut em = Emitter::new(p.think.0);
    let mut rng = super::rng::SplitMix64::new(p.seed);
    const RATE: [u64; 4] = [1, 3, 2, 4];
    for i in 0..p.phases {
        em.think_ns = p.think.0 * RATE[(i % 4) as usize];
        let from = (i * seg).min(owned);
        let to = ((i + 1) * seg - p.gap.0).min(owned);
        scan(&mut em, &meta, from, to, p.req.0);
        for _ in 0..p.random {
            let off = rng.below(owned / BLOCK_SIZE) * BLOCK_SIZE;
            em.read_file(1, &meta.files, 0, off, BLOCK_SIZE);
        }
    }
    Ok(em.finish(meta))
}
