//! The feedback monitor (flashy §IV-D, Algorithm 1's `Feedback`).
//!
//! Each interval it compares the reads that reached the device with the
//! application's requests:
//!
//! - `app_linear`: blocks the application requested (to the cache, hits
//!   included) that continued a linear pattern — sequential, reverse or
//!   strided — of their stream;
//! - `disk_linear`: demand-missed blocks that reached the device and were
//!   linear in the device stream of their application stream (which also
//!   holds our own prefetch reads, so a miss just past the prefetched range
//!   is linear: the prefetch stopped short);
//! - `prefetch_disk`: blocks our prefetches read from the device.
//!
//! Rules (§IV-D): **raise** the scale factor when `disk_linear /
//! app_linear` exceeds a threshold ("if there are any linear, easily
//! predictable reads that were not prefetched, and still reached disk, then
//! the prefetching aggressiveness should be increased"); **lower** it when
//! `disk_linear == 0` and `prefetch_disk > app_linear` ("the number of
//! prefetched blocks reads reaching disk is greater than the number of
//! linear reads that the application requested"). Bounded by
//! `[scale_min, scale_max]`.
//!
//! The paper gives neither the raise threshold nor the step; ours are
//! parameters: raise at 10% (`raise_at`), multiply by 1.25 up (`up`) and
//! 0.8 down (`down`), bounds 0.25–8. "The feedback monitor analyzes the
//! actual performance of the prefetch operations from the last time
//! interval": an interval after which no prefetch was requested leaves the
//! scale alone.

/// One interval's totals over every stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalStats {
    /// Linear blocks the application requested.
    pub app_linear: u64,
    /// Linear demand blocks that still reached the device.
    pub disk_linear: u64,
    /// Blocks our prefetches read from the device.
    pub prefetch_disk: u64,
    /// Did the previous tick request any prefetch?
    pub prefetched: bool,
}

/// What the monitor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// Scale multiplied by `up` (bounded).
    Raised,
    /// Scale multiplied by `down` (bounded).
    Lowered,
    /// Left alone.
    Kept,
}

/// The feedback monitor's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Monitor {
    /// Raise when `disk_linear / app_linear` exceeds this.
    pub raise_at: f64,
    /// Multiplier when raising (> 1).
    pub up: f64,
    /// Multiplier when lowering (< 1).
    pub down: f64,
    /// Lower bound of the scale factor.
    pub scale_min: f64,
    /// Upper bound of the scale factor.
    pub scale_max: f64,
}

impl Monitor {
    /// Adjust `scale` after an interval with totals `s`.
    pub fn adjust(&self, scale: &mut f64, s: &IntervalStats) -> Adjust {
        if !s.prefetched {
            return Adjust::Kept;
        }
        let before = *scale;
        if s.app_linear > 0 && s.disk_linear as f64 / s.app_linear as f64 > self.raise_at {
            *scale = (*scale * self.up).min(self.scale_max).max(self.scale_min);
            return if *scale != before {
                Adjust::Raised
            } else {
                Adjust::Kept
            };
        }
        if s.disk_linear == 0 && s.prefetch_disk > s.app_linear {
            *scale = (*scale * self.down).max(self.scale_min).min(self.scale_max);
            return if *scale != before {
                Adjust::Lowered
            } else {
                Adjust::Kept
            };
        }
        Adjust::Kept
    }
}
