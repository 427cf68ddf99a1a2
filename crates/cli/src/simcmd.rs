//! `outrider sim` and `outrider compare`.

use crate::input::{load, InputArgs, Named};
use crate::output::JsonLine;
use crate::report::{html, table, verdict, Provenance, Row, Section};
use crate::usage;
use outrider_core::size::ByteSize;
use outrider_core::{build_policy, PolicyError, BLOCK_SIZE};
use outrider_sim::{simulate, CacheModel, SimConfig, Timing};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Options shared by `sim` and `compare`.
#[derive(clap::Args, Clone, Debug)]
pub struct SimOpts {
    #[command(flatten)]
    pub input: InputArgs,
    /// Page-cache size: bytes with a unit (64KiB, 256MiB, 1.5GiB: powers of
    /// 1024; 100MB: powers of 1000) or a percentage of the input's distinct
    /// 4 KiB blocks (e.g. 10%); several, comma-separated, run one after
    /// another (and give curves in the HTML report).
    #[arg(long, default_value = "256MiB")]
    pub cache: String,
    /// Cache model: lru (one LRU list, prefetched blocks at MRU) or split
    /// (DiskSeen's prefetching area + caching area).
    #[arg(long, default_value = "lru")]
    pub cache_model: String,
    /// Device model: hdd, ssd, nvme, none (instantaneous), raid0:N or
    /// raid0:N:MEMBER (N members of hdd, ssd or nvme; default hdd), or
    /// `calibrated[:PATH]` (fitted to this machine's disk by `outrider calibrate`).
    #[arg(long, default_value = "hdd")]
    pub device: String,
    /// Replay the input N times (1 to 1000), emptying the cache but keeping
    /// each policy's history between runs.
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Timing: think (next request = previous completion + recorded gap) or
    /// replay (next request = max(previous completion, recorded time)).
    #[arg(long, default_value = "think")]
    pub timing: String,
    /// Constant think time between a process's requests, with a unit (0,
    /// 250ns, 20us, 1.5ms, 2s), replacing the trace's gaps.
    #[arg(long)]
    pub think: Option<String>,
    /// The driver's do-no-harm guard: off (the papers' systems), live (as
    /// `outrider run` runs it: a budget of a quarter of the cache for
    /// prefetched-but-unused blocks, 30 s write-off, admission halved while
    /// prefetching wastes more than it serves), or live:BUDGET (a size, or a
    /// fraction of the cache).
    #[arg(long, default_value = "off")]
    pub guard: String,
    /// Print one JSON object per (policy, run) on stdout instead of a table
    /// (metric names: docs/metrics.md).
    #[arg(long)]
    pub json: bool,
    /// History store (SQLite): learned models (last-successor, pcm, epcm)
    /// are loaded from it before the simulation and saved after, under the
    /// policy specification and --history-key; DiskSeen's block table is
    /// the store's, shared by every key and spec (`diskseen:shared=off`:
    /// per key and spec). A bad file is a warning and a fresh model.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Whose history in --history (an application, a workload).
    #[arg(long, default_value = "global")]
    pub history_key: String,
}

/// `outrider sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// Policy NAME[:k=v,...]; NAME:help lists its parameters.
    #[arg(long)]
    pub policy: String,
    #[command(flatten)]
    pub opts: SimOpts,
}

/// `outrider compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Comma-separated policies, each NAME[:k=v,...] (parameters of one
    /// policy are separated by commas too: use ';' between policies when a
    /// specification has parameters). Default: every registered policy.
    #[arg(long)]
    pub policies: Option<String>,
    #[command(flatten)]
    pub opts: SimOpts,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// How `compare` reports.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Also write the comparison as an HTML page with SVG charts.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Show every column in the terminal (lead time, windows, prefetched
    /// blocks, simulation speed), beyond 100 columns.
    #[arg(long)]
    pub wide: bool,
}

/// Most `--runs`: each run replays the whole input, and the policies that
/// learn across runs (`auto`, `pcm`, `epcm`) settle within a few.
pub const MAX_RUNS: u32 = 1000;

