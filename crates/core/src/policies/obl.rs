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
use crate::policy::{BoxedPolicy, Policy, Sink};

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
#[derive(Clone, Debug)]
pub struct Obl {
    k: usize,
    /// Ring of the last `k` accessed blocks; `u64::MAX` = none yet.
    prev: Vec<u64>,
    /// Index of the newest entry in `prev`.
    newest: usize,
    dev: u32,
}

impl Obl {
    /// Build from parameters (`k` of 0 is treated as 1).
    pub fn new(p: OblParams) -> Self {
        let k = p.k.max(1) as usize;
        Obl {
            k,
            prev: vec![u64::MAX; k],
            newest: 0,
            dev: 0,
        }
    }

    /// libCacheSim `OBL_handle_find`: is b preceded by exactly b-k..b-1?
    /// Records b either way.
    fn observe(&mut self, b: u64) -> bool {
        let k = self.k;
        // Oldest entry first: slot newest+1 (wrapping) holds b-k if the run
        // is sequential, ..., slot newest holds b-1. No division per access.
        let mut slot = self.newest + 1;
        let mut sequential = b >= k as u64;
        for i in 0..k {
            if slot == k {
                slot = 0;
            }
            if !sequential || self.prev[slot] != b - (k - i) as u64 {
                sequential = false;
                break;
            }
            slot += 1;
        }
        self.newest = if self.newest + 1 == k {
            0
        } else {
            self.newest + 1
        };
        self.prev[self.newest] = b;
        sequential
    }
}

impl Policy for Obl {
    fn name(&self) -> &str {
        NAME
    }

    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        if a.dev != self.dev {
            // Another device: its blocks cannot continue this one's run.
            self.prev.iter_mut().for_each(|b| *b = u64::MAX);
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

    fn on_run_start(&mut self, _run: u32) {
        self.prev.iter_mut().for_each(|b| *b = u64::MAX);
    }

    fn memory_bytes(&self) -> usize {
        self.prev.len() * 8
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
}
