//! `directed`: application-directed prefetching (libprefetch, VanDeBogart,
//! Frost & Kohler, USENIX ATC 2009) driven by an oracle access list.
//!
//! libprefetch §3.5: "traverse an access list one reorder buffer at a time,
//! prefetching each buffer's data in disk order." In the simulator the
//! access list is the trace's own future (each process's reads, in order,
//! handed over through [`crate::Policy::on_oracle`]), so the paper's
//! analysis (Fig. 2 reorder-buffer size, Fig. 3 infill) can be reproduced on
//! the device models. The live library (`outrider-directed`) runs the same
//! pure parts ([`plan`], [`list`]) on lists the application supplies.
//!
//! One round (§4.5): when the process has consumed the current round's
//! entries, the next K unique pages of its list are taken (K: `buffer`, or
//! the AIMD controller of §4.6 when `buffer=0`), ordered C-LOOK from the
//! current head position (§3.1), merged into runs across gaps of at most
//! `infill` (§3.3, §4.7), and issued all at once. A demand miss on a page of
//! the current round means a page was evicted before use (premature
//! eviction, §4.5): the controller halves K and a new round starts at once.
//! A round consumed without one grows K by 10 % of the cache.
//!
//! Parameters (paper defaults): `buffer=0` (0: AIMD-controlled), `infill=32KiB`
//! (§3.3), `aimd=on` (§4.6: cap 90 % of the cache, +10 %, ×½), `charge=on`
//! (infill pages count against the buffer — live they occupy the page cache;
//! in the paper's kernel infill they did not, `charge=off`), `min=256KiB`
//! (smallest AIMD buffer).
//!
//! Departures from the paper, and why: the previous round's leftovers are
//! not dropped with DONTNEED here — the simulated LRU evicts them first
//! anyway, because every page of the new round is inserted after them; the
//! "re-advise in reverse access order" of §4.5 is not modelled (stock Linux
//! cannot do it either, see the live library). The first access of a run is
//! a demand read (the round starts after it).

pub mod list;
pub mod plan;

use crate::event::{Access, Op, Outcome, Target};
use crate::policy::{BoxedPolicy, Feedback, Interests, Policy, RunInfo, Sink};
use crate::size::ByteSize;
use crate::{Pid, WindowId};
use plan::{plan_round, Aimd, Page};
use rustc_hash::{FxHashMap, FxHashSet};

#[cfg(test)]
mod tests;

/// Registered name.
pub const NAME: &str = "directed";
/// One-line description.
pub const SUMMARY: &str =
    "application-directed prefetching with the trace's future as access list: reorder buffers in C-LOOK order, infill, AIMD (libprefetch, USENIX ATC 2009)";

crate::params! {
    /// `directed` parameters.
    pub struct DirectedParams {
        /// fixed reorder-buffer size; 0 = set by the AIMD controller (libprefetch §3.2, §4.6)
        buffer: ByteSize = ByteSize(0),
        /// merge requests whose gap is at most this (libprefetch §3.3: 32 KiB)
        infill: ByteSize = ByteSize(32 << 10),
        /// AIMD contention controller: start at 90% of the cache, +10%, halve on premature eviction (§4.6)
        aimd: bool = true,
        /// infill pages count against the reorder buffer (live they occupy the page cache)
        charge: bool = true,
        /// smallest reorder buffer the AIMD controller shrinks to
        min: ByteSize = ByteSize(256 << 10),
    }
}

#[derive(Clone, Debug, Default)]
struct Proc {
    /// The oracle list: this process's future reads, one entry per page.
    list: Vec<Page>,
    /// Next entry expected.
    pos: usize,
    /// One past the last entry of the current round.
    round_end: usize,
    /// Pages (dev, block) of the current round, for premature-eviction checks.
    round_set: FxHashSet<(u32, u64)>,
    /// A page of the current round was evicted before use.
    premature: bool,
    rounds: u64,
    aimd: Option<Aimd>,
}

/// Counters of what the policy did (for benchmarks and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectedStats {
    /// Rounds planned.
    pub rounds: u64,
    /// Rounds cut short by a premature eviction.
    pub premature_rounds: u64,
    /// Pages requested (round sets).
    pub round_pages: u64,
    /// Pages read as infill.
    pub infill_pages: u64,
    /// Sum of planned seek distances between consecutive runs, in pages.
    pub seek_pages_sum: u64,
    /// Number of planned seeks (run starts).
    pub seeks: u64,
}

/// The `directed` policy (see the module docs).
#[derive(Clone, Debug)]
pub struct Directed {
    p: DirectedParams,
    cache_blocks: u64,
    procs: FxHashMap<Pid, Proc>,
    stats: DirectedStats,
}

