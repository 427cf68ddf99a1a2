//! `interleaved`: two processes alternating between two distant regions.
//!
//! DiskSeen §4.3 runs *CVS* (`cvs -q diff`) and *diff* "over two identical
//! datasets with a 50GB disk space gap between them": the program reads a
//! piece of tree A, then the matching piece of tree B, and so on. Each
//! region alone is sequential on disk; interleaved, every switch is a long
//! seek, and a file-level prefetcher only sees short files. Here the two
//! regions hold `files` equally sized files each (`size` per region) at
//! `start` and `start + distance`; process 1 reads region A and process 2
//! region B, each its files in order and each file sequentially, taking
//! turns every `burst` requests. Two processes rather than one alternating
//! process so that per-process detectors (flashy, readahead) see two clean
//! streams while the device sees the ping-pong.
//!
//! `procs=1` issues the same requests from one process, as *cvs -q diff*
//! and *diff* are (§4.3): the program waits for each read, so the device
//! sees every switch between the trees. With two processes the simulated
//! timelines are independent, and an elevator (C-LOOK) queue serves the
//! lower tree's steady stream of sequential requests ahead of the upper
//! tree's, so the device may not see the ping-pong at all.
//!
//! Default: 32 MiB per region in 16 files of 2 MiB, 50 GiB apart (the
//! paper's gap), 4 KiB requests, 5 µs think (diff's compare work) →
//! 16384 records.

use super::{bad_value, check_req, Allocator, Emitter, Entry, Nanos, WorkloadError};
use crate::{Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

outrider_core::params! {
    /// Parameters of `interleaved`.
    pub struct InterleavedParams {
        /// Bytes per region (each process reads this much).
        size: ByteSize = ByteSize(32 << 20),
        /// Files per region, equal sizes.
        files: u64 = 16,
        /// Start-to-start distance of the two regions (DiskSeen: 50 GB gap).
        distance: ByteSize = ByteSize(50 << 30),
        /// Requests a process issues before the other takes its turn.
        burst: u64 = 1,
        /// Request size, a multiple of 4KiB.
        req: ByteSize = ByteSize(4096),
        /// Physical byte offset of region A.
        start: ByteSize = ByteSize(0),
        /// Think time between a process's consecutive requests.
        think: Nanos = Nanos(5_000),
        /// Seed (unused: the workload has no randomness; kept for uniformity).
        seed: u64 = 1,
        /// Processes: 2 = one per tree; 1 = one process alternating between the trees (cvs diff, diff).
        procs: u32 = 2,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "interleaved",
    summary: "two processes alternate between two distant regions, each reading its own \
              files sequentially (DiskSeen section 4.3 CVS/diff over two trees 50 GB apart)",
    specs: InterleavedParams::specs,
    generate,
};

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "interleaved";
    let p = InterleavedParams::parse(NAME, text)?;
    check_req(NAME, p.req.0)?;
    let blocks = p.size.0.div_ceil(BLOCK_SIZE);
    if p.files == 0 || p.files > blocks {
        return Err(bad_value(NAME, "files", p.files, "between 1 and size/4KiB"));
    }
    if !(1..=2).contains(&p.procs) {
        return Err(bad_value(NAME, "procs", p.procs, "1 or 2"));
    }
    if p.burst == 0 {
        return Err(bad_value(NAME, "burst", 0, "at least 1"));
    }
    if p.distance.0 < blocks * BLOCK_SIZE {
        return Err(bad_value(
            NAME,
            "distance",
            p.distance,
            "at least size, so the regions do not overlap",
        ));
    }
    let mut files = Vec::new();
    for (r, base) in [("a", p.start.0), ("b", p.start.0 + p.distance.0)] {
        let mut a = Allocator::contiguous(base);
        for i in 0..p.files {
            let n = blocks / p.files + u64::from(i < blocks % p.files);
            files.push(a.file(format!("{r}/f{i:04}"), n * BLOCK_SIZE));
        }
    }
    // Each process's request list: (file index, offset, length).
    let per_region = p.files as usize;
    let stream = |region: usize| {
        let mut v = Vec::new();
        for (i, f) in files[region * per_region..][..per_region]
            .iter()
            .enumerate()
        {
            for off in (0..f.size).step_by(p.req.0 as usize) {
                v.push((region * per_region + i, off, p.req.0.min(f.size - off)));
            }
        }
        v
    };
    let streams = [stream(0), stream(1)];
    let mut em = Emitter::new(p.think.0);
    let burst = p.burst as usize;
    let turns = streams[0].len().max(streams[1].len()).div_ceil(burst);
    for turn in 0..turns {
        for (s, reqs) in streams.iter().enumerate() {
            for &(file, off, len) in reqs.iter().skip(turn * burst).take(burst) {
                let pid = if p.procs == 1 { 1 } else { s as u32 + 1 };
                em.read_file(pid, &files, file, off, len);
            }
        }
    }
    let meta = TraceMeta {
        source: String::new(),
        processes: if p.procs == 1 {
            vec![(1, "interleaved".into())]
        } else {
            vec![(1, "interleaved-a".into()), (2, "interleaved-b".into())]
        },
        files,
    };
    Ok(em.finish(meta))
}
