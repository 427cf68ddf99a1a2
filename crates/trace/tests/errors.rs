//! Bad input: every format names the record and what it expected; lenient
//! mode skips and counts; the non-request lines each format defines are
//! recognised, not errors.

use outrider_trace::{
    read_trace, Format, ReadOptions, ReadReport, Trace, TraceError, NATIVE_MAGIC,
};
use std::path::Path;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn read(bytes: &[u8], format: Format, lenient: bool) -> Result<(Trace, ReadReport), TraceError> {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "t", bytes);
    read_trace(&p, &ReadOptions::default().format(format).lenient(lenient))
}

/// Strict read fails at `record` with a message containing every `needle`.
#[track_caller]
fn assert_bad(bytes: &[u8], format: Format, record: u64, needles: &[&str]) {
    match read(bytes, format, false) {
        Err(TraceError::Bad {
            record: r,
            expected,
            ..
        }) => {
            assert_eq!(r, record, "{format}: {expected}");
            for n in needles {
                assert!(expected.contains(n), "{format}: `{expected}` lacks `{n}`");
            }
        }
        Err(e) => panic!("{format}: expected Bad, got {e}"),
        Ok((t, _)) => panic!("{format}: expected Bad, read {} records", t.records.len()),
    }
}

/// Lenient read keeps `kept` records and counts `skipped`.
#[track_caller]
fn assert_lenient(bytes: &[u8], format: Format, kept: usize, skipped: u64) {
    let (t, report) = read(bytes, format, true).unwrap();
    assert_eq!(
        (t.records.len(), report.skipped),
        (kept, skipped),
        "{format}"
    );
}

#[test]
fn lcs_csv_bad_rows() {
    let f = Format::LcsCsv;
    let good = "version,time,op,size,lbn\n1,5,28,512,10\n";
    assert_bad(
        format!("{good}1,6,2a,512\n").as_bytes(),
        f,
        3,
        &["expected 5 fields", "found 4"],
    );
    assert_bad(
        format!("{good}1,6,zz,512,1\n").as_bytes(),
        f,
        3,
        &["SCSI opcode", "`zz`"],
    );
    assert_bad(
        format!("{good}1,6,28,0,1\n").as_bytes(),
        f,
        3,
        &["at least 1 byte"],
    );
    assert_bad(
        format!("{good}1,6,28,512,99999999999999999999\n").as_bytes(),
        f,
        3,
        &["lbn"],
    );
    assert_bad(b"garbage header\n", f, 1, &["expected 5 fields"]);
    assert_lenient(
        format!("{good}1,6,2a,512\n1,7,2a,512,3\n").as_bytes(),
        f,
        2,
        1,
    );
}

#[test]
fn lcs_csv_opcodes() {
    // READ/WRITE(6/10/12/16) are requests; SYNCHRONIZE CACHE (35) is counted as ignored.
    let csv = "1,0,08,512,1\n1,0,0a,512,1\n1,0,a8,512,1\n1,0,aa,512,1\n1,0,88,512,1\n1,0,8A,512,1\n1,0,35,0,0\n";
    let (t, report) = read(csv.as_bytes(), Format::LcsCsv, false).unwrap();
    let writes: Vec<bool> = t.records.iter().map(|r| r.is_write()).collect();
    assert_eq!(writes, [false, true, false, true, false, true]);
    assert_eq!((report.ignored, report.skipped), (1, 0));
}

