//! Running cells: loading inputs once, simulating one cell, and the
//! `local` engine (threads in this process).

use crate::grid::{cache_blocks, Cell, Settings, Source};
use crate::row::Row;
use crate::SweepError;
use outrider_sim::{simulate, thread_cpu_secs, CacheModel, SimConfig, Timing};
use outrider_trace::{Format, ReadOptions, Trace};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Instant;

/// A loaded input: its trace and, computed on first use, its distinct
/// block count (for percentage cache sizes).
pub struct Input {
    /// The trace, pages split if the settings say so.
    pub trace: Trace,
    distinct_blocks: OnceLock<u64>,
}

impl Input {
    /// Load a source under `settings` (format, lenient, split_pages).
    pub fn load(source: &Source, settings: &Settings) -> Result<Input, SweepError> {
        let trace = match source {
            Source::Trace(path) => {
                let format = match settings.format.as_str() {
                    "auto" => None,
                    f => Some(Format::from_name(f).map_err(|e| SweepError::Grid(e.to_string()))?),
                };
                let opts = ReadOptions {
                    format,
                    lenient: settings.lenient,
                    ..ReadOptions::default()
                };
                let (trace, _) = outrider_trace::read_trace(std::path::Path::new(path), &opts)
                    .map_err(|e| SweepError::Input(e.to_string()))?;
                trace
            }
            Source::Workload(spec) => outrider_trace::workloads::generate(spec)
                .map_err(|e| SweepError::Input(format!("workload {spec}: {e}")))?,
        };
        let trace = if settings.split_pages {
            trace.split_pages()
        } else {
            trace
        };
        Ok(Input {
            trace,
            distinct_blocks: OnceLock::new(),
        })
    }

    fn distinct_blocks(&self) -> u64 {
        *self
            .distinct_blocks
            .get_or_init(|| outrider_trace::TraceStats::of(&self.trace).distinct_blocks)
    }
}

/// The simulator configuration of one cell.
pub fn sim_config(
    cache_blocks: u64,
    device: &str,
    runs: u32,
    settings: &Settings,
) -> Result<SimConfig, SweepError> {
    let bad = |what: &str, e: String| SweepError::Grid(format!("settings.{what}: {e}"));
    Ok(SimConfig {
        cache_blocks,
        cache_model: CacheModel::parse(&settings.cache_model).map_err(|e| bad("cache_model", e))?,
        device: device.to_string(),
        runs,
        timing: Timing::parse(&settings.timing).map_err(|e| bad("timing", e))?,
        think_ns: None,
        ..SimConfig::default()
    })
}

/// Simulate one cell on its loaded input; the row holds the last run.
pub fn run_cell(cell: &Cell, input: &Input) -> Result<Row, SweepError> {
    let mut rows = run_cell_all(cell, input)?;
    rows.pop()
        .ok_or_else(|| SweepError::Input(format!("{}: no run reported", cell.key())))
}

/// Simulate one cell on its loaded input: one row per run (`run` 1 to
/// `runs`), each with the cell's host time.
pub fn run_cell_all(cell: &Cell, input: &Input) -> Result<Vec<Row>, SweepError> {
    let wall = Instant::now();
    let cpu = thread_cpu_secs();
    let blocks = cache_blocks(&cell.cache, || input.distinct_blocks())?;
    let cfg = sim_config(blocks, &cell.device, cell.runs, &cell.settings)?;
    let mut policy = outrider_core::build_policy(&cell.policy)
        .map_err(|e| SweepError::Grid(format!("policy {}: {e}", cell.policy)))?;
    let res = simulate(&input.trace, &mut policy, &cell.policy, &cfg, &mut |_| {})
        .map_err(SweepError::Input)?;
    let (wall_s, cpu_s) = (wall.elapsed().as_secs_f64(), thread_cpu_secs() - cpu);
    Ok(res
        .reports
        .iter()
        .map(|r| Row::new(cell, &cfg, &res, r, wall_s, cpu_s))
        .collect())
}

/// Load every distinct source of `cells` once, on up to `threads`
/// threads (generating a large workload takes as long as simulating it).
pub fn load_inputs(cells: &[Cell], threads: usize) -> Result<HashMap<Source, Input>, SweepError> {
    let mut todo: Vec<&Cell> = Vec::new();
    for c in cells {
        if !todo.iter().any(|t| t.source == c.source) {
            todo.push(c);
        }
    }
    let next = AtomicUsize::new(0);
    let loaded = std::sync::Mutex::new(HashMap::new());
    let first_err = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, todo.len().max(1)) {
            s.spawn(|| {
                while let Some(c) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match Input::load(&c.source, &c.settings) {
                        Ok(input) => {
                            lock(&loaded).insert(c.source.clone(), input);
                        }
                        Err(e) => {
                            lock(&first_err).get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    match first_err.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(loaded.into_inner().unwrap_or_else(|e| e.into_inner())),
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `local` engine: run `cells` on `threads` threads of this process,
/// handing each finished row to `sink` on the calling thread, in
/// completion order. The first error stops the threads from taking new
/// cells; rows already finished are still handed over, then the error is
/// returned. `threads == 0` means one per available core.
pub fn run_local(
    cells: &[Cell],
    threads: usize,
    sink: &mut dyn FnMut(Row) -> Result<(), SweepError>,
) -> Result<(), SweepError> {
    if cells.is_empty() {
        return Ok(());
    }
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
    .min(cells.len());
    let inputs = load_inputs(cells, threads)?;
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Result<Row, SweepError>>();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, inputs) = (&next, &inputs);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(cell) = cells.get(i) else { break };
                let row = run_cell(cell, &inputs[&cell.source]);
                let failed = row.is_err();
                if tx.send(row).is_err() || failed {
                    next.store(cells.len(), Ordering::Relaxed);
                    break;
                }
            });
        }
        drop(tx);
        let mut first_err = None;
        for row in rx {
            let handled = row.and_then(&mut *sink);
            if let Err(e) = handled {
                next.store(cells.len(), Ordering::Relaxed);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    })
}
