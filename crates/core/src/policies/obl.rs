//! `obl`: one-block lookahead with libCacheSim's semantics
//! (libCacheSim `prefetch/OBL.c`), so that miss ratios can be compared with
//! libCacheSim's `LRU` + `OBL` on the same block stream.
//!
//! On every access to block b, hit or miss, if the previous `k` accesses
//! (default 4, libCacheSim's `sequential-confidence-k`) were exactly
//! b−k … b−1, block b+1 is prefetched (the driver inserts it at the MRU end
//! unless it is already cached). Then b is recorded as the newest access.
//!
//! A request of several blocks counts as that many accesses, one block after
//! the other; the prefetch decision is taken for the request's last block,
//! as libCacheSim does for a logical I/O split into blocks.

use crate::event::{Access, Outcome, Target};
use crate::policy::{BoxedPolicy, Interests, Policy, RunInfo, Sink};

/// Registered name.
pub const NAME: &str = "obl";
/// One-line description.
pub const SUMMARY: &str =
    "one-block lookahead after k sequential accesses (libCacheSim OBL semantics)";

crate::params! {
    /// OBL parameters.
    pub struct OblParams {
        /// previous accesses that must be exactly b-k..b-1 (libCacheSim sequential-confidence-k)
        k: u32 = 4,
    }
}

/// The OBL prefetcher.
///
/// libCacheSim keeps a ring of the last `k` blocks and compares it with
/// b−k … b−1; the same test is "the last access was b−1 and closed a run
/// of at least `k` consecutive ascending accesses", so we keep just the
/// last block and the run's length (capped at `k`): O(1) per block.
#[derive(Clone, Debug)]
pub struct Obl {
    k: u32,
    /// Last accessed block (meaningless while `run == 0`).
    last: u64,
    /// Length of the run of consecutive ascending blocks ending at `last`,
    /// capped at `k`; 0 = no access yet.
    run: u32,
    dev: u32,
}

impl Obl {
    /// Build from parameters (`k` of 0 is treated as 1).
    pub fn new(p: OblParams) -> Self {
        Obl {
            k: p.k.max(1),
            last: 0,
            run: 0,
            dev: 0,
        }
    }

    /// libCacheSim `OBL_handle_find`: is b preceded by exactly b-k..b-1?
    /// Records b either way.
    fn observe(&mut self, b: u64) -> bool {
        let follows = self.run > 0 && self.last.wrapping_add(1) == b;
        let sequential = follows && self.run >= self.k;
        self.run = if follows {
            (self.run + 1).min(self.k)
        } else {
            1
        };
        self.last = b;
        sequential
    }
}

impl Policy for Obl {
    fn name(&self) -> &str {
        NAME
    }

    fn interests(&self) -> Interests {
        Interests::ACCESSES_ONLY
    }

    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        if a.dev != self.dev {
            // Another device: its blocks cannot continue this one's run.
            self.run = 0;
            self.dev = a.dev;
        }
        let mut sequential = false;
        for b in a.lbn..a.end_lbn() {
            sequential = self.observe(b);
        }
        if sequential {
            let next = a.end_lbn();
            if !sink.is_cached(a.dev, next) {
                let w = sink.new_window();
                sink.prefetch(
                    Target::Block {
                        dev: a.dev,
                        lbn: next,
                    },
                    1,
                    w,
                );
            }
        }
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        if info.budget_changed {
            return;
        }
        self.run = 0;
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::PrefetchRequest;
    use crate::policy::NoResidency;

    fn feed(p: &mut Obl, blocks: &[u64]) -> Vec<Vec<u64>> {
        let mut outs = vec![];
        let mut w = 0;
        for &b in blocks {
            let mut out: Vec<PrefetchRequest> = vec![];
            let mut sink = Sink::new(&mut out, &mut w, &NoResidency);
            let a = Access {
                lbn: b,
                page: b,
                blocks: 1,
                ..Access::default()
            };
            p.on_access(&a, &Outcome::default(), &mut sink);
            outs.push(
                out.iter()
                    .map(|r| match r.target {
                        Target::Block { lbn, .. } => lbn,
                        Target::File { page, .. } => page,
                    })
                    .collect(),
            );
        }
        outs
    }

    #[test]
    fn prefetches_only_after_k_sequential_predecessors() {
        // With k=4, block 14 is the first whose four predecessors 10..13
        // were exactly the previous four accesses.
        let mut p = Obl::new(OblParams::default());
        let outs = feed(&mut p, &[10, 11, 12, 13, 14, 15, 40, 41]);
        let expect: Vec<Vec<u64>> = vec![
            vec![],
            vec![],
            vec![],
            vec![],
            vec![15],
            vec![16],
            vec![],
            vec![],
        ];
        assert_eq!(outs, expect);
    }

    #[test]
    fn a_break_in_the_run_resets_confidence() {
        let mut p = Obl::new(OblParams { k: 2 });
        let outs = feed(&mut p, &[1, 2, 3, 9, 4, 5, 6]);
        assert_eq!(outs[2], vec![4]);
        assert!(outs[3].is_empty() && outs[4].is_empty() && outs[5].is_empty());
        assert_eq!(outs[6], vec![7]);
    }

    /// libCacheSim's own formulation, a ring of the last k blocks compared
    /// with b-k..b-1, as the reference for the O(1) run-length test.
    fn reference(k: usize, blocks: &[u64]) -> Vec<bool> {
        let mut ring: Vec<u64> = Vec::new();
        blocks
            .iter()
            .map(|&b| {
                let seq = ring.len() == k
                    && b >= k as u64
                    && ring
                        .iter()
                        .enumerate()
                        .all(|(i, &x)| x == b - (k - i) as u64);
                ring.push(b);
                if ring.len() > k {
                    ring.remove(0);
                }
                seq
            })
            .collect()
    }

    proptest::proptest! {
        /// The run-length test decides exactly as libCacheSim's ring does.
        #[test]
        fn run_length_equals_libcachesim_ring(
            k in 1usize..6,
            steps in proptest::collection::vec((0u8..4, 0u64..40), 1..300),
        ) {
            // Mostly +1 steps (runs), some repeats and jumps.
            let mut b = 100u64;
            let blocks: Vec<u64> = steps.iter().map(|&(kind, x)| {
                b = match kind { 0 | 1 => b + 1, 2 => b, _ => x };
                b
            }).collect();
            let mut p = Obl::new(OblParams { k: k as u32 });
            let got: Vec<bool> = feed(&mut p, &blocks).iter().map(|o| !o.is_empty()).collect();
            proptest::prop_assert_eq!(got, reference(k, &blocks));
        }
    }
}
