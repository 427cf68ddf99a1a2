//! Device models: turn requests into service time.
//!
//! A device is a discrete-event server driven by the simulation loop:
//! requests are [`Device::submit`]ted at the current simulated time; the
//! loop asks [`Device::next_completion_ns`] for the earliest completion and,
//! when it advances time to it, takes it with [`Device::complete_next`].
//! Dispatch is lazy: an idle device chooses what to start only when asked
//! for its next completion, so a batch of requests submitted at one instant
//! is scheduled as a batch (C-LOOK can sort it).
//!
//! Invariants every model keeps: time never goes backwards (submissions
//! arrive at non-decreasing times, completions come out in non-decreasing
//! time order), every submitted request completes exactly once.
//!
//! # Models
//!
//! | spec | type | what it charges |
//! |---|---|---|
//! | `hdd` | [`Hdd`] | libprefetch Fig. 1 seek curve + rotational latency + 100 MB/s media transfer; one arm, C-LOOK queue |
//! | `ssd` | [`Flash`] with [`SSD_PARAMS`] | SATA link (500 MB/s) + 8 FIFO channels, 50 µs flash read |
//! | `nvme` | [`Flash`] with [`NVME_PARAMS`] | PCIe link (3.2 GB/s) + 32 FIFO channels, 10 µs flash read |
//! | `raid0:N[:hdd\|ssd\|nvme]` | [`Raid0`] | N members, 64 KiB stripe unit, a request completes with its last part |
//! | `calibrated:latency_ns=…,…` | [`Calibrated`] | fitted to this machine's disk by `outrider calibrate`: `depth` servers of latency + size / transfer, a shared bandwidth cap (the command line's `calibrated[:PATH]` fills in the numbers) |
//!
//! All models are deterministic: no randomness at all (the HDD charges the
//! *expected* rotational latency rather than sampling it).
//!
//! # Trace device numbers
//!
//! [`DevRequest::dev`] is mapped by [`DevRegions`]: each distinct device
//! number seen gets a dense region index (in order of first appearance) and
//! its blocks live at `region << DEV_REGION_SHIFT` (2^40 blocks = 4 PiB per
//! region). Models with a position (HDD, RAID-0) therefore treat different
//! devices as far-apart regions of one address space: moving between them
//! costs a full-stroke seek. Flash models stripe by `lbn` alone (partitions
//! of one SSD share its channels).
//!
//! # Cost per call
//!
//! `submit`, `next_completion_ns` and `complete_next` are O(log n) in the
//! queued requests (binary heaps) plus O(channels or members) for models that
//! split requests, and allocate nothing once their queues have grown to the
//! workload's depth: `reset` keeps capacity.

mod calibrated;
mod clook;
mod flash;
mod hdd;
mod instant;
mod pending;
mod raid;
mod spec;

pub use calibrated::{
    fit as fit_calibrated, Calibrated, CalibratedParams, Fit, Measurements, MAX_CALIBRATED_DEPTH,
};
pub use clook::CLookQueue;
pub use flash::{Flash, FlashParams, NVME_PARAMS, SSD_PARAMS};
pub use hdd::{
    positioning_ns as hdd_positioning_ns, service_ns as hdd_service_ns, Hdd, HDD_CAPACITY_BYTES,
    HDD_FORWARD_MERGE_BYTES, HDD_FULL_STROKE_SEEK_NS, HDD_MEDIA_BYTES_PER_S, HDD_RPM,
    HDD_SHORT_SEEK_MAX_BYTES, HDD_SHORT_SEEK_NS, HDD_TRACK_SEEK_BYTES, HDD_TRACK_SEEK_NS,
};
pub use instant::Instantaneous;
pub use raid::{Raid0, RAID0_MAX_MEMBERS, RAID0_STRIPE_BYTES};
pub use spec::{DeviceKind, DeviceSpec, DeviceSpecError};

/// Bytes in one block of [`DevRequest::lbn`] / [`DevRequest::blocks`].
pub const BLOCK_BYTES: u64 = outrider_core::BLOCK_SIZE;

/// Bound on the requests queued or in service at one device. No real queue
/// is this deep (NVMe allows 64 Ki × 64 Ki); a loop that reaches it is
/// leaking requests, so submission asserts it.
pub const MAX_PENDING_REQUESTS: usize = 1 << 24;

/// log2 of the blocks reserved per trace device region (see [`DevRegions`]):
/// 2^40 blocks of 4 KiB = 4 PiB, larger than any single device.
pub const DEV_REGION_SHIFT: u32 = 40;

/// Bound on distinct trace device numbers one model tells apart: regions
/// are indexed in the top 24 bits of a 64-bit block address.
pub const MAX_DEV_REGIONS: usize = 1 << (64 - DEV_REGION_SHIFT);

/// One request to the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevRequest {
    /// Caller's id, returned on completion.
    pub id: u64,
    /// Device number from the trace (models may treat devices as separate
    /// regions of one address space).
    pub dev: u32,
    /// First 4 KiB block.
    pub lbn: u64,
    /// Length in 4 KiB blocks (at least 1).
    pub blocks: u32,
    /// A write (models may charge writes like reads).
    pub write: bool,
}

/// A device model.
pub trait Device: Send {
    /// Queue `req`, arriving at `now_ns` (non-decreasing across calls).
    fn submit(&mut self, now_ns: u64, req: DevRequest);

