//! The comparison table: columns, their definitions (the report's legend)
//! and the terminal rendering, which fits 100 columns unless `--wide`.

use super::verdict::{is_slower, speedup, times};
use super::{Row, Section};

/// A column: header, definition, and whether only `--wide` shows it.
pub struct Column {
    /// Header text.
    pub name: &'static str,
    /// What it means (DESIGN.md's metric definitions).
    pub meaning: &'static str,
    /// Shown in the terminal only with `--wide` (always in the HTML).
    pub wide: bool,
}

/// Every column, in order.
pub const COLUMNS: [Column; 13] = [
    Column {
        name: "policy",
        meaning: "policy specification; * marks an oracle policy, which is handed the \
                  trace's future (libprefetch's application-directed list) and is not ranked",
        wide: false,
    },
    Column {
        name: "run",
        meaning: "replay number: the cache is emptied between runs, policy history is kept",
        wide: false,
    },
    Column {
        name: "elapsed_s",
        meaning: "modelled wall time of the run, seconds",
        wide: false,
    },
    Column {
        name: "vs_none",
        meaning: "speed-up over no prefetching: none's elapsed_s / this elapsed_s \
                  (above 1 is faster; ! marks a policy more than 0.5% slower than none)",
        wide: false,
    },
    Column {
        name: "hit_ratio",
        meaning: "demand blocks found in memory / demand blocks",
        wide: false,
    },
    Column {
        name: "accuracy",
        meaning: "prefetched blocks used by a demand access before eviction / prefetched \
                  blocks (DiskSeen's \"hit ratio\")",
        wide: false,
    },
    Column {
        name: "coverage",
        meaning: "demand blocks served by a prefetch / demand blocks (flashy's \"accuracy\")",
        wide: false,
    },
    Column {
        name: "cost",
        meaning: "blocks read by prefetching / blocks requested by the application \
                  (flashy's \"cost\")",
        wide: false,
    },
    Column {
        name: "io_wait_s",
        meaning: "time the workload waited on the device, seconds",
        wide: false,
    },
    Column {
        name: "lead_ms",
        meaning: "mean time from a prefetch's issue to the demand access it served, ms",
        wide: true,
    },
    Column {
        name: "mis_windows",
        meaning: "prefetch windows none of whose blocks were used / windows opened \
                  (DiskSeen §3.5)",
        wide: true,
    },
    Column {
        name: "prefetched",
        meaning: "blocks read by prefetching",
        wide: true,
    },
    Column {
        name: "Mreq/s",
        meaning: "simulated requests per second of host time, millions",
        wide: true,
    },
];

/// The cells of `row` in [`COLUMNS`] order.
pub fn cells(section: &Section, row: &Row) -> [String; 13] {
    let r = &row.report;
    let s = speedup(&section.rows, row);
    let flag = if is_slower(s) && !row.oracle { "!" } else { "" };
    [
        format!("{}{}", r.policy, if row.oracle { "*" } else { "" }),
        r.run.to_string(),
        format!("{:.3}", r.elapsed_s),
        format!("{}{flag}", times(s)),
        format!("{:.4}", r.hit_ratio),
        format!("{:.3}", r.prefetch_accuracy),
        format!("{:.3}", r.coverage),
        format!("{:.3}", r.cost),
        format!("{:.3}", r.io_wait_s),
        format!("{:.2}", r.lead_time * 1e3),
        format!("{}/{}", r.mis_prefetched_windows, r.windows),
        r.prefetched_blocks.to_string(),
        format!("{:.2}", r.events_per_s / 1e6),
    ]
}

/// The section as text lines: a header and the table (columns marked wide
/// only with `wide`: the rest fits 100 columns for policy names up to 30
/// characters).
pub fn render(section: &Section, wide: bool) -> Vec<String> {
    let shown: Vec<usize> = (0..COLUMNS.len())
        .filter(|&i| wide || !COLUMNS[i].wide)
        .collect();
    let data: Vec<[String; 13]> = section.rows.iter().map(|r| cells(section, r)).collect();
    let mut w: Vec<usize> = shown.iter().map(|&i| COLUMNS[i].name.len()).collect();
    for row in &data {
        for (k, &i) in shown.iter().enumerate() {
            w[k] = w[k].max(row[i].len());
        }
    }
    let line = |cols: Vec<&str>| {
        let parts: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(k, c)| {
                if k == 0 {
                    format!("{c:<width$}", width = w[k])
                } else {
                    format!("{c:>width$}", width = w[k])
                }
            })
            .collect();
        format!("  {}", parts.join("  "))
    };
    let mut out = vec![section.title()];
    out.push(line(shown.iter().map(|&i| COLUMNS[i].name).collect()));
    for row in &data {
        out.push(line(shown.iter().map(|&i| row[i].as_str()).collect()));
    }
    out
}

/// `text` wrapped at `width` columns on `; ` and `, ` boundaries, later
/// lines indented by `indent` spaces.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split_inclusive(' ') {
        let limit = if out.is_empty() {
            width
        } else {
            width - indent
        };
        if !line.is_empty() && line.len() + word.trim_end().len() > limit {
            out.push(std::mem::take(&mut line).trim_end().to_string());
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        out.push(line.trim_end().to_string());
    }
    for l in out.iter_mut().skip(1) {
        *l = format!("{}{l}", " ".repeat(indent));
    }
    out
}
