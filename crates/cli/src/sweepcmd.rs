//! `outrider sweep`: a grid of simulations, on this machine's cores or on
//! Ray, one row per cell to CSV and Parquet (crates/sweep).

use crate::usage;
use outrider_sweep::grid::ParamValue;
use outrider_sweep::{Grid, SweepError};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Command;

/// `outrider sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// A grid file (TOML; see examples/sweep.toml). Flags below replace
    /// the file's value of the same list.
    pub grid: Option<PathBuf>,
    /// Trace files (repeat the flag or separate with commas).
    #[arg(long = "trace", value_delimiter = ',')]
    pub traces: Vec<String>,
    /// Built-in workloads or suites (repeat the flag; ';' separates
    /// specifications that have parameters).
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Policies, comma-separated (';' when a specification has parameters).
    #[arg(long)]
    pub policies: Option<String>,
    /// Parameter values of one policy entry: POLICY.KEY=V1,V2,... (repeat
    /// for more keys; values are crossed).
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Cache sizes, comma-separated (64MiB,256MiB,10%).
    #[arg(long, value_delimiter = ',')]
    pub cache: Vec<String>,
    /// Device models, comma-separated (hdd,ssd,nvme,raid0:N,none).
    #[arg(long = "device", value_delimiter = ',')]
    pub devices: Vec<String>,
    /// Run counts, comma-separated; a cell with N runs reports run N.
    #[arg(long, value_delimiter = ',')]
    pub runs: Vec<u32>,
    /// Trace format (auto detects).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed trace records.
    #[arg(long)]
    pub lenient: bool,
    /// Split requests into single 4 KiB-page accesses.
    #[arg(long)]
    pub split_pages: bool,
    /// Cache model: lru or split.
    #[arg(long)]
    pub cache_model: Option<String>,
    /// Request timing: think or replay.
    #[arg(long)]
    pub timing: Option<String>,
    /// Output: NAME.parquet (plus the resumable log NAME.csv) or NAME.csv.
    /// Cells already in the log are skipped.
    #[arg(long, default_value = "sweep.parquet")]
    pub out: PathBuf,
    /// Where cells run: local (threads in this process) or ray.
    #[arg(long, default_value = "local")]
    pub engine: String,
    /// Threads of the local engine (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Ray cluster address (default $RAY_ADDRESS, else a local Ray on 127.0.0.1).
    #[arg(long)]
    pub ray_address: Option<String>,
    /// Ray workers read traces at their grid paths (a shared file system)
    /// instead of receiving their bytes from the driver.
    #[arg(long)]
    pub ray_shared_traces: bool,
    /// Python with the outrider package and ray installed (default
    /// $OUTRIDER_PYTHON, else python3).
    #[arg(long)]
    pub python: Option<String>,
}

/// The grid from the file (if any) with the flags applied.
fn grid(a: &SweepArgs) -> anyhow::Result<Grid> {
    let mut g = match &a.grid {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
            Grid::from_toml(&text, &p.display().to_string()).map_err(|e| usage(e.to_string()))?
        }
        None => Grid::default(),
    };
    let set = |list: &mut Vec<String>, given: &[String]| {
        if !given.is_empty() {
            *list = given.to_vec();
        }
    };
    set(&mut g.traces, &a.traces);
    let workloads: Vec<String> = a.workloads.iter().flat_map(|w| split_list(w)).collect();
    set(&mut g.workloads, &workloads);
    if let Some(p) = &a.policies {
        g.policies = split_list(p);
    }
    set(&mut g.cache, &a.cache);
    set(&mut g.devices, &a.devices);
    if !a.runs.is_empty() {
        g.runs = a.runs.clone();
    }
    for p in &a.params {
        let (entry, values) = parse_param(p)?;
        g.params.entry(entry.0).or_default().insert(entry.1, values);
    }
    let s = &mut g.settings;
    for (field, flag) in [
        (&mut s.format, &a.format),
        (&mut s.cache_model, &a.cache_model),
        (&mut s.timing, &a.timing),
    ] {
        if let Some(v) = flag {
            *field = v.clone();
        }
    }
    s.lenient |= a.lenient;
    s.split_pages |= a.split_pages;
    Ok(g)
}

