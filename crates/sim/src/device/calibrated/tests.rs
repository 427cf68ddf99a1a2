use super::*;

/// A device with 80 µs per request, 500 MB/s per request, 8 requests at
/// once and a 1.5 GB/s link.
const TRUE: CalibratedParams = CalibratedParams {
    latency_ns: 80_000,
    transfer_bytes_per_s: 500_000_000,
    bandwidth_bytes_per_s: 1_500_000_000,
    depth: 8,
};

const SIZES: [u64; 5] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];
const THREADS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// What calibrate would measure on `p`, each value scaled by `noise(i)`.
fn measured(p: &CalibratedParams, noise: impl Fn(usize) -> f64) -> Measurements {
    let t4k = p.alone_ns(4096) as f64;
    Measurements {
        latency: SIZES
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, p.alone_ns(s) as f64 * noise(i)))
            .collect(),
        iops: THREADS
            .iter()
            .enumerate()
            .map(|(i, &d)| (d, f64::from(d.min(p.depth)) / t4k * 1e9 * noise(i + 5)))
            .collect(),
        bandwidth_bytes_per_s: p.bandwidth_bytes_per_s as f64,
    }
}

#[test]
fn the_fit_of_exact_measurements_gives_the_parameters_back() {
    let f = fit(&measured(&TRUE, |_| 1.0)).unwrap();
    assert_eq!(f.params, TRUE);
    assert_eq!(f.knee_depth, 8);
    // 8 servers / 88.192 µs per 4 KiB read.
    assert_eq!(f.peak_iops.round(), 90_711.0);
}

/// ±3% noise on every point: latency within 5%, the depth still 8.
#[test]
fn the_fit_tolerates_measurement_noise() {
    let noise = |i: usize| if i.is_multiple_of(2) { 1.03 } else { 0.97 };
    let f = fit(&measured(&TRUE, noise)).unwrap();
    let rel = |a: u64, b: u64| (a as f64 - b as f64).abs() / b as f64;
    assert!(rel(f.params.latency_ns, TRUE.latency_ns) < 0.05, "{f:?}");
    assert!(
        rel(f.params.transfer_bytes_per_s, TRUE.transfer_bytes_per_s) < 0.05,
        "{f:?}"
    );
    assert_eq!(f.params.depth, 8, "{f:?}");
}

#[test]
fn the_fit_says_what_is_missing() {
    let mut m = measured(&TRUE, |_| 1.0);
    m.latency.truncate(1);
    assert!(fit(&m).unwrap_err().contains("two request sizes"));
    let mut m = measured(&TRUE, |_| 1.0);
    m.iops.clear();
    assert!(fit(&m).unwrap_err().contains("4 KiB read rate"));
    let mut m = measured(&TRUE, |_| 1.0);
    m.latency = vec![(4096, 100_000.0), (1 << 20, 90_000.0)];
    assert!(fit(&m).unwrap_err().contains("does not grow"));
}

fn req(id: u64, lbn: u64, blocks: u32) -> DevRequest {
    DevRequest {
        id,
        lbn,
        blocks,
        ..DevRequest::default()
    }
}

fn drain(d: &mut Calibrated) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    while d.next_completion_ns().is_some() {
        let (t, r) = d.complete_next().unwrap();
        out.push((r.id, t));
    }
    out
}

/// Nine 4 KiB reads at once: eight servers take one each (88.192 µs), the
/// ninth waits for the first free server.
#[test]
fn depth_servers_overlap_and_the_next_request_queues() {
    let mut d = Calibrated::new(TRUE);
    for i in 0..9 {
        d.submit(0, req(i, i * 1000, 1));
    }
    let got = drain(&mut d);
    assert_eq!(got.len(), 9);
    assert!(got[..8].iter().all(|&(_, t)| t == 88_192));
    assert_eq!(got[8], (8, 2 * 88_192));
}

/// Sixteen 1 MiB reads at once: eight servers would finish each in
/// 80 µs + 2.097 ms, but the 1.5 GB/s link moves 16 MiB in 11.18 ms.
#[test]
fn large_reads_are_capped_by_the_shared_bandwidth() {
    let mut d = Calibrated::new(TRUE);
    for i in 0..16 {
        d.submit(0, req(i, i * 256, 256));
    }
    let last = drain(&mut d).last().unwrap().1;
    // Each request's link share is rounded to the ns: 699 051 ns.
    assert_eq!(last, 16 * ns_at(1 << 20, 1_500_000_000));
    assert_eq!(last, 11_184_816);
    assert_eq!(d.max_throughput_bytes_per_s(), Some(1_500_000_000));
}

#[test]
fn the_explicit_spec_round_trips_and_bad_ones_say_why() {
    let text = TRUE.spec();
    let body = text.strip_prefix("calibrated:").unwrap();
    assert_eq!(CalibratedParams::parse(body).unwrap(), TRUE);
    assert!(CalibratedParams::parse("latency_ns=1")
        .unwrap_err()
        .contains("missing transfer_bytes_per_s"));
    assert!(CalibratedParams::parse("speed=3")
        .unwrap_err()
        .contains("unknown key 'speed'"));
    let zero_depth = body.replace("depth=8", "depth=0");
    assert!(CalibratedParams::parse(&zero_depth)
        .unwrap_err()
        .contains("depth 0"));
}
