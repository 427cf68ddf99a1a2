//! `outrider._outrider`: the native half of the `outrider` Python package.
//!
//! The one design decision a reader must know: **every value crosses the
//! boundary as JSON text or plain strings** (grids and cells in, rows
//! out), parsed by `serde` here and `json` in Python. The rows are the
//! sweep crate's [`Row`]s, so Python sees exactly the column names and
//! values `outrider sweep` writes; the Python side (`python/outrider/`)
//! turns them into dicts and DataFrames. Simulations run with the GIL
//! released (`Python::detach`), so Python threads, and Ray's, keep running.
//!
//! The application-directed client's C ABI (`outrider-directed`) is linked
//! into this library, so `outrider.directed` (ctypes) loads its symbols
//! from here.
#![deny(missing_docs)]

use outrider_sweep::{Cell, Grid, Input, Output, Row, Source, SweepError};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::Path;
use std::sync::{Arc, Mutex};

// Keep the directed C ABI in this library (nothing here calls it).
use directed as _;

fn py_err(e: SweepError) -> PyErr {
    match e {
        SweepError::Output(m) => PyOSError::new_err(m),
        SweepError::Grid(m) | SweepError::Input(m) => PyValueError::new_err(m),
    }
}

fn parse_grid(grid_json: &str) -> PyResult<Grid> {
    serde_json::from_str(grid_json).map_err(|e| PyValueError::new_err(format!("grid: {e}")))
}

fn to_json(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|r| serde_json::to_string(r).expect("rows serialize"))
        .collect()
}

/// Every run of every cell of `grid_json`, one JSON row per run (for
/// `sim` and `compare`).
#[pyfunction]
fn simulate(py: Python<'_>, grid_json: &str) -> PyResult<Vec<String>> {
    let grid = parse_grid(grid_json)?;
    py.detach(|| {
        let cells = grid.cells()?;
        let inputs = outrider_sweep::load_inputs(&cells, 1)?;
        let mut rows = Vec::new();
        for c in &cells {
            rows.extend(outrider_sweep::run_cell_all(c, &inputs[&c.source])?);
        }
        Ok(to_json(&rows))
    })
    .map_err(py_err)
}

/// The local engine: run `grid_json` on `threads` threads (0: all cores),
/// resuming `out` if given; every row as JSON.
#[pyfunction]
#[pyo3(signature = (grid_json, out=None, threads=0))]
fn sweep_local(
    py: Python<'_>,
    grid_json: &str,
    out: Option<&str>,
    threads: usize,
) -> PyResult<Vec<String>> {
    let grid = parse_grid(grid_json)?;
    py.detach(|| outrider_sweep::sweep_local(&grid, out.map(Path::new), threads, &mut |_| {}))
        .map(|rows| to_json(&rows))
        .map_err(py_err)
}

/// The most recently loaded input, kept for the next cell on the same
/// source (a Ray worker usually gets several cells of one trace).
type Loaded = Option<(Source, String, Arc<Input>)>;
static LAST_INPUT: Mutex<Loaded> = Mutex::new(None);

/// The cell's input, loaded from `local` (a copy of its trace file) when
/// given, else from its source.
fn input_of(cell: &Cell, local: Option<&str>) -> Result<Arc<Input>, SweepError> {
    let source = match local {
        Some(path) => Source::Trace(path.to_string()),
        None => cell.source.clone(),
    };
    let settings = serde_json::to_string(&cell.settings).expect("settings serialize");
    let mut last = LAST_INPUT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((s, set, input)) = last.as_ref() {
        if *s == source && *set == settings {
            return Ok(input.clone());
        }
    }
    *last = None; // free the previous trace before loading the next
    let input = Arc::new(Input::load(&source, &cell.settings)?);
    *last = Some((source, settings, input.clone()));
    Ok(input)
}

/// Every cell of `grid_json`, as JSON.
#[pyfunction]
fn cells(grid_json: &str) -> PyResult<Vec<String>> {
    let cells = parse_grid(grid_json)?.cells().map_err(py_err)?;
    Ok(cells
        .iter()
        .map(|c| serde_json::to_string(c).expect("cells serialize"))
        .collect())
}

