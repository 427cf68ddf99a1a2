//! A device model fitted to a real disk by `outrider calibrate`.
//!
//! # What is measured (`outrider calibrate DEVICE-OR-FILE`, `O_DIRECT`)
//!
//! 1. **Latency per request size**: random reads, one at a time, of 4 KiB,
//!    16 KiB, 64 KiB, 256 KiB and 1 MiB. A straight line through them
//!    (least squares, weighted by 1/t²: relative errors) gives a fixed cost per request, `latency_ns`, and a
//!    per-request transfer rate, `transfer_bytes_per_s`: a request of `s`
//!    bytes alone takes `latency_ns + s / transfer`.
//! 2. **Useful queue depth**: random 4 KiB reads from 1, 2, 4, … 32
//!    threads at once. The model serves requests on `depth` identical
//!    servers, so its saturated rate is `depth / t(4 KiB)`; `depth` is the
//!    measured peak rate times `t(4 KiB)`, rounded (the number of requests
//!    the device really overlaps). The knee — the fewest threads reaching
//!    90% of the peak — is reported too.
//! 3. **Bandwidth**: the most bytes per second seen with large reads
//!    (sequential 1 MiB reads, and random 1 MiB reads at `depth`):
//!    `bandwidth_bytes_per_s`, a cap shared by all requests (the link).
//!
//! # The model
//!
//! A request of `s` bytes arriving at `t` takes the earliest free of
//! `depth` FIFO servers and occupies it for `latency_ns + s / transfer`;
//! independently it needs `s / bandwidth` of one shared FIFO link. It
//! completes when both are done: `max(server end, link end)`. Alone it
//! costs what step 1 measured; many small requests saturate at the
//! measured peak rate (step 2); large ones at the bandwidth (step 3).
//!
//! # Simplifications
//!
//! - Position does not matter: no seek, no sequential discount (right for
//!   flash and for virtual disks backed by them; for a rotating disk use
//!   `hdd`, whose seek curve this fit cannot see).
//! - The kernel's block layer is not modelled: requests are served as
//!   submitted (no merging of adjacent requests, no splitting at
//!   `max_sectors_kb`), and writes cost what reads cost.
//! - Latency is its mean: no tail, no variation (deterministic, like every
//!   model here).
//!
//! The explicit form `calibrated:latency_ns=N,transfer_bytes_per_s=N,
//! bandwidth_bytes_per_s=N,depth=N` builds the model from given numbers;
//! the command line turns `calibrated` / `calibrated:PATH` into it from
//! the calibration store.

use super::pending::Pending;
use super::{DevRequest, Device, BLOCK_BYTES, MAX_PENDING_REQUESTS};

/// Most servers a calibrated model may have (threads the calibration
/// tries go to 32; a deeper device is capped here).
pub const MAX_CALIBRATED_DEPTH: u32 = 256;

/// The fitted constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalibratedParams {
    /// Fixed cost of one request (ns).
    pub latency_ns: u64,
    /// Transfer rate of one request alone (bytes/s).
    pub transfer_bytes_per_s: u64,
    /// Shared bandwidth cap (bytes/s).
    pub bandwidth_bytes_per_s: u64,
    /// Requests served at once (1..=[`MAX_CALIBRATED_DEPTH`]).
    pub depth: u32,
}

impl CalibratedParams {
    /// The explicit device specification of these constants.
    pub fn spec(&self) -> String {
        format!(
            "calibrated:latency_ns={},transfer_bytes_per_s={},bandwidth_bytes_per_s={},depth={}",
            self.latency_ns, self.transfer_bytes_per_s, self.bandwidth_bytes_per_s, self.depth
        )
    }