/// A cache size in blocks: bytes with a unit, or `N%` of the distinct
/// blocks (`distinct` is called only for a percentage). `flag` names the
/// option in messages.
pub fn cache_blocks(flag: &str, text: &str, distinct: impl FnOnce() -> u64) -> anyhow::Result<u64> {
    if let Some(pct) = text.strip_suffix('%') {
        let f: f64 = pct
            .trim()
            .parse()
            .ok()
            .filter(|f: &f64| *f > 0.0 && *f <= 100.0)
            .ok_or_else(|| {
                usage(format!(
                    "{flag} '{text}': expected a percentage in (0, 100]"
                ))
            })?;
        return Ok(((distinct() as f64 * f / 100.0) as u64).max(1));
    }
    let bytes = outrider_core::size::parse_size(text).map_err(|e| usage(format!("{flag}: {e}")))?;
    if bytes < BLOCK_SIZE {
        return Err(usage(format!(
            "{flag} '{text}': must hold at least one 4 KiB block"
        )));
    }
    Ok(bytes / BLOCK_SIZE)
}

/// One configuration per `--cache` size.
fn configs(o: &SimOpts, input: &Named) -> anyhow::Result<Vec<SimConfig>> {
    let mut distinct = None;
    let mut out = Vec::new();
    for size in o.cache.split(',').map(str::trim) {
        let blocks = cache_blocks("--cache", size, || {
            *distinct.get_or_insert_with(|| outrider_trace::stats::distinct_blocks(&input.trace))
        })?;
        out.push(config(o, blocks)?);
    }
    Ok(out)
}

fn config(o: &SimOpts, cache_blocks: u64) -> anyhow::Result<SimConfig> {
    let cache_model =
        CacheModel::parse(&o.cache_model).map_err(|e| usage(format!("--cache-model: {e}")))?;
    let timing = Timing::parse(&o.timing).map_err(|e| usage(format!("--timing: {e}")))?;
    let think_ns = o
        .think
        .as_deref()
        .map(|t| {
            outrider_core::size::parse_duration_ns(t).map_err(|e| usage(format!("--think: {e}")))
        })
        .transpose()?;
    if !(1..=MAX_RUNS).contains(&o.runs) {
        return Err(usage(format!(
            "--runs {}: expected 1 to {MAX_RUNS}",
            o.runs
        )));
    }
    let device = crate::devmodel::resolve_device(&o.device)?;
    outrider_sim::device::build_device(&device).map_err(|e| usage(format!("--device: {e}")))?;
    Ok(SimConfig {
        cache_blocks,
        cache_model,
        device,
        runs: o.runs,
        timing,
        think_ns,
        guard: outrider_driver::GuardOptions::parse(&o.guard, cache_blocks)
            .map_err(|e| usage(format!("--guard {e}")))?,
    })
}

fn check_policy(spec: &str) -> anyhow::Result<Option<String>> {
    match build_policy(spec) {
        Ok(_) => Ok(None),
        Err(PolicyError::Help(text)) => Ok(Some(text)),
        Err(e) => Err(usage(format!("--policy {spec}: {e}"))),
    }
}

/// Split `--policies`: commas separate policies unless a `;` is present.
fn split_policies(text: &str) -> Vec<String> {
    let sep = if text.contains(';') { ';' } else { ',' };
    text.split(sep)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A progress bar for `total` requests on a terminal, for long inputs.
fn progress_bar(o: &SimOpts, name: &str, total: u64) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() || o.json || total < 1 << 22 {
        return None;
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:40}] {pos}/{len} requests ({per_sec})",
        )
        .expect("valid template"),
    );
    b.set_message(name.to_string());
    Some(b)
}

