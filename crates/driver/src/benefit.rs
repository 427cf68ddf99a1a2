//! Benefit gating: did prefetching pay for this application, and how much
//! may its next run prefetch?
//!
//! A prefetching system that is always on must switch itself off where it
//! does not help: macOS BootCache and the Windows Prefetcher drop an
//! application's prefetch set when it measured no benefit; libprefetch
//! (§3.4) and DiskSeen's quality control (§3.5) throttle within a run. The
//! driver's guard throttles within a run; this module carries the verdict
//! across runs, stored with the application's history.
//!
//! Evidence of one run ([`Evidence`]): pages prefetched and used, pages
//! prefetched and wasted (evicted, written off or left unused), outrider's
//! own CPU time and the program's wall time. A used page saved the program
//! about one device read ([`PAGE_READ_S`]); a wasted page was read inside
//! a larger prefetch request, so it cost its transfer, not a request:
//! [`WASTED_PAGE_S`]. Outrider's CPU is spent on the program's machine.
//!
//! * **paid**: `used × PAGE_READ_S > wasted × WASTED_PAGE_S + cpu`;
//! * **harmed**: not paid, and prefetching itself did measurable harm:
//!   the waste cost more than the used pages saved, and more than
//!   [`WASTE_FLOOR_PAGES`] were wasted;
//! * otherwise **no evidence** (a first run that learned and prefetched
//!   little, a program that read nothing): the level stays. Outrider's CPU
//!   alone is not a reason to prefetch less: it is mostly the tracing, which
//!   prefetching less does not save (measured: a 0.37 s first run of a
//!   200-file program spent 31 ms, 8.5% of its time, with nothing yet to
//!   replay).
//!
//! Levels ([`Level`]): `Full` (the guard as configured), `Reduced` (a
//! quarter of the budget, admission starting at one request in four),
//! `Off` (nothing is fetched; the program is still traced, so a change is
//! noticed). A harmed run steps one level down, a paid run back to `Full`.
//! At `Off`, every [`PROBE_EVERY`]th run probes at `Reduced`: a program
//! whose behaviour changed gets another chance, as AIMD probes for room.

/// Device time one 4 KiB page read is taken to cost (100 µs: between an
/// SSD's ~50 µs and a virtio disk's measured 4 KiB random read here).
pub const PAGE_READ_S: f64 = 100e-6;
/// Device time a wasted page is taken to cost: a quarter of a read. It
/// came in with its neighbours in one prefetch request, and on this
/// machine's disk one more request cost as much as 2.2–14 more pages read
/// through (`bench/results/directed.md`, the device probe). Charged a full
/// read, a strided reader's prefetch (every other page used, as many
/// read in between, 4.8x faster than stock) was judged harmful and its
/// next runs throttled to 1.2x.
pub const WASTED_PAGE_S: f64 = PAGE_READ_S / 4.0;
/// Waste below this many pages (4 MiB) is no evidence of harm.
pub const WASTE_FLOOR_PAGES: u64 = 1024;
/// At `Off`, every this many runs one probes at `Reduced`.
pub const PROBE_EVERY: u32 = 4;

/// How much an application's next run may prefetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The guard as configured.
    Full,
    /// A quarter of the budget; admission starts at one request in four.
    Reduced,
    /// Nothing is fetched.
    Off,
}

/// What one run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Evidence {
    /// Prefetched pages the program used.
    pub used_pages: u64,
    /// Prefetched pages wasted.
    pub wasted_pages: u64,
    /// Outrider's CPU seconds.
    pub cpu_s: f64,
    /// The program's wall time, seconds.
    pub elapsed_s: f64,
}

/// The verdict of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Prefetching saved more than it cost.
    Paid,
    /// It cost more than it saved, measurably.
    Harmed,
    /// Too little happened to tell.
    NoEvidence,
}

impl Evidence {
    /// This run's verdict (module documentation).
    pub fn verdict(&self) -> Verdict {
        let saved = self.used_pages as f64 * PAGE_READ_S;
        let waste = self.wasted_pages as f64 * WASTED_PAGE_S;
        if saved > waste + self.cpu_s {
            return Verdict::Paid;
        }
        if self.wasted_pages > WASTE_FLOOR_PAGES && waste > saved {
            Verdict::Harmed
        } else {
            Verdict::NoEvidence
        }
    }
}

/// An application's gate: its level and the evidence behind it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Gate {
    /// The level the next run gets (before probing).
    pub level: Level,
    /// Runs since the level last changed.
    pub runs_at_level: u32,
    /// The last run's evidence and verdict.
    pub last: Evidence,
    /// The last run's verdict.
    pub verdict: Verdict,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            level: Level::Full,
            runs_at_level: 0,
            last: Evidence::default(),
            verdict: Verdict::NoEvidence,
        }
    }
}

impl Gate {
    /// The gate after a run that measured `ev`.
    pub fn after(&self, ev: Evidence) -> Gate {
        let verdict = ev.verdict();
        let level = match (verdict, self.level) {
            (Verdict::Paid, _) => Level::Full,
            (Verdict::Harmed, Level::Full) => Level::Reduced,
            (Verdict::Harmed, _) => Level::Off,
            (Verdict::NoEvidence, l) => l,
        };
        let runs_at_level = if level == self.level {
            self.runs_at_level.saturating_add(1)
        } else {
            0
        };
        Gate {
            level,
            runs_at_level,
            last: ev,
            verdict,
        }
    }

    /// The level this run gets: the gate's, except that at `Off` every
    /// [`PROBE_EVERY`]th run probes at `Reduced`.
    pub fn level_now(&self) -> Level {
        match self.level {
            Level::Off if (self.runs_at_level + 1).is_multiple_of(PROBE_EVERY) => Level::Reduced,
            l => l,
        }
    }