    /// Parse the `k=v,...` part of [`CalibratedParams::spec`], saying
    /// what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut got: [Option<u64>; 4] = [None; 4];
        const KEYS: [&str; 4] = [
            "latency_ns",
            "transfer_bytes_per_s",
            "bandwidth_bytes_per_s",
            "depth",
        ];
        for item in text.split(',').filter(|s| !s.trim().is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not key=value"))?;
            let i = KEYS
                .iter()
                .position(|x| *x == k.trim())
                .ok_or_else(|| format!("unknown key '{k}'; expected {}", KEYS.join(", ")))?;
            got[i] = Some(
                v.trim()
                    .parse()
                    .map_err(|_| format!("{k}='{v}': expected a whole number"))?,
            );
        }
        let need = |i: usize| got[i].ok_or_else(|| format!("missing {}", KEYS[i]));
        let p = CalibratedParams {
            latency_ns: need(0)?,
            transfer_bytes_per_s: need(1)?,
            bandwidth_bytes_per_s: need(2)?,
            depth: u32::try_from(need(3)?).unwrap_or(u32::MAX),
        };
        p.check()?;
        Ok(p)
    }

    /// Relations the constants must satisfy.
    pub fn check(&self) -> Result<(), String> {
        if self.transfer_bytes_per_s == 0 || self.bandwidth_bytes_per_s == 0 {
            return Err("transfer and bandwidth must be positive".into());
        }
        if !(1..=MAX_CALIBRATED_DEPTH).contains(&self.depth) {
            return Err(format!(
                "depth {} not in 1..={MAX_CALIBRATED_DEPTH}",
                self.depth
            ));
        }
        Ok(())
    }

    /// Time of one request of `bytes` alone (ns): `latency + bytes /
    /// transfer`, at least `bytes / bandwidth`.
    pub fn alone_ns(&self, bytes: u64) -> u64 {
        let server = self.latency_ns + ns_at(bytes, self.transfer_bytes_per_s);
        server.max(ns_at(bytes, self.bandwidth_bytes_per_s))
    }
}

/// Nanoseconds to move `bytes` at `bytes_per_s`, rounded to nearest.
fn ns_at(bytes: u64, bytes_per_s: u64) -> u64 {
    ((u128::from(bytes) * 1_000_000_000 + u128::from(bytes_per_s) / 2) / u128::from(bytes_per_s))
        as u64
}

/// What `outrider calibrate` measured, to fit [`CalibratedParams`] to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measurements {
    /// (request bytes, mean ns) of random reads one at a time.
    pub latency: Vec<(u64, f64)>,
    /// (threads, random 4 KiB reads per second) at each concurrency.
    pub iops: Vec<(u32, f64)>,
    /// Best large-read throughput seen (bytes/s).
    pub bandwidth_bytes_per_s: f64,
}

/// The fit, and what it was fitted from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// The model's constants.
    pub params: CalibratedParams,
    /// Fewest threads reaching 90% of the peak 4 KiB rate.
    pub knee_depth: u32,
    /// Peak random 4 KiB reads per second.
    pub peak_iops: f64,
}

/// Fit the model to `m` (see the module documentation), saying what is
/// missing or inconsistent.
pub fn fit(m: &Measurements) -> Result<Fit, String> {
    let pts: Vec<(f64, f64)> = m
        .latency
        .iter()
        .filter(|(b, t)| *b > 0 && t.is_finite() && *t > 0.0)
        .map(|&(b, t)| (b as f64, t))
        .collect();
    if pts.len() < 2 || pts.iter().all(|p| p.0 == pts[0].0) {
        return Err("need latencies of at least two request sizes".into());
    }
    // Least squares t = a + b·s, weighted by 1/t² (the error of a mean
    // latency is relative: unweighted, the 1 MiB point's few percent
    // would swamp the 4 KiB point that fixes the intercept).
    let w: Vec<f64> = pts.iter().map(|p| 1.0 / (p.1 * p.1)).collect();
    let sw: f64 = w.iter().sum();
    let mx = pts.iter().zip(&w).map(|(p, w)| w * p.0).sum::<f64>() / sw;
    let my = pts.iter().zip(&w).map(|(p, w)| w * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx).powi(2))
        .sum();
    let sxy: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx) * (p.1 - my))
        .sum();
    let slope = sxy / sxx; // ns per byte
    if !(slope.is_finite() && slope > 0.0) {
        return Err("latency does not grow with request size".into());
    }
    let latency_ns = (my - slope * mx).max(0.0).round() as u64;
    let transfer = (1e9 / slope).round() as u64;
    let (peak_threads, peak_iops) = m
        .iops
        .iter()
        .copied()
        .filter(|(d, r)| *d > 0 && r.is_finite() && *r > 0.0)
        .fold((0, 0.0), |best, x| if x.1 > best.1 { x } else { best });
    if peak_threads == 0 {
        return Err("need the random 4 KiB read rate at one or more concurrencies".into());
    }
    let knee_depth = m
        .iops
        .iter()
        .filter(|(_, r)| *r >= 0.9 * peak_iops)
        .map(|(d, _)| *d)
        .min()
        .unwrap_or(peak_threads);
    let t4k_s = (latency_ns as f64 + BLOCK_BYTES as f64 * slope) / 1e9;
    let depth = (peak_iops * t4k_s)
        .round()
        .clamp(1.0, f64::from(MAX_CALIBRATED_DEPTH)) as u32;
    // The shared cap is at least what the servers deliver for 4 KiB reads
    // (the link never limits below the measured peak).
    let bandwidth = m
        .bandwidth_bytes_per_s
        .max(peak_iops * BLOCK_BYTES as f64)
        .round() as u64;
    let params = CalibratedParams {
        latency_ns,
        transfer_bytes_per_s: transfer.max(1),
        bandwidth_bytes_per_s: bandwidth.max(1),
        depth,
    };
    params.check()?;
    Ok(Fit {
        params,
        knee_depth,
        peak_iops,
    })
}

