//! `stride`: file-level pattern detection — forward, reverse and strided
//! streams — the no-history half of the `auto` policy ("pattern
//! detection at file level: forward, reverse and strided").
//!
//! # What triggers it
//!
//! Per (process, file) stream, the page distance `d` between the starts of
//! consecutive reads is compared with the previous distance
//! ([`crate::mechanism::stream`], the classification flashy uses too). After
//! `confirm` equal, non-zero distances in a row the stream is a pattern of
//! reads of `n` pages every `d` pages (`d < 0`: backwards). Plain forward
//! sequential reading (`d == n`) is left to the kernel's readahead unless
//! `forward=true`. A read that breaks the pattern resets the stream; a
//! random workload never confirms a distance and costs nothing.
//!
//! # What it fetches
//!
//! The next `depth` reads of the pattern, starting at `depth` =
//! `init_depth` and doubling each time the stream is extended, up to
//! `max_depth` (the ramp of Linux readahead's `get_next_ra_size`, counted
//! in reads). More is requested only when fewer than half of `depth` reads
//! remain fetched ahead of the reader, so requests are large and few. When
//! the gap between two reads (`|d| - n` pages) is at most `infill`
//! (libprefetch §3.3's 32 KiB infill, [`crate::mechanism::infill`]), the
//! whole span is fetched as one contiguous range — one large sequential I/O instead of many small ones,
//! at the cost of the gap pages; otherwise each read's pages are requested
//! separately.
//!
//! # The numbers it keeps
//!
//! Per stream: last read start and length, the distance and how often it
//! repeated, how far ahead (in pages) requests already reach, and the
//! current depth. At most `streams` streams; the least recently used is
//! dropped.

use crate::event::{Access, Op, Origin, Outcome, Target};
use crate::mechanism::{chunk, infill, stream};
use crate::policy::{BoxedPolicy, Interests, Policy, Positions, RunInfo, Sink};
use crate::size::ByteSize;
use crate::FileId;
use rustc_hash::FxHashMap;

/// Registered name.
pub const NAME: &str = "stride";
/// One-line description.
pub const SUMMARY: &str =
    "file-level forward/reverse/strided stream detection with a ramping depth (auto without history)";

crate::params! {
    /// `stride` parameters.
    pub struct StrideParams {
        /// equal consecutive distances needed before prefetching
        confirm: u32 = 2,
        /// reads fetched ahead when a pattern is first confirmed
        init_depth: u32 = 16,
        /// most reads fetched ahead (doubling from init_depth)
        max_depth: u32 = 4096,
        /// largest gap between two reads of a pattern fetched through as one range (libprefetch §3.3: 32 KiB)
        infill: ByteSize = infill::LIBPREFETCH,
        /// also act on plain forward sequential reads (normally left to kernel readahead)
        forward: bool = false,
        /// streams tracked at most (least recently used dropped)
        streams: u32 = 256,
        /// largest single request in pages (one request per chunk)
        max_request_pages: u32 = 2048,
    }
}

#[derive(Clone, Debug, Default)]
struct Stream {
    /// The previous read and the distance before it.
    s: stream::Stream,
    repeats: u32,
    /// Forward: first page not yet requested; backward: lowest page
    /// requested (fetched range reaches down to it). 0 = nothing yet.
    frontier: Option<u64>,
    depth: u64,
    used: u64,
}

/// The stride prefetcher.
#[derive(Clone, Debug)]
pub struct Stride {
    p: StrideParams,
    streams: FxHashMap<(u32, FileId), Stream>,
    clock: u64,
}

impl Stride {
    /// Build from parameters.
    pub fn new(p: StrideParams) -> Self {
        Stride {
            p,
            streams: FxHashMap::default(),
            clock: 0,
        }
    }

    fn emit(&self, sink: &mut Sink<'_>, file: FileId, from: u64, to: u64, window: crate::WindowId) {
        let cap = u64::from(self.p.max_request_pages);
        for (at, n) in chunk::ascending(from, to, cap) {
            sink.prefetch(Target::File { file, page: at }, n as u32, window);
        }
    }
}

impl Policy for Stride {
    fn name(&self) -> &str {
        NAME
    }

