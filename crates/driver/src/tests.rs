use super::*;
use outrider_core::{NoResidency, Target};

/// Asks for 4 blocks after every access; records the feedback it hears.
#[derive(Clone, Default)]
struct Ahead {
    heard: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl Policy for Ahead {
    fn name(&self) -> &str {
        "ahead"
    }
    fn interests(&self) -> Interests {
        Interests {
            device_requests: true,
            ..Interests::default()
        }
    }
    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        let w = sink.new_window();
        sink.prefetch(
            Target::Block {
                dev: 0,
                lbn: a.lbn + 1,
            },
            4,
            w,
        );
    }
    fn on_feedback(&mut self, f: &Feedback<'_>, _sink: &mut Sink<'_>) {
        self.heard.lock().unwrap().push(match f {
            Feedback::Evicted(_) => "evicted",
            Feedback::DeviceRequest(_) => "device",
            Feedback::PrefetchDone(_) => "done",
            _ => "other",
        });
    }
    fn box_clone(&self) -> outrider_core::BoxedPolicy {
        Box::new(self.clone())
    }
}

/// Fetches what the budget allows; every fetch is one device read, and the
/// test decides what happens to the blocks.
#[derive(Default)]
struct Fake {
    c: Counters,
    pending: u64,
    fetched: Vec<u32>,
    written_off_before: Vec<u64>,
}

impl Kernel for Fake {
    fn residency(&self) -> &dyn Residency {
        &NoResidency
    }
    fn fetch(&mut self, batch: &[Admitted], budget: &mut Budget, now: u64, notes: &mut Notes) {
        for a in batch {
            if budget.take(u64::from(a.req.blocks)) {
                self.fetched.push(a.req.blocks);
                self.c.prefetched_blocks += u64::from(a.req.blocks);
                self.pending += u64::from(a.req.blocks);
                notes.evicted.push(Eviction {
                    dev: 0,
                    lbn: 0,
                    prefetched: false,
                    used: false,
                    window: None,
                });
                notes.device.push(DeviceRequest {
                    time_ns: now,
                    pid: 0,
                    dev: 0,
                    lbn: 0,
                    blocks: a.req.blocks,
                    origin: outrider_core::Origin::OurPrefetch,
                    window: Some(a.req.window),
                });
            }
        }
    }
    fn unused_blocks(&self) -> u64 {
        self.pending
    }
    fn write_off(&mut self, before: u64) -> u64 {
        self.written_off_before.push(before);
        if before == 0 {
            return 0;
        }
        let n = self.pending;
        self.c.prefetched_unused_blocks += n;
        self.pending = 0;
        n
    }
    fn counters(&self) -> &Counters {
        &self.c
    }
}

fn access(lbn: u64, t: u64) -> Access {
    Access {
        lbn,
        blocks: 1,
        time_ns: t,
        ..Access::default()
    }
}

fn start(d: &mut Driver<Box<dyn Policy>>) {
    d.start(&RunInfo {
        run: 1,
        budget_changed: false,
        cache_blocks: 1 << 20,
        devices: &[],
        memory_budget_bytes: None,
        oracle: None,
    });
}

#[test]
fn the_budget_bounds_unused_prefetched_blocks() {
    let mut d: Driver<Box<dyn Policy>> = Driver::new(
        Box::new(Ahead::default()),
        GuardOptions {
            budget_blocks: Some(10),
            ..GuardOptions::OFF
        },
    );
    start(&mut d);
    let mut k = Fake::default();
    for i in 0..5 {
        d.access(&mut k, &access(i * 10, i), &Outcome::default());
    }
    // 4 + 4 fit in 10 blocks; the next three requests do not.
    assert_eq!(k.fetched, vec![4, 4]);
    assert_eq!(d.stats().dropped_budget_blocks, 12);
    d.check(&k);
}

#[test]
fn the_policy_hears_evictions_then_device_reads() {
    let policy = Ahead::default();
    let heard = std::sync::Arc::clone(&policy.heard);
    let mut d: Driver<Box<dyn Policy>> = Driver::new(Box::new(policy), GuardOptions::OFF);
    start(&mut d);
    let mut k = Fake::default();
    d.access(&mut k, &access(0, 0), &Outcome::default());
    d.access(&mut k, &access(10, 1), &Outcome::default());
    // Each fetch noted an eviction and a device read: told after the
    // fetches, evictions first.
    assert_eq!(
        *heard.lock().unwrap(),
        ["evicted", "device", "evicted", "device"]
    );
    assert!(d.notes.evicted.is_empty() && d.notes.device.is_empty());
    assert_eq!(d.stats().requests, 2);
}

