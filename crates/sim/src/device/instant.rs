//! `none`: an instantaneous device. Every request completes at the instant
//! it is submitted, in submission order. Used to compare with cache
//! simulators that have no notion of time (libCacheSim): a prefetch is
//! resident before the next access, exactly as there.

use super::{DevRequest, Device, MAX_PENDING_REQUESTS};
use std::collections::VecDeque;

/// The instantaneous device.
#[derive(Clone, Debug, Default)]
pub struct Instantaneous {
    queue: VecDeque<(u64, DevRequest)>,
}

impl Device for Instantaneous {
    fn submit(&mut self, now_ns: u64, req: DevRequest) {
        assert!(
            self.queue.len() < MAX_PENDING_REQUESTS,
            "device queue bound exceeded"
        );
        self.queue.push_back((now_ns, req));
    }
    fn next_completion_ns(&mut self) -> Option<u64> {
        self.queue.front().map(|q| q.0)
    }
    fn complete_next(&mut self) -> Option<(u64, DevRequest)> {
        self.queue.pop_front()
    }
    fn pending(&self) -> usize {
        self.queue.len()
    }
    fn busy_ns(&self) -> u64 {
        0
    }
    fn reset(&mut self) {
        self.queue.clear();
    }
    fn is_instantaneous(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        "none: instantaneous (every request completes when submitted)".into()
    }
}
