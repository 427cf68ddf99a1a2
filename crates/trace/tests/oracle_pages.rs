//! `oracle-pages`: the page stream outrider writes for libCacheSim (obj_id
//! in 4 KiB pages, so its OBL prefetcher's `obj_id + 1` is the next page)
//! must read back as the same pages, carry correct `next_access_vtime`
//! values, and refuse traces it cannot represent.

use outrider_trace::{read_trace, write_trace, Format, ReadOptions, Record, Trace, TraceMeta};

fn pages(blocks: &[u64]) -> Trace {
    let records = blocks
        .iter()
        .enumerate()
        .map(|(i, &b)| Record::block(i as u64 * 1_000_000_000, 0, b * 4096, 4096, false, 0))
        .collect();
    Trace::new(TraceMeta::default(), records)
}

/// A gzip copy of `plain` beside it (read as a stream, decoded).
fn gz_copy(plain: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let gz = plain.with_extension("bin.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(plain).unwrap()).unwrap();
    enc.finish().unwrap();
    gz
}

fn read_as(path: &std::path::Path, format: Format) -> Trace {
    let opts = ReadOptions {
        format: Some(format),
        ..ReadOptions::default()
    };
    read_trace(path, &opts).expect("reads back").0
}

#[test]
fn pages_round_trip_with_next_access_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.bin");
    let blocks = [7, 8, 7, 9, 8, 1 << 40];
    write_trace(&path, &pages(&blocks), Format::OraclePages, false).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 24 * blocks.len());
    let field = |i: usize, at: usize| {
        i64::from_le_bytes(bytes[24 * i + at..24 * i + at + 8].try_into().unwrap())
    };
    // obj_id counts pages; next_access_vtime indexes the page's next request.
    assert_eq!(field(0, 4), 7);
    assert_eq!(field(5, 4), 1 << 40);
    let next: Vec<i64> = (0..blocks.len()).map(|i| field(i, 16)).collect();
    assert_eq!(next, vec![2, 4, -1, -1, -1, -1]);
    let back = read_as(&path, Format::OraclePages);
    let got: Vec<u64> = back.records.iter().map(|r| r.first_block()).collect();
    assert_eq!(got, blocks);
    assert!(back.records.iter().all(|r| r.block_count() == 1));
    assert_eq!(back.records[3].time_ns, 3_000_000_000);
    // Read as plain `oracle`, the same ids are sectors: 8 per page.
    let sectors = read_as(&path, Format::Oracle);
    assert_eq!(sectors.records[1].offset, 8 * 512);
}

#[test]
fn multi_page_requests_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.bin");
    let mut records = pages(&[1, 2]).records.to_vec();
    records[1].size = 8192;
    let t = Trace::new(TraceMeta::default(), records);
    let err = write_trace(&path, &t, Format::OraclePages, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("request 2") && err.contains("--split-pages"),
        "{err}"
    );
    assert!(!path.exists());
}

/// A plain file is mapped, a compressed one streamed in chunks: both
/// paths must decode the same records (2^19 + 3 records: more than one
/// 12 MiB map window and one read chunk, and not a whole number of either).
#[test]
fn mapped_and_streamed_reads_agree() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("p.bin");
    let blocks: Vec<u64> = (0..(1u64 << 19) + 3).map(|i| (i * 7919) % 5000).collect();
    write_trace(&plain, &pages(&blocks), Format::OraclePages, false).unwrap();
    let gz = gz_copy(&plain);
    let (a, b) = (
        read_as(&plain, Format::OraclePages),
        read_as(&gz, Format::OraclePages),
    );
    assert_eq!(a.records.len(), blocks.len());
    assert_eq!(&a.records[..], &b.records[..]);
}

/// A well-formed plain file stays packed in its mapping and is decoded
/// record by record as the simulator reads it: each record must be the one
/// the decoding reader gives (a compressed copy), with times relative to
/// the earliest request even when that is not the first.
#[test]
fn packed_records_decode_as_the_streaming_reader_does() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("p.bin");
    write_trace(&plain, &pages(&[5, 3, 9]), Format::OraclePages, false).unwrap();
    let mut bytes = std::fs::read(&plain).unwrap();
    bytes[0..4].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&plain, &bytes).unwrap();
    let (a, b) = (
        read_as(&plain, Format::OraclePages),
        read_as(&gz_copy(&plain), Format::OraclePages),
    );
    assert!(matches!(a.records, outrider_trace::Records::Packed(_)));
    let view = a.records.view();
    let got: Vec<Record> = (0..a.records.len()).map(|i| view.get(i)).collect();
    assert_eq!(got, b.records.to_vec());
    assert_eq!(b.records[1].time_ns, 0, "the earliest request is time 0");
    assert_eq!(b.records[0].time_ns, 6_000_000_000);
    assert_eq!(&a.records[..], &b.records[..]);
}
