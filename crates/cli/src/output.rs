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
        JsonLine {
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
