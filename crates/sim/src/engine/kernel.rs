//! The simulated kernel behind the driver ([`outrider_driver::Kernel`]):
//! residency from the cache model, fetches as device-model reads of the
//! missing blocks, evictions and completions back to the driver's notes,
//! and the time-to-live write-off.

use super::{Engine, Inflight, Kind, SimDriver};
use crate::cache::Fill;
use crate::device::DevRequest;
use crate::layout::{block_key, split_key};
use outrider_core::metrics::Counters;
use outrider_core::{
    DeviceRequest, Eviction, Feedback, FileId, Origin, PrefetchDone, Residency, Target, WindowId,
};
use outrider_driver::{Admitted, Budget, Kernel, Notes};

impl Residency for Engine<'_> {
    fn is_cached(&self, dev: u32, lbn: u64) -> bool {
        self.cache.contains(block_key(dev, lbn))
    }
    fn is_page_cached(&self, file: FileId, page: u64) -> bool {
        match self.layout.block_of(file, page) {
            Some((d, l)) => self.cache.contains(block_key(d, l)),
            None => false,
        }
    }
    fn block_of(&self, file: FileId, page: u64) -> Option<(u32, u64)> {
        self.layout.block_of(file, page)
    }
}

impl Kernel for Engine<'_> {
    fn residency(&self) -> &dyn Residency {
        self
    }

    fn fetch(&mut self, batch: &[Admitted], budget: &mut Budget, now: u64, notes: &mut Notes) {
        for a in batch {
            let r = a.req;
            // Scheduling groups matter only to a device that queues.
            let group = if self.instant { 0 } else { a.group };
            match r.target {
                Target::Block { dev, lbn } => {
                    let key = block_key(dev, lbn);
                    self.prefetch_missing(notes, budget, r.window, key, r.blocks, now, group)
                }
                Target::File { file, page } => {
                    let mut pieces = std::mem::take(&mut self.pieces);
                    pieces.clear();
                    self.layout
                        .map_range(file, page, r.blocks, |d, l, n| pieces.push((d, l, n)));
                    for &(dev, lbn, n) in &pieces {
                        let key = block_key(dev, lbn);
                        self.prefetch_missing(notes, budget, r.window, key, n, now, group);
                    }
                    self.pieces = pieces;
                }
            }
        }
        self.note_evictions(notes);
    }

    fn unused_blocks(&self) -> u64 {
        self.pending_prefetched
    }

    /// Prefetch reads older than the cutoff leave the issue queue; their
    /// blocks still resident, prefetched and unused (the same read: same
    /// issue time) count as unused and resolve their window.
    fn write_off(&mut self, issued_before_ns: u64) -> u64 {
        let mut n = 0;
        while let Some(&(t, key, blocks)) = self.issued.front() {
            if t >= issued_before_ns {
                break;
            }
            self.issued.pop_front();
            for k in key..key + u64::from(blocks) {
                let Some(idx) = self.cache.get(k) else {
                    continue;
                };
                if !self.cache.node(idx).prefetched || self.cache.issue_ns(idx) != t {
                    continue;
                }
                let node = self.cache.node_mut(idx);
                node.prefetched = false;
                let slot = node.window_slot;
                self.pending_prefetched -= 1;
                self.c.prefetched_unused_blocks += 1;
                self.resolve_window(slot, false);
                n += 1;
            }
        }
        n
    }

    fn counters(&self) -> &Counters {
        &self.c
    }
}