    /// Submit a request tagged with a scheduling group (DiskSeen §3.7: the
    /// requests of one trail). Models without group scheduling ignore the
    /// tag (the default); a coordinated array serves one group at a time.
    fn submit_grouped(&mut self, now_ns: u64, req: DevRequest, _group: u32) {
        self.submit(now_ns, req);
    }
    /// When the earliest queued or in-service request completes, if any.
    /// May dispatch queued requests onto idle servers (hence `&mut`).
    fn next_completion_ns(&mut self) -> Option<u64>;
    /// Remove and return the request completing at
    /// [`Device::next_completion_ns`], with its completion time.
    fn complete_next(&mut self) -> Option<(u64, DevRequest)>;
    /// Requests queued or in service.
    fn pending(&self) -> usize;
    /// Total busy time so far, summed over independent servers (ns).
    fn busy_ns(&self) -> u64;
    /// Forget everything (between runs): empty queues, head at block 0,
    /// clock at 0.
    fn reset(&mut self);
    /// A one-line description with the model's constants.
    fn describe(&self) -> String;

    /// Every request completes at the instant it is submitted, in
    /// submission order (the `none` device). The simulator then skips the
    /// device queue altogether: the outcome is the same, only faster.
    fn is_instantaneous(&self) -> bool {
        false
    }

    /// The most bytes per second the device can deliver (large sequential
    /// reads, every server busy), if the model knows it. flashy prefetching
    /// caps its prefetch rate by this ("up to a maximum based on the total
    /// available read throughput to the disk", flashy §III).
    fn max_throughput_bytes_per_s(&self) -> Option<u64> {
        None
    }

    /// Which model this is, if it is one of the built-in ones.
    fn kind(&self) -> Option<DeviceKind> {
        None
    }
}

/// Build a device model from `hdd`, `ssd`, `nvme`, `raid0:N`,
/// `raid0:N:MEMBER` (MEMBER one of `hdd`, `ssd`, `nvme`; default `hdd`) or
/// `calibrated:latency_ns=…,transfer_bytes_per_s=…,bandwidth_bytes_per_s=…,depth=…`.
pub fn build_device(spec: &str) -> Result<Box<dyn Device>, String> {
    if spec == "none" {
        return Ok(Box::new(Instantaneous::default()));
    }
    if spec == "calibrated" || spec.starts_with("calibrated:") {
        let body = spec.strip_prefix("calibrated").unwrap_or_default();
        let body = body.strip_prefix(':').unwrap_or_default();
        if !body.contains('=') {
            return Err(format!(
                "device '{spec}': the calibrated model's numbers come from `outrider calibrate` \
                 (the command line looks them up); here give them as {}",
                "calibrated:latency_ns=N,transfer_bytes_per_s=N,bandwidth_bytes_per_s=N,depth=N"
            ));
        }
        return CalibratedParams::parse(body)
            .map(|p| Box::new(Calibrated::new(p)) as Box<dyn Device>)
            .map_err(|e| format!("device '{spec}': {e}"));
    }
    spec.parse::<DeviceSpec>()
        .map(|s| s.build())
        .map_err(|e| e.to_string())
}

/// Maps trace device numbers to disjoint regions of one block address space.
///
/// Each distinct `dev` gets the next dense region index on first sight, so
/// the mapping is deterministic for a given request order and never
/// collides. Lookups hit a one-entry cache first (traces rarely interleave
/// devices), then scan the list (traces have few devices); the list only
/// grows, bounded by [`MAX_DEV_REGIONS`].
#[derive(Clone, Debug, Default)]
pub struct DevRegions {
    devs: Vec<u32>,
    last: Option<(u32, u64)>,
}

impl DevRegions {
    /// The linear block address of `lbn` on device `dev`.
    #[inline]
    pub fn linear_block(&mut self, dev: u32, lbn: u64) -> u64 {
        assert!(
            lbn < 1 << DEV_REGION_SHIFT,
            "lbn {lbn} beyond the 2^{DEV_REGION_SHIFT}-block region of a device"
        );
        let region = match self.last {
            Some((d, r)) if d == dev => r,
            _ => {
                let r = match self.devs.iter().position(|&d| d == dev) {
                    Some(i) => i as u64,
                    None => {
                        assert!(self.devs.len() < MAX_DEV_REGIONS, "too many trace devices");
                        self.devs.push(dev);
                        (self.devs.len() - 1) as u64
                    }
                };
                self.last = Some((dev, r));
                r
            }
        };
        (region << DEV_REGION_SHIFT) | lbn
    }

    /// Forget all devices.
    pub fn clear(&mut self) {
        self.devs.clear();
        self.last = None;
    }
}

/// Nanoseconds to move one block at `bytes_per_s`, rounded to the nearest ns.
pub(crate) const fn block_ns(bytes_per_s: u64) -> u64 {
    (BLOCK_BYTES * 1_000_000_000 + bytes_per_s / 2) / bytes_per_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_regions_are_dense_disjoint_and_stable() {
        let mut r = DevRegions::default();
        assert_eq!(r.linear_block(259 << 20, 7), 7);
        assert_eq!(r.linear_block(8 << 20, 7), (1 << 40) | 7);
        assert_eq!(r.linear_block(259 << 20, 9), 9);
        assert_eq!(r.linear_block(8 << 20, 0), 1 << 40);
        r.clear();
        assert_eq!(r.linear_block(8 << 20, 0), 0);
    }

    #[test]
    fn block_ns_rounds() {
        assert_eq!(block_ns(100_000_000), 40_960);
        assert_eq!(block_ns(500_000_000), 8_192);
    }
}
