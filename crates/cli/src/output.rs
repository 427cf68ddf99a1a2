//! `--json` lines (tables and the HTML page are in `report`).

use outrider_core::metrics::Report;
use outrider_sim::SimConfig;
use serde::Serialize;

/// One `--json` line: the report plus what it was run on.
#[derive(Serialize)]
pub struct JsonLine<'a> {
    /// Trace path or workload spec.
    pub input: &'a str,
    /// Cache capacity in bytes.
    pub cache_bytes: u64,
    /// Device model.
    pub device: &'a str,
    /// Bytes of cache-model state per cached block (node + hash slots).
    pub cache_model_bytes_per_block: f64,
    /// Most blocks the cache model held at once.
    pub peak_cache_blocks: usize,
    /// Bytes of policy state at the end of the last run
    /// ([`outrider_core::Policy::memory_bytes`]).
    pub policy_bytes: usize,
    /// The metrics (flattened).
    #[serde(flatten)]
    pub report: &'a Report,
    /// The policy's time series for this run, if it keeps one (flashy:
    /// `t_s`, `app_mb_s`, `prefetch_mb_s`, `miss_mb_s`, `quota_mb_s`,
    /// `scale` per polling interval). Omitted when empty.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub series: &'a [outrider_core::SeriesPoint],
    /// What the driver's guard decided in this run (`--guard live`:
    /// requests throttled, blocks dropped by the budget, blocks written
    /// off). Omitted with the guard off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardJson>,
}

/// The driver guard's decisions in one run.
#[derive(Serialize)]
pub struct GuardJson {
    /// Requests the policy made.
    pub requests: u64,
    /// Requests admission control refused.
    pub throttled_requests: u64,
    /// Blocks the memory budget refused.
    pub dropped_budget_blocks: u64,
    /// Prefetched blocks written off unused past the time to live.
    pub written_off_blocks: u64,
}

impl<'a> JsonLine<'a> {
    /// Wrap a report.
    pub fn new(
        input: &'a str,
        cfg: &'a SimConfig,
        res: &'a outrider_sim::SimResult,
        report: &'a Report,
    ) -> Self {
        let series = res
            .series
            .get(report.run.saturating_sub(1) as usize)
            .map_or(&[][..], |s| &s[..]);
        let guard = (cfg.guard != outrider_driver::GuardOptions::OFF)
            .then(|| res.guard.get(report.run.saturating_sub(1) as usize))
            .flatten()
            .map(|g| GuardJson {
                requests: g.requests,
                throttled_requests: g.throttled_requests,
                dropped_budget_blocks: g.dropped_budget_blocks,
                written_off_blocks: g.written_off_blocks,
            });
        JsonLine {
            guard,
            series,
            cache_model_bytes_per_block: res.cache_bytes_per_block,
            peak_cache_blocks: res.peak_cache_blocks,
            policy_bytes: res.policy_bytes,
            input,
            cache_bytes: cfg.cache_blocks * outrider_core::BLOCK_SIZE,
            device: &cfg.device,
            report,
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` of `unix_secs` (UTC).
pub fn utc_datetime(unix_secs: i64) -> String {
    let (days, secs) = (unix_secs.div_euclid(86_400), unix_secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod date_tests {
    #[test]
    fn unix_seconds_become_civil_utc_dates() {
        assert_eq!(super::utc_datetime(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc_datetime(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(super::utc_datetime(1_795_702_215), "2026-11-26 14:10:15");
    }
}