    fn interests(&self) -> Interests {
        Interests {
            positions: Positions::FilePage,
            ..Interests::ACCESSES_ONLY
        }
    }

    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        if a.op != Op::Read || a.origin != Origin::Demand {
            return;
        }
        self.clock += 1;
        let key = (a.pid, a.file);
        if !self.streams.contains_key(&key) && self.streams.len() >= self.p.streams as usize {
            // Drop the least recently used stream (`used` = clock).
            if let Some(k) = self
                .streams
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| *k)
            {
                self.streams.remove(&k);
            }
        }
        let p = self.p.clone();
        let clock = self.clock;
        let s = self.streams.entry(key).or_default();
        s.used = clock;
        let n = u64::from(a.blocks.max(1));
        let o = s.s.observe(a.page, n);
        let Some(d) = o.jump else {
            return; // the stream's first read
        };
        if o.same_jump && o.same_len {
            s.repeats += 1;
        } else {
            s.repeats = u32::from(d != 0);
            s.frontier = None;
            s.depth = 0;
        }
        let sequential_forward = d == n as i64;
        if s.repeats < p.confirm || d == 0 || (sequential_forward && !p.forward) {
            return;
        }
        if s.depth == 0 {
            s.depth = u64::from(p.init_depth.max(1));
        }
        let step = d.unsigned_abs();
        // Reads `n` long every `step`: what infill would merge them into,
        // in closed form — one span when the gap between two bridges.
        let contiguous = infill::bridges(step.saturating_sub(n), infill::limit_units(p.infill));
        let file = a.file;
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        if d > 0 {
            // Reads ahead of this one: a.page + d*i, i >= 1.
            let next = a.page + step;
            let start = s.frontier.unwrap_or(next).max(next);
            let lead_reads = (start - next) / step;
            if lead_reads * 2 >= s.depth && s.frontier.is_some() {
                return;
            }
            if s.frontier.is_some() {
                s.depth = (s.depth * 2).min(u64::from(p.max_depth.max(1)));
            }
            let target = a.page + step * s.depth + n; // end of read `depth`
            if contiguous {
                ranges.push((start, target));
            } else {
                let mut q = next;
                while q < target {
                    if q >= start {
                        ranges.push((q, q + n));
                    }
                    q += step;
                }
            }
            s.frontier = Some(target);
        } else {
            // Backwards: reads at a.page - step*i.
            if a.page < step {
                return;
            }
            let next = a.page - step; // start of the next read
            let low_done = s.frontier.unwrap_or(next + n).min(next + n);
            let lead_reads = (next + n).saturating_sub(low_done) / step;
            if lead_reads * 2 >= s.depth && s.frontier.is_some() {
                return;
            }
            if s.frontier.is_some() {
                s.depth = (s.depth * 2).min(u64::from(p.max_depth.max(1)));
            }
            let target = a.page.saturating_sub(step * s.depth);
            if contiguous {
                if target < low_done {
                    ranges.push((target, low_done));
                }
            } else {
                let mut q = next as i64;
                while q >= target as i64 {
                    let qu = q as u64;
                    if qu + n <= low_done {
                        ranges.push((qu, qu + n));
                    }
                    q -= step as i64;
                }
            }
            s.frontier = Some(target);
        }
        if ranges.is_empty() {
            return;
        }
        let w = sink.new_window();
        for (from, to) in ranges {
            self.emit(sink, file, from, to, w);
        }
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        if info.budget_changed {
            return;
        }
        self.streams.clear();
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.streams.capacity() * (std::mem::size_of::<((u32, FileId), Stream)>() + 1)
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::PrefetchRequest;
    use crate::policy::NoResidency;
    use crate::Params;

    fn run(p: StrideParams, reads: &[(u64, u32)]) -> Vec<Vec<(u64, u32)>> {
        let mut s = Stride::new(p);
        let mut out = Vec::new();
        let mut w = 0;
        for (i, &(page, blocks)) in reads.iter().enumerate() {
            let mut reqs: Vec<PrefetchRequest> = Vec::new();
            let mut sink = Sink::new(&mut reqs, &mut w, &NoResidency);
            let a = Access {
                seq: i as u64,
                pid: 1,
                file: FileId(3),
                page,
                lbn: page,
                blocks,
                ..Access::default()
            };
            s.on_access(&a, &Outcome::default(), &mut sink);
            out.push(
                reqs.iter()
                    .map(|r| match r.target {
                        Target::File { page, .. } => (page, r.blocks),
                        _ => panic!("file targets only"),
                    })
                    .collect(),
            );
        }
        out
    }

    fn params(text: &str) -> StrideParams {
        StrideParams::parse(NAME, text).unwrap()
    }

    /// Backward 1-page reads from page 1000: the distance -1 is seen at 999
    /// and confirmed at 998, which fetches the next 4 reads, pages 994..998,
    /// as one range. At 997 and 996 at least half the depth is still ahead
    /// (3, 2 reads); at 995 only page 994 is: the depth doubles to 8 and
    /// pages 987..994 follow. At 994, 7 reads are ahead: nothing.
    #[test]
    fn reverse_reads_fetch_one_range_below_the_reader() {
        let got = run(
            params("init_depth=4"),
            &[
                (1000, 1),
                (999, 1),
                (998, 1),
                (997, 1),
                (996, 1),
                (995, 1),
                (994, 1),
            ],
        );
        let none: Vec<(u64, u32)> = vec![];
        assert_eq!(got[0], none);
        assert_eq!(got[1], none);
        assert_eq!(got[2], vec![(994, 4)]);
        assert_eq!(got[3], none);
        assert_eq!(got[4], none);
        assert_eq!(got[5], vec![(987, 7)]);
        assert_eq!(got[6], none);
    }

    /// Every other page forward (distance 2, gap 1 ≤ infill): one covering
    /// range per extension.
    #[test]
    fn strided_with_small_gap_fetches_the_covering_range() {
        let got = run(params("init_depth=4"), &[(0, 1), (2, 1), (4, 1), (6, 1)]);
        assert_eq!(got[2], vec![(6, 7)]); // reads 6,8,10,12: pages 6..13
        assert_eq!(got[3], vec![]);
    }

    /// Large gap: each read's pages separately.
    #[test]
    fn strided_with_large_gap_fetches_each_read() {
        let got = run(params("init_depth=3"), &[(0, 2), (100, 2), (200, 2)]);
        assert_eq!(got[2], vec![(300, 2), (400, 2), (500, 2)]);
    }

    /// Forward sequential is left to the kernel unless forward=true.
    #[test]
    fn forward_sequential_only_when_enabled() {
        let reads = [(0, 4), (4, 4), (8, 4)];
        assert!(run(params(""), &reads).iter().all(|r| r.is_empty()));
        let got = run(params("forward=true,init_depth=2"), &reads);
        assert_eq!(got[2], vec![(12, 8)]);
    }

    /// Random reads never confirm a distance.
    #[test]
    fn random_reads_prefetch_nothing() {
        let reads: Vec<(u64, u32)> = [5u64, 90, 17, 300, 2, 44, 1000, 7]
            .iter()
            .map(|&p| (p, 1))
            .collect();
        assert!(run(params(""), &reads).iter().all(|r| r.is_empty()));
    }
}