#[test]
fn oracle_truncated_and_bad_records() {
    let mut rec = Vec::new();
    rec.extend_from_slice(&5u32.to_le_bytes());
    rec.extend_from_slice(&42_932_745u64.to_le_bytes());
    rec.extend_from_slice(&512u32.to_le_bytes());
    rec.extend_from_slice(&(-1i64).to_le_bytes());
    let mut two = rec.repeat(2);
    two.extend_from_slice(&[1, 2, 3]);
    assert_bad(
        &two,
        Format::Oracle,
        3,
        &["24-byte record", "found 3 bytes", "truncated"],
    );
    assert_lenient(&two, Format::Oracle, 2, 1);
    let mut zero = rec.clone();
    zero[12..16].copy_from_slice(&0u32.to_le_bytes());
    let mut bad = rec.clone();
    bad.extend_from_slice(&zero);
    assert_bad(&bad, Format::Oracle, 2, &["obj_size"]);
    let mut huge = rec.clone();
    huge[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_bad(&huge, Format::Oracle, 1, &["obj_id"]);
    let (t, _) = read(&rec, Format::Oracle, false).unwrap();
    assert_eq!(t.records[0].offset, 42_932_745 * 512);
}

#[test]
fn disksim_bad_lines() {
    let f = Format::Disksim;
    assert_bad(
        b"1 0 8 16 1\n2 0 8 16\n",
        f,
        2,
        &["expected 5 whitespace-separated fields", "found 4"],
    );
    assert_bad(b"1 0 8 16 1\nx 0 8 16 1\n", f, 2, &["time", "`x`"]);
    assert_bad(b"1 70000 8 16 1\n", f, 1, &["device at most 65535"]);
    assert_bad(b"1 0 8 0 1\n", f, 1, &["at least 1 byte"]);
    assert_bad(b"1 0 8 99999999999 1\n", f, 1, &["below 4 GiB"]);
    assert_lenient(b"1 0 8 16 1\n\xff\xfe\n2 0 8 16 0\n", f, 2, 1);
    assert_bad(b"1 0 8 16 1\n\xff\xfe\n", f, 2, &["UTF-8", "0xff"]);
    // Original DiskSim: fractional milliseconds, with a unit override.
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "d", b"0.5 0 8 16 1\n2.25 0 8 16 0\n");
    let opts = ReadOptions::default().format(f).time_unit_ns(1_000_000);
    let (t, _) = read_trace(&p, &opts).unwrap();
    assert_eq!(t.records[1].time_ns, 1_750_000);
}

#[test]
fn spc_rows_and_errors() {
    let f = Format::Spc;
    let (t, _) = read(
        b"ASU,LBA,Size,Opcode,Timestamp\n0,303567,3584,w,0.5\n2,8,512,R,0.25\n",
        f,
        false,
    )
    .unwrap();
    let r = t.records[0];
    assert_eq!(
        (r.dev, r.offset, r.size, r.is_write(), r.time_ns),
        (0, 303_567 * 512, 3584, true, 250_000_000)
    );
    assert_eq!(
        (
            t.records[1].dev,
            t.records[1].is_write(),
            t.records[1].time_ns
        ),
        (2, false, 0)
    );
    assert_bad(b"0,1,512,x,0.0\n", f, 1, &["Opcode r or w", "`x`"]);
    assert_bad(b"0,1,512,r,-1\n", f, 1, &["Timestamp"]);
    assert_bad(b"0,1,512,r\n", f, 1, &["expected 5 fields"]);
    assert_lenient(b"0,1,512,r,1\n0,1,512,r\n", f, 1, 1);
}

#[test]
fn msr_rows_and_errors() {
    let f = Format::Msr;
    let csv = "128166372003061629,wdev,2,Write,3875307520,4096,2315\n128166372013061629,wdev,2,read,4096,512,10\n";
    let (t, _) = read(csv.as_bytes(), f, false).unwrap();
    let r = t.records[1];
    // 10,000,000 ticks of 100 ns after the first: one second.
    assert_eq!(
        (r.time_ns, r.dev, r.offset, r.size, r.is_write()),
        (1_000_000_000, 2, 4096, 512, false)
    );
    assert_eq!(
        (t.records[0].time_ns, t.records[0].offset),
        (0, 3_875_307_520)
    );
    assert_bad(
        b"1,h,0,Erase,0,512,1\n",
        f,
        1,
        &["Type Read or Write", "`Erase`"],
    );
    assert_bad(
        b"1,h,0,Read,0,512\n",
        f,
        1,
        &["expected 7 fields", "found 6"],
    );
    assert_lenient(b"1,h,0,Read,0,512,1\n2,h,0,Read,0,0,1\n", f, 1, 1);
}

