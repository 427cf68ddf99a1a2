//! Where rows go: a CSV file appended and flushed one row at a time (the
//! resumable log), and a Parquet file written from the complete set at the
//! end.
//!
//! A killed sweep loses only the cells that had not finished: every
//! finished row is on disk before the next is taken. On restart the CSV is
//! read back, a torn last line (the kill landed mid-write) is cut off, and
//! the cells whose keys it holds are skipped. Parquet cannot be appended
//! to, so it is rewritten from every row in the CSV when the sweep ends.

use crate::row::{Kind, Row, Value, COLUMNS, KINDS};
use crate::SweepError;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A sweep's output files.
pub struct Output {
    csv_path: PathBuf,
    parquet_path: Option<PathBuf>,
    done: HashSet<String>,
    csv: csv::Writer<File>,
}

impl Output {
    /// Open the output named `out`: `NAME.parquet` writes `NAME.parquet`
    /// and the log `NAME.csv`; `NAME.csv` writes the CSV only. Rows already
    /// in the CSV are kept and their cells count as done.
    pub fn open(out: &Path) -> Result<Output, SweepError> {
        let (csv_path, parquet_path) = match out.extension().and_then(|e| e.to_str()) {
            Some("parquet") => (out.with_extension("csv"), Some(out.to_path_buf())),
            Some("csv") => (out.to_path_buf(), None),
            _ => {
                return Err(SweepError::Grid(format!(
                    "{}: the output must end in .parquet (with a .csv log beside it) or .csv",
                    out.display()
                )))
            }
        };
        let io = |e: std::io::Error| SweepError::Output(format!("{}: {e}", csv_path.display()));
        let existing = if csv_path.exists() {
            cut_torn_line(&csv_path).map_err(io)?;
            read_csv(&csv_path)?
        } else {
            Vec::new()
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&csv_path)
            .map_err(io)?;
        let has_header = file.metadata().map_err(io)?.len() > 0;
        let csv = csv::WriterBuilder::new()
            .has_headers(!has_header)
            .from_writer(file);
        Ok(Output {
            done: existing.into_iter().map(|r| r.cell).collect(),
            csv_path,
            parquet_path,
            csv,
        })
    }

    /// Whether the cell with `key` already has a row.
    pub fn is_done(&self, key: &str) -> bool {
        self.done.contains(key)
    }

    /// Cells already done.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Append one row and flush it to the file.
    pub fn append(&mut self, row: &Row) -> Result<(), SweepError> {
        let io = |e: &dyn std::fmt::Display| {
            SweepError::Output(format!("{}: {e}", self.csv_path.display()))
        };
        self.csv.serialize(row).map_err(|e| io(&e))?;
        self.csv.flush().map_err(|e| io(&e))?;
        self.done.insert(row.cell.clone());
        Ok(())
    }

    /// Finish: write the Parquet file (if any) from every row in the CSV.
    /// Returns all rows.
    pub fn finish(mut self) -> Result<Vec<Row>, SweepError> {
        self.csv
            .flush()
            .map_err(|e| SweepError::Output(format!("{}: {e}", self.csv_path.display())))?;
        let rows = read_csv(&self.csv_path)?;
        if let Some(p) = &self.parquet_path {
            write_parquet(p, &rows)?;
        }
        Ok(rows)
    }

    /// The CSV log's path.
    pub fn csv_path(&self) -> &Path {
        &self.csv_path
    }
}

/// Cut a last line that lacks its newline (a write torn by a kill).
fn cut_torn_line(path: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.set_len(keep as u64)?;
    f.seek(SeekFrom::End(0))?;
    f.flush()
}

