//! outrider-core: the event model, the [`Policy`] trait, every prefetching
//! policy, parameter parsing and metric definitions.
//!
//! The one design decision a reader must know: **a policy is a pure,
//! deterministic state machine.** It is fed access events and feedback
//! (prefetch completions, evictions, time ticks) and answers with prefetch
//! requests through a [`Sink`]. It performs no I/O, reads no clock and uses no
//! unseeded randomness. The simulator (`outrider-sim`) and the live runtime
//! drive the very same policy objects, so a simulation predicts live
//! behaviour and every policy is unit-testable with exact expectations.
//!
//! Keys live in two address spaces (DESIGN.md "Events and keys"): the
//! **block** space (device, LBN in 4 KiB blocks) and the **file-page** space
//! (file id, page index). Every [`Access`] carries both, because the driver
//! knows the mapping (live: FIEMAP; sim: the trace's layout model). A policy
//! may answer in either space ([`Target`]); the driver translates.
#![deny(missing_docs)]

pub mod event;
pub mod metrics;
pub mod params;
pub mod policies;
pub mod policy;
pub mod size;

pub use event::{
    Access, DeviceInfo, DeviceRequest, FileId, Op, Origin, Outcome, Pid, PrefetchDone,
    PrefetchRequest, Target, WindowId, BLOCK_SIZE,
};
pub use params::{ParamError, ParamSpec, Params};
pub use policies::{build_policy, policy_help, PolicyError, POLICY_NAMES};
pub use policy::{
    BoxedPolicy, Eviction, Feedback, Interests, NoResidency, Policy, PolicyExt, Residency, RunInfo,
    SeriesPoint, Sink,
};
