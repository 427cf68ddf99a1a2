//! Output files of `run --json-file FILE` and `record --out FILE`: checked
//! before the program starts, so an unwritable path is an error (exit 2)
//! before anything ran rather than a lost result after; written
//! atomically through an unpredictably named temporary file in the same
//! directory (`outrider_trace::write_atomic`), never through a symbolic
//! link planted at the path.

use crate::usage;
use std::path::Path;

/// Fail (exit 2, naming the path) unless a file can be created at `path`:
/// it is not a directory, and a temporary file can be made beside it.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        return Err(usage(format!("{}: is a directory", path.display())));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".outrider-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| usage(format!("{}: cannot write there: {e}", path.display())))
}

/// Write `text` to `path` atomically (see the module comment).
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    outrider_trace::write_atomic(path, |w| std::io::Write::write_all(w, text.as_bytes()))
        .map_err(|e| anyhow::anyhow!("{e}"))
}
