//! The local engine and the output files, end to end on small workloads.

use outrider_sweep::{sweep_local, Grid, Row, COLUMNS, HOST_COLUMNS};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use std::collections::BTreeMap;

fn grid(cache: &[&str]) -> Grid {
    Grid {
        workloads: vec!["seq:size=4MiB".into(), "reversed:size=4MiB".into()],
        policies: vec!["none".into(), "readahead".into()],
        cache: cache.iter().map(|s| s.to_string()).collect(),
        ..Grid::default()
    }
}

/// A row without the host-dependent columns, keyed by cell.
fn by_cell(rows: &[Row]) -> BTreeMap<String, Row> {
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            r.events_per_s = 0.0;
            r.events_per_cpu_s = 0.0;
            r.wall_s = 0.0;
            r.cpu_s = 0.0;
            (r.cell.clone(), r)
        })
        .collect()
}

#[test]
fn two_threads_give_the_rows_one_thread_gives() {
    let g = grid(&["1MiB", "64MiB"]);
    let one = sweep_local(&g, None, 1, &mut |_| {}).unwrap();
    let two = sweep_local(&g, None, 2, &mut |_| {}).unwrap();
    assert_eq!(one.len(), 8);
    assert_eq!(by_cell(&one), by_cell(&two));
    // The cells differ: a cache smaller than the input misses more.
    let hits: Vec<f64> = one.iter().map(|r| r.hit_ratio).collect();
    assert!(hits.iter().any(|&h| h != hits[0]), "{hits:?}");
    assert_eq!(HOST_COLUMNS.len(), 4);
}

#[test]
fn a_resumed_sweep_runs_only_the_cells_its_output_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.parquet");
    let first = sweep_local(&grid(&["1MiB"]), Some(&out), 2, &mut |_| {}).unwrap();
    assert_eq!(first.len(), 4);
    // A kill mid-write leaves a torn last line: it is cut, not read.
    let csv = dir.path().join("r.csv");
    let mut text = std::fs::read_to_string(&csv).unwrap();
    text.push_str("seq:size=4MiB|none|64MiB|hdd|1|lru|think|req");
    std::fs::write(&csv, &text).unwrap();

    let mut ran = Vec::new();
    let all = sweep_local(&grid(&["1MiB", "64MiB"]), Some(&out), 2, &mut |r| {
        ran.push(r.cache.clone())
    })
    .unwrap();
    assert_eq!(ran, vec!["64MiB"; 4], "only the new cache size ran");
    assert_eq!(all.len(), 8);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + 8, "header + one line per cell");
    assert_eq!(text.lines().next().unwrap(), COLUMNS.join(","));

    // Nothing left to run: the output is unchanged.
    let again = sweep_local(&grid(&["1MiB", "64MiB"]), Some(&out), 2, &mut |_| {
        panic!("no cell should run")
    })
    .unwrap();
    assert_eq!(by_cell(&again), by_cell(&all));
}

#[test]
fn the_parquet_file_holds_every_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.parquet");
    let rows = sweep_local(&grid(&["1MiB"]), Some(&out), 1, &mut |_| {}).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let meta = reader.metadata().file_metadata();
    assert_eq!(meta.num_rows(), rows.len() as i64);
    let names: Vec<&str> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(names, COLUMNS);
    let mut got = BTreeMap::new();
    for rec in reader.get_row_iter(None).unwrap() {
        let rec = rec.unwrap();
        let mut cell = String::new();
        let mut hit = f64::NAN;
        for (name, field) in rec.get_column_iter() {
            match (name.as_str(), field) {
                ("cell", Field::Str(s)) => cell = s.clone(),
                ("hit_ratio", Field::Double(h)) => hit = *h,
                _ => {}
            }
        }
        got.insert(cell, hit);
    }
    let want: BTreeMap<String, f64> = rows.iter().map(|r| (r.cell.clone(), r.hit_ratio)).collect();
    assert_eq!(got, want);
}

#[test]
fn an_output_that_is_not_a_sweep_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.csv");
    std::fs::write(&out, "a,b\n1,2\n").unwrap();
    let e = sweep_local(&grid(&["1MiB"]), Some(&out), 1, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("x.csv") && e.contains("not a sweep output"),
        "{e}"
    );
    let e = sweep_local(
        &grid(&["1MiB"]),
        Some(&dir.path().join("x.xlsx")),
        1,
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(".parquet"), "{e}");
}
