//! Conformance on the public samples in `shared/traces` (see its README):
//! every sample reads with its format named and detected, and the request
//! counts and first records match what the published files hold.

use outrider_trace::{detect_format, read_trace, Format, ReadOptions, Trace, TraceStats};
use std::path::PathBuf;

/// The shared samples; a missing directory fails loudly (never skip: a
/// silent skip would let every conformance test pass on a bare checkout).
fn sample(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    assert!(
        dir.is_dir(),
        "sample traces missing: {} must exist (the repository sits next to shared/)",
        dir.display()
    );
    let p = dir.join(name);
    assert!(p.is_file(), "sample {} missing", p.display());
    p
}

/// (file, format, requests, reads, writes)
const SAMPLES: [(&str, Format, usize, u64, u64); 6] = [
    (
        "cloudPhysicsIO.csv",
        Format::LcsCsv,
        113_872,
        46_974,
        66_898,
    ),
    (
        "cloudPhysicsIO.oracleGeneral.bin",
        Format::Oracle,
        113_872,
        113_872,
        0,
    ),
    // 24,782 newlines but no final newline: 24,783 requests.
    (
        "mqsim_wsrch-small.trace",
        Format::Disksim,
        24_783,
        24_779,
        4,
    ),
    (
        "mqsim_tpcc-small.trace",
        Format::Disksim,
        6_999,
        4_381,
        2_618,
    ),
    // 6,780 newlines but no final newline: 6,781 requests.
    ("lirs_cs.trc", Format::Lines, 6_781, 6_781, 0),
    ("lirs_multi2.trc", Format::Lines, 26_311, 26_311, 0),
];

fn read(name: &str, format: Option<Format>) -> Trace {
    let opts = ReadOptions {
        format,
        ..ReadOptions::default()
    };
    let (trace, report) = read_trace(&sample(name), &opts).unwrap();
    assert_eq!(report.skipped, 0, "{name}");
    assert_eq!(report.ignored, 0, "{name}");
    trace
}

#[test]
fn every_sample_is_detected_as_its_format() {
    for (name, format, ..) in SAMPLES {
        assert_eq!(detect_format(&sample(name)).unwrap(), format, "{name}");
    }
}

#[test]
fn every_sample_reads_with_the_readme_counts_named_and_detected() {
    for (name, format, requests, reads, writes) in SAMPLES {
        for given in [Some(format), None] {
            let (trace, report) = read_trace(
                &sample(name),
                &ReadOptions {
                    format: given,
                    ..ReadOptions::default()
                },
            )
            .unwrap();
            assert_eq!(report.format, format, "{name}");
            assert_eq!(trace.records.len(), requests, "{name}");
            let s = TraceStats::of(&trace);
            assert_eq!((s.reads, s.writes), (reads, writes), "{name}");
            assert!(trace.meta.source.ends_with(name));
        }
    }
}

#[test]
fn cloudphysics_csv_first_records() {
    let t = read("cloudPhysicsIO.csv", Some(Format::LcsCsv));
    // 1,5633898,2a,512,42932745 then 1,5633898,2a,6656,40409911 (4th row).
    let r = t.records[0];
    assert_eq!(
        (r.time_ns, r.offset, r.size, r.is_write()),
        (0, 42_932_745 * 512, 512, true)
    );
    let r = t.records[3];
    assert_eq!((r.offset, r.size), (40_409_911 * 512, 6656));
    // Time in seconds: the sample spans exactly two hours.
    assert_eq!(TraceStats::of(&t).duration_ns, 7_200 * 1_000_000_000);
}

/// The oracle file was converted from the CSV: same times and addresses on
/// every record (sizes are per object, see the oracle module comment).
#[test]
fn oracle_matches_the_csv_it_came_from() {
    let csv = read("cloudPhysicsIO.csv", None);
    let bin = read("cloudPhysicsIO.oracleGeneral.bin", None);
    assert_eq!(bin.records[0].offset, 42_932_745 * 512);
    assert_eq!(bin.records[0].size, 512);
    assert!(bin.records.iter().all(|r| !r.is_write()));
    let same = |f: fn(&outrider_trace::Record) -> u64| {
        csv.records.iter().map(f).eq(bin.records.iter().map(f))
    };
    assert!(same(|r| r.time_ns), "times differ");
    assert!(same(|r| r.offset), "offsets differ");
    let size_differs = csv
        .records
        .iter()
        .zip(bin.records.iter())
        .filter(|(a, b)| a.size != b.size)
        .count();
    assert_eq!(size_differs, 13_671);
}

#[test]
fn mqsim_first_record_and_time_unit() {
    let t = read("mqsim_wsrch-small.trace", None);
    // 11413000 0 657728 16 1: a read of 16 sectors at sector 657728.
    let r = t.records[0];
    assert_eq!(
        (r.time_ns, r.dev, r.offset, r.size, r.is_write()),
        (0, 0, 657_728 * 512, 8192, false)
    );
    // Last time 60066625000 ns; relative to the first, 11413000 ns.
    assert_eq!(TraceStats::of(&t).duration_ns, 60_066_625_000 - 11_413_000);
    let s = TraceStats::of(&read("mqsim_tpcc-small.trace", None));
    assert_eq!(s.devices, 16);
    assert_eq!(s.duration_ns, 1_075_002_000 - 938_513_000);
}

#[test]
fn lirs_blocks_are_4k_reads() {
    let t = read("lirs_cs.trc", None);
    assert_eq!(t.records[1].offset, 4096);
    assert!(t.records.iter().all(|r| r.size == 4096 && r.time_ns == 0));
    let s = TraceStats::of(&t);
    assert_eq!(s.distinct_blocks, 1_409); // blocks 0..=1408 are all used
    assert_eq!(s.footprint_bytes, 1_409 * 4096);
}

#[test]
fn stats_display_is_readable() {
    let s = TraceStats::of(&read("mqsim_tpcc-small.trace", None));
    let text = s.to_string();
    assert!(text.contains("requests:        6999"), "{text}");
    assert!(text.contains("writes:        2618"), "{text}");
}
