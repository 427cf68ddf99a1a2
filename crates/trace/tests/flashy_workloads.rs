//! Shapes of flashy's evaluation workloads (`slowthink`, `lfs`, `blast`).

use outrider_trace::workloads::generate;

#[test]
fn slowthink_reads_records_with_compute_between() {
    let t = generate("slowthink:size=8MiB,record=1MiB,think=5ms").unwrap();
    let v: Vec<(u64, u64, u32)> = t
        .records
        .iter()
        .map(|r| (r.time_ns, r.offset, r.size))
        .collect();
    let expect: Vec<(u64, u64, u32)> = (0..8u64)
        .map(|i| (i * 5_000_000, i << 20, 1 << 20))
        .collect();
    assert_eq!(v, expect);
}

#[test]
fn lfs_is_sequential_then_random_then_sequential() {
    let t = generate("lfs:size=1MiB,req=256KiB,rreq=8KiB,count=3").unwrap();
    let offs: Vec<u64> = t.records.iter().map(|r| r.offset).collect();
    assert_eq!(offs.len(), 4 + 3 + 4);
    assert_eq!(&offs[..4], &[0, 262144, 524288, 786432]);
    assert_eq!(&offs[7..], &[0, 262144, 524288, 786432]);
    assert!(t.records[4..7].iter().all(|r| r.size == 8192));
}

#[test]
fn blast_scans_segments_skipping_gaps_with_varying_compute() {
    // 4 phases of 1 MiB segments, the last 256 KiB of each skipped, one
    // random read after each phase.
    let t = generate("blast:size=4MiB,phases=4,req=256KiB,gap=256KiB,random=1,think=1ms").unwrap();
    let scans: Vec<u64> = t
        .records
        .iter()
        .filter(|r| r.size == 262144)
        .map(|r| r.offset >> 10)
        .collect();
    assert_eq!(
        scans,
        vec![0, 256, 512, 1024, 1280, 1536, 2048, 2304, 2560, 3072, 3328, 3584]
    );
    assert_eq!(t.records.len(), 12 + 4);
    // Phase 2 computes 3 ms per request, phase 1 1 ms.
    let gap = |i: usize| t.records[i + 1].time_ns - t.records[i].time_ns;
    assert_eq!((gap(0), gap(4)), (1_000_000, 3_000_000));
    assert!(generate("blast:size=4MiB,phases=4,gap=1MiB").is_err());
}