impl Directed {
    /// The oracle: every process's future reads, page by page.
    fn set_oracle(&mut self, future: &[Access], cache_blocks: u64) {
        self.cache_blocks = cache_blocks;
        self.procs.clear();
        for a in future.iter().filter(|a| a.op == Op::Read) {
            let pr = self.procs.entry(a.pid).or_default();
            pr.list.extend((0..u64::from(a.blocks)).map(|i| Page {
                file: a.file.0,
                page: a.page + i,
                dev: a.dev,
                phys: a.lbn + i,
            }));
        }
    }

    /// Build from parameters.
    pub fn new(p: DirectedParams) -> Self {
        Directed {
            p,
            cache_blocks: 0,
            procs: FxHashMap::default(),
            stats: DirectedStats::default(),
        }
    }

    /// What the policy did so far.
    pub fn stats(&self) -> DirectedStats {
        self.stats
    }

    fn start_round(&mut self, pid: Pid, head: (u32, u64), window: WindowId, sink: &mut Sink<'_>) {
        let (buffer, infill, charge, min) = (
            self.p.buffer.blocks(),
            self.p.infill.0 / crate::BLOCK_SIZE,
            self.p.charge,
            self.p.min.blocks(),
        );
        let (cache, aimd_on) = (self.cache_blocks, self.p.aimd);
        let Some(pr) = self.procs.get_mut(&pid) else {
            return;
        };
        let k = if buffer > 0 {
            buffer
        } else {
            pr.aimd
                .get_or_insert_with(|| Aimd::new(cache, min, aimd_on))
                .pages
        };
        let round = plan_round(pr.list[pr.pos..].iter().copied(), k, infill, charge, head);
        pr.round_end = pr.pos + round.entries;
        pr.premature = false;
        pr.rounds += 1;
        pr.round_set.clear();
        pr.round_set
            .extend(round.pages.iter().map(|p| (p.dev, p.phys)));
        let s = &mut self.stats;
        s.rounds += 1;
        s.round_pages += round.pages.len() as u64;
        s.infill_pages += plan::run_pages(&round.runs) - round.pages.len() as u64;
        let mut at = head;
        for r in &round.runs {
            if r.dev == at.0 {
                s.seek_pages_sum += r.phys.abs_diff(at.1);
            }
            s.seeks += 1;
            at = (r.dev, r.phys + r.pages);
            let mut lbn = r.phys;
            let mut left = r.pages;
            while left > 0 {
                let n = left.min(u64::from(u32::MAX));
                sink.prefetch(Target::Block { dev: r.dev, lbn }, n as u32, window);
                lbn += n;
                left -= n;
            }
        }
    }
}

impl Policy for Directed {
    fn name(&self) -> &str {
        NAME
    }

    fn interests(&self) -> Interests {
        Interests {
            oracle: true,
            prefetch_done: false,
            ..Interests::default()
        }
    }

    /// Each run replays the oracle list from its start.
    fn on_start(&mut self, info: &RunInfo<'_>) {
        if info.budget_changed {
            return;
        }
        for pr in self.procs.values_mut() {
            pr.pos = 0;
            pr.round_end = 0;
            pr.round_set.clear();
            pr.premature = false;
            pr.rounds = 0;
        }
        if let Some(future) = info.oracle {
            self.set_oracle(future, info.cache_blocks);
        }
    }

    fn on_access(&mut self, a: &Access, o: &Outcome, sink: &mut Sink<'_>) {
        if a.op != Op::Read {
            return;
        }
        let buffer_fixed = self.p.buffer.0 > 0;
        let Some(pr) = self.procs.get_mut(&a.pid) else {
            return;
        };
        let before = pr.pos;
        pr.pos = (pr.pos + a.blocks as usize).min(pr.list.len());
        let within = before < pr.round_end;
        let start = if pr.pos >= pr.round_end {
            // Round consumed (or none yet): grow unless pages were lost.
            if pr.rounds > 0 && !buffer_fixed {
                if let Some(c) = pr.aimd.as_mut() {
                    c.round_done(pr.premature);
                }
            }
            if pr.premature {
                self.stats.premature_rounds += 1;
            }
            true
        } else if within && o.miss_blocks > 0 {
            // §4.5: a miss inside the round is a premature eviction.
            if !buffer_fixed {
                if let Some(c) = pr.aimd.as_mut() {
                    c.round_done(true);
                }
            }
            self.stats.premature_rounds += 1;
            true
        } else {
            false
        };
        if start && pr.pos < pr.list.len() {
            let w = sink.new_window();
            self.start_round(a.pid, (a.dev, a.end_lbn()), w, sink);
        }
    }

    fn on_feedback(&mut self, f: &Feedback<'_>, _sink: &mut Sink<'_>) {
        let Feedback::Evicted(e) = f else {
            return;
        };
        if e.prefetched && !e.used {
            for pr in self.procs.values_mut() {
                if pr.round_set.contains(&(e.dev, e.lbn)) {
                    pr.premature = true;
                }
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        self.procs
            .values()
            .map(|p| p.list.capacity() * std::mem::size_of::<Page>() + p.round_set.len() * 16)
            .sum()
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}
