//! Wall-clock throughput of the device models (not an assertion: tests
//! never judge wall-clock time). Run with
//! `cargo test -p outrider-sim --release --test device_perf -- --ignored --nocapture`.

use std::time::Instant;

use outrider_sim::device::{build_device, DevRequest};

#[test]
#[ignore = "benchmark: prints requests per second"]
fn device_model_requests_per_second() {
    let n: u64 = 5_000_000;
    for spec in ["hdd", "ssd", "nvme", "raid0:4", "raid0:4:ssd"] {
        for (depth, sequential) in [(1usize, true), (1, false), (32, false)] {
            let mut d = build_device(spec).unwrap();
            let mut x = 0x1234_5678_u64;
            let mut lbn = |i: u64| {
                if sequential {
                    i * 8
                } else {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 100_000_000
                }
            };
            let wall = Instant::now();
            let mut next = 0u64;
            for _ in 0..depth {
                d.submit(
                    0,
                    DevRequest {
                        id: next,
                        lbn: lbn(next),
                        blocks: 8,
                        ..Default::default()
                    },
                );
                next += 1;
            }
            while let Some(t) = d.next_completion_ns() {
                let (_, _) = d.complete_next().unwrap();
                if next < n {
                    d.submit(
                        t,
                        DevRequest {
                            id: next,
                            lbn: lbn(next),
                            blocks: 8,
                            ..Default::default()
                        },
                    );
                    next += 1;
                }
            }
            let s = wall.elapsed().as_secs_f64();
            println!(
                "{spec:12} QD{depth:<3} {:10}: {:6.1} M requests/s",
                if sequential { "sequential" } else { "random" },
                n as f64 / s / 1e6
            );
        }
    }
}
