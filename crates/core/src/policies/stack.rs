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

use crate::event::{Access, Outcome, PrefetchRequest};
use crate::policy::{BoxedPolicy, Feedback, Interests, Policy, RunInfo, SeriesPoint, Sink};

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

    /// The part whose history is the store's (see
    /// [`Policy::shared_history_name`]): the lower one's if it has one.
    fn shared_part(&self) -> &dyn Policy {
        match self.lower.shared_history_name() {
            Some(_) => self.lower.as_ref(),
            None => self.upper.as_ref(),
        }
    }

    fn shared_part_mut(&mut self) -> &mut dyn Policy {
        match self.lower.shared_history_name() {
            Some(_) => self.lower.as_mut(),
            None => self.upper.as_mut(),
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

impl Stack {
    /// Run `f` on the upper policy with its requests gathered for the
    /// lower policy's screen.
    fn upper_then_screen(
        &mut self,
        sink: &mut Sink<'_>,
        f: impl FnOnce(&mut dyn Policy, &mut Sink<'_>),
    ) {
        let mut pending = std::mem::take(&mut self.pending);
        f(self.upper.as_mut(), &mut sink.redirect(&mut pending));
        self.pending = pending;
    }

    /// The upper and lower parts' history blobs, each behind its length
    /// (u64 little-endian) after [`STACK_MAGIC`]; an empty blob for a part
    /// that learns nothing.
    fn encode_parts(upper: Option<Vec<u8>>, lower: Option<Vec<u8>>) -> Vec<u8> {
        let mut out = STACK_MAGIC.to_vec();
        for part in [upper.unwrap_or_default(), lower.unwrap_or_default()] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(&part);
        }
        out
    }

    fn decode_parts(data: &[u8]) -> Result<[&[u8]; 2], String> {
        let mut rest = data
            .strip_prefix(STACK_MAGIC)
            .ok_or("not a stack's history (bad magic)")?;
        let mut parts: [&[u8]; 2] = [&[], &[]];
        for part in &mut parts {
            let (len, tail) = rest
                .split_first_chunk::<8>()
                .ok_or("stack history truncated")?;
            let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|e| e.to_string())?;
            if tail.len() < len {
                return Err("stack history truncated".into());
            }
            (*part, rest) = tail.split_at(len);
        }
        Ok(parts)
    }
}

/// First bytes of a stack's history blob.
const STACK_MAGIC: &[u8] = b"OSTK1";

impl Policy for Stack {
    fn name(&self) -> &str {
        &self.name
    }

    fn interests(&self) -> Interests {
        self.upper.interests().union(self.lower.interests())
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        if !info.budget_changed {
            self.next_tick_ns = [0; 2];
        }
        let oracle = |p: &dyn Policy| RunInfo {
            oracle: info.oracle.filter(|_| p.interests().oracle),
            ..*info
        };
        let upper = oracle(self.upper.as_ref());
        self.upper.on_start(&upper);
        let lower = oracle(self.lower.as_ref());
        self.lower.on_start(&lower);
    }

    fn on_access(&mut self, access: &Access, outcome: &Outcome, sink: &mut Sink<'_>) {
        self.upper_then_screen(sink, |p, s| p.on_access(access, outcome, s));
        self.lower.on_access(access, outcome, sink);
        self.screen_pending(sink);
    }

    /// Both parts hear every feedback; a tick reaches each part only once
    /// its own interval has passed.
    fn on_feedback(&mut self, f: &Feedback<'_>, sink: &mut Sink<'_>) {
        let Feedback::Tick(now_ns) = *f else {
            self.upper_then_screen(sink, |p, s| p.on_feedback(f, s));
            self.lower.on_feedback(f, sink);
            self.screen_pending(sink);
            return;
        };
        if let Some(interval) = self.upper.interests().tick_interval_ns {
            if now_ns >= self.next_tick_ns[0] {
                self.next_tick_ns[0] = now_ns.saturating_add(interval);
                self.upper_then_screen(sink, |p, s| p.on_feedback(f, s));
            }
        }
        if let Some(interval) = self.lower.interests().tick_interval_ns {
            if now_ns >= self.next_tick_ns[1] {
                self.next_tick_ns[1] = now_ns.saturating_add(interval);
                self.lower.on_feedback(f, sink);
            }
        }
        self.screen_pending(sink);
    }

    fn on_upper_request(&mut self, request: &PrefetchRequest, sink: &mut Sink<'_>) {
        self.upper_then_screen(sink, |p, s| p.on_upper_request(request, s));
        self.screen_pending(sink);
    }

    fn schedule_group(&self, window: crate::event::WindowId) -> u32 {
        match self.lower.schedule_group(window) {
            0 => self.upper.schedule_group(window),
            g => g,
        }
    }

    /// Both parts' history (DiskSeen below a file-level policy learns its
    /// block table too).
    fn save_history(&self) -> Option<Vec<u8>> {
        let (upper, lower) = (self.upper.save_history(), self.lower.save_history());
        if upper.is_none() && lower.is_none() {
            return None;
        }
        Some(Self::encode_parts(upper, lower))
    }

    fn load_history(&mut self, data: &[u8]) -> Result<(), String> {
        let [upper, lower] = Self::decode_parts(data)?;
        let mut fresh = self.clone();
        if !upper.is_empty() {
            fresh.upper.load_history(upper)?;
        }
        if !lower.is_empty() {
            fresh.lower.load_history(lower)?;
        }
        *self = fresh;
        Ok(())
    }

    /// The history of the whole store is one part's: the lower part's if
    /// it keeps one (DiskSeen below a file-level policy: its block table),
    /// else the upper part's.
    fn shared_history_name(&self) -> Option<&str> {
        self.shared_part().shared_history_name()
    }

    fn load_shared_history(&mut self, data: &[u8]) -> Result<(), String> {
        self.shared_part_mut().load_shared_history(data)
    }

    fn merge_shared_history(&self, stored: Option<&[u8]>) -> Option<Vec<u8>> {
        self.shared_part().merge_shared_history(stored)
    }

    /// Both parts' series, the upper's first.
    fn series(&self) -> Vec<SeriesPoint> {
        let mut s = self.upper.series();
        s.extend(self.lower.series());
        s
    }

    fn memory_bytes(&self) -> usize {
        self.upper.memory_bytes() + self.lower.memory_bytes()
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
    use crate::policy::{NoResidency, PolicyExt};
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
        fn on_feedback(&mut self, f: &Feedback<'_>, _: &mut Sink<'_>) {
            if let Feedback::Tick(now_ns) = f {
                self.ticks.lock().unwrap().push(*now_ns);
            }
        }
        fn interests(&self) -> Interests {
            Interests {
                tick_interval_ns: Some(25),
                ..Interests::default()
            }
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
            stack.feed_tick(now, &mut sink);
        }
        assert_eq!(*ticks.lock().unwrap(), vec![0, 25, 50, 80]);
        // A new run restarts the clock.
        stack.start_run(1);
        let mut sink = Sink::new(&mut out, &mut next, &NoResidency);
        stack.feed_tick(3, &mut sink);
        assert_eq!(ticks.lock().unwrap().last(), Some(&3));
        assert!(out.is_empty());
    }
}