/// Split a list on ';' if it has one, else on ','.
fn split_list(text: &str) -> Vec<String> {
    let sep = if text.contains(';') { ';' } else { ',' };
    text.split(sep)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `POLICY.KEY=V1,V2` → ((POLICY, KEY), [V1, V2]).
fn parse_param(text: &str) -> anyhow::Result<((String, String), Vec<ParamValue>)> {
    let bad = || usage(format!("--param '{text}': expected POLICY.KEY=V1,V2,..."));
    let (lhs, values) = text.split_once('=').ok_or_else(bad)?;
    let (policy, key) = lhs.rsplit_once('.').ok_or_else(bad)?;
    let values: Vec<ParamValue> = split_list(values)
        .into_iter()
        .map(ParamValue::String)
        .collect();
    if policy.is_empty() || key.is_empty() || values.is_empty() {
        return Err(bad());
    }
    Ok(((policy.to_string(), key.to_string()), values))
}

fn sweep_err(e: SweepError) -> anyhow::Error {
    match e {
        SweepError::Output(m) => anyhow::anyhow!(m),
        SweepError::Grid(m) | SweepError::Input(m) => usage(m),
    }
}

/// `outrider sweep`.
pub fn run(a: SweepArgs) -> anyhow::Result<()> {
    let g = grid(&a)?;
    let total = g.cells().map_err(sweep_err)?.len();
    match a.engine.as_str() {
        "local" => local(&g, &a, total),
        "ray" => ray(&g, &a),
        e => Err(usage(format!("--engine '{e}': expected local or ray"))),
    }
}

fn local(g: &Grid, a: &SweepArgs, total: usize) -> anyhow::Result<()> {
    let show = std::io::stderr().is_terminal();
    let mut ran = 0usize;
    let rows = outrider_sweep::sweep_local(g, Some(&a.out), a.threads, &mut |r| {
        ran += 1;
        if show {
            eprintln!("[{ran}] {}  {:.3} s", r.cell, r.wall_s);
        }
    })
    .map_err(sweep_err)?;
    println!(
        "{total} cells: {ran} run, {} already in the output; {} rows in {}",
        total - ran,
        rows.len(),
        a.out.display()
    );
    Ok(())
}

fn ray(g: &Grid, a: &SweepArgs) -> anyhow::Result<()> {
    let grid_json = std::env::temp_dir().join(format!("outrider-grid-{}.json", std::process::id()));
    std::fs::write(&grid_json, serde_json::to_string(g)?)
        .map_err(|e| anyhow::anyhow!("{}: {e}", grid_json.display()))?;
    let python = a
        .python
        .clone()
        .or_else(|| std::env::var("OUTRIDER_PYTHON").ok())
        .unwrap_or_else(|| "python3".into());
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "outrider.sweep_ray", "--grid-json"])
        .arg(&grid_json)
        .arg("--out")
        .arg(&a.out);
    if let Some(addr) = &a.ray_address {
        cmd.args(["--address", addr]);
    }
    if a.ray_shared_traces {
        cmd.arg("--shared-traces");
    }
    let status = cmd.status();
    let _ = std::fs::remove_file(&grid_json);
    let status = status.map_err(|e| {
        usage(format!(
            "--engine ray runs '{python} -m outrider.sweep_ray': {e} (install the outrider \
             Python package and ray, or name the interpreter with --python)"
        ))
    })?;
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(usage("the Ray driver rejected the sweep (see above)")),
        _ => Err(anyhow::anyhow!("the Ray driver failed ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_param_flag_names_a_policy_entry_a_key_and_its_values() {
        let ((p, k), v) = parse_param("diskseen.k=4,8").unwrap();
        assert_eq!((p.as_str(), k.as_str(), v.len()), ("diskseen", "k", 2));
        // A stack's entry may contain '+'; the key follows the last '.'.
        let ((p, _), _) = parse_param("readahead+diskseen.k=4").unwrap();
        assert_eq!(p, "readahead+diskseen");
        for bad in ["diskseen", "k=4", "diskseen.k=", ".k=4"] {
            assert!(parse_param(bad).is_err(), "{bad}");
        }
    }
}
