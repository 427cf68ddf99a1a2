//! Mechanisms several policies share, each implemented once here and used
//! by every policy that needs it, with one parameter name and one unit:
//!
//! - [`infill`]: reading through small gaps between pieces to prefetch, so
//!   they become one request (libprefetch §3.3; DiskSeen §4.3's
//!   aggregates). The setting is always `infill`, a size
//!   ([`crate::size::ByteSize`]); each policy keeps its paper's default.
//! - [`clook`]: C-LOOK ordering of a batch from a head position
//!   (libprefetch §3.1).
//! - [`stream`]: how a request continues its stream — consecutive,
//!   reverse, strided — the classification under flashy's pattern
//!   recognition (§IV-B) and the `stride` detector.
//! - [`chunk`]: cutting a range into requests of at most a given size, in
//!   ascending or descending order.
//!
//! They are pure functions or small value types: no I/O, no clock.

pub mod chunk;
pub mod clook;
pub mod infill;
pub mod stream;
