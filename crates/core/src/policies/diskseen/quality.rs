//! DiskSeen §3.5: prefetching quality control per application.
//!
//! For each process the outcomes of its most recent [`QcParams::windows`]
//! prefetch windows (default 512) are kept; a window is *mis-prefetched*
//! when none of its blocks was used before eviction. When the ratio of
//! mis-prefetched windows exceeds `off` (50%), history-aware prefetching is
//! disabled for the process; streams are still created and maintained
//! (their windows become *virtual*: tracked, not read), and when the ratio
//! drops below `on` (30%) history prefetching resumes.

use crate::event::Pid;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Bound on processes tracked at once; beyond it the table is reset (a
/// process then starts again with history prefetching enabled).
pub const MAX_PROCESSES: usize = 1 << 14;

/// Quality-control thresholds (§3.5 defaults: 512 windows, 50%, 30%).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QcParams {
    /// Windows remembered per process.
    pub windows: usize,
    /// Disable history prefetching above this mis-prefetched ratio.
    pub off: f64,
    /// Resume it below this ratio.
    pub on: f64,
}

#[derive(Clone, Debug, Default)]
struct Proc {
    recent: VecDeque<bool>,
    mis: usize,
    disabled: bool,
}

/// Per-process window outcomes and the history on/off switch.
#[derive(Clone, Debug)]
pub struct Quality {
    p: QcParams,
    procs: FxHashMap<Pid, Proc>,
}

impl Quality {
    /// Empty, every process enabled.
    pub fn new(p: QcParams) -> Self {
        Quality {
            p,
            procs: FxHashMap::default(),
        }
    }

    /// Record one resolved window of `pid`: `mis` when none of its blocks
    /// was used. Re-evaluates the switch (the paper's periodic check, done
    /// at every outcome).
    pub fn record(&mut self, pid: Pid, mis: bool) {
        if self.procs.len() >= MAX_PROCESSES && !self.procs.contains_key(&pid) {
            self.procs.clear();
        }
        let cap = self.p.windows.max(1);
        let pr = self.procs.entry(pid).or_default();
        pr.recent.push_back(mis);
        pr.mis += usize::from(mis);
        if pr.recent.len() > cap {
            let old = pr.recent.pop_front().expect("non-empty");
            pr.mis -= usize::from(old);
        }
        let ratio = pr.mis as f64 / pr.recent.len() as f64;
        if !pr.disabled && ratio > self.p.off {
            pr.disabled = true;
        } else if pr.disabled && ratio < self.p.on {
            pr.disabled = false;
        }
    }

    /// May `pid` read history-prefetched windows from disk?
    pub fn history_enabled(&self, pid: Pid) -> bool {
        self.procs.get(&pid).is_none_or(|p| !p.disabled)
    }

    /// Mis-prefetched ratio over `pid`'s recent windows (0 when none).
    pub fn ratio(&self, pid: Pid) -> f64 {
        self.procs
            .get(&pid)
            .filter(|p| !p.recent.is_empty())
            .map_or(0.0, |p| p.mis as f64 / p.recent.len() as f64)
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.procs.values().map(|p| 48 + p.recent.capacity()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disables_above_half_and_resumes_below_thirty_percent() {
        let mut q = Quality::new(QcParams {
            windows: 4,
            off: 0.5,
            on: 0.3,
        });
        q.record(7, false);
        q.record(7, true);
        assert!(q.history_enabled(7), "1 of 2 = 50% is not above 50%");
        q.record(7, true);
        assert!(!q.history_enabled(7), "2 of 3 mis-prefetched");
        q.record(7, false); // 2 of 4
        q.record(7, false); // oldest (good) leaves: 2 of 4
        assert!(!q.history_enabled(7));
        q.record(7, false); // 1 of 4 = 25% < 30%
        assert!(q.history_enabled(7));
        assert!((q.ratio(7) - 0.25).abs() < 1e-9);
        assert!(q.history_enabled(8), "other processes are unaffected");
    }
}
