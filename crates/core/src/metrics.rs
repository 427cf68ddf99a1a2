//! The metrics of DESIGN.md, defined once and used by every driver.
//!
//! A driver fills the raw [`Counters`]; [`Counters::report`] derives the
//! named metrics exactly as DESIGN.md defines them:
//!
//! | name | definition |
//! |---|---|
//! | `hit_ratio` | demand blocks found in memory / demand blocks |
//! | `prefetch_accuracy` | prefetched blocks used by a demand access before eviction / prefetched blocks |
//! | `coverage` | demand blocks served by a prefetch / demand blocks |
//! | `cost` | blocks read by prefetching / blocks requested by the application |
//! | `io_wait_s` | time the workload waits on the device |
//! | `elapsed_s` | modelled or measured wall time |
//! | `lead_time` | time from a prefetch's issue to the demand access it served (mean, s) |
//! | `mis_prefetched_windows` | prefetch windows none of whose blocks were used |
//!
//! "Found in memory" counts a block whose prefetch is still in flight as a
//! hit only when it has completed: an in-flight block is *served by a
//! prefetch* (coverage) but is not a hit (hit_ratio), since the access still
//! waits for the device.

use serde::Serialize;

/// Raw counts a driver accumulates over one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Requests (accesses) processed.
    pub requests: u64,
    /// Demand blocks requested by the application (reads and writes).
    pub demand_blocks: u64,
    /// Demand blocks found resident.
    pub hit_blocks: u64,
    /// Demand blocks served by a prefetch: resident-prefetched first uses
    /// plus in-flight prefetches waited on.
    pub prefetch_served_blocks: u64,
    /// Blocks read from the device on demand.
    pub miss_blocks: u64,
    /// Demand blocks that waited on a prefetch still in flight (EPCM's
    /// partial hits; 0 live, where such a page counts as a miss).
    pub inflight_blocks: u64,
    /// Blocks read by prefetching (issued to the device).
    pub prefetched_blocks: u64,
    /// Prefetched blocks used by a demand access before eviction.
    pub prefetched_used_blocks: u64,
    /// Prefetched blocks evicted (or left at the end of the run) unused.
    pub prefetched_unused_blocks: u64,
    /// Prefetch windows opened.
    pub windows: u64,
    /// Windows none of whose blocks were used.
    pub mis_prefetched_windows: u64,
    /// Sum of lead times over prefetch-served demand blocks (ns).
    pub lead_time_sum_ns: u128,
    /// Time processes spent blocked on the device (ns, summed over processes).
    pub io_wait_ns: u64,
    /// Modelled or measured wall time of the run (ns).
    pub elapsed_ns: u64,
    /// Device requests served (demand and prefetch).
    pub device_requests: u64,
    /// Time the device was busy (ns; for multi-queue devices, summed over queues).
    pub device_busy_ns: u64,
}

/// The derived metrics of one (policy, run), with DESIGN.md's names.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Policy specification as given.
    pub policy: String,
    /// Run number, from 1.
    pub run: u32,
    /// Requests processed.
    pub requests: u64,
    /// Demand blocks.
    pub demand_blocks: u64,
    /// Blocks read by prefetching.
    pub prefetched_blocks: u64,
    /// Demand blocks found in memory / demand blocks.
    pub hit_ratio: f64,
    /// Prefetched blocks used before eviction / prefetched blocks.
    pub prefetch_accuracy: f64,
    /// Demand blocks served by a prefetch / demand blocks.
    pub coverage: f64,
    /// Blocks read by prefetching / blocks requested by the application.
    pub cost: f64,
    /// Time the workload waited on the device, seconds.
    pub io_wait_s: f64,
    /// Modelled or measured wall time, seconds.
    pub elapsed_s: f64,
    /// Mean time from a prefetch's issue to the demand access it served, s.
    pub lead_time: f64,
    /// Prefetch windows none of whose blocks were used.
    pub mis_prefetched_windows: u64,
    /// Prefetch windows opened.
    pub windows: u64,
    /// Prefetched blocks evicted (or left over) unused.
    pub prefetched_unused_blocks: u64,
    /// Requests simulated per second of host time.
    pub events_per_s: f64,
    /// Requests simulated per second of the simulating thread's CPU time
    /// (unlike `events_per_s`, not lowered by other processes taking the
    /// CPU; 0 where the driver does not measure it).
    pub events_per_cpu_s: f64,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

impl Counters {
    /// Derive the named metrics. `host_secs` is the host time the run took
    /// (for `events_per_s`).
    pub fn report(&self, policy: &str, run: u32, host_secs: f64) -> Report {
        Report {
            policy: policy.to_string(),
            run,
            requests: self.requests,
            demand_blocks: self.demand_blocks,
            prefetched_blocks: self.prefetched_blocks,
            hit_ratio: ratio(self.hit_blocks, self.demand_blocks),
            prefetch_accuracy: ratio(self.prefetched_used_blocks, self.prefetched_blocks),
            coverage: ratio(self.prefetch_served_blocks, self.demand_blocks),
            cost: ratio(self.prefetched_blocks, self.demand_blocks),
            io_wait_s: self.io_wait_ns as f64 * 1e-9,
            elapsed_s: self.elapsed_ns as f64 * 1e-9,
            lead_time: if self.prefetch_served_blocks == 0 {
                0.0
            } else {
                self.lead_time_sum_ns as f64 * 1e-9 / self.prefetch_served_blocks as f64
            },
            mis_prefetched_windows: self.mis_prefetched_windows,
            windows: self.windows,
            prefetched_unused_blocks: self.prefetched_unused_blocks,
            events_per_s: if host_secs > 0.0 {
                self.requests as f64 / host_secs
            } else {
                0.0
            },
            events_per_cpu_s: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_follow_design_md() {
        let c = Counters {
            requests: 10,
            demand_blocks: 100,
            hit_blocks: 60,
            prefetch_served_blocks: 30,
            prefetched_blocks: 50,
            prefetched_used_blocks: 25,
            lead_time_sum_ns: 30_000_000,
            ..Counters::default()
        };
        let r = c.report("x", 1, 2.0);
        assert_eq!(r.hit_ratio, 0.6);
        assert_eq!(r.prefetch_accuracy, 0.5);
        assert_eq!(r.coverage, 0.3);
        assert_eq!(r.cost, 0.5);
        assert!((r.lead_time - 0.001).abs() < 1e-12);
        assert_eq!(r.events_per_s, 5.0);
    }

    #[test]
    fn empty_run_has_zero_ratios_not_nan() {
        let r = Counters::default().report("x", 1, 0.0);
        assert_eq!((r.hit_ratio, r.coverage, r.events_per_s), (0.0, 0.0, 0.0));
    }
}
