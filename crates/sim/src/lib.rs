//! outrider-sim: the trace-driven simulator.
//!
//! The one design decision a reader must know: **the simulator is a
//! discrete-event loop over modelled time, and it drives the same
//! [`outrider_core::Policy`] objects the live runtime drives.** Processes
//! issue requests after their think time; a demand miss blocks its process
//! until the device completes it; prefetches are asynchronous and queue at
//! the device; an access to a block whose prefetch is in flight waits only
//! for that completion. Nothing in the loop reads a wall clock except the
//! `events_per_s` measurement.
#![deny(missing_docs)]

pub mod blockmap;
pub mod cache;
pub mod device;
pub mod engine;
pub mod layout;
pub mod mrc;
pub mod windows;

pub use cache::{Cache, CacheModel};
pub use engine::{simulate, simulate_on, thread_cpu_secs, SimConfig, SimResult, Timing};
pub use mrc::StackDistances;
