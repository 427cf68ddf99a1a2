//! The stack operator `upper+lower`: a file-level policy running above a
//! block-level one, as in DiskSeen §3.2, where the kernel's file-level
//! readahead stays on and the disk-level prefetcher sits below it.
//!
//! Both policies see every demand access (and every completion, eviction,
//! device request, device description, oracle, tick and run start). What the upper policy asks for does not go straight
//! to the driver: each of its requests is handed to the lower policy's
//! [`Policy::on_upper_request`], which decides what of it to issue. The
//! default passes a request through unchanged, so `readahead+none` behaves
//! exactly like `readahead`; DiskSeen overrides it to treat the requests as
//! candidates and screen out resident, busy and previously wasted blocks.
//!
//! Longer stacks nest to the right: `a+b+c` is `a` above the stack `b+c`,
//! so `a`'s requests pass `b`'s screen and then `c`'s.
//!
//! Ticks: the stack ticks at the shortest interval of its parts and calls
//! each part only once its own interval has passed since its last tick, so a
//! time-driven policy keeps its period and an event-driven one never ticks.

use crate::event::{Access, DeviceInfo, DeviceRequest, Outcome, PrefetchDone, PrefetchRequest};
use crate::policy::{BoxedPolicy, Eviction, Policy, SeriesPoint, Sink};

/// `upper+lower`. See the module documentation.
pub struct Stack {
    name: String,
    upper: BoxedPolicy,
    lower: BoxedPolicy,
    /// Driver time at which each part is next due a tick (upper, lower).
    next_tick_ns: [u64; 2],
    /// Scratch buffer for the upper policy's requests, reused across calls.
    pending: Vec<PrefetchRequest>,
}

impl Clone for Stack {
    fn clone(&self) -> Self {
        Stack {
            name: self.name.clone(),
            upper: self.upper.box_clone(),
            lower: self.lower.box_clone(),
            next_tick_ns: self.next_tick_ns,
            pending: Vec::new(),
        }
    }
}

impl Stack {
    /// `upper` above `lower`.
    pub fn new(upper: BoxedPolicy, lower: BoxedPolicy) -> Self {
        Stack {
            name: format!("{}+{}", upper.name(), lower.name()),
            upper,
            lower,
            next_tick_ns: [0; 2],
            pending: Vec::new(),
        }
    }

    /// The upper (file-level) policy.
    pub fn upper(&self) -> &dyn Policy {
        self.upper.as_ref()
    }

    /// The lower (block-level) policy.
    pub fn lower(&self) -> &dyn Policy {
        self.lower.as_ref()
    }

    /// Hand what the upper policy asked for (in `self.pending`) to the lower
    /// policy's screen.
    fn screen_pending(&mut self, sink: &mut Sink<'_>) {
        let pending = std::mem::take(&mut self.pending);
        for request in &pending {
            self.lower.on_upper_request(request, sink);
        }
        self.pending = pending;
        self.pending.clear();
    }
}

impl Policy for Stack {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_access(&mut self, access: &Access, outcome: &Outcome, sink: &mut Sink<'_>) {
        let mut pending = std::mem::take(&mut self.pending);
        self.upper
            .on_access(access, outcome, &mut sink.redirect(&mut pending));
        self.pending = pending;
        self.lower.on_access(access, outcome, sink);
        self.screen_pending(sink);
    }

    fn on_access_done(&mut self, access: &Access, sink: &mut Sink<'_>) {
        let mut pending = std::mem::take(&mut self.pending);
        self.upper
            .on_access_done(access, &mut sink.redirect(&mut pending));
        self.pending = pending;
        self.lower.on_access_done(access, sink);
        self.screen_pending(sink);
    }

    fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
        let mut pending = std::mem::take(&mut self.pending);
        self.upper
            .on_upper_request(request, &mut sink.redirect(&mut pending));
        self.pending = pending;
        self.screen_pending(sink);
    }

    fn on_prefetch_done(&mut self, done: &PrefetchDone, sink: &mut Sink<'_>) {
        let mut pending = std::mem::take(&mut self.pending);
        self.upper
            .on_prefetch_done(done, &mut sink.redirect(&mut pending));
        self.pending = pending;
        self.lower.on_prefetch_done(done, sink);
        self.screen_pending(sink);
    }

    fn on_evict(&mut self, eviction: &Eviction) {
        self.upper.on_evict(eviction);
        self.lower.on_evict(eviction);
    }

    fn wants_device_requests(&self) -> bool {
        self.upper.wants_device_requests() || self.lower.wants_device_requests()
    }

    fn wants_evictions(&self) -> bool {
        self.upper.wants_evictions() || self.lower.wants_evictions()
    }

    fn wants_prefetch_done(&self) -> bool {
        self.upper.wants_prefetch_done() || self.lower.wants_prefetch_done()
    }

    fn wants_access_done(&self) -> bool {
        self.upper.wants_access_done() || self.lower.wants_access_done()
    }

    fn on_device_request(&mut self, request: &DeviceRequest) {
        self.upper.on_device_request(request);
        self.lower.on_device_request(request);
    }

    fn on_device_info(&mut self, info: &DeviceInfo) {
        self.upper.on_device_info(info);
        self.lower.on_device_info(info);
    }

    fn on_cache_info(&mut self, cache_blocks: u64) {
        self.upper.on_cache_info(cache_blocks);
        self.lower.on_cache_info(cache_blocks);
    }

    fn on_memory_budget(&mut self, bytes: u64) {
        self.upper.on_memory_budget(bytes);
        self.lower.on_memory_budget(bytes);
    }

    /// Both parts' series, the upper's first.
    fn series(&self) -> Vec<SeriesPoint> {
        let mut s = self.upper.series();
        s.extend(self.lower.series());
        s
    }

    fn wants_oracle(&self) -> bool {
        self.upper.wants_oracle() || self.lower.wants_oracle()
    }

    fn on_oracle(&mut self, future: &[Access], cache_blocks: u64) {
        if self.upper.wants_oracle() {
            self.upper.on_oracle(future, cache_blocks);
        }
        if self.lower.wants_oracle() {
            self.lower.on_oracle(future, cache_blocks);
        }
    }

    fn on_tick(&mut self, now_ns: u64, sink: &mut Sink<'_>) {
        if let Some(interval) = self.upper.tick_interval_ns() {
            if now_ns >= self.next_tick_ns[0] {
                self.next_tick_ns[0] = now_ns + interval;
                let mut pending = std::mem::take(&mut self.pending);
                self.upper.on_tick(now_ns, &mut sink.redirect(&mut pending));
                self.pending = pending;
            }
        }
        if let Some(interval) = self.lower.tick_interval_ns() {
            if now_ns >= self.next_tick_ns[1] {
                self.next_tick_ns[1] = now_ns + interval;
                self.lower.on_tick(now_ns, sink);
            }
        }
        self.screen_pending(sink);
    }

    fn tick_interval_ns(&self) -> Option<u64> {
        match (self.upper.tick_interval_ns(), self.lower.tick_interval_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_run_start(&mut self, run: u32) {
        self.next_tick_ns = [0; 2];
        self.upper.on_run_start(run);
        self.lower.on_run_start(run);
    }

    /// The upper (file-level) policy's history: the lower, block-level
    /// part learns nothing worth keeping across processes today.
    fn save_history(&self) -> Option<Vec<u8>> {
        self.upper.save_history()
    }

    fn load_history(&mut self, data: &[u8]) -> Result<(), String> {
        self.upper.load_history(data)
    }

    fn memory_bytes(&self) -> usize {
        self.upper.memory_bytes() + self.lower.memory_bytes()
    }

    fn schedule_group(&self, window: crate::event::WindowId) -> u32 {
        match self.lower.schedule_group(window) {
            0 => self.upper.schedule_group(window),
            g => g,
        }
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FileId, Target, WindowId};
    use crate::policies::build_policy;
    use crate::policy::NoResidency;
    use std::sync::{Arc, Mutex};

    fn read(seq: u64, page: u64, blocks: u32) -> Access {
        Access {
            seq,
            time_ns: seq * 1000,
            file: FileId(7),
            page,
            lbn: 1000 + page,
            blocks,
            ..Access::default()
        }
    }

    fn drive(policy: &mut dyn Policy, accesses: &[Access]) -> Vec<PrefetchRequest> {
        let (mut out, mut next) = (Vec::new(), 0);
        for a in accesses {
            let mut sink = Sink::new(&mut out, &mut next, &NoResidency);
            let outcome = Outcome {
                miss_blocks: a.blocks,
                ..Outcome::default()
            };
            policy.on_access(a, &outcome, &mut sink);
        }
        out
    }

    /// A stack over a pass-through lower policy must issue exactly what the
    /// upper policy issues alone (same targets, same window ids), so
    /// `readahead+none` can be compared with `readahead` fairly.
    #[test]
    fn pass_through_lower_leaves_upper_requests_unchanged() {
        let accesses: Vec<Access> = (0..64).map(|i| read(i, i * 2, 2)).collect();
        let alone = drive(build_policy("readahead").unwrap().as_mut(), &accesses);
        let stacked = drive(build_policy("readahead+none").unwrap().as_mut(), &accesses);
        assert!(!alone.is_empty());
        assert_eq!(alone, stacked);
    }

    /// A lower policy that screens: keeps only the first page of each
    /// upper request and says so under its own window.
    #[derive(Clone)]
    struct FirstPageOnly {
        seen: Vec<PrefetchRequest>,
        ticks: Arc<Mutex<Vec<u64>>>,
    }

    impl Policy for FirstPageOnly {
        fn name(&self) -> &str {
            "first-page"
        }
        fn on_access(&mut self, _: &Access, _: &Outcome, _: &mut Sink<'_>) {}
        fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
            self.seen.push(*request);
            let w = sink.new_window();
            sink.prefetch(request.target, 1, w);
        }
        fn on_tick(&mut self, now_ns: u64, _: &mut Sink<'_>) {
            self.ticks.lock().unwrap().push(now_ns);
        }
        fn tick_interval_ns(&self) -> Option<u64> {
            Some(25)
        }
        fn box_clone(&self) -> BoxedPolicy {
            Box::new(self.clone())
        }
    }

    #[test]
    fn lower_policy_screens_every_upper_request_with_fresh_windows() {
        let lower = FirstPageOnly {
            seen: Vec::new(),
            ticks: Arc::new(Mutex::new(Vec::new())),
        };
        let mut stack = Stack::new(build_policy("readahead").unwrap(), Box::new(lower));
        let accesses: Vec<Access> = (0..16).map(|i| read(i, i, 1)).collect();
        let out = drive(&mut stack, &accesses);
        let upper_alone = drive(build_policy("readahead").unwrap().as_mut(), &accesses);
        assert_eq!(out.len(), upper_alone.len());
        for (issued, asked) in out.iter().zip(&upper_alone) {
            assert_eq!(issued.target, asked.target);
            assert_eq!(issued.blocks, 1);
            // The driver's window counter is shared: the lower policy's
            // window is allocated right after the upper's.
            assert_eq!(issued.window, WindowId(asked.window.0 * 2));
        }
        assert!(matches!(
            out[0].target,
            Target::File {
                file: FileId(7),
                ..
            }
        ));
    }

    /// Each part ticks at its own interval; the stack at the shortest.
    #[test]
    fn parts_tick_at_their_own_intervals() {
        let ticks = Arc::new(Mutex::new(Vec::new()));
        let lower = FirstPageOnly {
            seen: Vec::new(),
            ticks: ticks.clone(),
        };
        let mut stack = Stack::new(build_policy("none").unwrap(), Box::new(lower));
        assert_eq!(stack.tick_interval_ns(), Some(25));
        let (mut out, mut next) = (Vec::new(), 0);
        for now in [0, 10, 25, 30, 49, 50, 80] {
            let mut sink = Sink::new(&mut out, &mut next, &NoResidency);
            stack.on_tick(now, &mut sink);
        }
        assert_eq!(*ticks.lock().unwrap(), vec![0, 25, 50, 80]);
        // A new run restarts the clock.
        stack.on_run_start(1);
        let mut sink = Sink::new(&mut out, &mut next, &NoResidency);
        stack.on_tick(3, &mut sink);
        assert_eq!(ticks.lock().unwrap().last(), Some(&3));
        assert!(out.is_empty());
    }
}
