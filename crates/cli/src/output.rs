//! Tables, JSON lines and the HTML page.

use outrider_core::metrics::Report;
use outrider_sim::SimConfig;
use serde::Serialize;
use std::path::Path;

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

fn header(input: &str, cfg: &SimConfig) -> String {
    format!(
        "{input}  (cache {} ({} blocks, {:?}), device {})",
        outrider_core::size::ByteSize(cfg.cache_blocks * outrider_core::BLOCK_SIZE),
        cfg.cache_blocks,
        cfg.cache_model,
        cfg.device
    )
}

const COLS: [&str; 12] = [
    "policy",
    "run",
    "hit_ratio",
    "accuracy",
    "coverage",
    "cost",
    "io_wait_s",
    "elapsed_s",
    "lead_ms",
    "mis_windows",
    "prefetched",
    "Mreq/s",
];

fn cells(r: &Report) -> [String; 12] {
    [
        r.policy.clone(),
        r.run.to_string(),
        format!("{:.4}", r.hit_ratio),
        format!("{:.3}", r.prefetch_accuracy),
        format!("{:.3}", r.coverage),
        format!("{:.3}", r.cost),
        format!("{:.3}", r.io_wait_s),
        format!("{:.3}", r.elapsed_s),
        format!("{:.2}", r.lead_time * 1e3),
        format!("{}/{}", r.mis_prefetched_windows, r.windows),
        r.prefetched_blocks.to_string(),
        format!("{:.2}", r.events_per_s / 1e6),
    ]
}

/// Print a readable side-by-side table.
pub fn print_table(input: &str, cfg: &SimConfig, rows: &[Report]) {
    println!("{}", header(input, cfg));
    let data: Vec<[String; 12]> = rows.iter().map(cells).collect();
    let mut w = COLS.map(str::len);
    for row in &data {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cols: &[String]| {
        let parts: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<width$}", width = w[i])
                } else {
                    format!("{c:>width$}", width = w[i])
                }
            })
            .collect();
        println!("  {}", parts.join("  "));
    };
    line(&COLS.map(String::from));
    for row in &data {
        line(row);
    }
    println!();
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Write the comparison as a self-contained HTML page.
pub fn write_html(
    path: &Path,
    sections: &[(String, SimConfig, Vec<Report>)],
) -> anyhow::Result<()> {
    let mut h = String::from(
        "<!doctype html><meta charset=utf-8><title>outrider compare</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}\
         td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}\
         .bar{background:#4a90d9;height:10px;display:inline-block}</style><h1>outrider compare</h1>",
    );
    for (input, cfg, rows) in sections {
        h.push_str(&format!("<h2>{}</h2><table><tr>", esc(&header(input, cfg))));
        for c in COLS {
            h.push_str(&format!("<th>{c}</th>"));
        }
        h.push_str("<th>elapsed</th></tr>");
        let max_elapsed = rows
            .iter()
            .map(|r| r.elapsed_s)
            .fold(0.0, f64::max)
            .max(1e-12);
        for r in rows {
            h.push_str("<tr>");
            for c in cells(r) {
                h.push_str(&format!("<td>{}</td>", esc(&c)));
            }
            h.push_str(&format!(
                "<td><span class=bar style='width:{:.0}px'></span></td></tr>",
                200.0 * r.elapsed_s / max_elapsed
            ));
        }
        h.push_str("</table>");
    }
    std::fs::write(path, h).map_err(|e| crate::usage(format!("{}: {e}", path.display())))?;
    Ok(())
}
