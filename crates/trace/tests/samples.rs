//! Conformance on the public samples in `shared/traces` (see its README):
//! every sample reads with its format named and detected, and the request
//! counts and first records match what the published files hold.

use outrider_trace::{
    detect_format, read_trace, Compression, Format, ReadOptions, Trace, TraceStats,
};
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

/// `path` compressed as `zst` or `gz` into `dir`.
fn compressed(dir: &std::path::Path, path: &std::path::Path, ext: &str) -> PathBuf {
    use std::io::Write;
    let bytes = std::fs::read(path).unwrap();
    let out = dir.join(format!(
        "{}.{ext}",
        path.file_name().unwrap().to_string_lossy()
    ));
    let packed = match ext {
        "zst" => zstd::encode_all(&bytes[..], 3).unwrap(),
        _ => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&bytes).unwrap();
            e.finish().unwrap()
        }
    };
    std::fs::write(&out, packed).unwrap();
    out
}

/// Published traces come compressed (libCacheSim's `.oracleGeneral.bin.zst`,
/// SNIA's `.csv.gz`): a compressed copy is detected inside the stream and
/// gives the same records and statistics as the original.
#[test]
fn zstd_and_gzip_copies_of_every_sample_read_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    for (name, format, ..) in SAMPLES {
        let plain = read(name, None);
        for (ext, c) in [("zst", Compression::Zstd), ("gz", Compression::Gzip)] {
            let p = compressed(dir.path(), &sample(name), ext);
            assert_eq!(detect_format(&p).unwrap(), format, "{name}.{ext}");
            let (t, rep) = read_trace(&p, &ReadOptions::default()).unwrap();
            assert_eq!((rep.format, rep.compression), (format, Some(c)), "{name}");
            assert!(
                t.records[..] == plain.records[..],
                "{name}.{ext}: records differ"
            );
            assert_eq!(TraceStats::of(&t), TraceStats::of(&plain), "{name}.{ext}");
        }
    }
}

/// A native trace inside zstd (not its own record compression) reads too.
#[test]
fn a_compressed_native_trace_reads_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let t = read("mqsim_tpcc-small.trace", None);
    let native = dir.path().join("t.otr");
    outrider_trace::write_native(&native, &t, false).unwrap();
    let p = compressed(dir.path(), &native, "zst");
    let (back, rep) = read_trace(&p, &ReadOptions::default()).unwrap();
    assert_eq!(rep.format, Format::Native);
    assert!(back.records[..] == t.records[..]);
}

/// gzip members and zstd frames written one after another form one trace
/// (how `cat a.gz b.gz` and pzstd output look).
#[test]
fn concatenated_members_and_frames_are_one_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, "1\n2\n").unwrap();
    std::fs::write(&b, "3\n").unwrap();
    for ext in ["zst", "gz"] {
        let mut bytes = std::fs::read(compressed(dir.path(), &a, ext)).unwrap();
        bytes.extend(std::fs::read(compressed(dir.path(), &b, ext)).unwrap());
        let both = dir.path().join(format!("both.{ext}"));
        std::fs::write(&both, bytes).unwrap();
        let (t, _) = read_trace(&both, &ReadOptions::default()).unwrap();
        let blocks: Vec<u64> = t.records.iter().map(|r| r.first_block()).collect();
        assert_eq!(blocks, [1, 2, 3], "{ext}");
    }
}

/// A corrupt compressed file is an error naming the file and the
/// compression, never a short trace.
#[test]
fn a_truncated_compressed_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["zst", "gz"] {
        let p = compressed(dir.path(), &sample("cloudPhysicsIO.csv"), ext);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        match read_trace(&p, &ReadOptions::default()) {
            Ok((t, _)) => panic!("{ext}: read {} records of a cut file", t.records.len()),
            Err(e) => assert!(e.to_string().contains(&*p.to_string_lossy()), "{e}"),
        }
    }
}

/// The generic CSV reader, mapped onto libCacheSim's CloudPhysics layout
/// (`version,time,op,size,lbn`, op a hex SCSI code, 2a = WRITE(10)), reads
/// the same requests as the dedicated reader.
#[test]
fn csv_mapping_onto_the_cloudphysics_columns_matches_lcs_csv() {
    let lcs = read("cloudPhysicsIO.csv", None);
    let f = Format::from_name("csv:time=2,op=3,write=2a,size=4,lbn=5").unwrap();
    let csv = read("cloudPhysicsIO.csv", Some(f));
    assert!(csv.records[..] == lcs.records[..]);
    let e = Format::from_name("csv:time=2").unwrap_err().to_string();
    assert!(e.contains("address column"), "{e}");
}
