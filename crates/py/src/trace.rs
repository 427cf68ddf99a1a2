//! `outrider.trace.info` and `outrider.trace.convert`: what `outrider
//! trace info --json` and `outrider trace convert` do, for Python.

use outrider_trace::{Format, ReadOptions, TraceStats};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::Path;

fn format(name: &str) -> PyResult<Option<Format>> {
    match name {
        "auto" => Ok(None),
        n => Format::from_name(n)
            .map(Some)
            .map_err(|e| PyValueError::new_err(e.to_string())),
    }
}

fn read(
    path: &str,
    fmt: &str,
    lenient: bool,
) -> PyResult<(outrider_trace::Trace, outrider_trace::ReadReport)> {
    let opts = ReadOptions {
        format: format(fmt)?,
        lenient,
        ..ReadOptions::default()
    };
    outrider_trace::read_trace(Path::new(path), &opts)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The statistics of a trace, as JSON with `trace info --json`'s names.
#[pyfunction]
#[pyo3(signature = (path, format="auto", lenient=false))]
pub fn trace_info(py: Python<'_>, path: &str, format: &str, lenient: bool) -> PyResult<String> {
    py.detach(|| {
        let (trace, rep) = read(path, format, lenient)?;
        let s = TraceStats::of(&trace);
        Ok(serde_json::json!({
            "file": path,
            "format": rep.format.name(),
            "requests": s.requests,
            "reads": s.reads,
            "writes": s.writes,
            "read_bytes": s.read_bytes,
            "write_bytes": s.write_bytes,
            "block_accesses": s.block_accesses,
            "distinct_blocks": s.distinct_blocks,
            "footprint_bytes": s.footprint_bytes,
            "duration_s": s.duration_ns as f64 * 1e-9,
            "devices": s.devices,
            "pids": s.pids,
            "processes": s.processes,
            "files": s.files,
            "out_of_order": s.out_of_order,
            "skipped": rep.skipped,
        })
        .to_string())
    })
}

/// Convert a trace (what `outrider trace convert` does, without
/// `--repeat`); returns the number of requests written.
#[pyfunction]
#[pyo3(signature = (input, output, from_format="auto", to="native", zstd=false, lenient=false, split_pages=false))]
#[allow(clippy::too_many_arguments)]
pub fn trace_convert(
    py: Python<'_>,
    input: &str,
    output: &str,
    from_format: &str,
    to: &str,
    zstd: bool,
    lenient: bool,
    split_pages: bool,
) -> PyResult<usize> {
    let to =
        format(to)?.ok_or_else(|| PyValueError::new_err("to: expected a format name, not auto"))?;
    py.detach(|| {
        let (mut trace, _) = read(input, from_format, lenient)?;
        if split_pages {
            trace = trace.split_pages();
        }
        outrider_trace::write_trace(Path::new(output), &trace, to, zstd)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(trace.records.len())
    })
}
