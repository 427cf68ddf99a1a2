//! The HTML report: one self-contained page (inline CSS and SVG, no
//! scripts) with what produced it, a verdict and speed-up grid per input,
//! curves over cache size when several sizes ran, per-input charts
//! (speed-up over `none`, coverage vs cost, time series such as flashy's
//! aggressiveness), the full tables, and a legend defining every column.

use super::svg::{self, esc, Bar, Point, Series, PALETTE};
use super::table::{cells, COLUMNS};
use super::verdict::{is_slower, speedup, times, verdicts};
use super::{Provenance, Row, Section};
use std::collections::BTreeMap;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1400px;color:#222}\
h2{margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.6em 0}\
td,th{border:1px solid #ccc;padding:2px 7px;text-align:right;font-size:13px}\
td:first-child,th:first-child{text-align:left}\
.charts{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}\
.verdict{font-weight:bold}.slow{color:#b00}code{background:#f3f3f3;padding:1px 4px}\
dt{font-family:monospace;font-weight:bold}dd{margin:0 0 .4em 1.5em}\
.settings td{text-align:left}li{margin:.15em 0}";

/// The whole page for `sections`.
pub fn page(prov: &Provenance, sections: &[Section]) -> String {
    let colours = colours(sections);
    let mut h = format!(
        "<!doctype html><html lang=en><meta charset=utf-8><title>outrider report</title>\
         <style>{STYLE}</style><h1>outrider report</h1>"
    );
    provenance(&mut h, prov);
    h.push_str(
        "<h2>Verdicts</h2><p>Speed-up = none's elapsed time / the policy's; an oracle \
         policy is handed the trace's future and not ranked.</p><ul>",
    );
    for s in sections {
        for v in verdicts(&s.rows) {
            let text = v.to_string();
            let text = esc(text.trim_start_matches("verdict: ")).replace(
                "SLOWER than none",
                "<span class=slow>SLOWER than none</span>",
            );
            let _ = write!(
                h,
                "<li><b>{}</b>: {text}</li>",
                esc(&grid_label(s, v.run, sections))
            );
        }
    }
    h.push_str("</ul><div class=charts>");
    h.push_str(&speedup_grid(sections));
    h.push_str("</div>");
    curves(&mut h, sections, &colours);
    for s in sections {
        section(&mut h, s, &colours);
    }
    legend(&mut h);
    h.push_str("</html>\n");
    h
}

fn provenance(h: &mut String, prov: &Provenance) {
    let _ = write!(
        h,
        "<p>Produced by <code>{}</code> — outrider {}, {}.</p><table class=settings><tr><th>setting</th><th>value</th></tr>",
        esc(&prov.command),
        esc(&prov.version),
        utc_now()
    );
    for (k, v) in &prov.settings {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    h.push_str("</table>");
}

/// A colour per policy, in order of first appearance.
fn colours(sections: &[Section]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for r in sections.iter().flat_map(|s| &s.rows) {
        let n = m.len();
        m.entry(r.report.policy.clone())
            .or_insert_with(|| PALETTE[n % PALETTE.len()].to_string());
    }
    m
}

/// Rows: input (and run); columns: policies; cells: speed-up over none.
fn speedup_grid(sections: &[Section]) -> String {
    let mut cols: Vec<String> = Vec::new();
    for r in sections.iter().flat_map(|s| &s.rows) {
        if r.report.policy != "none" && !cols.contains(&r.report.policy) {
            cols.push(r.report.policy.clone());
        }
    }
    let mut names = Vec::new();
    let mut cells = Vec::new();
    for s in sections {
        let mut runs: Vec<u32> = s.rows.iter().map(|r| r.report.run).collect();
        runs.dedup();
        for run in runs {
            names.push(grid_label(s, run, sections));
            cells.push(
                cols.iter()
                    .map(|p| {
                        let row = s
                            .rows
                            .iter()
                            .find(|r| r.report.run == run && &r.report.policy == p)?;
                        let v = speedup(&s.rows, row)?;
                        Some((
                            v,
                            format!("{}{}", times(Some(v)), if row.oracle { "*" } else { "" }),
                        ))
                    })
                    .collect(),
            );
        }
    }
    let labels: Vec<String> = cols.clone();
    svg::grid(
        "Speed-up over none (elapsed time of none / of the policy; * oracle)",
        &names,
        &labels,
        &cells,
        1.0,
    )
}

fn grid_label(s: &Section, run: u32, all: &[Section]) -> String {
    let sizes = all.iter().filter(|o| o.input == s.input).count();
    let mut l = s.input.rsplit('/').next().unwrap_or(&s.input).to_string();
    if sizes > 1 {
        l += &format!(" @{}", outrider_core::size::ByteSize(s.cache_blocks * 4096));
    }
    if run > 1 {
        l += &format!(" run {run}");
    }
    l
}

/// Elapsed time and miss ratio over cache size, per input that ran at
/// several sizes (first run).
fn curves(h: &mut String, sections: &[Section], colours: &BTreeMap<String, String>) {
    let mut inputs: Vec<&str> = Vec::new();
    for s in sections {
        if !inputs.contains(&s.input.as_str()) {
            inputs.push(&s.input);
        }
    }
    for input in inputs {
        let at: Vec<&Section> = sections.iter().filter(|s| s.input == input).collect();
        if at.len() < 2 {
            continue;
        }
        let _ = write!(
            h,
            "<h2>{} over cache size</h2><div class=charts>",
            esc(input)
        );
        for (what, f) in [
            (
                "elapsed_s",
                (|r: &Row| r.report.elapsed_s) as fn(&Row) -> f64,
            ),
            ("miss ratio (1 - hit_ratio)", |r: &Row| {
                1.0 - r.report.hit_ratio
            }),
        ] {
            let series: Vec<Series> = colours
                .iter()
                .filter_map(|(p, c)| {
                    let mut points: Vec<(f64, f64)> = at
                        .iter()
                        .filter_map(|s| {
                            let row = s
                                .rows
                                .iter()
                                .find(|r| &r.report.policy == p && r.report.run == 1)?;
                            Some((s.cache_blocks as f64 * 4096.0 / (1 << 20) as f64, f(row)))
                        })
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (!points.is_empty()).then(|| Series {
                        name: p.clone(),
                        colour: c.clone(),
                        points,
                    })
                })
                .collect();
            h.push_str(&svg::lines(
                what,
                "cache size, MiB (log)",
                what,
                &series,
                true,
            ));
        }
        h.push_str("</div>");
    }
}

fn section(h: &mut String, s: &Section, colours: &BTreeMap<String, String>) {
    let _ = write!(h, "<h2>{}</h2><div class=charts>", esc(&s.title()));
    let first_run: Vec<&Row> = s.rows.iter().filter(|r| r.report.run == 1).collect();
    let bars: Vec<Bar> = first_run
        .iter()
        .filter_map(|r| {
            let v = speedup(&s.rows, r)?;
            let slow = is_slower(Some(v)) && !r.oracle;
            Some(Bar {
                label: format!("{}{}", r.report.policy, if r.oracle { "*" } else { "" }),
                value: v,
                colour: if slow {
                    "#d62728".into()
                } else {
                    colours[&r.report.policy].clone()
                },
                note: format!("{}{}", times(Some(v)), if slow { " slower" } else { "" }),
            })
        })
        .collect();
    if !bars.is_empty() {
        h.push_str(&svg::ratio_bars(
            "Speed-up over none, run 1 (log scale; red: slower)",
            "none's elapsed time / the policy's",
            &bars,
            1.0,
        ));
    }
    let points: Vec<Point> = first_run
        .iter()
        .filter(|r| r.report.prefetched_blocks > 0)
        .map(|r| Point {
            label: r.report.policy.clone(),
            colour: colours[&r.report.policy].clone(),
            x: r.report.cost,
            y: r.report.coverage,
        })
        .collect();
    if !points.is_empty() {
        h.push_str(&svg::scatter(
            "Coverage vs cost, run 1",
            "cost (prefetched / requested blocks)",
            "coverage",
            &points,
        ));
    }
    for r in s.rows.iter().filter(|r| !r.series.is_empty()) {
        series_charts(h, r, colours);
    }
    h.push_str("</div><table><tr>");
    for c in &COLUMNS {
        let _ = write!(h, "<th>{}</th>", c.name);
    }
    h.push_str("</tr>");
    for r in &s.rows {
        let cls = if is_slower(speedup(&s.rows, r)) && !r.oracle {
            " class=slow"
        } else {
            ""
        };
        let _ = write!(h, "<tr{cls}>");
        for c in cells(s, r) {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    for v in verdicts(&s.rows) {
        let _ = write!(h, "<p class=verdict>{}</p>", esc(&v.to_string()));
    }
}

/// A policy's time series: its dimensionless values (flashy's `scale`, its
/// aggressiveness) on one chart, its rates (`*_mb_s`) on another.
fn series_charts(h: &mut String, r: &Row, colours: &BTreeMap<String, String>) {
    let names: Vec<&str> = r.series[0].values.iter().map(|(k, _)| *k).collect();
    let title = format!("{} run {}", r.report.policy, r.report.run);
    for (rates, what) in [(false, "factor"), (true, "MB/s")] {
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.ends_with("_mb_s") == rates)
            .map(|(k, n)| Series {
                name: n.to_string(),
                colour: if names.len() == 1 {
                    colours[&r.report.policy].clone()
                } else {
                    PALETTE[k % PALETTE.len()].to_string()
                },
                points: r
                    .series
                    .iter()
                    .filter_map(|p| Some((p.time_ns as f64 * 1e-9, p.values.get(k)?.1)))
                    .collect(),
            })
            .collect();
        if !series.is_empty() {
            let t = if rates {
                format!("{title}: rates over time")
            } else {
                format!("{title}: aggressiveness over time")
            };
            h.push_str(&svg::lines(&t, "modelled time, s", what, &series, false));
        }
    }
}

fn legend(h: &mut String) {
    h.push_str("<h2>Legend</h2><dl>");
    for c in &COLUMNS {
        let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", c.name, esc(c.meaning));
    }
    h.push_str(
        "<dt>verdict</dt><dd>per input and run: the fastest policy that is not an oracle, \
         its speed-up over none, every policy slower than none, and the oracles apart</dd></dl>",
    );
}

/// The current UTC time as `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = crate::output::utc_datetime(secs as i64);
    format!("{} UTC", &t[..16])
}
