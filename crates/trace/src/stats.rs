//! Summary statistics of a trace (`outrider trace info`).
//!
//! Everything is exact: blocks are tracked in a hash map of
//! `(device, 4 KiB block)` pairs, so memory grows with the footprint (about
//! 48 bytes per distinct block; 10 GiB of footprint costs ~120 MiB), plus
//! 16 bytes per re-access for the exact reuse percentiles.
//!
//! Besides counts, the summaries libCacheSim's trace analyzer reports first
//! ([`Reuse`], [`Popularity`]): how long blocks wait to be used again, and
//! how skewed the accesses are. Both count 4 KiB block accesses, the unit
//! of `--split-pages` and of libCacheSim's block-trace replay.

use crate::{RecordView, Trace};
use outrider_core::BLOCK_SIZE;
use rustc_hash::{FxHashMap, FxHashSet};

/// Reuse: for each block access that is not a block's first, the distance
/// back to the block's previous access.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reuse {
    /// Block accesses that re-access a block (block accesses − distinct
    /// blocks).
    pub reuses: u64,
    /// Distinct blocks accessed exactly once ("one-hit wonders").
    pub one_hit_blocks: u64,
    /// Reuse distance in block accesses (libCacheSim's "reuse vtime": the
    /// number of block accesses since the block's previous access, 1 for
    /// an immediate repeat): 50th, 90th and 99th percentiles (0 without
    /// reuses).
    pub distance_p50: u64,
    /// 90th percentile of the reuse distance in block accesses.
    pub distance_p90: u64,
    /// 99th percentile of the reuse distance in block accesses.
    pub distance_p99: u64,
    /// Reuse time (libCacheSim's "reuse rtime"), ns: 50th percentile.
    pub time_p50_ns: u64,
    /// 90th percentile of the reuse time, ns.
    pub time_p90_ns: u64,
    /// 99th percentile of the reuse time, ns.
    pub time_p99_ns: u64,
}

/// Popularity: how block accesses spread over blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Popularity {
    /// Accesses of the most accessed block.
    pub max_accesses: u64,
    /// Share of block accesses that go to the most accessed 1% of the
    /// distinct blocks (at least one block).
    pub top1_share: f64,
    /// Share of block accesses to the most accessed 10% of blocks.
    pub top10_share: f64,
    /// Zipf exponent α: minus the least-squares slope of ln(accesses) over
    /// ln(rank), ranks 1..=distinct blocks by decreasing accesses (as
    /// libCacheSim's popularity analysis fits it); 0 for fewer than two
    /// blocks.
    pub zipf_alpha: f64,
}

/// Counts and sizes that describe a trace independently of its format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceStats {
    /// Requests (records).
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes requested by reads.
    pub read_bytes: u64,
    /// Bytes requested by writes.
    pub write_bytes: u64,
    /// 4 KiB blocks touched by requests (a request touching 3 blocks counts 3).
    pub block_accesses: u64,
    /// Distinct `(device, 4 KiB block)` pairs touched.
    pub distinct_blocks: u64,
    /// Distinct blocks × 4096.
    pub footprint_bytes: u64,
    /// Latest minus earliest request time, in ns (last − first for a trace
    /// in time order).
    pub duration_ns: u64,
    /// Distinct devices.
    pub devices: u64,
    /// Distinct process ids on records (0, "unknown", included if present).
    pub pids: u64,
    /// Named processes in the metadata.
    pub processes: u64,
    /// Files in the metadata.
    pub files: u64,
    /// Records whose time is earlier than the record before them.
    pub out_of_order: u64,
    /// Reuse distances and times.
    pub reuse: Reuse,
    /// Access skew.
    pub popularity: Popularity,
}

/// A block's history while the statistics are gathered.
#[derive(Clone, Copy)]
struct Seen {
    /// Index of its latest access among block accesses.
    last: u64,
    /// Time of its latest access (ns).
    last_ns: u64,
    /// Accesses so far.
    count: u64,
}

