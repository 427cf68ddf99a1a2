//! DiskSeen's [`Policy`] hooks: demand accesses and their completion
//! (§3.1, §3.3), the upper policy's candidates (§3.2), evictions (§3.5),
//! runs and scheduling groups (§3.7). The mechanisms live in `mod.rs`.

use super::table::{BUSY, CACHED, PREFETCHED, RESIDENT};
use super::{DiskSeen, NAME, OWNERS_PER_CHUNK};
use crate::event::{Access, Op, Origin, Outcome, PrefetchDone, PrefetchRequest, Target, WindowId};
use crate::policy::{BoxedPolicy, Eviction, Feedback, Interests, Policy, RunInfo, Sink};
use std::mem::size_of;

fn is_demand_read(a: &Access) -> bool {
    a.origin == Origin::Demand && a.op == Op::Read
}

impl Policy for DiskSeen {
    fn name(&self) -> &str {
        NAME
    }

    fn on_access(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        if !is_demand_read(a) {
            return;
        }
        self.check_late(a, o, sink);
        for lbn in a.lbn..a.end_lbn() {
            // Resident from now on (busy until the read completes if it
            // was not); an on-demand access clears the §3.2 mark.
            self.table.modify_status(a.dev, lbn, |st| {
                let st = if st & RESIDENT == 0 {
                    st | RESIDENT | BUSY
                } else {
                    st
                };
                st & !PREFETCHED
            });
            if let Some(slot) = self.owner_of(a.dev, lbn) {
                self.hit(slot, lbn, sink);
            }
        }
    }

    fn interests(&self) -> Interests {
        Interests {
            access_done: true,
            ..Interests::default()
        }
    }

    fn on_feedback(&mut self, f: &Feedback<'_>, sink: &mut Sink<'_>) {
        match f {
            Feedback::AccessDone(a) if is_demand_read(a) => {
                for lbn in a.lbn..a.end_lbn() {
                    self.block_done(a, lbn, sink);
                }
            }
            Feedback::PrefetchDone(d) => self.prefetch_done(d),
            Feedback::Evicted(e) => self.evicted(e),
            _ => {}
        }
    }

    /// §3.2: a file-level prefetcher's request is a set of *candidates*.
    /// Blocks resident or busy are skipped; blocks prefetched before and
    /// evicted without use are dropped; the rest are read (as block
    /// requests, in the upper policy's window) and marked prefetched.
    /// Pages the driver cannot place on disk pass through unchanged.
    fn on_upper_request(&mut self, r: &PrefetchRequest, sink: &mut Sink<'_>) {
        let mut wanted: Vec<u64> = Vec::new();
        let mut cur_dev = u32::MAX;
        for i in 0..u64::from(r.blocks) {
            let (dev, lbn) = match r.target {
                Target::Block { dev, lbn } => (dev, lbn + i),
                Target::File { file, page } => match sink.block_of(file, page + i) {
                    Some(b) => b,
                    None => {
                        self.emit_runs(cur_dev, &wanted, r.window, sink);
                        wanted.clear();
                        sink.prefetch(
                            Target::File {
                                file,
                                page: page + i,
                            },
                            1,
                            r.window,
                        );
                        continue;
                    }
                },
            };
            if dev != cur_dev || wanted.last().is_some_and(|&l| lbn <= l) {
                self.emit_runs(cur_dev, &wanted, r.window, sink);
                wanted.clear();
                cur_dev = dev;
            }
            let st = self.table.status(dev, lbn);
            if st & (RESIDENT | BUSY) != 0 || sink.is_cached(dev, lbn) {
                self.stats.screened_resident += 1;
                continue;
            }
            if st & PREFETCHED != 0 {
                self.stats.screened_unused += 1;
                continue;
            }
            wanted.push(lbn);
        }
        self.emit_runs(cur_dev, &wanted, r.window, sink);
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        if info.cache_blocks > 0 {
            self.set_memory_blocks(info.cache_blocks);
        }
        if info.budget_changed {
            return;
        }
        self.streams.clear();
        self.vacant = 0;
        self.owner.clear();
        self.forget_owner_lookup();
        self.trails.clear();
        self.windows.clear();
        self.window_order.clear();
        self.lead_windows = 1;
        self.late_window = None;
        self.table.clear_status_everywhere(RESIDENT | BUSY | CACHED);
    }

    fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
            + self.owner.capacity() * (8 + 4 * OWNERS_PER_CHUNK)
            + self.windows.capacity() * 32
            + self.window_order.capacity() * 8
            + self.streams.capacity() * size_of::<Option<super::stream::Stream>>()
            + self.trails.memory_bytes()
            + self.qc.memory_bytes()
    }

    /// The block table's timestamps (§3.4's history), see
    /// `diskseen/history.rs`, with `shared=off` only: with `shared=on` the
    /// table is the store's ([`Policy::merge_shared_history`]) and is not
    /// saved per application too. A copy there would be loaded and then
    /// replaced by the shared one at every start, and written at every
    /// end: up to `table_mib` twice for nothing.
    fn save_history(&self) -> Option<Vec<u8>> {
        (!self.p.shared).then(|| self.encode_history())
    }

    /// A table saved per application (`shared=off`, or before `shared`
    /// existed). With `shared=on` it stands until the shared table is
    /// loaded over it, and its stamps join the shared table at the save
    /// if none was.
    fn load_history(&mut self, data: &[u8]) -> Result<(), String> {
        self.decode_history(data)
    }

    fn shared_history_name(&self) -> Option<&str> {
        self.p.shared.then_some(super::history::SHARED_NAME)
    }

    fn load_shared_history(&mut self, data: &[u8]) -> Result<(), String> {
        if !self.p.shared {
            return Err("diskseen:shared=off keeps no shared history".into());
        }
        self.decode_shared(data)
    }

    fn merge_shared_history(&self, stored: Option<&[u8]>) -> Option<Vec<u8>> {
        if !self.p.shared {
            return None;
        }
        self.merge_shared(stored)
    }

    fn schedule_group(&self, window: WindowId) -> u32 {
        self.group_of(window)
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

impl DiskSeen {
    fn prefetch_done(&mut self, d: &PrefetchDone) {
        for lbn in d.lbn..d.lbn + u64::from(d.blocks) {
            self.table.set_status(d.dev, lbn, BUSY, false);
        }
    }

    fn evicted(&mut self, e: &Eviction) {
        // PREFETCHED survives an unused eviction: the §3.2 mark.
        self.table
            .set_status(e.dev, e.lbn, RESIDENT | BUSY | CACHED, false);
        if let Some(w) = e.window {
            if let Some(r) = self.windows.get_mut(&w.0) {
                r.left = r.left.saturating_sub(1);
                r.used |= e.used;
                r.evicted_unused |= !e.used;
                if r.left == 0 {
                    let (pid, used) = (r.pid, r.used);
                    self.windows.remove(&w.0);
                    self.qc.record(pid, !used);
                }
            }
        }
    }
}
