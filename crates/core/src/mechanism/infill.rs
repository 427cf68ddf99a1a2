//! Infill: read through a small gap between two pieces to prefetch, so the
//! two become one request (libprefetch §3.3, "Effect of Infill"; §4.7 its
//! kernel implementation).
//!
//! libprefetch measured (Fig. 1) that on its disks a seek up to 32 KiB cost
//! more than reading the same distance, so "adjacent requests with small
//! gaps might be serviced faster by requesting the entire range of data and
//! discarding the uninteresting data"; Fig. 3: infill up to 32 KiB helped,
//! 32 KiB – 2 MiB had no further effect, beyond 2 MiB it hurt. DiskSeen
//! reads a prefetch window "in large aggregates" in ascending LBN order,
//! each in one disk rotation (§4.3, the *strided* and *reversed* runs);
//! the same read-through makes a strided window one aggregate.
//!
//! # The one rule
//!
//! A gap of `g` units (4 KiB pages or blocks) between the end of one piece
//! and the start of the next is read through when `g ≤ limit`
//! ([`bridges`]). Gap 0 (adjacent pieces) always joins: `limit` 0 means
//! "read exactly the pieces", one request per contiguous run.
//!
//! Every policy names the limit `infill`, a size ([`crate::size::ByteSize`]),
//! converted to 4 KiB units by [`limit_units`] (rounded down); each keeps
//! its own paper's or measurement's default: `directed` 32 KiB (libprefetch
//! §3.3), `diskseen` 8 KiB (two blocks, §4.3's aggregates on the strided
//! benchmark), `flashy` 32 KiB (ours; the paper issues one readahead call
//! per stride, `infill=0`), `stride` 32 KiB (libprefetch's), `auto` 8 KiB
//! (this machine's virtio disk: a lone 4 KiB read costs about two
//! sequential pages, `bench/results/directed.md`).
//!
//! # Where the rule is applied
//!
//! - [`merge`]: pieces in ascending order with a key (what must match for
//!   one request to read both: device, file, the file's logical-to-physical
//!   offset) and a check of the hole (DiskSeen never re-reads a resident or
//!   busy block, §3.2).
//! - [`merge_ranges`]: a list of ranges all ascending or all descending
//!   (flashy's strided ranges, in issue order).
//! - A periodic pattern of reads `len` long every `step` (the `stride`
//!   detector) is one span when `bridges(step - len, limit)`: what
//!   [`merge`] would make of its reads, in closed form.
//! - [`from_costs`]: the limit a device's measured costs justify
//!   (libprefetch §3.3: infill pays "where seeks take longer than
//!   similarly-sized maximum-throughput reads").

use crate::size::ByteSize;
use crate::BLOCK_SIZE;

/// libprefetch's infill limit, 32 KiB (§3.3: "Infill of 32KB maximizes
/// performance improvement").
pub const LIBPREFETCH: ByteSize = ByteSize(32 << 10);

/// A limit given as a size, in 4 KiB units (pages or blocks), rounded down.
pub const fn limit_units(limit: ByteSize) -> u64 {
    limit.0 / BLOCK_SIZE
}

/// The rule: is a gap of `gap` units read through under `limit` units?
pub fn bridges(gap: u64, limit: u64) -> bool {
    gap <= limit
}

/// A piece to read, or a run of pieces read as one request: `[start, end)`
/// in 4 KiB units of an address space named by `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span<K> {
    /// What must be equal for two pieces to be read by one request.
    pub key: K,
    /// First unit.
    pub start: u64,
    /// One past the last unit.
    pub end: u64,
}