impl Engine<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn log_device(
        &mut self,
        notes: &mut Notes,
        now: u64,
        pid: u32,
        key: u64,
        blocks: u32,
        origin: Origin,
        window: Option<WindowId>,
    ) {
        if !notes.wants().device_requests {
            return;
        }
        let (dev, lbn) = split_key(key);
        notes.device.push(DeviceRequest {
            time_ns: now,
            pid,
            dev,
            lbn,
            blocks,
            origin,
            window,
        });
    }

    pub(super) fn submit(&mut self, id: u32, key: u64, blocks: u32, now: u64, group: u32) {
        let (dev, lbn) = split_key(key);
        self.c.device_requests += 1;
        let req = DevRequest {
            id: u64::from(id),
            dev,
            lbn,
            blocks,
            write: false,
        };
        if group == 0 {
            self.device.submit(now, req);
        } else {
            self.device.submit_grouped(now, req, group);
        }
    }

    /// Read the blocks of `key0 .. key0 + n` that are not cached, one device
    /// request per run of missing blocks.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn prefetch_missing(
        &mut self,
        notes: &mut Notes,
        budget: &mut Budget,
        window: WindowId,
        key0: u64,
        n: u32,
        now: u64,
        group: u32,
    ) {
        let mut start = 0u64;
        let mut len = 0u32;
        for i in 0..u64::from(n) {
            let key = key0 + i;
            if self.cache.contains(key) {
                if len > 0 {
                    self.prefetch_read(notes, budget, window, (start, len), now, group);
                    len = 0;
                }
            } else {
                if len == 0 {
                    start = key;
                }
                len += 1;
            }
        }
        if len > 0 {
            self.prefetch_read(notes, budget, window, (start, len), now, group);
        }
    }

    /// Read `blocks` blocks from `key` for `window`, if the budget has
    /// room for them.
    fn prefetch_read(
        &mut self,
        notes: &mut Notes,
        budget: &mut Budget,
        window: WindowId,
        (key, blocks): (u64, u32),
        now: u64,
        group: u32,
    ) {
        if !budget.take(u64::from(blocks)) {
            return;
        }
        let id = if self.instant {
            u32::MAX
        } else {
            self.alloc_inflight(Inflight {
                kind: Kind::Prefetch,
                window: window.0,
                key,
                blocks,
                issue_ns: now,
                waiters: Vec::new(),
            })
        };
        let (slot, opened) = self.windows.add(window.0, blocks);
        if opened {
            self.c.windows += 1;
        }
        for i in 0..u64::from(blocks) {
            let idx = self
                .cache
                .insert(key + i, Fill::Prefetch, &mut self.evicted);
            self.cache.node_mut(idx).inflight = (!self.instant).then_some(id);
            self.cache.set_prefetch(idx, window.0, slot, now);
        }
        self.c.prefetched_blocks += u64::from(blocks);
        self.pending_prefetched += u64::from(blocks);
        if self.track_issued {
            self.issued.push_back((now, key, blocks));
        }
        self.log_device(
            notes,
            now,
            0,
            key,
            blocks,
            Origin::OurPrefetch,
            Some(window),
        );
        if self.instant {
            self.c.device_requests += 1;
            if notes.wants().prefetch_done {
                let (dev, lbn) = split_key(key);
                notes.done.push_back(PrefetchDone {
                    window,
                    dev,
                    lbn,
                    blocks,
                    issue_ns: now,
                    done_ns: now,
                });
            }
        } else {
            self.submit(id, key, blocks, now, group);
        }
    }

    /// Account evicted blocks and note them for the policy.
    #[inline]
    pub(super) fn settle_evictions(&mut self, d: &mut SimDriver<'_>) {
        if !self.evicted.is_empty() {
            self.note_evictions(&mut d.notes);
        }
    }

    fn note_evictions(&mut self, notes: &mut Notes) {
        if self.evicted.is_empty() {
            return;
        }
        let evicted = std::mem::take(&mut self.evicted);
        let wants = notes.wants().evictions;
        for n in &evicted {
            if n.prefetched {
                self.pending_prefetched -= 1;
                self.c.prefetched_unused_blocks += 1;
                self.resolve_window(n.window_slot, false);
            }
            if wants {
                let (dev, lbn) = split_key(n.key);
                notes.evicted.push(Eviction {
                    dev,
                    lbn,
                    prefetched: n.window != 0,
                    used: !n.prefetched,
                    window: (n.window != 0).then_some(WindowId(n.window)),
                });
            }
        }
        self.evicted = evicted;
        self.evicted.clear();
    }

    /// The device completed read `id` at `now`: its blocks are resident,
    /// its waiters resume, and the policy hears of a finished prefetch.
    pub(super) fn complete(&mut self, d: &mut SimDriver<'_>, id: u32, now: u64) {
        let (kind, window, key, blocks, issue_ns) = {
            let f = &self.inflight[id as usize];
            (f.kind, f.window, f.key, f.blocks, f.issue_ns)
        };
        for i in 0..u64::from(blocks) {
            if let Some(idx) = self.cache.get(key + i) {
                let n = self.cache.node_mut(idx);
                if n.inflight == Some(id) {
                    n.inflight = None;
                }
            }
        }
        let nwaiters = self.inflight[id as usize].waiters.len();
        for k in 0..nwaiters {
            let p = self.inflight[id as usize].waiters[k] as usize;
            self.procs[p].outstanding -= 1;
            if self.procs[p].outstanding == 0 {
                self.c.io_wait_ns += now - self.procs[p].wait_start_ns;
                let access = self.procs[p].access;
                self.access_done(d, &access, now);
                self.advance(p, now);
            }
        }
        self.inflight[id as usize].waiters.clear();
        self.free_inflight.push(id);
        if kind == Kind::Prefetch && d.interests().prefetch_done {
            let (dev, lbn) = split_key(key);
            let done = PrefetchDone {
                window: WindowId(window),
                dev,
                lbn,
                blocks,
                issue_ns,
                done_ns: now,
            };
            d.feedback(self, &Feedback::PrefetchDone(&done), now);
        }
    }

    /// End of run: prefetched blocks still unused count as unused; the
    /// driver checks the counts add up.
    pub(super) fn finish_run(&mut self, d: &SimDriver<'_>) {
        let (c, windows, pending) = (&mut self.c, &mut self.windows, &mut self.pending_prefetched);
        self.cache.drain_each(|n| {
            if n.prefetched {
                *pending -= 1;
                c.prefetched_unused_blocks += 1;
                super::resolve_window(windows, c, n.window_slot, false);
            }
        });
        // Windows whose blocks were evicted while in flight and re-read are
        // already resolved; anything left never saw a use.
        debug_assert!(
            self.windows.is_empty(),
            "every prefetched block was resolved"
        );
        self.windows.clear();
        self.issued.clear();
        d.check(self);
        assert_eq!(self.pending_prefetched, 0);
    }
}
