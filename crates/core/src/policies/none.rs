//! `none`: never prefetch. The baseline every other policy is measured
//! against (with the simulator's cache alone).

use crate::event::{Access, Outcome};
use crate::policy::{BoxedPolicy, Interests, Policy, Positions, Sink};

/// Registered name.
pub const NAME: &str = "none";
/// One-line description.
pub const SUMMARY: &str = "no prefetching (demand paging only)";

crate::params! {
    /// `none` takes no parameters.
    pub struct NoneParams {}
}

/// The no-prefetching policy.
#[derive(Clone, Debug, Default)]
pub struct NoPrefetch;

impl NoPrefetch {
    /// Build from (empty) parameters.
    pub fn new(_p: NoneParams) -> Self {
        NoPrefetch
    }
}

impl Policy for NoPrefetch {
    fn name(&self) -> &str {
        NAME
    }

    fn interests(&self) -> Interests {
        Interests {
            positions: Positions::FilePage,
            ..Interests::ACCESSES_ONLY
        }
    }
    fn on_access(&mut self, _a: &Access, _o: &Outcome, _s: &mut Sink<'_>) {}
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}
