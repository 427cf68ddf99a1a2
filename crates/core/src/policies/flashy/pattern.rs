//! Pattern recognition (flashy §IV-B): one state machine per stream, and the
//! prefetch ranges a recognised pattern extrapolates to (§IV-B last
//! paragraph, §IV-C).
//!
//! A [`Tracker`] compares each request with the previous one of its stream
//! ([`crate::mechanism::stream`], shared with the `stride` detector):
//!
//! - starts where the previous one ended → **consecutive** (sequential
//!   forward), counter += request length;
//! - ends where the previous one started → **reverse** (sequential
//!   backward);
//! - otherwise, the start-to-start jump equals the previous jump "in both
//!   direction and size" → **strided**, forward or backward by the jump's
//!   sign (a stride = a run of blocks read, then a gap).
//!
//! Counters are weighted by request size ("larger request sizes are weighted
//! more heavily"). At a tick, the largest of the four counters over the
//! interval's total blocks is the pattern's *linear fraction*; the pattern
//! is recognised when that fraction reaches the threshold (default 0.60).
//! The paper's text ("if 60 percent of the requests ... are sequential,
//! prefetchd guesses that a sequential access is occurring") accepts exactly
//! 60%; Algorithm 1 writes `consec_pct > consec_thres`. We follow the text
//! (`>=`); the two differ only at exact equality.

/// Blocks seen in one polling interval, by how they continued the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every block read.
    pub total: u64,
    /// Blocks of requests starting where the previous one ended.
    pub consec: u64,
    /// Blocks of requests ending where the previous one started.
    pub reverse: u64,
    /// Blocks of forward strided requests (same positive jump as before).
    pub strided_fwd: u64,
    /// Blocks of backward strided requests (same negative jump as before).
    pub strided_bwd: u64,
}

impl Counts {
    /// Blocks in any linear pattern (sequential, reverse or strided): the
    /// feedback monitor's "linear" reads (§IV-D).
    pub fn linear(&self) -> u64 {
        self.consec + self.reverse + self.strided_fwd + self.strided_bwd
    }
}

pub use crate::mechanism::stream::Step;
use crate::mechanism::stream::Stream;

/// The four patterns prefetchd recognises (§IV-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Sequential forward reads.
    SeqForward,
    /// Sequential backward reads.
    SeqBackward,
    /// Strided forward reads.
    StridedForward,
    /// Strided backward reads.
    StridedBackward,
}

/// A stream's state machine: its previous request, the jump before it, and
/// the interval's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tracker {
    /// Previous request and the jump before it.
    pub stream: Stream,
    /// This interval's counters.
    pub counts: Counts,
}

impl Tracker {
    /// Feed one request of `blocks` blocks at `lbn`. With `count` false
    /// the request moves the state but is not counted (the feedback
    /// monitor's own prefetch reads).
    pub fn observe(&mut self, lbn: u64, blocks: u32, count: bool) -> Step {
        let o = self.stream.observe(lbn, u64::from(blocks));
        if count {
            let n = u64::from(blocks);
            let c = &mut self.counts;
            c.total += n;
            match o.step {
                Step::Consecutive => c.consec += n,
                Step::Reverse => c.reverse += n,
                Step::Strided if o.jump.unwrap_or(0) > 0 => c.strided_fwd += n,
                Step::Strided => c.strided_bwd += n,
                Step::Other => {}
            }
        }
        o.step
    }

    /// Would a request at `[lbn, end)` continue this stream (consecutive,
    /// reverse, or at the expected stride)? Used to follow a stream across
    /// block regions.
    pub fn continues(&self, lbn: u64, end: u64) -> bool {
        self.stream.continues(lbn, end)
    }

    /// The interval's pattern and its linear fraction, if the fraction
    /// reaches `threshold` (§IV-B). Ties prefer sequential over strided,
    /// forward over backward.
    pub fn pattern(&self, threshold: f64) -> Option<(Pattern, f64)> {
        let c = &self.counts;
        if c.total == 0 {
            return None;
        }
        let candidates = [
            (Pattern::SeqForward, c.consec),
            (Pattern::SeqBackward, c.reverse),
            (Pattern::StridedForward, c.strided_fwd),
            (Pattern::StridedBackward, c.strided_bwd),
        ];
        let mut best = candidates[0];
        for cand in &candidates[1..] {
            if cand.1 > best.1 {
                best = *cand;
            }
        }
        let frac = best.1 as f64 / c.total as f64;
        (best.1 > 0 && frac >= threshold).then_some((best.0, frac))
    }
}

/// The ranges `(first block, blocks)` to prefetch for `quota_blocks` blocks
/// of `pattern`, extrapolated from the stream's last request `(lbn, len)`
/// and its last jump (§IV-B: "begins with the next block contiguous to the
/// most recent request"; §IV-C: "For strided access, there may be multiple
/// readahead calls").
///
/// - sequential forward: `[lbn + len, lbn + len + quota)`;
/// - sequential backward: `[lbn - quota, lbn)` (clipped at block 0);
/// - strided: one range of `len` blocks per stride, at `lbn + i × jump`
///   for i = 1, 2, …, until `quota` blocks are covered, at most
///   `max_ranges` ranges (clipped at block 0 going backward).
pub fn ranges(
    pattern: Pattern,
    last: (u64, u64),
    jump: i64,
    quota_blocks: u64,
    max_ranges: usize,
    out: &mut Vec<(u64, u64)>,
) {
    out.clear();
    let (lbn, len) = last;
    if quota_blocks == 0 {
        return;
    }
    match pattern {
        Pattern::SeqForward => out.push((lbn + len, quota_blocks)),
        Pattern::SeqBackward => {
            let start = lbn.saturating_sub(quota_blocks);
            if start < lbn {
                out.push((start, lbn - start));
            }
        }
        Pattern::StridedForward | Pattern::StridedBackward => {
            let len = len.max(1);
            let mut left = quota_blocks;
            let mut start = lbn as i64;
            while left > 0 && out.len() < max_ranges {
                start += jump;
                if start < 0 {
                    break;
                }
                let n = len.min(left);
                out.push((start as u64, n));
                left -= n;
            }
        }
    }
}