/// Run one cell given as JSON (from `cells` or `SweepOutput.pending`);
/// its row as JSON. What a Ray task calls. `local_path`: a local copy of
/// the cell's trace file to read instead of its path (the row still names
/// the original).
#[pyfunction]
#[pyo3(signature = (cell_json, local_path=None))]
fn run_cell(py: Python<'_>, cell_json: &str, local_path: Option<&str>) -> PyResult<String> {
    let cell: Cell =
        serde_json::from_str(cell_json).map_err(|e| PyValueError::new_err(format!("cell: {e}")))?;
    py.detach(|| {
        let input = input_of(&cell, local_path)?;
        outrider_sweep::run_cell(&cell, &input)
    })
    .map(|row| serde_json::to_string(&row).expect("rows serialize"))
    .map_err(py_err)
}

/// A sweep's output files, for engines that run cells elsewhere (Ray):
/// open, ask for the pending cells, append each row as it arrives, finish.
#[pyclass]
struct SweepOutput {
    inner: Option<Output>,
}

#[pymethods]
impl SweepOutput {
    #[new]
    fn new(out: &str) -> PyResult<Self> {
        Ok(SweepOutput {
            inner: Some(Output::open(Path::new(out)).map_err(py_err)?),
        })
    }

    /// The cells of `grid_json` not yet in the output, as JSON.
    fn pending(&self, grid_json: &str) -> PyResult<Vec<String>> {
        let grid = parse_grid(grid_json)?;
        let pending = outrider_sweep::pending(&grid, self.inner.as_ref()).map_err(py_err)?;
        Ok(pending
            .iter()
            .map(|c| serde_json::to_string(c).expect("cells serialize"))
            .collect())
    }

    /// Append one row (JSON, from `run_cell`) and flush it.
    fn append(&mut self, row_json: &str) -> PyResult<()> {
        let row: Row = serde_json::from_str(row_json)
            .map_err(|e| PyValueError::new_err(format!("row: {e}")))?;
        self.open()?.append(&row).map_err(py_err)
    }

    /// Write the Parquet file; every row in the output, as JSON.
    fn finish(&mut self) -> PyResult<Vec<String>> {
        let out = self.inner.take().ok_or_else(closed)?;
        out.finish().map(|rows| to_json(&rows)).map_err(py_err)
    }
}

impl SweepOutput {
    fn open(&mut self) -> PyResult<&mut Output> {
        self.inner.as_mut().ok_or_else(closed)
    }
}

fn closed() -> PyErr {
    PyValueError::new_err("the sweep output is finished")
}

/// The result columns, in order, and those that depend on the host.
#[pyfunction]
fn columns() -> (Vec<&'static str>, Vec<&'static str>) {
    (
        outrider_sweep::COLUMNS.to_vec(),
        outrider_sweep::HOST_COLUMNS.to_vec(),
    )
}

/// Registered policies: (name, help text).
#[pyfunction]
fn policies() -> Vec<(&'static str, String)> {
    outrider_core::policies::REGISTRY
        .iter()
        .map(|e| {
            (
                e.name,
                outrider_core::policy_help(e.name).unwrap_or_default(),
            )
        })
        .collect()
}

/// Built-in workloads and suites: (name, help text).
#[pyfunction]
fn workloads() -> Vec<(&'static str, String)> {
    let w = outrider_trace::workloads::WORKLOAD_NAMES.iter();
    w.chain(outrider_trace::workloads::SUITE_NAMES)
        .map(|n| {
            (
                *n,
                outrider_trace::workloads::workload_help(n).unwrap_or_default(),
            )
        })
        .collect()
}

mod trace;

/// The extension module.
#[pymodule]
fn _outrider(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", outrider_sweep::row::VERSION)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(run_cell, m)?)?;
    m.add_function(wrap_pyfunction!(cells, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_convert, m)?)?;
    m.add_class::<SweepOutput>()?;
    Ok(())
}
