//! The tick: Algorithm 1's loop body (pattern recognition, quota, cap,
//! ranges, feedback), and the early first plan of a new stream.

use super::feedback::IntervalStats;
use super::pattern::{self, Pattern};
use super::{quota, Flashy, Key, TickReport, MAX_BLOCK, MAX_PENDING_CHUNKS};
use crate::event::BLOCK_SIZE;
use crate::mechanism::{chunk, infill};
use crate::policy::Sink;

/// One stream's decision at a tick: its pattern, its rate after the cap.
struct Plan {
    key: Key,
    pattern: Option<(Pattern, f64)>,
    rate: f64,
    random: f64,
    group: Option<u32>,
    max: Option<f64>,
}

impl Flashy {
    /// A tick of the driver: the polling interval's work when it is due,
    /// else the plans of streams born or used up since (`first_ms`,
    /// `refill`).
    pub(super) fn tick(&mut self, now_ns: u64, sink: &mut Sink<'_>) {
        let interval_ns = self.p.interval_ms.saturating_mul(1_000_000);
        if now_ns >= self.last_tick_ns.saturating_add(interval_ns) {
            self.interval_tick(now_ns, sink);
        } else if self.p.first_ms > 0 {
            self.first_plans(now_ns, sink);
        }
    }

    /// Streams that have read for at least `first_ms` and were never
    /// planned get their plan now instead of at the next polling tick;
    /// the plans of the other streams stay as they are.
    fn first_plans(&mut self, now_ns: u64, sink: &mut Sink<'_>) {
        let first_ns = self.p.first_ms.saturating_mul(1_000_000);
        let plans = self.plans(now_ns, |m| {
            !m.planned && now_ns >= m.born_ns.saturating_add(first_ns)
        });
        if plans.iter().all(|p| p.pattern.is_none()) {
            return;
        }
        let mut report = Vec::new();
        let quota = self.schedule(&plans, &mut report, sink);
        self.prefetched_prev |= quota > 0;
        self.pump(sink);
    }

    /// One polling interval's work (Algorithm 1's loop body).
    fn interval_tick(&mut self, now_ns: u64, sink: &mut Sink<'_>) {
        let elapsed_ns = now_ns.saturating_sub(self.last_tick_ns);
        if elapsed_ns == 0 {
            return;
        }
        let plans = self.plans(now_ns, |_| true);
        self.last_tick_ns = now_ns;
        let elapsed_s = elapsed_ns as f64 * 1e-9;
        let interval_s = self.p.interval_ms as f64 * 1e-3;
        let (mut app_blocks, mut app_linear, mut disk_linear) = (0u64, 0u64, 0u64);
        for m in self.machines.values() {
            app_blocks += m.app.counts.total;
            app_linear += m.app.counts.linear();
            disk_linear += m.disk.counts.linear();
        }
        let mut report = TickReport {
            elapsed_ns,
            ..TickReport::default()
        };
        self.win_owner.clear();
        self.pending.clear();
        let quota_total = self.schedule(&plans, &mut report.plans, sink);
        self.pump(sink);

        // Feedback (§IV-D): adjust the scale for the next interval.
        let stats = IntervalStats {
            app_linear,
            disk_linear,
            prefetch_disk: self.prefetch_disk,
            prefetched: self.prefetched_prev,
        };
        let scale_used = self.scale;
        report.adjust = self
            .p
            .feedback
            .then(|| self.monitor.adjust(&mut self.scale, &stats));
        report.stats = stats;
        report.scale = self.scale;
        self.prefetched_prev = quota_total > 0;

        // Fig. 5: application vs prefetch throughput, and the scale.
        let mb = |blocks: u64| blocks as f64 * BLOCK_SIZE as f64 / elapsed_s / 1e6;
        let values = vec![
            ("app_mb_s", mb(app_blocks)),
            ("prefetch_mb_s", mb(self.prefetch_disk)),
            ("miss_mb_s", mb(self.miss_disk)),
            (
                "quota_mb_s",
                quota_total as f64 * BLOCK_SIZE as f64 / interval_s / 1e6,
            ),
            ("scale", scale_used),
        ];
        self.push_series(now_ns, values);
        self.next_interval();
        self.last_tick = report;
    }

    /// Fresh counters for the next interval; streams idle too long are
    /// forgotten.
    fn next_interval(&mut self) {
        self.prefetch_disk = 0;
        self.miss_disk = 0;
        let idle = self.p.idle;
        self.machines.retain(|_, m| {
            if m.app.counts.total == 0 {
                m.idle_ticks += 1;
            } else {
                m.idle_ticks = 0;
                m.planned = true;
            }
            m.app.counts = Default::default();
            m.disk.counts = Default::default();
            m.idle_ticks <= idle
        });
    }