impl TraceStats {
    /// Compute the statistics of `trace` (one pass over the records).
    pub fn of(trace: &Trace) -> TraceStats {
        let mut s = TraceStats {
            processes: trace.meta.processes.len() as u64,
            files: trace.meta.files.len() as u64,
            ..TraceStats::default()
        };
        let mut blocks: FxHashMap<(u16, u64), Seen> = FxHashMap::default();
        let (mut distances, mut gaps) = (Vec::new(), Vec::new());
        let mut devs: FxHashSet<u16> = FxHashSet::default();
        let mut pids: FxHashSet<u32> = FxHashSet::default();
        let (mut min_t, mut max_t, mut prev_t) = (u64::MAX, 0, 0);
        for r in trace.records.iter() {
            s.requests += 1;
            if r.is_write() {
                s.writes += 1;
                s.write_bytes += u64::from(r.size);
            } else {
                s.reads += 1;
                s.read_bytes += u64::from(r.size);
            }
            let first = r.first_block();
            let n = u64::from(r.block_count());
            for b in first..first.saturating_add(n) {
                let now = s.block_accesses;
                s.block_accesses += 1;
                let seen = blocks.entry((r.dev, b)).or_insert(Seen {
                    last: now,
                    last_ns: r.time_ns,
                    count: 0,
                });
                if seen.count > 0 {
                    distances.push(now - seen.last);
                    gaps.push(r.time_ns.saturating_sub(seen.last_ns));
                }
                *seen = Seen {
                    last: now,
                    last_ns: r.time_ns,
                    count: seen.count + 1,
                };
            }
            devs.insert(r.dev);
            pids.insert(r.pid);
            if r.time_ns < prev_t {
                s.out_of_order += 1;
            }
            prev_t = r.time_ns;
            min_t = min_t.min(r.time_ns);
            max_t = max_t.max(r.time_ns);
        }
        s.distinct_blocks = blocks.len() as u64;
        let mut counts: Vec<u64> = blocks.values().map(|b| b.count).collect();
        drop(blocks);
        s.reuse = Reuse::of(&mut distances, &mut gaps, &counts);
        s.popularity = Popularity::of(&mut counts, s.block_accesses);
        s.footprint_bytes = s.distinct_blocks * BLOCK_SIZE;
        s.duration_ns = max_t.saturating_sub(min_t);
        s.devices = devs.len() as u64;
        s.pids = pids.len() as u64;
        s
    }
}

/// Distinct `(device, 4 KiB block)` pairs of `trace`, alone: what
/// `--cache N%` needs, without the other statistics' cost.
///
/// A bitmap over each device's block span when the spans are small
/// (at most [`BITMAP_BITS_PER_RECORD`] bits per record), else a hash set.
/// On the 10 M-request page trace the hash set took 0.9 s, most of a
/// whole `sim` run; the bitmap (32 MiB there) is one sequential pass.
pub fn distinct_blocks(trace: &Trace) -> u64 {
    let records = trace.records.view();
    let spans = block_spans(records);
    let bits = spans
        .iter()
        .fold(0u64, |sum, &(_, lo, end)| sum.saturating_add(end - lo));
    let budget = (records.len() as u64).saturating_mul(BITMAP_BITS_PER_RECORD);
    if bits > budget.max(1 << 20) || spans.len() > MAX_BITMAP_DEVICES {
        return distinct_blocks_hashed(records);
    }
    let mut total = 0;
    for &(dev, lo, end) in &spans {
        let mut map = vec![0u64; (end - lo).div_ceil(64) as usize];
        for r in records.iter().filter(|r| r.dev == dev) {
            let first = r.first_block() - lo;
            for b in first..first + u64::from(r.block_count()) {
                map[(b / 64) as usize] |= 1 << (b % 64);
            }
        }
        total += map.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
    }
    total
}

/// Bitmap bits allowed per record before [`distinct_blocks`] falls back
/// to a hash set (8 bytes per record, a fifth of the record itself).
pub const BITMAP_BITS_PER_RECORD: u64 = 64;

/// Devices beyond which [`distinct_blocks`] uses the hash set (the bitmap
/// pass reads the records once per device).
const MAX_BITMAP_DEVICES: usize = 8;

