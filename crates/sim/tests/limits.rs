//! The loop at the limits of modelled time: a request time or think time
//! that would carry the clock past 2^64 ns is an error, not a panic or a
//! wrapped clock; a long idle gap costs no ticks.

use outrider_core::{Access, BoxedPolicy, Feedback, Interests, Outcome, Policy, Sink};
use outrider_sim::{simulate, SimConfig};
use outrider_trace::{Record, Trace, TraceMeta};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn trace(times: &[u64]) -> Trace {
    let records = (times.iter().enumerate())
        .map(|(i, &t)| Record::block(t, 0, 4096 * i as u64, 4096, false, 1))
        .collect();
    Trace::new(TraceMeta::default(), records)
}

/// Counts its ticks (every millisecond).
#[derive(Clone)]
struct Ticker(Arc<AtomicU64>);

impl Policy for Ticker {
    fn name(&self) -> &str {
        "ticker"
    }
    fn interests(&self) -> Interests {
        Interests {
            tick_interval_ns: Some(1_000_000),
            ..Interests::ACCESSES_ONLY
        }
    }
    fn on_access(&mut self, _: &Access, _: &Outcome, _: &mut Sink<'_>) {}
    fn on_feedback(&mut self, f: &Feedback<'_>, _: &mut Sink<'_>) {
        if let Feedback::Tick(_) = f {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[test]
fn a_clock_past_two_to_the_64_ns_is_an_error() {
    let cfg = SimConfig {
        device: "none".into(),
        ..SimConfig::default()
    };
    let mut p = outrider_core::build_policy("none").unwrap();
    let e = simulate(&trace(&[0, u64::MAX]), &mut p, "none", &cfg, &mut |_| {}).unwrap_err();
    assert!(e.contains("2^64 ns"), "{e}");
    let think = SimConfig {
        think_ns: Some(u64::MAX - 5),
        ..cfg.clone()
    };
    let e = simulate(&trace(&[0, 1, 2]), &mut p, "none", &think, &mut |_| {}).unwrap_err();
    assert!(e.contains("2^64 ns"), "{e}");
    // Just below the limit the run is modelled exactly.
    let r = simulate(
        &trace(&[0, u64::MAX - 1]),
        &mut p,
        "none",
        &cfg,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.counters[0].elapsed_ns, u64::MAX - 1);
}

#[test]
fn ticks_across_an_idle_gap_are_skipped() {
    // Ten years between two requests: 3.15e11 one-millisecond ticks if
    // every one ran; a tick that asks for nothing while the device is idle
    // skips to the last one before the next request.
    let ten_years = 10 * 365 * 86_400 * 1_000_000_000u64;
    let ticks = Arc::new(AtomicU64::new(0));
    let mut p: BoxedPolicy = Box::new(Ticker(Arc::clone(&ticks)));
    let cfg = SimConfig {
        device: "ssd".into(),
        ..SimConfig::default()
    };
    let t = trace(&[0, ten_years, ten_years + 1]);
    let r = simulate(&t, &mut p, "ticker", &cfg, &mut |_| {}).unwrap();
    assert!(r.counters[0].elapsed_ns >= ten_years);
    let n = ticks.load(Ordering::Relaxed);
    assert!((1..=10).contains(&n), "{n} ticks");
}