    /// Pattern recognition and the capped prefetch rate of every stream
    /// `pick` selects that read since the last tick. A stream's rate is
    /// over the actual time it was measured (§IV-B): since the last tick,
    /// or since its first read when it was born after it.
    fn plans(&self, now_ns: u64, pick: impl Fn(&super::Machine) -> bool) -> Vec<Plan> {
        let mut plans: Vec<Plan> = Vec::new();
        for (key, m) in self.machines.iter().filter(|(_, m)| pick(m)) {
            let c = &m.app.counts;
            let since = self.last_tick_ns.max(m.born_ns);
            let elapsed_s = now_ns.saturating_sub(since).max(1) as f64 * 1e-9;
            if c.total == 0 {
                continue;
            }
            let app_rate = c.total as f64 / elapsed_s;
            let pattern = m.app.pattern(self.p.threshold);
            let frac = pattern.map_or(0.0, |p| p.1);
            let (group, max) = self.max_rate(key.1);
            plans.push(Plan {
                key: *key,
                pattern,
                rate: quota::uncapped_rate(self.scale, frac, app_rate),
                random: quota::random_rate(frac, app_rate),
                group,
                max,
            });
        }
        self.cap(&mut plans);
        plans
    }

    /// The throughput cap (§IV-C), per device group or per stream.
    fn cap(&self, plans: &mut [Plan]) {
        if !self.p.share_cap {
            for p in plans.iter_mut() {
                p.rate = quota::cap_one(p.rate, p.max, p.random);
            }
            return;
        }
        let mut groups: Vec<Option<u32>> = plans.iter().map(|p| p.group).collect();
        groups.sort_unstable();
        groups.dedup();
        for g in groups {
            let random_sum: f64 = plans
                .iter()
                .filter(|p| p.group == g)
                .map(|p| p.random)
                .sum();
            let max = plans.iter().find(|p| p.group == g).and_then(|p| p.max);
            let mut rates: Vec<f64> = plans
                .iter()
                .filter(|p| p.group == g)
                .map(|p| p.rate)
                .collect();
            quota::cap_shared(&mut rates, max, random_sum);
            for (p, r) in plans.iter_mut().filter(|p| p.group == g).zip(rates) {
                p.rate = r;
            }
        }
    }

    /// Turn each recognised stream's quota for one interval into ranges
    /// (§IV-C), in chunks appended to the pending plan; a stream planned
    /// here is marked planned. Returns the blocks planned.
    fn schedule(
        &mut self,
        plans: &[Plan],
        report: &mut Vec<(Key, Pattern, f64, u64)>,
        sink: &mut Sink<'_>,
    ) -> u64 {
        let interval_s = self.p.interval_ms as f64 * 1e-3;
        let mut quota_total = 0u64;
        for plan in plans {
            let Some((pattern, frac)) = plan.pattern else {
                continue;
            };
            let q = quota::quota_blocks(plan.rate, interval_s);
            let m = self
                .machines
                .get_mut(&plan.key)
                .expect("planned stream exists");
            m.planned = true;
            let (Some(last), Some(jump)) = (m.app.stream.last, m.app.stream.last_jump.or(Some(0)))
            else {
                continue;
            };
            pattern::ranges(
                pattern,
                last,
                jump,
                q,
                self.p.max_ranges as usize,
                &mut self.scratch,
            );
            if self.scratch.is_empty() {
                continue;
            }
            if matches!(pattern, Pattern::StridedForward | Pattern::StridedBackward) {
                let descending = pattern == Pattern::StridedBackward;
                infill::merge_ranges(&mut self.scratch, self.infill_blocks, descending);
            }
            let backward = matches!(pattern, Pattern::SeqBackward | Pattern::StridedBackward);
            m.refill_at = halfway(&self.scratch, last.0, backward);
            report.push((plan.key, pattern, frac, q));
            let w = sink.new_window();
            self.win_owner.push((w.0, plan.key));
            // Nearest the application first: a backward stream needs the
            // top of its range soonest (paced chunks, `depth`, would
            // otherwise arrive farthest-first).
            for &(start, n) in &self.scratch {
                let end = (start + n).min(MAX_BLOCK);
                for (s, len) in chunk::pieces(start, end, self.chunk_blocks, backward) {
                    if self.pending.len() >= MAX_PENDING_CHUNKS {
                        break;
                    }
                    self.pending.push_back((plan.key.1, s, len, w));
                    quota_total += len;
                }
            }
        }
        quota_total
    }
}

/// The block halfway between the application's last request at `last`
/// and the far end of the planned `ranges`, and whether the plan runs
/// backward.
fn halfway(ranges: &[(u64, u64)], last: u64, backward: bool) -> Option<(u64, bool)> {
    if backward {
        let far = ranges.iter().map(|r| r.0).min()?;
        Some((far + last.saturating_sub(far) / 2, true))
    } else {
        let far = ranges.iter().map(|r| r.0 + r.1).max()?;
        Some((last + far.saturating_sub(last) / 2, false))
    }
}