/// Every row of a sweep CSV.
pub fn read_csv(path: &Path) -> Result<Vec<Row>, SweepError> {
    let mut r = csv::Reader::from_path(path)
        .map_err(|e| SweepError::Output(format!("{}: {e}", path.display())))?;
    let header: Vec<String> = r
        .headers()
        .map_err(|e| SweepError::Output(format!("{}: {e}", path.display())))?
        .iter()
        .map(String::from)
        .collect();
    if header != COLUMNS {
        return Err(SweepError::Output(format!(
            "{}: not a sweep output of this version (header {:?}, expected {:?}); \
             move it away or choose another --out",
            path.display(),
            header.join(","),
            COLUMNS.join(",")
        )));
    }
    let mut rows = Vec::new();
    for (i, rec) in r.deserialize::<Row>().enumerate() {
        rows.push(rec.map_err(|e| {
            SweepError::Output(format!(
                "{}: record {}: {e} (expected a sweep row)",
                path.display(),
                i + 2
            ))
        })?);
    }
    Ok(rows)
}

/// Write `rows` as one Parquet row group (zstd), one column per field.
pub fn write_parquet(path: &Path, rows: &[Row]) -> Result<(), SweepError> {
    let err = |e: &dyn std::fmt::Display| SweepError::Output(format!("{}: {e}", path.display()));
    let values: Vec<Vec<Value>> = rows.iter().map(Row::values).collect();
    let schema =
        Arc::new(parquet::schema::parser::parse_message_type(&schema_text()).map_err(|e| err(&e))?);
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(Default::default()))
        .set_created_by(format!("outrider {}", crate::row::VERSION))
        .build();
    let file = File::create(path).map_err(|e| err(&e))?;
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(|e| err(&e))?;
    let mut group = w.next_row_group().map_err(|e| err(&e))?;
    let mut col = 0;
    while let Some(mut c) = group.next_column().map_err(|e| err(&e))? {
        let column: Vec<&Value> = values.iter().map(|v| &v[col]).collect();
        write_column(&mut c, KINDS[col], &column).map_err(|e| err(&e))?;
        c.close().map_err(|e| err(&e))?;
        col += 1;
    }
    group.close().map_err(|e| err(&e))?;
    w.close().map_err(|e| err(&e))?;
    Ok(())
}

/// The Parquet schema of a row.
fn schema_text() -> String {
    let mut s = String::from("message sweep {\n");
    for (name, kind) in COLUMNS.iter().zip(KINDS) {
        let line = match kind {
            Kind::Int => format!("REQUIRED INT64 {name};"),
            Kind::Float => format!("REQUIRED DOUBLE {name};"),
            Kind::Bool => format!("REQUIRED BOOLEAN {name};"),
            Kind::Text => format!("REQUIRED BINARY {name} (UTF8);"),
        };
        s.push_str(&format!("  {line}\n"));
    }
    s.push('}');
    s
}

fn write_column(
    c: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    kind: Kind,
    column: &[&Value],
) -> parquet::errors::Result<()> {
    match kind {
        Kind::Int => {
            let v: Vec<i64> = column
                .iter()
                .map(|x| if let Value::Int(i) = x { *i } else { 0 })
                .collect();
            c.typed::<Int64Type>().write_batch(&v, None, None)?;
        }
        Kind::Float => {
            let v: Vec<f64> = column
                .iter()
                .map(|x| if let Value::Float(f) = x { *f } else { 0.0 })
                .collect();
            c.typed::<DoubleType>().write_batch(&v, None, None)?;
        }
        Kind::Bool => {
            let v: Vec<bool> = column
                .iter()
                .map(|x| matches!(x, Value::Bool(true)))
                .collect();
            c.typed::<BoolType>().write_batch(&v, None, None)?;
        }
        Kind::Text => {
            let v: Vec<ByteArray> = column
                .iter()
                .map(|x| match x {
                    Value::Text(t) => ByteArray::from(t.as_str()),
                    _ => ByteArray::from(""),
                })
                .collect();
            c.typed::<ByteArrayType>().write_batch(&v, None, None)?;
        }
    }
    Ok(())
}
