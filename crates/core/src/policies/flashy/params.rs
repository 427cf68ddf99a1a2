//! flashy's parameters, with the paper's defaults where it gives one, and
//! the checks of relations between them.

use super::NAME;
use crate::event::BLOCK_SIZE;
use crate::params::{ParamError, Params};
use crate::size::ByteSize;

crate::params! {
    /// flashy parameters (paper defaults where the paper gives one).
    pub struct FlashyParams {
        /// polling interval in ms (section IV-B: 0.50 s)
        interval_ms: u64 = 500,
        /// a new stream's first plan after this many ms of its reads instead of at the next polling tick (ours; 0 = wait for the tick, the paper)
        first_ms: u64 = 100,
        /// a stream that read past half its plan is planned again at the next first_ms tick instead of at the polling tick (ours; off = the paper)
        refill: bool = true,
        /// pattern match threshold: fraction of the interval's blocks in one pattern (IV-B: 0.60)
        threshold: f64 = 0.60,
        /// application throughput scale factor, start value (IV-C: near 1.0)
        scale: f64 = 1.0,
        /// feedback monitor (IV-D); off = static scale (Fig. 2 normal / aggressive)
        feedback: bool = true,
        /// raise the scale when linear reads reaching disk / linear app reads exceed this (ours)
        raise_at: f64 = 0.10,
        /// scale multiplier when raising (ours)
        up: f64 = 1.25,
        /// scale multiplier when lowering (ours)
        down: f64 = 0.8,
        /// lower bound of the scale (ours)
        scale_min: f64 = 0.25,
        /// upper bound of the scale (ours)
        scale_max: f64 = 8.0,
        /// maximum device read throughput in MB/s; 0 = measured (device model / outrider calibrate)
        max_mb_s: f64 = 0.0,
        /// cap the sum of a device's streams (on) or each stream alone as the paper (off)
        share_cap: bool = true,
        /// block region of a state machine (V-A; size ours)
        region: ByteSize = ByteSize(256 << 20),
        /// largest single prefetch request (ours; the kernel caps a readahead(2) call at 8MiB here)
        chunk: ByteSize = ByteSize(1 << 20),
        /// most prefetch chunks outstanding at the device; 0 = issue the whole plan at the tick (paper)
        depth: u32 = 4,
        /// most strided ranges issued per stream per tick
        max_ranges: u32 = 16384,
        /// strided ranges closer than this are read as one request, gap included (ours, libprefetch §3.3's 32 KiB; 0 = one request per stride, the paper)
        infill: ByteSize = crate::mechanism::infill::LIBPREFETCH,
        /// most state machines kept
        machines: u32 = 1024,
        /// intervals without a read before a state machine is dropped
        idle: u32 = 8,
    }
}

fn bad(key: &str, value: impl std::fmt::Display, expected: &str) -> ParamError {
    ParamError::BadValue {
        policy: NAME.into(),
        key: key.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// Parse and check `k=v,...` (relations the macro cannot check).
pub fn parse_params(text: &str) -> Result<FlashyParams, ParamError> {
    let p = FlashyParams::parse(NAME, text)?;
    if p.interval_ms == 0 {
        return Err(bad("interval_ms", p.interval_ms, "a positive number of ms"));
    }
    if !(p.threshold > 0.0 && p.threshold <= 1.0) {
        return Err(bad("threshold", p.threshold, "a fraction in (0, 1]"));
    }
    if !(p.scale_min > 0.0 && p.scale_min <= p.scale_max) {
        return Err(bad("scale_min", p.scale_min, "0 < scale_min <= scale_max"));
    }
    if p.scale <= 0.0 {
        return Err(bad("scale", p.scale, "a positive number"));
    }
    if p.up < 1.0 {
        return Err(bad("up", p.up, "a multiplier >= 1"));
    }
    if !(p.down > 0.0 && p.down <= 1.0) {
        return Err(bad("down", p.down, "a multiplier in (0, 1]"));
    }
    if p.max_mb_s < 0.0 {
        return Err(bad(
            "max_mb_s",
            p.max_mb_s,
            "0 (measured) or a positive MB/s",
        ));
    }
    for (k, v) in [("region", p.region), ("chunk", p.chunk)] {
        if v.0 < BLOCK_SIZE || v.0 % BLOCK_SIZE != 0 {
            return Err(bad(k, v, "a positive multiple of 4KiB"));
        }
    }
    if p.chunk.0 / BLOCK_SIZE > u64::from(u32::MAX) {
        return Err(bad("chunk", p.chunk, "at most 16TiB"));
    }
    if p.machines == 0 || p.max_ranges == 0 {
        let (k, v) = if p.machines == 0 {
            ("machines", p.machines)
        } else {
            ("max_ranges", p.max_ranges)
        };
        return Err(bad(k, v, "at least 1"));
    }
    Ok(p)
}