/// Every policy on one input at one configuration.
fn run_section(
    policies: &[String],
    o: &SimOpts,
    input: &Named,
    cfg: &SimConfig,
) -> anyhow::Result<Section> {
    let per_policy = input.trace.records.len() as u64 * u64::from(cfg.runs);
    let bar = progress_bar(o, &input.name, per_policy * policies.len() as u64);
    let mut rows = Vec::new();
    for (k, spec) in policies.iter().enumerate() {
        let mut policy = build_policy(spec).map_err(|e| usage(e.to_string()))?;
        let mut store = o
            .history
            .as_deref()
            .and_then(|db| crate::history::load(db, &o.history_key, spec, &mut policy));
        let base = per_policy * k as u64;
        let res = simulate(&input.trace, &mut policy, spec, cfg, &mut |n| {
            if let Some(b) = &bar {
                b.set_position(base + n);
            }
        })
        .map_err(usage)?;
        if let Some(store) = store.as_mut() {
            crate::history::save(store, &o.history_key, spec, policy.as_ref());
        }
        for (i, r) in res.reports.iter().enumerate() {
            if o.json {
                let line = JsonLine::new(&input.name, cfg, &res, r);
                println!("{}", serde_json::to_string(&line)?);
            }
            rows.push(Row {
                report: r.clone(),
                series: res.series.get(i).cloned().unwrap_or_default(),
                oracle: policy.interests().oracle,
            });
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(Section {
        input: input.name.clone(),
        cache_blocks: cfg.cache_blocks,
        settings: format!(
            "{}, device {}",
            format!("{:?}", cfg.cache_model).to_lowercase(),
            cfg.device
        ),
        rows,
    })
}

fn run_all(policies: &[String], o: &SimOpts, report: Option<&ReportArgs>) -> anyhow::Result<()> {
    for p in policies {
        if let Some(help) = check_policy(p)? {
            print!("{help}");
            return Ok(());
        }
    }
    if let Some(help) = crate::input::help(&o.input) {
        print!("{help}");
        return Ok(());
    }
    let inputs = load(&o.input)?;
    let wide = report.is_some_and(|r| r.wide);
    let mut sections = Vec::new();
    for input in &inputs {
        for cfg in configs(o, input)? {
            let section = run_section(policies, o, input, &cfg)?;
            if !o.json {
                for line in table::render(&section, wide) {
                    println!("{line}");
                }
                println!();
            }
            sections.push(section);
        }
    }
    let Some(report) = report else {
        return Ok(());
    };
    if !o.json {
        print_verdicts(&sections);
    }
    if let Some(path) = &report.html {
        let prov = Provenance::of_this_process(settings(policies, o));
        std::fs::write(path, html::page(&prov, &sections))
            .map_err(|e| usage(format!("--html {}: {e}", path.display())))?;
        if !o.json {
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// The verdict of every input, each wrapped to 100 columns.
fn print_verdicts(sections: &[Section]) {
    println!("verdicts (speed-up = none's elapsed time / the policy's; an oracle is handed the trace's future):");
    let sized = |s: &Section| sections.iter().filter(|o| o.input == s.input).count() > 1;
    for s in sections {
        let mut name = s.input.clone();
        if sized(s) {
            name += &format!(" @{}", ByteSize(s.cache_blocks * BLOCK_SIZE));
        }
        for v in verdict::verdicts(&s.rows) {
            let text = format!(
                "  {name}: {}",
                v.to_string().trim_start_matches("verdict: ")
            );
            for line in table::wrap(&text, 100, 6) {
                println!("{line}");
            }
        }
    }
}

/// The settings a report records.
fn settings(policies: &[String], o: &SimOpts) -> Vec<(String, String)> {
    let input = match (&o.input.trace, &o.input.workload) {
        (Some(t), _) => format!("trace {} (format {})", t.display(), o.input.format),
        (None, Some(w)) => format!("workload {w}"),
        (None, None) => String::new(),
    };
    [
        ("input", input),
        ("policies", policies.join(", ")),
        ("cache", o.cache.clone()),
        ("cache model", o.cache_model.clone()),
        ("device", o.device.clone()),
        ("runs", o.runs.to_string()),
        ("timing", o.timing.clone()),
        (
            "think",
            o.think.clone().unwrap_or_else(|| "from the trace".into()),
        ),
        ("split pages", o.input.split_pages.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `outrider sim`.
pub fn sim(a: SimArgs) -> anyhow::Result<()> {
    run_all(&[a.policy], &a.opts, None)
}

/// `outrider compare`.
pub fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let policies = match &a.policies {
        Some(t) => split_policies(t),
        None => outrider_core::POLICY_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    if policies.is_empty() {
        return Err(usage("--policies: expected at least one policy"));
    }
    run_all(&policies, &a.opts, Some(&a.report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_split_on_semicolons_when_parameters_need_commas() {
        assert_eq!(split_policies("none,obl"), vec!["none", "obl"]);
        assert_eq!(
            split_policies("obl:k=2;readahead:ra_pages=64"),
            vec!["obl:k=2", "readahead:ra_pages=64"]
        );
    }
}
