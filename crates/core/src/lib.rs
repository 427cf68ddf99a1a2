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
//!
//! # The policy contract
//!
//! [`Policy`] has fifteen methods; the driver (`outrider-driver`: one
//! implementation, run by the simulator and the live runtime alike over
//! their own kernels) calls them in this order:
//!
//! 1. [`Policy::load_history`] once, before anything else, if a history
//!    saved by [`Policy::save_history`] of the same policy exists (the
//!    store keeps it per application key and policy name; the blob is the
//!    policy's own format, checked by it; on error the policy stays fresh),
//!    then [`Policy::load_shared_history`] if the policy names a history
//!    of the whole store ([`Policy::shared_history_name`]) and one exists.
//! 2. [`Policy::on_start`] with a [`RunInfo`]: run number, buffer memory in
//!    blocks, the devices' throughput, the unused-prefetch memory budget
//!    when the driver bounds one, and the whole future ([`RunInfo::oracle`])
//!    for a policy that asked. Called at every run start (the cache is
//!    empty: drop per-run state, keep what is learned) and again mid-run
//!    with [`RunInfo::budget_changed`] when only the budget changed.
//! 3. [`Policy::interests`] right after: which [`Feedback`] the policy wants
//!    ([`Interests`]; evictions and completions are the hottest paths, so a
//!    driver skips what nobody asked for) and its tick interval. Asked
//!    again after every `on_start`, so it may depend on loaded history.
//! 4. Per demand access, [`Policy::on_access`] after the cache lookup (the
//!    [`Outcome`] counts hits, prefetched hits, blocks in flight, misses).
//! 5. [`Policy::on_feedback`] for each event asked for: the access done
//!    (all its blocks in memory), a prefetch done, a block evicted (used or
//!    not, with its window), a read submitted to the device (flashy's second
//!    stream), a tick.
//! 6. [`Policy::on_upper_request`] on the lower part of a stack
//!    (`upper+lower`) for each request of the upper part, and
//!    [`Policy::schedule_group`] per issued window (DiskSeen §3.7).
//! 7. At the end of a run [`Policy::series`] (a time series of its own
//!    state); at the end of the process [`Policy::save_history`] and
//!    [`Policy::merge_shared_history`] (given what the store holds now).
//!
//! [`Policy::memory_bytes`] and [`Policy::box_clone`] serve reports and
//! sweeps; [`Policy::name`] is the registered name. Requests go into the
//! [`Sink`] passed to `on_access`, `on_feedback` and `on_upper_request`;
//! the driver screens them (resident, in flight, prefetched and unused),
//! bounds them and accounts them per window. [`PolicyExt`] builds the
//! calls for one-off use (tests, examples). No driver names a policy: all
//! a driver knows of one is this trait.
#![deny(missing_docs)]

pub mod event;
pub mod mechanism;
pub mod metrics;
pub mod params;
pub mod policies;
pub mod policy;
pub mod size;

pub use event::{
    Access, DeviceInfo, DeviceRequest, FileId, Op, Origin, Outcome, Pid, PrefetchDone,
    PrefetchRequest, Target, WindowId, BLOCK_SIZE, NO_LBN,
};
pub use params::{ParamError, ParamSpec, Params};
pub use policies::{build_policy, policy_help, PolicyError, POLICY_NAMES};
pub use policy::{
    BoxedPolicy, Eviction, Feedback, Interests, NoResidency, Policy, PolicyExt, Positions,
    Residency, RunInfo, SeriesPoint, Sink,
};
