//! Summary statistics of a trace (`outrider trace info`).
//!
//! Everything is exact: distinct blocks are counted with a hash set of
//! `(device, 4 KiB block)` pairs, so memory grows with the footprint (about
//! 32 bytes per distinct block; 10 GiB of footprint costs ~80 MiB).

use crate::Trace;
use outrider_core::BLOCK_SIZE;
use rustc_hash::FxHashSet;

/// Counts and sizes that describe a trace independently of its format.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Requests (records).
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes requested by reads.
    pub read_bytes: u64,
    /// Bytes requested by writes.
    pub write_bytes: u64,
    /// 4 KiB blocks touched by requests (a request touching 3 blocks counts 3).
    pub block_accesses: u64,
    /// Distinct `(device, 4 KiB block)` pairs touched.
    pub distinct_blocks: u64,
    /// Distinct blocks × 4096.
    pub footprint_bytes: u64,
    /// Latest minus earliest request time, in ns (last − first for a trace
    /// in time order).
    pub duration_ns: u64,
    /// Distinct devices.
    pub devices: u64,
    /// Distinct process ids on records (0, "unknown", included if present).
    pub pids: u64,
    /// Named processes in the metadata.
    pub processes: u64,
    /// Files in the metadata.
    pub files: u64,
    /// Records whose time is earlier than the record before them.
    pub out_of_order: u64,
}

impl TraceStats {
    /// Compute the statistics of `trace` (one pass over the records).
    pub fn of(trace: &Trace) -> TraceStats {
        let mut s = TraceStats {
            processes: trace.meta.processes.len() as u64,
            files: trace.meta.files.len() as u64,
            ..TraceStats::default()
        };
        let mut blocks: FxHashSet<(u16, u64)> = FxHashSet::default();
        let mut devs: FxHashSet<u16> = FxHashSet::default();
        let mut pids: FxHashSet<u32> = FxHashSet::default();
        let (mut min_t, mut max_t, mut prev_t) = (u64::MAX, 0, 0);
        for r in trace.records.iter() {
            s.requests += 1;
            if r.is_write() {
                s.writes += 1;
                s.write_bytes += u64::from(r.size);
            } else {
                s.reads += 1;
                s.read_bytes += u64::from(r.size);
            }
            let first = r.first_block();
            let n = u64::from(r.block_count());
            s.block_accesses += n;
            for b in first..first.saturating_add(n) {
                blocks.insert((r.dev, b));
            }
            devs.insert(r.dev);
            pids.insert(r.pid);
            if r.time_ns < prev_t {
                s.out_of_order += 1;
            }
            prev_t = r.time_ns;
            min_t = min_t.min(r.time_ns);
            max_t = max_t.max(r.time_ns);
        }
        s.distinct_blocks = blocks.len() as u64;
        s.footprint_bytes = s.distinct_blocks * BLOCK_SIZE;
        s.duration_ns = max_t.saturating_sub(min_t);
        s.devices = devs.len() as u64;
        s.pids = pids.len() as u64;
        s
    }
}

/// `bytes` with a binary unit (`1.5 GiB`).
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

impl std::fmt::Display for TraceStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |n: u64| {
            if self.requests == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.requests as f64
            }
        };
        writeln!(f, "requests:        {}", self.requests)?;
        writeln!(
            f,
            "  reads:         {} ({:.1}%), {}",
            self.reads,
            pct(self.reads),
            human_bytes(self.read_bytes)
        )?;
        writeln!(
            f,
            "  writes:        {} ({:.1}%), {}",
            self.writes,
            pct(self.writes),
            human_bytes(self.write_bytes)
        )?;
        writeln!(f, "block accesses:  {} (4 KiB)", self.block_accesses)?;
        writeln!(f, "distinct blocks: {}", self.distinct_blocks)?;
        writeln!(f, "footprint:       {}", human_bytes(self.footprint_bytes))?;
        writeln!(f, "duration:        {:.3} s", self.duration_ns as f64 / 1e9)?;
        writeln!(f, "devices:         {}", self.devices)?;
        writeln!(
            f,
            "pids:            {} ({} named)",
            self.pids, self.processes
        )?;
        write!(f, "files:           {}", self.files)?;
        if self.out_of_order > 0 {
            write!(
                f,
                "\nout of order:    {} records earlier than their predecessor",
                self.out_of_order
            )?;
        }
        Ok(())
    }
}
