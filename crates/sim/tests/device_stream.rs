//! The engine's second event stream (flashy §IV-A): every read that reaches
//! the device is reported to the policy with its pid, position, length and
//! origin; the device model's maximum throughput is told at each run
//! start; the policy's time series is collected per run.

use outrider_core::{
    Access, BoxedPolicy, DeviceInfo, DeviceRequest, Feedback, Interests, Origin, Outcome, Policy,
    RunInfo, SeriesPoint, Sink, Target, WindowId,
};
use outrider_sim::device::build_device;
use outrider_sim::{simulate_on, SimConfig};
use outrider_trace::{Record, Trace, TraceMeta};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Log {
    device: Vec<DeviceRequest>,
    info: Vec<DeviceInfo>,
}

/// Prefetch the next 2 blocks after every access; record what it is told.
#[derive(Clone)]
struct Recorder(Arc<Mutex<Log>>);

impl Policy for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        let w = sink.new_window();
        let t = Target::Block {
            dev: a.dev,
            lbn: a.end_lbn(),
        };
        sink.prefetch(t, 2, w);
    }
    fn interests(&self) -> Interests {
        Interests {
            device_requests: true,
            ..Interests::default()
        }
    }
    fn on_feedback(&mut self, f: &Feedback<'_>, _sink: &mut Sink<'_>) {
        if let Feedback::DeviceRequest(r) = f {
            self.0.lock().unwrap().device.push(**r);
        }
    }
    fn on_start(&mut self, info: &RunInfo<'_>) {
        self.0.lock().unwrap().info.extend_from_slice(info.devices);
    }
    fn series(&self) -> Vec<SeriesPoint> {
        vec![SeriesPoint {
            time_ns: 7,
            values: vec![("x", 1.0)],
        }]
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[test]
fn demand_misses_and_prefetches_reach_the_policy_as_device_requests() {
    // pid 7 reads block 10, then block 11 a millisecond later.
    let records = vec![
        Record::block(0, 0, 10 * 4096, 4096, false, 7),
        Record::block(1_000_000, 0, 11 * 4096, 4096, false, 7),
    ];
    let trace = Trace::new(TraceMeta::default(), records);
    let log = Arc::new(Mutex::new(Log::default()));
    let mut p: BoxedPolicy = Box::new(Recorder(log.clone()));
    let cfg = SimConfig {
        runs: 2,
        ..SimConfig::default()
    };
    let res = simulate_on(
        &trace,
        &mut p,
        "recorder",
        &cfg,
        build_device("ssd").unwrap(),
        &mut |_| {},
    );
    let log = log.lock().unwrap();
    // Per run: the miss of block 10 (pid 7), our prefetch of 11..13
    // (window 1), then after the hit on 11 only block 13 is new (window 2).
    let got: Vec<(u32, u64, u32, Origin, Option<WindowId>)> = log.device[..3]
        .iter()
        .map(|r| (r.pid, r.lbn, r.blocks, r.origin, r.window))
        .collect();
    assert_eq!(
        got,
        vec![
            (7, 10, 1, Origin::Demand, None),
            (0, 11, 2, Origin::OurPrefetch, Some(WindowId(1))),
            (0, 13, 1, Origin::OurPrefetch, Some(WindowId(2))),
        ]
    );
    assert_eq!(log.device.len(), 6, "the same three in run 2");
    assert_eq!(log.device[0].time_ns, 0);
    // Think timing: the second access (and its prefetch) comes 1 ms after
    // the first read completed.
    assert!(log.device[2].time_ns > 1_000_000);
    assert_eq!(log.device[2].time_ns, res.counters[0].elapsed_ns);
    // The ssd model's link: 500 MB/s, told before each run.
    assert_eq!(
        log.info,
        vec![
            DeviceInfo {
                dev: None,
                max_read_bytes_per_s: Some(500_000_000)
            };
            2
        ]
    );
    assert_eq!(res.series.len(), 2);
    assert_eq!(res.series[1][0].values, vec![("x", 1.0)]);
}

#[test]
fn flashy_in_the_simulator_prefetches_a_sequential_scan_ahead() {
    // 4096 reads of 1 MiB-record-like 64 KiB, 1 ms compute between them
    // (a SlowThink-like scan) on the ssd model.
    let records: Vec<Record> = (0..4096u64)
        .map(|i| Record::block(i * 1_000_000, 0, i * 65536, 65536, false, 1))
        .collect();
    let trace = Trace::new(TraceMeta::default(), records);
    let mut p = outrider_core::build_policy("flashy").unwrap();
    let res = simulate_on(
        &trace,
        &mut p,
        "flashy",
        &SimConfig::default(),
        build_device("ssd").unwrap(),
        &mut |_| {},
    );
    let r = &res.reports[0];
    // The first interval is cold; afterwards the stream is prefetched.
    assert!(r.coverage > 0.7, "coverage {}", r.coverage);
    assert!(r.cost < 1.2, "cost {}", r.cost);
    let s = &res.series[0];
    let ticks = res.counters[0].elapsed_ns / 500_000_000;
    assert_eq!(s.len() as u64, ticks);
    assert!(s.iter().all(|p| p.values.len() == 5));
}

#[test]
fn a_stack_forwards_device_requests_device_info_and_series() {
    // readahead above flashy: flashy still sees the device (its cap and its
    // misses), ticks, and its series comes out of the stack.
    let records: Vec<Record> = (0..2048u64)
        .map(|i| Record::block(i * 1_000_000, 0, i * 65536, 65536, false, 1))
        .collect();
    let trace = Trace::new(TraceMeta::default(), records);
    let mut p = outrider_core::build_policy("readahead+flashy").unwrap();
    let res = simulate_on(
        &trace,
        &mut p,
        "readahead+flashy",
        &SimConfig::default(),
        build_device("ssd").unwrap(),
        &mut |_| {},
    );
    let s = &res.series[0];
    assert_eq!(s.len() as u64, res.counters[0].elapsed_ns / 500_000_000);
    // The first interval was all misses: flashy heard of them.
    let miss = s[0].values.iter().find(|v| v.0 == "miss_mb_s").unwrap().1;
    assert!(miss > 0.0);
    assert!(res.reports[0].coverage > 0.7, "{}", res.reports[0].coverage);
}