/// Each device's `(dev, first block, end block)`, in order of appearance.
fn block_spans(records: RecordView<'_>) -> Vec<(u16, u64, u64)> {
    let mut spans: Vec<(u16, u64, u64)> = Vec::new();
    let mut cur = usize::MAX;
    for r in records.iter() {
        let first = r.first_block();
        let end = first.saturating_add(u64::from(r.block_count()));
        if cur == usize::MAX || spans[cur].0 != r.dev {
            cur = match spans.iter().position(|s| s.0 == r.dev) {
                Some(i) => i,
                None => {
                    spans.push((r.dev, first, end));
                    spans.len() - 1
                }
            };
        }
        let s = &mut spans[cur];
        s.1 = s.1.min(first);
        s.2 = s.2.max(end);
    }
    spans
}

fn distinct_blocks_hashed(records: RecordView<'_>) -> u64 {
    let mut blocks: FxHashSet<(u16, u64)> = FxHashSet::default();
    for r in records.iter() {
        let first = r.first_block();
        for b in first..first.saturating_add(u64::from(r.block_count())) {
            blocks.insert((r.dev, b));
        }
    }
    blocks.len() as u64
}

/// The `p`-th percentile (0 < p ≤ 100) of `v` by the nearest-rank method
/// (the smallest value with at least p% of `v` at or below it); 0 if empty.
fn percentile(v: &mut [u64], p: u64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let rank = (v.len() as u64 * p).div_ceil(100).max(1) as usize;
    *v.select_nth_unstable(rank - 1).1
}

impl Reuse {
    fn of(distances: &mut [u64], gaps: &mut [u64], counts: &[u64]) -> Reuse {
        Reuse {
            reuses: distances.len() as u64,
            one_hit_blocks: counts.iter().filter(|&&c| c == 1).count() as u64,
            distance_p50: percentile(distances, 50),
            distance_p90: percentile(distances, 90),
            distance_p99: percentile(distances, 99),
            time_p50_ns: percentile(gaps, 50),
            time_p90_ns: percentile(gaps, 90),
            time_p99_ns: percentile(gaps, 99),
        }
    }
}

impl Popularity {
    /// From per-block access counts (reordered) and their sum.
    fn of(counts: &mut [u64], accesses: u64) -> Popularity {
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let share = |pct: usize| {
            let top = (counts.len() * pct).div_ceil(100).max(1).min(counts.len());
            let sum: u64 = counts[..top].iter().sum();
            if accesses == 0 {
                0.0
            } else {
                sum as f64 / accesses as f64
            }
        };
        Popularity {
            max_accesses: counts.first().copied().unwrap_or(0),
            top1_share: share(1),
            top10_share: share(10),
            zipf_alpha: zipf_alpha(counts),
        }
    }
}

