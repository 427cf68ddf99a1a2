//! DiskSeen §3.4: access trails, matching them against history, and the
//! extension search that turns matched history into prefetchable blocks.
//!
//! A *trail* is a run of accesses B1, B2, …, Bn with
//! `0 < ts(Bi) − ts(Bi−1) < T` and `|LBN(Bi) − LBN(B1)| < S` (§3.4.1): the
//! *trail extent* is the 2S blocks centered at the start block. Any of a
//! block's four timestamps may satisfy the condition, which is how history
//! trails are found in the block table without being recorded.
//!
//! §3.4.2: when a demand access falls in no current trail's extent, a new
//! current trail starts there, and every older timestamp of its start block
//! starts a candidate *history trail*. As the current trail extends to a
//! block, each candidate must extend to the same block (a timestamp within
//! T after its previous one) or it is broken. After `match_blocks` (4)
//! blocks with at least one candidate left, history-aware prefetching
//! starts ([`Trails::observe`] returns the candidates' cursors).
//!
//! §3.4.3: [`extend`] searches the extent centered at the last matched
//! block for blocks holding, for every matched trail, a timestamp in
//! `(cursor, cursor + T]` — the intersection of the matched trails — sorted
//! by timestamp; the first `size` of them form the next window.

use super::table::BlockTable;

/// The two distances of a trail (§3.4.1): timestamp gap `t` (T) and
/// extent half-width `s` (S).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Timestamp gap threshold T.
    pub t: u64,
    /// Trail extent half-width S in blocks.
    pub s: u64,
}

/// A current (on-going) trail.
#[derive(Clone, Debug)]
pub struct Trail {
    dev: u32,
    start: u64,
    /// Timestamp of the start block's access: history is older than this.
    start_ts: u64,
    last: u64,
    last_ts: u64,
    blocks: u32,
    /// Each surviving history trail's timestamp at `last`.
    cursors: Vec<u64>,
    /// History prefetching aborted when this many trails matched; it is
    /// tried again only once fewer (a different intersection) remain.
    aborted_with: usize,
}

/// The current trails, most recent last, at most `cap`.
#[derive(Clone, Debug, Default)]
pub struct Trails {
    list: Vec<Trail>,
    cap: usize,
}

/// What [`Trails::observe`] concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    /// Cursor per matched history trail (its timestamp at the block).
    pub cursors: Vec<u64>,
    /// History is older than this timestamp (the current trail's start).
    pub before: u64,
}

/// A block's timestamp in `(after, after + t)` that is older than
/// `before`; the smallest if several.
fn ts_following(ts: &[u64; 4], after: u64, t: u64, before: u64) -> Option<u64> {
    ts.iter()
        .copied()
        .filter(|&x| x > after && x - after < t && x < before)
        .min()
}

impl Trails {
    /// At most `cap` current trails (the least recently extended is
    /// dropped).
    pub fn new(cap: usize) -> Self {
        Trails {
            list: Vec::new(),
            cap: cap.max(1),
        }
    }

    /// Forget every current trail.
    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// Trails held.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Is no trail held?
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// A demand access of `lbn` just got timestamp `ts` (already in
    /// `table`). Extends or starts a current trail; returns the matched
    /// history when the trail has `match_blocks` blocks echoed by at least
    /// one history trail (see [`Trails::hand_over`]).
    pub fn observe(
        &mut self,
        table: &BlockTable,
        dev: u32,
        lbn: u64,
        ts: u64,
        reach: Reach,
        match_blocks: u32,
    ) -> Option<Matched> {
        let Reach { t, s } = reach;
        let found = self.list.iter().rposition(|tr| {
            tr.dev == dev && tr.start.abs_diff(lbn) < s && ts > tr.last_ts && ts - tr.last_ts < t
        });
        let stamps = table.timestamps(dev, lbn);
        let Some(i) = found else {
            if self.list.len() >= self.cap {
                self.list.remove(0);
            }
            let cursors: Vec<u64> = stamps
                .iter()
                .copied()
                .filter(|&x| x != 0 && x < ts)
                .collect();
            self.list.push(Trail {
                dev,
                start: lbn,
                start_ts: ts,
                last: lbn,
                last_ts: ts,
                blocks: 1,
                cursors,
                aborted_with: usize::MAX,
            });
            return None;
        };
        let mut tr = self.list.remove(i);
        if tr.last != lbn {
            tr.blocks += 1;
            let before = tr.start_ts;
            tr.cursors
                .retain_mut(|c| match ts_following(&stamps, *c, t, before) {
                    Some(x) => {
                        *c = x;
                        true
                    }
                    None => false,
                });
        }
        tr.last = lbn;
        tr.last_ts = ts;
        let ready = tr.blocks >= match_blocks
            && !tr.cursors.is_empty()
            && tr.cursors.len() < tr.aborted_with;
        let matched = ready.then(|| Matched {
            cursors: tr.cursors.clone(),
            before: tr.start_ts,
        });
        self.list.push(tr);
        matched
    }

    /// History prefetching took over the trail [`Trails::observe`] just
    /// matched: stop tracking it. (If it aborted instead, the trail goes
    /// on, and a history trail that breaks later may leave one whose
    /// extension succeeds.)
    pub fn hand_over(&mut self) {
        self.list.pop();
    }

    /// History prefetching from the trail [`Trails::observe`] just matched
    /// aborted (too few blocks follow): do not retry with the same trails.
    pub fn aborted(&mut self) {
        if let Some(t) = self.list.last_mut() {
            t.aborted_with = t.cursors.len();
        }
    }

    /// Cursors of the most recently extended trail (for tests).
    pub fn latest_cursors(&self) -> Vec<u64> {
        self.list.last().map_or(Vec::new(), |t| t.cursors.clone())
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.list.capacity() * std::mem::size_of::<Trail>()
            + self
                .list
                .iter()
                .map(|t| t.cursors.capacity() * 8)
                .sum::<usize>()
    }
}

/// §3.4.3 extension search. Blocks in `[center − s, center + s]` of `dev`
/// that hold, for every cursor, a timestamp in `(cursor, cursor + t]`
/// older than `before`, sorted by their timestamp for the first cursor;
/// at most `size`. Advances `cursors` to the timestamps of the last block
/// taken. Returns the blocks in timestamp order (empty: nothing follows).
pub fn extend(
    table: &BlockTable,
    dev: u32,
    center: u64,
    cursors: &mut [u64],
    reach: Reach,
    size: usize,
    before: u64,
) -> Vec<u64> {
    let Reach { t, s } = reach;
    if cursors.is_empty() {
        return Vec::new();
    }
    // (ts for cursor 0, lbn); at most the 2s + 1 blocks of the extent.
    let mut found: Vec<(u64, u64)> = Vec::with_capacity((2 * s + 1).min(1024) as usize);
    table.find_following(
        dev,
        center.saturating_sub(s),
        center.saturating_add(s),
        cursors,
        t,
        before,
        &mut found,
    );
    found.sort_unstable();
    found.truncate(size);
    if let Some(&(_, last)) = found.last() {
        for c in cursors.iter_mut() {
            *c = table
                .following(dev, last, *c, t, before)
                .expect("the last block matched every cursor");
        }
    }
    found.into_iter().map(|(_, l)| l).collect()
}
