//! `readahead`: placeholder until the kernel model lands.
use crate::event::{Access, Outcome};
use crate::policy::{BoxedPolicy, Policy, Sink};

/// Registered name.
pub const NAME: &str = "readahead";
/// One-line description.
pub const SUMMARY: &str = "Linux on-demand readahead (mm/readahead.c model)";

crate::params! {
    /// Readahead parameters.
    pub struct ReadaheadParams {
        /// maximum readahead window in 4 KiB pages (128 KiB)
        ra_pages: u64 = 32,
    }
}

/// Linux readahead model.
#[derive(Clone, Debug)]
pub struct Readahead {
    p: ReadaheadParams,
}

impl Readahead {
    /// Build from parameters.
    pub fn new(p: ReadaheadParams) -> Self {
        Readahead { p }
    }
}

impl Policy for Readahead {
    fn name(&self) -> &str {
        NAME
    }
    fn on_access(&mut self, _a: &Access, _o: &Outcome, _s: &mut Sink<'_>) {
        let _ = &self.p;
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}