/// Least-squares fit of ln(count) = c − α ln(rank) over `sorted`
/// (decreasing counts); α, or 0 with fewer than two points.
fn zipf_alpha(sorted: &[u64]) -> f64 {
    let n = sorted.len() as f64;
    if sorted.len() < 2 {
        return 0.0;
    }
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for (i, &c) in sorted.iter().enumerate() {
        let x = ((i + 1) as f64).ln();
        let y = (c.max(1) as f64).ln();
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let den = n * sxx - sx * sx;
    if den == 0.0 {
        0.0
    } else {
        -(n * sxy - sx * sy) / den
    }
}

/// `bytes` with a binary unit (`1.5 GiB`).
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `n` as a percentage of `of` (0 when `of` is 0).
fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

impl std::fmt::Display for TraceStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |n: u64| {
            if self.requests == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.requests as f64
            }
        };
        writeln!(f, "requests:        {}", self.requests)?;
        writeln!(
            f,
            "  reads:         {} ({:.1}%), {}",
            self.reads,
            pct(self.reads),
            human_bytes(self.read_bytes)
        )?;
        writeln!(
            f,
            "  writes:        {} ({:.1}%), {}",
            self.writes,
            pct(self.writes),
            human_bytes(self.write_bytes)
        )?;
        writeln!(f, "block accesses:  {} (4 KiB)", self.block_accesses)?;
        writeln!(f, "distinct blocks: {}", self.distinct_blocks)?;
        writeln!(f, "footprint:       {}", human_bytes(self.footprint_bytes))?;
        writeln!(f, "duration:        {:.3} s", self.duration_ns as f64 / 1e9)?;
        writeln!(f, "devices:         {}", self.devices)?;
        writeln!(
            f,
            "pids:            {} ({} named)",
            self.pids, self.processes
        )?;
        write!(f, "files:           {}", self.files)?;
        let (r, p) = (&self.reuse, &self.popularity);
        let secs = |ns: u64| ns as f64 / 1e9;
        write!(
            f,
            "\none-hit blocks:  {} ({:.1}% of distinct)",
            r.one_hit_blocks,
            share(r.one_hit_blocks, self.distinct_blocks)
        )?;
        write!(
            f,
            "\nreuses:          {} ({:.1}% of block accesses)",
            r.reuses,
            share(r.reuses, self.block_accesses)
        )?;
        write!(
            f,
            "\n  distance:      p50 {}  p90 {}  p99 {} (block accesses)",
            r.distance_p50, r.distance_p90, r.distance_p99
        )?;
        write!(
            f,
            "\n  time:          p50 {:.3} s  p90 {:.3} s  p99 {:.3} s",
            secs(r.time_p50_ns),
            secs(r.time_p90_ns),
            secs(r.time_p99_ns)
        )?;
        write!(
            f,
            "\npopularity:      top 1% of blocks {:.1}%, top 10% {:.1}% of accesses; \
             max {} on one block; Zipf alpha {:.3}",
            100.0 * p.top1_share,
            100.0 * p.top10_share,
            p.max_accesses,
            p.zipf_alpha
        )?;
        if self.out_of_order > 0 {
            write!(
                f,
                "\nout of order:    {} records earlier than their predecessor",
                self.out_of_order
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // The bitmap path of `distinct_blocks` must count exactly what the
        // hash set counts: several devices, multi-block requests, spans
        // wide enough (offsets up to 2^46) to take the hash-set fallback.
        #[test]
        fn distinct_blocks_bitmap_agrees_with_hash_set(
            reqs in proptest::collection::vec((0u16..3, 0u64..5000, 1u32..20_000), 1..200),
            wide in any::<bool>(),
        ) {
            let records: Vec<Record> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(dev, off, size))| {
                    let offset = if wide && i == 0 { off << 34 } else { off * 512 };
                    Record::block(0, dev, offset, size, false, 0)
                })
                .collect();
            let t = Trace::new(crate::TraceMeta::default(), records.clone());
            prop_assert_eq!(distinct_blocks(&t), distinct_blocks_hashed(crate::RecordView::Slice(&records)));
        }
    }

    use crate::{Record, TraceMeta};

    #[test]
    fn reuse_and_popularity_of_a_small_stream() {
        // Blocks 1 2 1 3 1 at t = 0..4 s: block 1 reused at distances 2, 2
        // (times 2 s, 2 s); blocks 2 and 3 are one-hit wonders.
        let recs = [1u64, 2, 1, 3, 1]
            .iter()
            .enumerate()
            .map(|(i, &b)| Record::block(i as u64 * 1_000_000_000, 0, b * 4096, 4096, false, 0))
            .collect();
        let s = TraceStats::of(&Trace::new(TraceMeta::default(), recs));
        assert_eq!((s.distinct_blocks, s.block_accesses), (3, 5));
        assert_eq!(s.reuse.reuses, 2);
        assert_eq!(s.reuse.one_hit_blocks, 2);
        assert_eq!((s.reuse.distance_p50, s.reuse.distance_p99), (2, 2));
        assert_eq!(s.reuse.time_p90_ns, 2_000_000_000);
        assert_eq!(s.popularity.max_accesses, 3);
        assert!((s.popularity.top1_share - 0.6).abs() < 1e-12);
        // counts 3,1,1 over ranks 1,2,3: a falling line, alpha > 0.
        assert!(s.popularity.zipf_alpha > 0.5, "{}", s.popularity.zipf_alpha);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&mut v, 50), 50);
        assert_eq!(percentile(&mut v, 99), 99);
        assert_eq!(percentile(&mut [7], 50), 7);
        assert_eq!(percentile(&mut [], 50), 0);
    }

    #[test]
    fn an_exact_zipf_law_fits_its_exponent() {
        let counts: Vec<u64> = (1..=1000u64)
            .map(|r| (1e6 / r as f64).round() as u64)
            .collect();
        assert!((zipf_alpha(&counts) - 1.0).abs() < 0.01);
    }
}
