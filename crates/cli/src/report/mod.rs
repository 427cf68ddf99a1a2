//! Reports of simulation results: the terminal table with its verdicts and
//! a self-contained HTML page with SVG charts.
//!
//! The API is three plain types — a [`Row`] per (policy, run), a
//! [`Section`] per (input, cache size), a [`Provenance`] for the page — and
//! three functions: [`table::render`] (terminal lines), [`verdict::verdicts`]
//! and [`html::page`]. Nothing here runs a simulation, so any driver of
//! simulations (`compare`, a sweep) can produce the same report.

pub mod html;
pub mod svg;
pub mod table;
pub mod verdict;

use outrider_core::metrics::Report;
use outrider_core::SeriesPoint;

/// One (policy, run) result.
#[derive(Clone, Debug)]
pub struct Row {
    /// The metrics.
    pub report: Report,
    /// The policy's time series for the run (flashy's aggressiveness);
    /// empty for most policies.
    pub series: Vec<SeriesPoint>,
    /// The policy is an oracle: handed the trace's future, never ranked.
    pub oracle: bool,
}

/// Every policy's rows on one input at one cache size.
#[derive(Clone, Debug)]
pub struct Section {
    /// Trace path or workload specification.
    pub input: String,
    /// Cache size in 4 KiB blocks.
    pub cache_blocks: u64,
    /// The other settings, for the header (`lru, device hdd`).
    pub settings: String,
    /// The rows, in the order the policies ran.
    pub rows: Vec<Row>,
}

impl Section {
    /// `INPUT  (cache 256MiB (65536 blocks), lru, device hdd)`.
    pub fn title(&self) -> String {
        format!(
            "{}  (cache {} ({} blocks), {})",
            self.input,
            outrider_core::size::ByteSize(self.cache_blocks * outrider_core::BLOCK_SIZE),
            self.cache_blocks,
            self.settings
        )
    }
}

/// What produced a report.
#[derive(Clone, Debug)]
pub struct Provenance {
    /// The command line.
    pub command: String,
    /// outrider's version.
    pub version: String,
    /// Settings as (name, value) pairs, in display order.
    pub settings: Vec<(String, String)>,
}

impl Provenance {
    /// This process's command line and version, with `settings`.
    pub fn of_this_process(settings: Vec<(String, String)>) -> Provenance {
        let command = std::env::args()
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$;&|".contains(c))
                {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        Provenance {
            command,
            version: env!("CARGO_PKG_VERSION").to_string(),
            settings,
        }
    }
}