const BLKPARSE: &str = "\
  8,0    1       11     0.000123456  4321  Q   R 2048 + 8 [grep]
  8,0    1       12     0.000124000  4321  G   R 2048 + 8 [grep]
  8,0    1       13     0.000125000  4321  D   R 2048 + 8 [grep]
  8,0    0        1     0.000200000   99  Q  WS 4096 + 16 [kworker/u8:2]
  8,0    0        2     0.000300000   99  Q FWS [kworker/u8:2]
  8,0    0        3     0.000400000   99  Q  DS 8192 + 1024 [fstrim]
  8,16   0        4     0.000500000   50  Q  RA 100 + 8 [cat]
  8,0    1       14     0.000600000  4321  C   R 2048 + 8 [0]

CPU0 (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           1,        8KiB
 Read Dispatches:        1,        4KiB\t Write Dispatches:        0,        0KiB
Total (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           1,        8KiB
Throughput (R/W): 0KiB/s / 0KiB/s
Events (8,0): 8 entries
Skips: 0 forward (0 -   0.0%)
";

#[test]
fn blkparse_takes_queue_events() {
    let (t, report) = read(BLKPARSE.as_bytes(), Format::Blkparse, false).unwrap();
    let got: Vec<_> = t
        .records
        .iter()
        .map(|r| (r.dev, r.offset / 512, r.size, r.is_write(), r.pid))
        .collect();
    assert_eq!(
        got,
        [
            (0, 2048, 4096, false, 4321),
            (0, 4096, 8192, true, 99),
            (1, 100, 4096, false, 50)
        ]
    );
    assert_eq!(t.records[0].time_ns, 0);
    assert_eq!(t.records[1].time_ns, 200_000 - 123_456);
    // The flush and the discard are not requests, and are counted.
    assert_eq!((report.ignored, report.skipped), (2, 0));
    assert_eq!(
        t.meta.processes,
        [
            (50, "cat".to_string()),
            (99, "kworker/u8:2".into()),
            (4321, "grep".into())
        ]
    );
}

#[test]
fn blkparse_other_actions_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "b", BLKPARSE.as_bytes());
    let (t, _) = read_trace(&p, &ReadOptions::default().blkparse_action('C')).unwrap();
    assert_eq!(t.records.len(), 1);
    assert!(t.meta.processes.is_empty(), "C brackets hold an error code");
    let f = Format::Blkparse;
    assert_bad(
        b"  8,0 1 11 0.1 4321 Q R 2048 - 8 [grep]\n",
        f,
        1,
        &["`+`", "`-`"],
    );
    assert_bad(
        b"  8,0 1 11 0.1 4321 Q R 2048 +\n",
        f,
        1,
        &["count", "end of the line"],
    );
    assert_bad(
        b"  8,0 1 11 0.1 4321 Q XYZ 2048 + 8 [grep]\n",
        f,
        1,
        &["RWBS", "`XYZ`"],
    );
    assert_bad(b"hello there\n", f, 1, &["blkparse event", "`hello there`"]);
    assert_lenient(b"hello\n  8,0 1 11 0.1 4321 Q R 2048 + 8 [grep]\n", f, 1, 1);
}

#[test]
fn lines_comments_and_errors() {
    let f = Format::Lines;
    let (t, _) = read(b"# header\n\n7\n  8  \r\n", f, false).unwrap();
    assert_eq!(
        t.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        [7 * 4096, 8 * 4096]
    );
    assert_bad(b"1\n2\nthree\n", f, 3, &["block number", "`three`"]);
    assert_bad(b"1\n18446744073709551615\n", f, 2, &["block number × 4096"]);
    assert_lenient(b"1\nx\n2\ny\n", f, 2, 2);
}

#[test]
fn overlong_lines_are_bad_records_not_allocations() {
    let mut big = b"1\n".to_vec();
    big.extend(std::iter::repeat_n(b'7', 200_000));
    big.extend_from_slice(b"\n3\n");
    assert_bad(&big, Format::Lines, 2, &["at most 65536 bytes"]);
    assert_lenient(&big, Format::Lines, 2, 1);
}