/// The calibrated device (see the module documentation).
#[derive(Clone, Debug)]
pub struct Calibrated {
    p: CalibratedParams,
    /// When each server finishes the work queued on it so far.
    server_free_ns: Vec<u64>,
    link_free_ns: u64,
    last_submit_ns: u64,
    /// Submitted requests by completion time, with their service time.
    done: Pending<(DevRequest, u64)>,
    busy_ns: u64,
}

impl Calibrated {
    /// A model with these constants (checked by [`CalibratedParams::check`]).
    pub fn new(p: CalibratedParams) -> Self {
        assert!(p.check().is_ok(), "{p:?}");
        Calibrated {
            server_free_ns: vec![0; p.depth as usize],
            p,
            link_free_ns: 0,
            last_submit_ns: 0,
            done: Pending::default(),
            busy_ns: 0,
        }
    }

    /// This model's constants.
    pub fn params(&self) -> &CalibratedParams {
        &self.p
    }
}

impl Device for Calibrated {
    fn submit(&mut self, now_ns: u64, req: DevRequest) {
        assert!(req.blocks >= 1, "empty request {req:?}");
        debug_assert!(
            now_ns >= self.last_submit_ns,
            "submission time went backwards"
        );
        assert!(
            self.pending() < MAX_PENDING_REQUESTS,
            "device queue overflow"
        );
        self.last_submit_ns = now_ns;
        let bytes = u64::from(req.blocks) * BLOCK_BYTES;
        let link_end = self.link_free_ns.max(now_ns) + ns_at(bytes, self.p.bandwidth_bytes_per_s);
        self.link_free_ns = link_end;
        let service = self.p.latency_ns + ns_at(bytes, self.p.transfer_bytes_per_s);
        let (i, free) = self
            .server_free_ns
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, f)| (f, i))
            .expect("depth >= 1");
        let server_end = free.max(now_ns) + service;
        self.server_free_ns[i] = server_end;
        self.done.push(server_end.max(link_end), (req, service));
    }

    fn next_completion_ns(&mut self) -> Option<u64> {
        self.done.next_ns()
    }

    fn complete_next(&mut self) -> Option<(u64, DevRequest)> {
        let (end, (req, service)) = self.done.pop()?;
        self.busy_ns += service;
        Some((end, req))
    }

    fn pending(&self) -> usize {
        self.done.len()
    }

    /// Server busy time of completed requests (the link is not counted).
    fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    fn reset(&mut self) {
        self.server_free_ns.fill(0);
        self.link_free_ns = 0;
        self.last_submit_ns = 0;
        self.done.clear();
        self.busy_ns = 0;
    }

    fn describe(&self) -> String {
        let p = &self.p;
        format!(
            "calibrated: {} servers, {:.1} µs per request + {} MB/s, shared {} MB/s; \
             4 KiB random read {:.1} µs",
            p.depth,
            p.latency_ns as f64 / 1e3,
            p.transfer_bytes_per_s / 1_000_000,
            p.bandwidth_bytes_per_s / 1_000_000,
            p.alone_ns(BLOCK_BYTES) as f64 / 1e3
        )
    }

    fn max_throughput_bytes_per_s(&self) -> Option<u64> {
        let servers = u128::from(self.p.depth) * u128::from(self.p.transfer_bytes_per_s);
        Some(servers.min(u128::from(self.p.bandwidth_bytes_per_s)) as u64)
    }
}

#[cfg(test)]
mod tests;
