//! Writers: native (plain and zstd) and lcs-csv round trips.

use outrider_trace::{
    read_trace, write_native, write_trace, Extent, FileInfo, Format, ReadOptions, Record, Records,
    Trace, TraceError, TraceMeta,
};
use proptest::prelude::*;

fn meta() -> TraceMeta {
    TraceMeta {
        source: "unit test".into(),
        processes: vec![(42, "grep".into()), (7, "ünïcode [x]".into())],
        files: vec![FileInfo {
            path: "/data/a.db".into(),
            size: 12_288,
            dev: 1,
            extents: vec![
                Extent {
                    file_offset: 0,
                    phys_offset: 1 << 20,
                    len: 8192,
                },
                Extent {
                    file_offset: 8192,
                    phys_offset: 5 << 20,
                    len: 4096,
                },
            ],
        }],
    }
}

fn records() -> Vec<Record> {
    let mut v = vec![
        Record::block(0, 0, 4096, 512, false, 42),
        Record::block(10, 3, 1 << 40, 65_536, true, 7),
    ];
    v.push(Record {
        file: 1,
        file_offset: 4096,
        offset: (1 << 20) + 4096,
        ..Record::block(20, 1, 0, 4096, false, 42)
    });
    v
}

fn native(compress: bool, trace: &Trace) -> (Trace, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.otr");
    write_native(&p, trace, compress).unwrap();
    let (t, report) = read_trace(&p, &ReadOptions::default()).unwrap();
    assert_eq!(report.format, Format::Native);
    assert_eq!(report.skipped, 0);
    (t, dir)
}

#[test]
fn native_round_trip_plain_is_mapped_and_equal() {
    let orig = Trace::new(meta(), records());
    let (back, _dir) = native(false, &orig);
    assert!(
        matches!(back.records, Records::Mapped { .. }),
        "plain native must be mapped"
    );
    assert_eq!(back.meta, orig.meta);
    assert_eq!(&back.records[..], &orig.records[..]);
}

#[test]
fn native_round_trip_zstd_is_equal() {
    let orig = Trace::new(meta(), records());
    let (back, _dir) = native(true, &orig);
    assert!(matches!(back.records, Records::Owned(_)));
    assert_eq!(back.meta, orig.meta);
    assert_eq!(&back.records[..], &orig.records[..]);
}

#[test]
fn native_empty_trace_round_trips() {
    for compress in [false, true] {
        let (back, _dir) = native(compress, &Trace::new(TraceMeta::default(), vec![]));
        assert_eq!(back.records.len(), 0);
    }
}

#[test]
fn native_rewrite_over_a_mapped_file_is_safe() {
    // The writer renames a new file into place, so a trace still mapped from
    // the old file keeps its contents.
    let orig = Trace::new(meta(), records());
    let (back, dir) = native(false, &orig);
    let p = dir.path().join("t.otr");
    write_native(&p, &Trace::new(TraceMeta::default(), vec![]), false).unwrap();
    assert_eq!(&back.records[..], &orig.records[..]);
}

#[test]
fn lcs_csv_writer_round_trips_whole_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.csv");
    let recs = vec![
        Record::block(0, 0, 512 * 10, 4096, false, 0),
        Record::block(3_000_000_000, 0, 512 * 99, 512, true, 0),
    ];
    write_trace(
        &p,
        &Trace::new(TraceMeta::default(), recs.clone()),
        Format::LcsCsv,
        false,
    )
    .unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(
        text,
        "version,time,op,size,lbn\n1,0,28,4096,10\n1,3,2a,512,99\n"
    );
    let (back, report) = read_trace(&p, &ReadOptions::default()).unwrap();
    assert_eq!(report.format, Format::LcsCsv);
    assert_eq!(&back.records[..], &recs[..]);
}

#[test]
fn lcs_csv_writer_refuses_several_devices() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.csv");
    let t = Trace::new(TraceMeta::default(), records());
    let e = write_trace(&p, &t, Format::LcsCsv, false).unwrap_err();
    assert!(matches!(e, TraceError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("no device column"), "{e}");
    assert!(!p.exists());
}

#[test]
fn read_only_formats_are_refused_by_write_trace() {
    let dir = tempfile::tempdir().unwrap();
    let t = Trace::new(TraceMeta::default(), vec![]);
    let e = write_trace(&dir.path().join("x"), &t, Format::Msr, false).unwrap_err();
    assert!(e.to_string().contains("cannot write as msr"), "{e}");
}

fn arb_record() -> impl Strategy<Value = Record> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        1..=u32::MAX,
        any::<u32>(),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(
            |(time_ns, offset, file_offset, size, pid, dev, write)| Record {
                file_offset,
                ..Record::block(time_ns, dev, offset, size, write, pid)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn native_round_trips_arbitrary_records(recs in prop::collection::vec(arb_record(), 0..200), compress: bool) {
        let orig = Trace::new(meta(), recs);
        let (back, _dir) = native(compress, &orig);
        prop_assert_eq!(&back.records[..], &orig.records[..]);
        prop_assert_eq!(back.meta, orig.meta);
    }
}
