//! How far ahead a stream reads (departure from §3.3.2, for drivers that
//! react late).
//!
//! In the paper a stream keeps one readahead window: when the application
//! first touches it, the next one is opened (§3.3.2). That leaves the time
//! the application takes to read one window (64 blocks of a history
//! stream) for the policy to hear of the touch and for the next window's
//! read to be submitted — enough inside the kernel, or in the simulator,
//! where the policy hears of an access as it happens.
//!
//! A live driver hears of accesses through trace events some time later
//! and submits reads from worker threads. Measured on this machine (2
//! cores, loaded): events reach the controller a median 53 µs after they
//! happen, 1.1 ms at the 90th percentile and 2.6 ms at the 99th, while the
//! backward reader of `run_diskseen_follows_its_saved_history_backwards`
//! reads a 64-block window in 1.6–2.5 ms. Its run 2 missed 4 000 of 67 000
//! demand pages: 2 000 at the top of windows not yet requested when the
//! reader got there, 1 200 whose read was submitted just after the reader
//! had read them itself, 450 still queued (coverage 0.86–0.94).
//!
//! So a stream reads more windows ahead when its prefetches come late: a
//! demand access that misses a block a window of ours read (and that was
//! not evicted unused before, which is the other way to miss it) raises
//! `lead_windows` — the windows kept read ahead of the one in use, 1 as in
//! the paper — by one, at most [`MAX_LEAD_WINDOWS`], once per late window;
//! the late stream opens its extra window at once, and streams started
//! afterwards open theirs at the start. The extra windows follow the same
//! rules as the readahead window (size, screening, trail extension); they
//! only start earlier. Where prefetches are not late (the simulator, in
//! which a block being read counts as in memory), nothing changes.

use super::stream::{Kind, Stream, Window};
use super::table::PREFETCHED;
use super::{DiskSeen, Tag};
use crate::event::{Access, Outcome};
use crate::policy::Sink;

/// Most windows a stream keeps read ahead of the one in use (8 × 64
/// blocks = 2 MiB for a history stream).
pub const MAX_LEAD_WINDOWS: u32 = 8;

impl DiskSeen {
    /// Windows each stream keeps read ahead now (1 = the paper's).
    pub fn lead_windows(&self) -> u32 {
        self.lead_windows
    }

    /// Open the window after the last one of stream `s` (in `slot`, taken
    /// out of the table by the caller) with `size` blocks: the next
    /// contiguous blocks of a sequence, the trail extension of a history
    /// stream (none when it finds fewer than `min`).
    pub(super) fn next_window(
        &mut self,
        slot: usize,
        s: &mut Stream,
        size: u32,
        min: u32,
        sink: &mut Sink<'_>,
    ) -> Window {
        let (blocks, virtual_only) = match &mut s.kind {
            Kind::Sequence { next } => {
                let b: Vec<u64> = (*next..*next + u64::from(size)).collect();
                *next += u64::from(size);
                (b, false)
            }
            Kind::History {
                cursors,
                center,
                before,
            } => {
                let (mut c, mut cs, before) = (*center, cursors.clone(), *before);
                let b = self.history_blocks(s.dev, &mut c, &mut cs, size, before);
                if let Kind::History {
                    cursors, center, ..
                } = &mut s.kind
                {
                    *center = c;
                    *cursors = cs;
                }
                let b = if b.len() < min as usize {
                    Vec::new()
                } else {
                    b
                };
                (b, !self.qc.history_enabled(s.pid))
            }
        };
        let tag = Tag {
            dev: s.dev,
            pid: s.pid,
            group: s.group,
        };
        self.open_window(slot, tag, blocks, virtual_only, sink)
    }

    /// Open windows past the readahead window of the stream in `slot`
    /// until it keeps `lead_windows` read ahead, each as large as the
    /// readahead window; stops at an empty one (the trail ended).
    pub(super) fn fill_lead(&mut self, slot: usize, sink: &mut Sink<'_>) {
        let Some(mut s) = self.streams[slot].take() else {
            return;
        };
        let min = self.p.min;
        while (s.beyond.len() as u32) + 1 < self.lead_windows {
            let last = s.beyond.back().unwrap_or(&s.ra);
            if last.blocks.is_empty() {
                break;
            }
            let size = (s.ra.blocks.len() as u32).max(min);
            let w = self.next_window(slot, &mut s, size, min, sink);
            s.beyond.push_back(w);
        }
        self.streams[slot] = Some(s);
    }

    /// Before a demand access is counted: did it miss a block one of our
    /// windows read? Then that prefetch came late: read one more window
    /// ahead (once per late window, up to [`MAX_LEAD_WINDOWS`]).
    pub(super) fn check_late(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        if o.miss_blocks == 0 || self.lead_windows >= MAX_LEAD_WINDOWS {
            return;
        }
        let hits = a.blocks.saturating_sub(o.miss_blocks);
        let mut ours = 0u32;
        let mut late = None;
        for lbn in a.lbn..a.end_lbn() {
            if self.table.status(a.dev, lbn) & PREFETCHED == 0 {
                continue;
            }
            let Some(slot) = self.owner_of(a.dev, lbn) else {
                continue;
            };
            let s = self.streams[slot].as_ref().expect("owner is live");
            let Some(w) = s.windows().find(|w| w.read(lbn)) else {
                continue;
            };
            // Read by us and not evicted unused since (the simulator
            // reports such evictions; a live driver cannot see them).
            if self.windows.get(&w.id.0).is_some_and(|r| !r.evicted_unused) {
                ours += 1;
                late.get_or_insert((slot, w.id.0));
            }
        }
        let Some((slot, window)) = late.filter(|_| ours > hits) else {
            return;
        };
        if Some(window) == self.late_window {
            return;
        }
        self.late_window = Some(window);
        self.lead_windows += 1;
        self.stats.late_windows += 1;
        self.fill_lead(slot, sink);
    }
}