#[test]
fn waste_halves_admission_and_use_restores_it() {
    let ms = 1_000_000;
    let mut d: Driver<Box<dyn Policy>> = Driver::new(
        Box::new(Ahead::default()),
        GuardOptions {
            budget_blocks: None,
            unused_ttl_ns: None,
            qc_interval_ns: 200 * ms,
        },
    );
    start(&mut d);
    let mut k = Fake::default();
    // Waste too small to judge by changes nothing.
    k.c.prefetched_blocks = QC_MIN_WASTE - 1;
    k.c.prefetched_unused_blocks = QC_MIN_WASTE - 1;
    d.poll(&mut k, 200 * ms);
    assert_eq!(d.stats().admit_shift, 0);
    // An interval with only waste: one request in two is admitted next.
    k.c.prefetched_blocks += QC_MIN_WASTE;
    k.c.prefetched_unused_blocks += QC_MIN_WASTE;
    d.poll(&mut k, 400 * ms);
    assert_eq!(d.stats().admit_shift, 1);
    for i in 0..4 {
        d.access(&mut k, &access(i * 10, 401 * ms), &Outcome::default());
    }
    assert_eq!(d.stats().throttled_requests, 2);
    assert_eq!(k.fetched.len(), 2);
    // Another wasteful interval: one in four, at most down to 1/64.
    k.c.prefetched_unused_blocks += k.pending + 100;
    k.c.prefetched_blocks += 100;
    k.pending = 0;
    for t in 3..13 {
        d.poll(&mut k, t * 200 * ms);
        k.c.prefetched_unused_blocks += QC_MIN_WASTE;
        k.c.prefetched_blocks += QC_MIN_WASTE;
    }
    assert_eq!(d.stats().admit_shift, MAX_ADMIT_SHIFT);
    // Use above twice the waste steps it back by one per interval.
    k.c.prefetched_used_blocks += 2 * QC_MIN_WASTE + 1;
    k.c.prefetched_blocks += 2 * QC_MIN_WASTE + 1;
    d.poll(&mut k, 14 * 200 * ms);
    assert_eq!(d.stats().admit_shift, MAX_ADMIT_SHIFT - 1);
}

#[test]
fn prefetches_unused_past_the_ttl_are_written_off() {
    let s = 1_000_000_000;
    let mut d: Driver<Box<dyn Policy>> =
        Driver::new(Box::new(Ahead::default()), GuardOptions::live(1000));
    start(&mut d);
    let mut k = Fake::default();
    d.access(&mut k, &access(0, 0), &Outcome::default());
    assert_eq!(d.poll(&mut k, s), 0, "nothing is older than 30 s yet");
    assert_eq!(d.poll(&mut k, 31 * s), 4);
    assert_eq!(k.written_off_before, vec![0, s]);
    assert_eq!(d.stats().written_off_blocks, 4);
}

#[test]
#[should_panic(expected = "every prefetched block is used, unused or pending")]
fn counts_that_do_not_add_up_are_caught() {
    let d: Driver<Box<dyn Policy>> = Driver::new(Box::new(Ahead::default()), GuardOptions::OFF);
    let mut k = Fake::default();
    k.c.prefetched_blocks = 3;
    d.check(&k);
}

#[test]
fn guard_settings_parse() {
    assert_eq!(GuardOptions::parse("off", 100), Ok(GuardOptions::OFF));
    assert_eq!(GuardOptions::parse("live", 100), Ok(GuardOptions::live(25)));
    assert_eq!(
        GuardOptions::parse("live:0.5", 100),
        Ok(GuardOptions::live(50))
    );
    assert_eq!(
        GuardOptions::parse("live:1MiB", 100),
        Ok(GuardOptions::live(256))
    );
    for bad in ["on", "live:2.0", "live:x", "off:1"] {
        let e = GuardOptions::parse(bad, 100).unwrap_err();
        assert!(e.contains(bad), "{e}");
    }
}

#[test]
fn a_limited_application_is_told_and_held_to_its_share() {
    let policy = Ahead::default();
    let mut d: Driver<Box<dyn Policy>> = Driver::new(Box::new(policy), GuardOptions::live(1000));
    d.limit(0.25, 2);
    d.start(&RunInfo {
        run: 1,
        budget_changed: false,
        cache_blocks: 1 << 20,
        devices: &[],
        memory_budget_bytes: Some(8 * 4096),
        oracle: None,
    });
    assert_eq!(d.guard().budget_blocks, Some(2));
    assert_eq!(d.stats().admit_shift, 2);
    let mut k = Fake::default();
    for i in 0..8 {
        d.access(&mut k, &access(i * 10, i), &Outcome::default());
    }
    // One request in four admitted, none fits a 2-block budget.
    assert_eq!(d.stats().throttled_requests, 6);
    assert!(k.fetched.is_empty());
}

/// An invariant broken at a poll is remembered, stops all fetching, and
/// is reported rather than panicking there ([`Driver::check`] panics).
#[test]
fn a_broken_invariant_stops_fetching() {
    let mut d: Driver<Box<dyn Policy>> =
        Driver::new(Box::new(Ahead::default()), GuardOptions::live(1000));
    start(&mut d);
    let mut k = Fake::default();
    d.access(&mut k, &access(0, 0), &Outcome::default());
    assert_eq!(k.fetched.len(), 1);
    k.c.prefetched_blocks += 5; // five blocks nobody accounts for
    d.poll(&mut k, 1_000_000_000);
    assert!(
        d.broken().unwrap().contains("used, unused or pending"),
        "{:?}",
        d.broken()
    );
    d.access(&mut k, &access(10, 2_000_000_000), &Outcome::default());
    assert_eq!(k.fetched.len(), 1, "nothing fetched once broken");
}