fn native_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n");
    let recs = vec![outrider_trace::Record::block(1, 0, 4096, 4096, false, 0); 3];
    outrider_trace::write_native(&p, &Trace::new(Default::default(), recs), false).unwrap();
    std::fs::read(&p).unwrap()
}

#[test]
fn native_header_and_truncation() {
    let f = Format::Native;
    let good = native_bytes();
    assert!(good.starts_with(&NATIVE_MAGIC));
    assert_bad(&good[..good.len() - 50], f, 2, &["truncated", "3 records"]);
    let mut extra = good.clone();
    extra.push(0);
    assert_bad(&extra, f, 0, &["extra bytes"]);
    let mut future = good.clone();
    future[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert_bad(&future, f, 0, &["version 1, found 2", "newer outrider"]);
    let mut magic = good.clone();
    magic[0] = b'X';
    assert_bad(&magic, f, 0, &["magic `OUTRIDR1`"]);
    assert_bad(&good[..20], f, 0, &["48-byte native header"]);
    let mut flags = good.clone();
    flags[12] = 0x82;
    assert_bad(&flags, f, 0, &["flags"]);
    let mut count = good.clone();
    count[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_bad(&count, f, 0, &["record section"]);
    // A bad record (op 9) is named; lenient drops it.
    let start = u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
    let mut op = good.clone();
    op[start + 40 + 38] = 9;
    assert_bad(&op, f, 2, &["op 0 (read) or 1 (write), found 9"]);
    assert_lenient(&op, f, 2, 1);
    let mut file = good.clone();
    file[start + 24] = 1;
    assert_bad(&file, f, 1, &["file 0 (raw)"]);
}

#[test]
fn native_zstd_truncation_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("z");
    let recs = vec![outrider_trace::Record::block(1, 0, 4096, 4096, false, 0); 1000];
    outrider_trace::write_native(&p, &Trace::new(Default::default(), recs), true).unwrap();
    let good = std::fs::read(&p).unwrap();
    let mut short = good.clone();
    short.truncate(good.len() - 5);
    // Section length no longer matches the file.
    assert_bad(&short, Format::Native, 0, &["truncated"]);
    let mut count = good.clone();
    count[16..24].copy_from_slice(&1001u64.to_le_bytes());
    assert_bad(
        &count,
        Format::Native,
        1001,
        &["1001 records", "found 1000"],
    );
}

#[test]
fn format_names() {
    for f in Format::ALL {
        assert_eq!(Format::from_name(f.name()).unwrap(), f);
    }
    assert_eq!("LCS-CSV".parse::<Format>().unwrap(), Format::LcsCsv);
    let e = Format::from_name("vscsi").unwrap_err().to_string();
    assert!(
        e.contains("'vscsi'")
            && e.contains(
                "native, lcs-csv, oracle, oracle-pages, disksim, spc, msr, blkparse, lines"
            ),
        "{e}"
    );
}

#[test]
fn detection_failures_say_why() {
    let dir = tempfile::tempdir().unwrap();
    for (bytes, why) in [
        (&b""[..], "empty"),
        (b"\x00\x01\x02", "not a multiple of 24"),
        (b"just some prose\n", "matches no text format"),
    ] {
        let p = write(dir.path(), "x", bytes);
        let e = read_trace(&p, &ReadOptions::default()).err().unwrap();
        assert!(matches!(e, TraceError::UnknownFormat { .. }), "{e}");
        assert!(
            e.to_string().contains(why) && e.to_string().contains("--format"),
            "{e}"
        );
    }
}

#[test]
fn missing_file_is_an_io_error() {
    let e = read_trace(
        Path::new("/nonexistent/trace"),
        &ReadOptions::default().format(Format::Lines),
    )
    .err()
    .unwrap();
    assert!(matches!(e, TraceError::Io { .. }), "{e}");
}

/// An empty or blank file read with an explicit format once gave a trace
/// of zero requests and exit 0; it is an error naming the file now.
#[test]
fn empty_and_blank_files_are_errors_in_every_text_format() {
    for f in Format::ALL {
        if f == Format::Native {
            continue;
        }
        // (oracle is binary: blank text there is a truncated record.)
        let inputs: &[&[u8]] = if matches!(f, Format::Oracle | Format::OraclePages) {
            &[b""]
        } else {
            &[b"", b"  \n\n\t\r\n"]
        };
        for &bytes in inputs {
            match read(bytes, f, false) {
                Err(TraceError::Bad { expected, .. }) => {
                    assert!(expected.contains("found none"), "{f}: {expected}")
                }
                Err(e) => panic!("{f}: expected Bad, got {e}"),
                Ok((t, _)) => panic!("{f}: read {} records from nothing", t.records.len()),
            }
        }
    }
}

/// `--lenient` on a file of nothing but garbage once answered with zero
/// requests; it is an error quoting the first bad record now.
#[test]
fn lenient_on_pure_garbage_is_an_error_naming_the_first_bad_record() {
    for f in [
        Format::LcsCsv,
        Format::Disksim,
        Format::Spc,
        Format::Msr,
        Format::Lines,
    ] {
        match read(b"garbage one\ngarbage two\n", f, true) {
            Err(TraceError::Bad { expected, .. }) => assert!(
                expected.contains("2 malformed") && expected.contains("record 1"),
                "{f}: {expected}"
            ),
            Err(e) => panic!("{f}: expected Bad, got {e}"),
            Ok((t, _)) => panic!("{f}: read {} records from garbage", t.records.len()),
        }
    }
}

/// blkparse lines of actions other than the one taken (and Q events that
/// are not reads or writes) were skipped without looking at them, garbage
/// included; their common fields are checked now.
#[test]
fn blkparse_checks_every_event_not_only_the_requests() {
    let f = Format::Blkparse;
    let good = "  8,0 1 11 0.1 4321 Q R 2048 + 8 [grep]\n";
    assert_bad(
        format!("{good}  8,0 1 12 zz 4321 D R 2048 + 8 [grep]\n").as_bytes(),
        f,
        2,
        &["seconds", "`zz`"],
    );
    assert_bad(
        format!("{good}  8,0 1 12 0.2 4321 ?? R 2048 + 8 [grep]\n").as_bytes(),
        f,
        2,
        &["blkparse action", "`??`"],
    );
    assert_bad(
        format!("{good}  8,0 1 12 0.2 4321 Q N 2048 + zz [grep]\n").as_bytes(),
        f,
        2,
        &["count", "`zz`"],
    );
    assert_bad(
        format!("{good}  8,0 1 12 0.2 4321 Q D 20x48 + 8 [grep]\n").as_bytes(),
        f,
        2,
        &["sector", "`20x48`"],
    );
    // Well-formed events of other actions, flushes and messages still pass.
    let (t, rep) = read(
        format!("{good}  8,0 1 12 0.2 4321 D R 2048 + 8 [grep]\n  8,0 1 13 0.3 100 Q FWS [kworker]\n  8,0 0 0 0.4 0 m N cfq4321 insert\n  8,0 1 14 0.5 4321 UT N [grep] 1\n").as_bytes(),
        f,
        false,
    )
    .unwrap();
    assert_eq!((t.records.len(), rep.ignored), (1, 1));
}

/// An MSR read at offset 2^64-1 once became, split into pages, a page at
/// offset 0 (the end wrapped). Ranges past 2^64 are errors in every format.
#[test]
fn requests_ending_past_2_pow_64_are_errors() {
    assert_bad(
        b"128166372003061629,hm,1,Read,18446744073709551615,4096,12345\n",
        Format::Msr,
        1,
        &["below 2^64", "18446744073709551615"],
    );
    assert_bad(
        b"0 0 36028797018963967 8 1\n",
        Format::Disksim,
        1,
        &["below 2^64"],
    );
    // Lenient: the record is skipped like any other bad one.
    assert_lenient(
        b"1,hm,1,Read,0,4096,1\n2,hm,1,Read,18446744073709551615,1,1\n",
        Format::Msr,
        1,
        1,
    );
}