    /// This run's limits for [`crate::Driver::limit`]: the share of the
    /// budget and the admission shift it starts at.
    pub fn limits(&self) -> (f64, u32) {
        match self.level_now() {
            Level::Full => (1.0, 0),
            Level::Reduced => (0.25, 2),
            Level::Off => (0.0, crate::MAX_ADMIT_SHIFT),
        }
    }

    /// The gate as stored with the history: 1 byte version, then level,
    /// verdict, runs at level (u32), used, wasted (u64), cpu, elapsed (f64),
    /// little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![1u8, self.level as u8, self.verdict as u8];
        b.extend_from_slice(&self.runs_at_level.to_le_bytes());
        b.extend_from_slice(&self.last.used_pages.to_le_bytes());
        b.extend_from_slice(&self.last.wasted_pages.to_le_bytes());
        b.extend_from_slice(&self.last.cpu_s.to_le_bytes());
        b.extend_from_slice(&self.last.elapsed_s.to_le_bytes());
        b
    }

    /// A stored gate; `None` for anything else (a fresh gate then).
    pub fn decode(b: &[u8]) -> Option<Gate> {
        if b.len() != 39 || b[0] != 1 {
            return None;
        }
        let level = [Level::Full, Level::Reduced, Level::Off].get(usize::from(b[1]))?;
        let verdict =
            [Verdict::Paid, Verdict::Harmed, Verdict::NoEvidence].get(usize::from(b[2]))?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let f64_at = |i: usize| f64::from_bits(u64_at(i));
        let (cpu_s, elapsed_s) = (f64_at(23), f64_at(31));
        if !(cpu_s.is_finite() && elapsed_s.is_finite()) {
            return None;
        }
        Some(Gate {
            level: *level,
            verdict: *verdict,
            runs_at_level: u32::from_le_bytes(b[3..7].try_into().expect("4 bytes")),
            last: Evidence {
                used_pages: u64_at(7),
                wasted_pages: u64_at(15),
                cpu_s,
                elapsed_s,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(used: u64, wasted: u64, cpu_s: f64, elapsed_s: f64) -> Evidence {
        Evidence {
            used_pages: used,
            wasted_pages: wasted,
            cpu_s,
            elapsed_s,
        }
    }

    #[test]
    fn verdicts_weigh_saved_reads_against_waste_and_cpu() {
        // 10 000 used pages saved ~1 s; 100 wasted and 0.1 s CPU cost less.
        assert_eq!(ev(10_000, 100, 0.1, 5.0).verdict(), Verdict::Paid);
        // A stream that was not one: 8 MiB wasted, nothing used.
        assert_eq!(ev(0, 2048, 0.01, 5.0).verdict(), Verdict::Harmed);
        // Nothing prefetched and outrider's CPU 20% of a short program: the
        // tracing's cost, which prefetching less would not save.
        assert_eq!(ev(0, 0, 0.02, 0.1).verdict(), Verdict::NoEvidence);
        // Waste above the floor but below the use: not harm.
        assert_eq!(ev(3000, 2048, 1.0, 5.0).verdict(), Verdict::NoEvidence);
        // A strided reader: every other page used, the pages between read
        // in the same requests (live pread-stride run 1: 32 629 used,
        // 32 823 wasted, 0.12 s CPU, 4.8x faster than stock).
        assert_eq!(ev(32_629, 32_823, 0.12, 0.35).verdict(), Verdict::Paid);
        // Four times the waste of what was used: harm.
        assert_eq!(ev(1000, 4100, 0.01, 1.0).verdict(), Verdict::Harmed);
        // A first run that learned and prefetched a little.
        assert_eq!(ev(0, 10, 0.001, 1.0).verdict(), Verdict::NoEvidence);
    }

    #[test]
    fn harm_steps_down_pay_restores_and_off_probes() {
        let harmed = ev(0, 4096, 0.0, 1.0);
        let g = Gate::default().after(harmed);
        assert_eq!((g.level, g.level_now()), (Level::Reduced, Level::Reduced));
        let g = g.after(harmed);
        assert_eq!(g.level, Level::Off);
        let nothing = ev(0, 0, 0.0, 1.0);
        let mut levels = Vec::new();
        let mut g2 = g;
        for _ in 0..8 {
            levels.push(g2.level_now());
            g2 = g2.after(nothing);
        }
        assert_eq!(
            levels.iter().filter(|l| **l == Level::Reduced).count(),
            2,
            "{levels:?}"
        );
        assert_eq!(g.after(ev(50_000, 0, 0.01, 10.0)).level, Level::Full);
    }

    #[test]
    fn levels_limit_the_budget_and_admission() {
        let mut g = Gate::default();
        assert_eq!(g.limits(), (1.0, 0));
        g.level = Level::Reduced;
        assert_eq!(g.limits(), (0.25, 2));
        g.level = Level::Off;
        g.runs_at_level = 0;
        assert_eq!(g.limits(), (0.0, crate::MAX_ADMIT_SHIFT));
    }

    #[test]
    fn gates_round_trip_and_garbage_is_refused() {
        let g = Gate::default().after(ev(3, 2048, 0.5, 2.0));
        assert_eq!(Gate::decode(&g.encode()), Some(g));
        assert_eq!(Gate::decode(&[]), None);
        assert_eq!(Gate::decode(&[2; 39]), None);
        let mut bad = g.encode();
        bad[1] = 9;
        assert_eq!(Gate::decode(&bad), None);
    }
}
