//! One result row per cell: the cell's key, every metric `outrider sim
//! --json` prints (DESIGN.md's names), the outrider version and the host
//! time the cell took.
//!
//! The row's fields are declared once, in `row!`; the same list gives
//! the struct, the CSV header (through serde) and the Parquet columns.

use crate::grid::Cell;
use outrider_core::metrics::Report;
use outrider_sim::{SimConfig, SimResult};
use serde::{Deserialize, Serialize};

/// The outrider version written into every row.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One value of a row, as a column stores it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Text.
    Text(String),
    /// A count.
    Int(i64),
    /// A measurement or ratio.
    Float(f64),
    /// A flag.
    Bool(bool),
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}
impl From<&u64> for Value {
    fn from(v: &u64) -> Self {
        Value::Int(i64::try_from(*v).unwrap_or(i64::MAX))
    }
}
impl From<&u32> for Value {
    fn from(v: &u32) -> Self {
        Value::Int(i64::from(*v))
    }
}
impl From<&bool> for Value {
    fn from(v: &bool) -> Self {
        Value::Bool(*v)
    }
}
impl From<&f64> for Value {
    fn from(v: &f64) -> Self {
        Value::Float(*v)
    }
}

/// The kind of a column, from its field's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 text.
    Text,
    /// 64-bit signed integer.
    Int,
    /// 64-bit float.
    Float,
    /// Boolean.
    Bool,
}

/// A field type's column kind.
pub trait ColumnKind {
    /// The kind.
    const KIND: Kind;
}
impl ColumnKind for String {
    const KIND: Kind = Kind::Text;
}
impl ColumnKind for u64 {
    const KIND: Kind = Kind::Int;
}
impl ColumnKind for u32 {
    const KIND: Kind = Kind::Int;
}
impl ColumnKind for f64 {
    const KIND: Kind = Kind::Float;
}
impl ColumnKind for bool {
    const KIND: Kind = Kind::Bool;
}

macro_rules! row {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty, )*) => {
        /// One cell's result.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub struct Row {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        /// The column names, in order.
        pub const COLUMNS: &[&str] = &[$( stringify!($name) ),*];

        /// The column kinds, in [`COLUMNS`] order.
        pub const KINDS: &[Kind] = &[$( <$ty as ColumnKind>::KIND ),*];

        impl Row {
            /// The row's values, in [`COLUMNS`] order.
            pub fn values(&self) -> Vec<Value> {
                vec![$( Value::from(&self.$name) ),*]
            }
        }
    };
}

row! {
    /// The cell's key ([`Cell::key`]): what resuming matches on.
    cell: String,
    /// Trace path or workload specification.
    input: String,
    /// Policy specification, parameters applied.
    policy: String,
    /// Cache size as given in the grid (`64MiB`, `10%`).
    cache: String,
    /// Cache capacity in bytes.
    cache_bytes: u64,
    /// Cache model.
    cache_model: String,
    /// Device model.
    device: String,
    /// Replays in the cell; the row reports the last.
    runs: u32,
    /// Request timing.
    timing: String,
    /// Requests split into 4 KiB pages.
    split_pages: bool,
    /// The run reported (= `runs`).
    run: u32,
    /// Requests processed.
    requests: u64,
    /// Demand blocks.
    demand_blocks: u64,
    /// Blocks read by prefetching.
    prefetched_blocks: u64,
    /// Demand blocks found in memory / demand blocks.
    hit_ratio: f64,
    /// Prefetched blocks used before eviction / prefetched blocks.
    prefetch_accuracy: f64,
    /// Demand blocks served by a prefetch / demand blocks.
    coverage: f64,
    /// Blocks read by prefetching / blocks requested by the application.
    cost: f64,
    /// Time the workload waited on the device, seconds.
    io_wait_s: f64,
    /// Modelled wall time, seconds.
    elapsed_s: f64,
    /// Mean time from a prefetch's issue to the demand access it served, s.
    lead_time: f64,
    /// Prefetch windows none of whose blocks were used.
    mis_prefetched_windows: u64,
    /// Prefetch windows opened.
    windows: u64,
    /// Prefetched blocks evicted (or left over) unused.
    prefetched_unused_blocks: u64,
    /// Requests simulated per second of host time (host-dependent).
    events_per_s: f64,
    /// Requests simulated per second of thread CPU time (host-dependent).
    events_per_cpu_s: f64,
    /// Bytes of cache-model state per cached block.
    cache_model_bytes_per_block: f64,
    /// Most blocks the cache model held at once.
    peak_cache_blocks: u64,
    /// Bytes of policy state at the end of the last run.
    policy_bytes: u64,
    /// The outrider version that produced the row.
    version: String,
    /// Host wall-clock seconds the cell took (loading excluded).
    wall_s: f64,
    /// Host CPU seconds the cell's thread used.
    cpu_s: f64,
}

/// Columns whose values depend on the host and its load, not on the
/// simulation: equal cells on different engines differ only here.
pub const HOST_COLUMNS: &[&str] = &["events_per_s", "events_per_cpu_s", "wall_s", "cpu_s"];

impl Row {
    /// The row of `cell`, reporting `report` (one of `res`'s runs).
    pub fn new(
        cell: &Cell,
        cfg: &SimConfig,
        res: &SimResult,
        report: &Report,
        wall_s: f64,
        cpu_s: f64,
    ) -> Row {
        let s = &cell.settings;
        Row {
            cell: cell.key(),
            input: cell.source.name().to_string(),
            policy: cell.policy.clone(),
            cache: cell.cache.clone(),
            cache_bytes: cfg.cache_blocks * outrider_core::BLOCK_SIZE,
            cache_model: s.cache_model.clone(),
            device: cell.device.clone(),
            runs: cell.runs,
            timing: s.timing.clone(),
            split_pages: s.split_pages,
            run: report.run,
            requests: report.requests,
            demand_blocks: report.demand_blocks,
            prefetched_blocks: report.prefetched_blocks,
            hit_ratio: report.hit_ratio,
            prefetch_accuracy: report.prefetch_accuracy,
            coverage: report.coverage,
            cost: report.cost,
            io_wait_s: report.io_wait_s,
            elapsed_s: report.elapsed_s,
            lead_time: report.lead_time,
            mis_prefetched_windows: report.mis_prefetched_windows,
            windows: report.windows,
            prefetched_unused_blocks: report.prefetched_unused_blocks,
            events_per_s: report.events_per_s,
            events_per_cpu_s: report.events_per_cpu_s,
            cache_model_bytes_per_block: res.cache_bytes_per_block,
            peak_cache_blocks: res.peak_cache_blocks as u64,
            policy_bytes: res.policy_bytes as u64,
            version: VERSION.to_string(),
            wall_s,
            cpu_s,
        }
    }
}