/// Merge `pieces` (ascending within each key) into runs, calling `emit` for
/// each run in order. A piece of the same key as the current run
///
/// - wholly inside the run is dropped (a duplicate, or read as infill);
/// - starting at or after the run's end, with a gap that [`bridges`] under
///   `limit` and for which `hole_ok(key, run end, piece start)` holds,
///   extends the run to the piece's end;
///
/// anything else ends the run and starts a new one.
pub fn merge<K: Copy + Eq>(
    pieces: impl IntoIterator<Item = Span<K>>,
    limit: u64,
    mut hole_ok: impl FnMut(&K, u64, u64) -> bool,
    mut emit: impl FnMut(Span<K>),
) {
    let mut run: Option<Span<K>> = None;
    for p in pieces {
        if let Some(r) = &mut run {
            if r.key == p.key {
                if p.start >= r.start && p.end <= r.end {
                    continue;
                }
                if p.start >= r.end
                    && bridges(p.start - r.end, limit)
                    && hole_ok(&r.key, r.end, p.start)
                {
                    r.end = p.end;
                    continue;
                }
            }
        }
        if let Some(r) = run.replace(p) {
            emit(r);
        }
    }
    if let Some(r) = run {
        emit(r);
    }
}

/// Merge `ranges` (`(first, len)`, in issue order, all ascending or, with
/// `descending`, all descending) whose gaps [`bridges`] under `limit`, in
/// place; the merged list keeps the issue order.
pub fn merge_ranges(ranges: &mut Vec<(u64, u64)>, limit: u64, descending: bool) {
    if ranges.len() < 2 {
        return;
    }
    // Descending ranges are merged as their mirror image (x ↦ MAX − x),
    // which is ascending: one implementation of the rule.
    let mirror = |s: u64, e: u64| (u64::MAX - e, u64::MAX - s);
    let pieces: Vec<Span<()>> = ranges
        .iter()
        .map(|&(s, n)| {
            let (start, end) = if descending {
                mirror(s, s + n)
            } else {
                (s, s + n)
            };
            Span {
                key: (),
                start,
                end,
            }
        })
        .collect();
    ranges.clear();
    merge(
        pieces,
        limit,
        |_, _, _| true,
        |r| {
            let (s, e) = if descending {
                mirror(r.start, r.end)
            } else {
                (r.start, r.end)
            };
            ranges.push((s, e - s));
        },
    );
}

/// The infill limit, in 4 KiB units, that a device's costs justify
/// (libprefetch §3.3: infill pays "where seeks take longer than
/// similarly-sized maximum-throughput reads").
///
/// `request_ns`: cost of one more request for a lone 4 KiB page, measured
/// the way rounds issue them (many at once); `page_ns`: cost of one more
/// page read sequentially. Merging two requests across a gap of `g` pages
/// replaces one request by `g` pages read through and discarded, so on time
/// alone it pays while `(g + 1) · page_ns < request_ns`. With `charged`
/// infill (the live library: the gap's pages enter the page cache and take
/// reorder-buffer slots that listed pages would have used, so a round covers
/// fewer listed pages) a merge must also leave a margin: reading through
/// may cost at most half the request it saves, `(g + 1) · page_ns ≤
/// request_ns / 2`. The paper's kernel infill discarded the gap (§4.7), the
/// uncharged rule. The result is capped at `cap` units (the paper's 32 KiB:
/// beyond it infill had no further benefit) and is 0 when the costs are not
/// finite or not positive.
///
/// Examples: an HDD (≈ 5 ms per request, 41 µs per page at 100 MB/s) gives
/// a ratio of ≈ 120 → capped at 8 pages either way; a virtual disk whose
/// random 4 KiB reads cost 15 µs at depth and sequential pages 4.5 µs
/// (ratio 3.3) → 2 pages uncharged, 0 charged.
pub fn from_costs(request_ns: f64, page_ns: f64, cap: u64, charged: bool) -> u64 {
    if !(request_ns.is_finite() && page_ns.is_finite()) || request_ns <= 0.0 || page_ns <= 0.0 {
        return 0;
    }
    let ratio = request_ns / page_ns;
    let g = if charged {
        // (g + 1) ≤ ratio / 2.
        (ratio / 2.0).floor() - 1.0
    } else {
        // (g + 1) < ratio: strictly, at equality reading through only ties.
        ratio.ceil() - 2.0
    };
    if g <= 0.0 {
        0
    } else {
        (g as u64).min(cap)
    }
}

#[cfg(test)]
mod tests;
