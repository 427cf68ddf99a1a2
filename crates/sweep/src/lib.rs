//! outrider-sweep: parameter sweeps over the simulator.
//!
//! A [`Grid`] (inputs × policies × parameter values × cache sizes ×
//! devices × runs) expands into [`Cell`]s; each cell is one call of
//! [`outrider_sim::simulate`] and gives one [`Row`] with DESIGN.md's metric
//! names. The `outrider sweep` command, the Python package and its Ray
//! driver all go through this crate.
//!
//! The one design decision a reader must know: **a cell is a pure function
//! of its key** — the simulator is deterministic, so a row can be computed
//! on any thread, process or machine, and a sweep resumes by skipping the
//! keys its output already holds ([`Output`]). Engines differ only in where
//! [`run_cell`] runs: [`run_local`] uses threads of this process (cells are
//! independent and share the loaded traces read-only, so two cores give
//! close to twice the cells per second); the Ray engine (Python) ships the
//! cell as JSON to a worker that calls the same function.
#![deny(missing_docs)]

pub mod grid;
pub mod output;
pub mod row;
pub mod run;

pub use grid::{Cell, Grid, Settings, Source};
pub use output::Output;
pub use row::{Row, COLUMNS, HOST_COLUMNS};
pub use run::{load_inputs, run_cell, run_cell_all, run_local, Input};

use std::path::Path;

/// What can go wrong in a sweep.
#[derive(Debug)]
pub enum SweepError {
    /// The grid is wrong (a bad policy, size, device, setting or file
    /// name): the user's to fix.
    Grid(String),
    /// An input could not be read or simulated (a bad trace record).
    Input(String),
    /// The output could not be read or written.
    Output(String),
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepError::Grid(m) | SweepError::Input(m) | SweepError::Output(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SweepError {}

/// The cells of `grid` not yet in `output`.
pub fn pending(grid: &Grid, output: Option<&Output>) -> Result<Vec<Cell>, SweepError> {
    let cells = grid.cells()?;
    Ok(match output {
        Some(o) => cells.into_iter().filter(|c| !o.is_done(&c.key())).collect(),
        None => cells,
    })
}

/// Run `grid` on the local engine with `threads` threads (0: every core),
/// appending to `out` (see [`Output::open`]) when given and skipping the
/// cells it already holds. `on_row` sees each new row. Returns every row:
/// the output's (old and new) when there is one, else the new ones.
pub fn sweep_local(
    grid: &Grid,
    out: Option<&Path>,
    threads: usize,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>, SweepError> {
    let mut output = out.map(Output::open).transpose()?;
    let cells = pending(grid, output.as_ref())?;
    let mut rows = Vec::new();
    run_local(&cells, threads, &mut |row| {
        if let Some(o) = output.as_mut() {
            o.append(&row)?;
        }
        on_row(&row);
        rows.push(row);
        Ok(())
    })?;
    match output {
        Some(o) => o.finish(),
        None => Ok(rows),
    }
}
