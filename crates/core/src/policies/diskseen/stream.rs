//! DiskSeen §3.3.2–§3.3.3: prefetch streams and their two windows.
//!
//! A stream owns a *current* and a *readahead* window. Sequence streams
//! (§3.3.2) cover contiguous LBN ranges; history streams (§3.4.3) cover the
//! blocks a matched history trail is expected to visit. Both move the same
//! way: when the readahead window is first hit, a new readahead window of
//! [`next_window_size`] blocks is opened and the old readahead window
//! becomes the current one; a size below `min` cancels the stream.
//!
//! Blocks of a window are kept in LBN order (the §3.3.3 stream order); the
//! simulator's `split` cache keeps the prefetched blocks themselves in the
//! global FIFO reclamation queue, so the stream is the policy-side index
//! over them ("prefetch streams are embedded in the reclamation queue").

use crate::event::{Pid, WindowId};

/// Largest window any stream opens (history max 64, §3.4.3; a `u64` mask
/// records which of a window's blocks were hit).
pub const MAX_WINDOW_BLOCKS: usize = 64;

/// §3.3.2: the next readahead window's size after `f` blocks of the
/// current window were hit: `2f`, capped at `max`; `None` (cancel the
/// stream) when `2f < min` — a few blocks cannot amortize a seek.
///
/// With min 8 and max 32: f = 8 → 16, f = 16 → 32, f = 32 → 32,
/// f = 3 → cancel.
pub fn next_window_size(f: u32, min: u32, max: u32) -> Option<u32> {
    let s = 2 * f;
    if s < min {
        None
    } else {
        Some(s.min(max))
    }
}

/// One prefetch window.
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// Accounting id (one per window, [`crate::Sink::new_window`]).
    pub id: WindowId,
    /// The window's blocks in LBN order (its whole scope, resident blocks
    /// included; only the non-resident ones were read).
    pub blocks: Vec<u64>,
    /// Which of `blocks` were hit by a high-level request (bit i ↔ i).
    pub hit_mask: u64,
    /// Which of `blocks` the window read (bit i ↔ i; the others were
    /// resident or busy when it opened, or it is virtual).
    pub read_mask: u64,
    /// Tracked but not read (quality control disabled history, §3.5).
    pub virtual_only: bool,
}

impl Stream {
    /// The stream's windows: current, readahead, then those beyond.
    pub fn windows(&self) -> impl Iterator<Item = &Window> {
        [&self.cur, &self.ra].into_iter().chain(&self.beyond)
    }
}

impl Window {
    /// Position of `lbn` in the window.
    #[inline]
    pub fn position(&self, lbn: u64) -> Option<usize> {
        match (self.blocks.first(), self.blocks.last()) {
            (Some(&lo), Some(&hi)) if (lo..=hi).contains(&lbn) => {
                if hi - lo + 1 == self.blocks.len() as u64 {
                    // Contiguous (sorted, no duplicates): every block is there.
                    Some((lbn - lo) as usize)
                } else {
                    self.blocks.binary_search(&lbn).ok()
                }
            }
            _ => None,
        }
    }
    /// Did the window read `lbn`?
    pub fn read(&self, lbn: u64) -> bool {
        self.position(lbn)
            .is_some_and(|i| i < 64 && self.read_mask & (1 << i) != 0)
    }

    /// Distinct blocks hit so far (f in §3.3.2).
    pub fn hits(&self) -> u32 {
        self.hit_mask.count_ones()
    }
}

/// What a stream follows.
#[derive(Clone, Debug)]
pub enum Kind {
    /// §3.3.2: contiguous blocks; `next` is the first LBN after the
    /// readahead window.
    Sequence {
        /// Next LBN to cover.
        next: u64,
    },
    /// §3.4.3: history trails. `cursors[i]` is matched trail i's timestamp
    /// at `center`, the last block covered; the next window is searched in
    /// the trail extent centered there.
    History {
        /// One timestamp per matched history trail.
        cursors: Vec<u64>,
        /// Center of the next extension search.
        center: u64,
        /// History is older than this timestamp (the current trail's start).
        before: u64,
    },
}

/// One on-going prefetch.
#[derive(Clone, Debug)]
pub struct Stream {
    /// Device.
    pub dev: u32,
    /// Process the prefetching is done for (quality control, §3.5).
    pub pid: Pid,
    /// Sequence or history.
    pub kind: Kind,
    /// Current window.
    pub cur: Window,
    /// Readahead window.
    pub ra: Window,
    /// Windows opened past the readahead window, nearest first: empty
    /// unless prefetches came late (see `DiskSeen::late`).
    pub beyond: std::collections::VecDeque<Window>,
    /// Access counter when the stream last moved (for replacing idle
    /// streams when [`super::DiskSeenParams::streams`] is reached).
    pub last_ts: u64,
    /// Scheduling group (§3.7 trail id) given to its requests.
    pub group: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_growth_doubles_caps_and_cancels() {
        // §3.3.2 with min 8, max 32: 8 → 16 → 32 → 32; 2f < 8 cancels.
        assert_eq!(next_window_size(4, 8, 32), Some(8));
        assert_eq!(next_window_size(8, 8, 32), Some(16));
        assert_eq!(next_window_size(16, 8, 32), Some(32));
        assert_eq!(next_window_size(32, 8, 32), Some(32));
        assert_eq!(next_window_size(3, 8, 32), None);
        assert_eq!(next_window_size(0, 8, 32), None);
        // History windows cap at 64 (§3.4.3).
        assert_eq!(next_window_size(40, 8, 64), Some(64));
    }
}
