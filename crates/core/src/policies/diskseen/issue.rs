//! Issuing and indexing prefetch windows (§3.3.2–3.3.3): which blocks of
//! a window are read (resident and busy ones are left out), the runs they
//! are read in, per-window outcome tracking for quality control (§3.5),
//! and the block → stream index.

use super::stream::Window;
use super::table::{BUSY, PREFETCHED, RESIDENT};
use super::{
    key, DiskSeen, Tag, WinRec, MAX_OWNER_CHUNKS, MAX_PENDING_WINDOWS, NO_SLOT, OWNERS_PER_CHUNK,
};
use crate::event::{Pid, Target, WindowId};
use crate::mechanism::infill;
use crate::policy::Sink;

impl DiskSeen {
    /// The stream whose current or readahead window holds `lbn`.
    pub(super) fn owner_of(&self, dev: u32, lbn: u64) -> Option<usize> {
        let chunk = key(dev, lbn) >> 6;
        let (c, cached) = self.owner_last.get();
        let slots = if c == chunk {
            cached
        } else {
            let slots = self
                .owner
                .get(&chunk)
                .copied()
                .unwrap_or([NO_SLOT; OWNERS_PER_CHUNK]);
            self.owner_last.set((chunk, slots));
            slots
        };
        slots
            .iter()
            .take_while(|&&s| s != NO_SLOT)
            .map(|&s| s as usize)
            .find(|&slot| {
                self.streams
                    .get(slot)
                    .and_then(Option::as_ref)
                    .is_some_and(|s| s.dev == dev && s.windows().any(|w| w.position(lbn).is_some()))
            })
    }

    /// Index a new window's blocks under stream `slot`.
    pub(super) fn index_blocks(&mut self, slot: usize, dev: u32, blocks: &[u64]) {
        self.forget_owner_lookup();
        if self.owner.len() >= MAX_OWNER_CHUNKS {
            self.owner.clear();
            for i in 0..self.streams.len() {
                if let Some(s) = self.streams[i].take() {
                    let all: Vec<u64> =
                        s.windows().flat_map(|w| w.blocks.iter()).copied().collect();
                    self.index_chunks(i, s.dev, &all);
                    self.streams[i] = Some(s);
                }
            }
        }
        self.index_chunks(slot, dev, blocks);
    }

    /// The stream index changed: drop the remembered lookup.
    pub(super) fn forget_owner_lookup(&self) {
        self.owner_last.set((u64::MAX, [NO_SLOT; OWNERS_PER_CHUNK]));
    }

    pub(super) fn index_chunks(&mut self, slot: usize, dev: u32, blocks: &[u64]) {
        let mut last = u64::MAX;
        for &b in blocks {
            let c = key(dev, b) >> 6;
            if c == last {
                continue;
            }
            last = c;
            let e = self.owner.entry(c).or_insert([NO_SLOT; OWNERS_PER_CHUNK]);
            if !e.contains(&(slot as u32)) {
                e.rotate_right(1);
                e[0] = slot as u32;
            }
        }
    }

    /// Read the non-resident, non-busy blocks of `blocks` (LBN order) as
    /// window `id` of a stream in `group`, one request per contiguous run.
    pub(super) fn read_blocks(
        &mut self,
        dev: u32,
        blocks: &[u64],
        id: WindowId,
        pid: Pid,
        group: u32,
        sink: &mut Sink<'_>,
    ) {
        let mut wanted = std::mem::take(&mut self.scratch);
        wanted.clear();
        wanted.extend(blocks.iter().copied().filter(|&b| {
            self.table.status(dev, b) & (RESIDENT | BUSY) == 0 && !sink.is_cached(dev, b)
        }));
        let left = self.emit_runs(dev, &wanted, id, sink);
        self.scratch = wanted;
        if left > 0 {
            self.track_window(id, pid, left, group);
        }
    }

    /// Issue `wanted` (ascending, none resident) as requests of window
    /// `id`: one per aggregate, which bridges holes of at most `infill`
    /// that are neither resident nor busy ([`infill::merge`]: read through;
    /// 0 = exactly the wanted blocks). Marks what is read resident, busy
    /// and prefetched; returns how many blocks that is.
    pub(super) fn emit_runs(
        &mut self,
        dev: u32,
        wanted: &[u64],
        id: WindowId,
        sink: &mut Sink<'_>,
    ) -> u32 {
        let limit = infill::limit_units(self.p.infill);
        let pieces = wanted.iter().map(|&b| infill::Span {
            key: (),
            start: b,
            end: b + 1,
        });
        let mut runs: Vec<(u64, u64)> = Vec::new();
        infill::merge(
            pieces,
            limit,
            |_, from, to| self.free_hole(dev, from, to, sink),
            |r| runs.push((r.start, r.end)),
        );
        let mut marked = 0u32;
        for (s, e) in runs {
            sink.prefetch(Target::Block { dev, lbn: s }, (e - s) as u32, id);
            // Every block of the run was checked free (neither resident,
            // busy nor cached) when it joined `wanted` or its hole was
            // bridged, and runs are disjoint and ascending, so none has
            // been marked since.
            for b in s..e {
                debug_assert!(
                    self.table.status(dev, b) & (RESIDENT | BUSY) == 0 && !sink.is_cached(dev, b)
                );
                self.table
                    .set_status(dev, b, RESIDENT | BUSY | PREFETCHED, true);
            }
            marked += (e - s) as u32;
        }
        marked
    }

    /// May the hole `from..to` be read through: no block of it resident or
    /// busy (§3.2: those are never requested again)?
    fn free_hole(&self, dev: u32, from: u64, to: u64, sink: &Sink<'_>) -> bool {
        (from..to)
            .all(|b| self.table.status(dev, b) & (RESIDENT | BUSY) == 0 && !sink.is_cached(dev, b))
    }

    pub(super) fn track_window(&mut self, id: WindowId, pid: Pid, left: u32, group: u32) {
        self.windows.insert(
            id.0,
            WinRec {
                pid,
                left,
                used: false,
                group,
                evicted_unused: false,
            },
        );
        self.window_order.push_back(id.0);
        while self.window_order.len() > MAX_PENDING_WINDOWS {
            if let Some(old) = self.window_order.pop_front() {
                self.windows.remove(&old);
            }
        }
    }

    /// Open a window over `blocks` (sorted) for stream `slot`, index it and
    /// read it unless virtual.
    pub(super) fn open_window(
        &mut self,
        slot: usize,
        tag: Tag,
        mut blocks: Vec<u64>,
        virtual_only: bool,
        sink: &mut Sink<'_>,
    ) -> Window {
        let Tag { dev, pid, group } = tag;
        blocks.sort_unstable();
        blocks.dedup();
        let id = sink.new_window();
        self.index_blocks(slot, dev, &blocks);
        let mut read_mask = 0u64;
        if !virtual_only {
            // What read_blocks reads: the blocks neither resident nor busy.
            for (i, &b) in blocks.iter().enumerate().take(64) {
                if self.table.status(dev, b) & (RESIDENT | BUSY) == 0 && !sink.is_cached(dev, b) {
                    read_mask |= 1 << i;
                }
            }
            self.read_blocks(dev, &blocks, id, pid, group, sink);
        }
        Window {
            id,
            blocks,
            hit_mask: 0,
            read_mask,
            virtual_only,
        }
    }
}
