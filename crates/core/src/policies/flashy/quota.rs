//! How much to prefetch (flashy §IV-C, Algorithm 1).
//!
//! For a stream with a recognised pattern, measured over the interval that
//! just ended (actual elapsed time, §IV-B):
//!
//! ```text
//! app_rate      = blocks the application read / elapsed        (hits included)
//! linear_rate   = linear fraction × app_rate
//! random_rate   = app_rate − linear_rate                       ("unpredictable")
//! prefetch_rate = min(scale × linear_rate, max_disk_rate − random_rate)
//! quota         = prefetch_rate × polling interval             (blocks for the next interval)
//! ```
//!
//! Algorithm 1 writes the ceiling as `MAX(prefetch_throughput,
//! max_disk_throughput)`; the text ("a prefetch ceiling", "sets the
//! prefetching throughput limit to the maximum disk throughput minus this
//! value") makes clear it is a minimum, which is what we compute.
//!
//! **Departure (setting `share_cap`, default on):** the paper states the cap
//! per application. Several streams on one device share its bandwidth, so
//! by default the cap is applied to the device: `Σ prefetch_rate ≤
//! max_disk_rate − Σ random_rate` over the device's streams (streams without
//! a pattern count wholly as random), scaling every stream's rate down by
//! the same factor when the sum exceeds it. With one stream both rules are
//! the same; `share_cap=off` applies the paper's per-stream cap.

/// Prefetch rate before the cap: `scale × linear fraction × app rate`
/// (blocks/s).
pub fn uncapped_rate(scale: f64, linear_frac: f64, app_rate: f64) -> f64 {
    scale * linear_frac * app_rate
}

/// The unpredictable part of a stream's rate: `(1 − linear fraction) × app
/// rate` (blocks/s).
pub fn random_rate(linear_frac: f64, app_rate: f64) -> f64 {
    (1.0 - linear_frac).max(0.0) * app_rate
}

/// The paper's per-stream cap: `min(rate, max − random)`, never negative.
/// `max` of `None` (unknown device throughput) leaves the rate uncapped.
pub fn cap_one(rate: f64, max: Option<f64>, random: f64) -> f64 {
    match max {
        Some(m) => rate.min((m - random).max(0.0)),
        None => rate,
    }
}

/// The device-wide cap: scale `rates` down together so that their sum is
/// at most `max − random_sum`. Returns the factor applied (1 when under the
/// cap or the device throughput is unknown).
pub fn cap_shared(rates: &mut [f64], max: Option<f64>, random_sum: f64) -> f64 {
    let Some(m) = max else { return 1.0 };
    let avail = (m - random_sum).max(0.0);
    let sum: f64 = rates.iter().sum();
    if sum <= avail || sum == 0.0 {
        return 1.0;
    }
    let f = avail / sum;
    rates.iter_mut().for_each(|r| *r *= f);
    f
}

/// Blocks to prefetch for the next interval at `rate` blocks/s: the rate
/// times the polling interval, rounded down.
pub fn quota_blocks(rate: f64, interval_s: f64) -> u64 {
    let q = rate * interval_s;
    if q.is_finite() && q > 0.0 {
        q as u64
    } else {
        0
    }
}
