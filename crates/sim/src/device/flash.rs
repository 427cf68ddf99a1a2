//! Flash devices (SATA SSD, NVMe): a host link in front of parallel FIFO
//! channels.
//!
//! A request first crosses the host interface (one FIFO stage at the link
//! rate), then is split by LBN striping into per-channel parts: block `b`
//! belongs to channel `(b / stripe_blocks) % channels`, the page-level
//! striping of Agrawal et al. ("Design Tradeoffs for SSD Performance",
//! USENIX ATC 2008) that lets one large request use every channel. Each
//! channel serves its parts in arrival order; a part occupies its channel
//! for one flash read latency plus its bytes at the channel rate. The
//! request completes when its last part does.
//!
//! For reads the data physically crosses the link last. Charging the link
//! first keeps the model eager — every service time is known at submission,
//! because FIFO servers never reorder — while giving the same unloaded
//! latency (link + flash + channel transfer) and the same saturated
//! throughput (`min(link, channels × channel rate)`); only which of two
//! contending requests waits on the link can differ.
//!
//! Completion order: by completion time, ties by submission order. Writes
//! cost the same as reads (no program/erase or garbage-collection model).
//! Device numbers do not change the channel mapping: partitions of one
//! drive share its channels.

use super::pending::Pending;
use super::{block_ns, DevRequest, Device, DeviceKind, MAX_PENDING_REQUESTS};

/// The constants of one flash device class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashParams {
    /// Which class this is (named in descriptions and [`Device::kind`]).
    pub kind: DeviceKind,
    /// Independent flash channels, each a FIFO server.
    pub channels: usize,
    /// Striping unit across channels, in 4 KiB blocks.
    pub stripe_blocks: u64,
    /// Fixed cost of every per-channel part: flash array read plus
    /// controller overhead (ns).
    pub read_latency_ns: u64,
    /// Transfer rate of one channel (bytes/s).
    pub channel_bytes_per_s: u64,
    /// Transfer rate of the host interface (bytes/s).
    pub link_bytes_per_s: u64,
}

/// SATA SSD class: 8 channels, 4 KiB page striping, 50 µs flash read
/// (MLC tR class), 200 MB/s per channel (ONFI 2.x), 500 MB/s SATA 6 Gb/s
/// link. A 4 KiB random read costs 8.2 + 50 + 20.5 ≈ 79 µs — flashy
/// Table I's 65–100 µs spec latencies; large reads saturate the 500 MB/s
/// link (flashy Table I spec read bandwidths 250–450 MB/s on SATA II, ~500
/// on SATA III).
pub const SSD_PARAMS: FlashParams = FlashParams {
    kind: DeviceKind::Ssd,
    channels: 8,
    stripe_blocks: 1,
    read_latency_ns: 50_000,
    channel_bytes_per_s: 200_000_000,
    link_bytes_per_s: 500_000_000,
};

/// NVMe class: 32 channels, 4 KiB page striping, 10 µs flash read
/// (low-latency SLC/Z-NAND/XL-Flash class), 800 MB/s per channel (ONFI 4),
/// 3.2 GB/s PCIe 3.0 ×4 link. A 4 KiB random read costs
/// 1.3 + 10 + 5.1 ≈ 16 µs; large reads saturate the 3.2 GB/s link.
pub const NVME_PARAMS: FlashParams = FlashParams {
    kind: DeviceKind::Nvme,
    channels: 32,
    stripe_blocks: 1,
    read_latency_ns: 10_000,
    channel_bytes_per_s: 800_000_000,
    link_bytes_per_s: 3_200_000_000,
};

#[derive(Clone, Copy, Debug)]
struct Slot {
    req: DevRequest,
    busy_ns: u64,
}

/// A flash device (see the module documentation for the cost model).
#[derive(Clone, Debug)]
pub struct Flash {
    params: FlashParams,
    channel_block_ns: u64,
    link_block_ns: u64,
    /// When each channel finishes the work queued on it so far.
    channel_free_ns: Vec<u64>,
    link_free_ns: u64,
    last_submit_ns: u64,
    /// Submitted requests by completion time.
    done: Pending<Slot>,
    busy_ns: u64,
}

impl Flash {
    /// A flash device with the given constants.
    pub fn new(params: FlashParams) -> Self {
        assert!(params.channels >= 1 && params.stripe_blocks >= 1);
        assert!(params.channel_bytes_per_s > 0 && params.link_bytes_per_s > 0);
        Self {
            params,
            channel_block_ns: block_ns(params.channel_bytes_per_s),
            link_block_ns: block_ns(params.link_bytes_per_s),
            channel_free_ns: vec![0; params.channels],
            link_free_ns: 0,
            last_submit_ns: 0,
            done: Pending::default(),
            busy_ns: 0,
        }
    }

    /// The SATA SSD class, [`SSD_PARAMS`].
    pub fn ssd() -> Self {
        Self::new(SSD_PARAMS)
    }

    /// The NVMe class, [`NVME_PARAMS`].
    pub fn nvme() -> Self {
        Self::new(NVME_PARAMS)
    }

    /// This device's constants.
    pub fn params(&self) -> &FlashParams {
        &self.params
    }

    /// Queue one channel part of `blocks` blocks ready at `ready_ns`;
    /// returns (end, service).
    #[inline]
    fn channel_part(&mut self, channel: usize, ready_ns: u64, blocks: u64) -> (u64, u64) {
        let service = self.params.read_latency_ns + blocks * self.channel_block_ns;
        let free = &mut self.channel_free_ns[channel];
        let end = (*free).max(ready_ns) + service;
        *free = end;
        (end, service)
    }
}

impl Device for Flash {
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
        let blocks = req.blocks as u64;

        // Host link: one FIFO stage.
        let link_ns = blocks * self.link_block_ns;
        let ready_ns = self.link_free_ns.max(now_ns) + link_ns;
        self.link_free_ns = ready_ns;

        // Channels: stripes s0..=s1; the j-th stripe of the request goes to
        // channel (s0 + j) % C, so channel slot j (< C) gets stripes
        // j, j + C, j + 2C, ...: q + (j < r) of them, with q, r = stripes
        // divided by C.
        let c = self.params.channels as u64;
        let unit = self.params.stripe_blocks;
        let start = req.lbn;
        let end = start + blocks;
        let s0 = start / unit;
        let s1 = (end - 1) / unit;
        let stripes = s1 - s0 + 1;
        let head_trim = start - s0 * unit;
        let tail_trim = (s1 + 1) * unit - end;
        let (q, r) = (stripes / c, stripes % c);
        let last_j = if r == 0 { c - 1 } else { r - 1 };
        let mut channel = (s0 % c) as usize;
        let (mut end_ns, mut busy) = (ready_ns, 0);
        for j in 0..stripes.min(c) {
            let mut part = (q + (j < r) as u64) * unit;
            if j == 0 {
                part -= head_trim;
            }
            if j == last_j {
                part -= tail_trim;
            }
            let (e, s) = self.channel_part(channel, ready_ns, part);
            end_ns = end_ns.max(e);
            busy += s;
            channel += 1;
            if channel == self.params.channels {
                channel = 0;
            }
        }
        self.done.push(end_ns, Slot { req, busy_ns: busy });
    }

    fn next_completion_ns(&mut self) -> Option<u64> {
        self.done.next_ns()
    }

    fn complete_next(&mut self) -> Option<(u64, DevRequest)> {
        let (end_ns, slot) = self.done.pop()?;
        self.busy_ns += slot.busy_ns;
        Some((end_ns, slot.req))
    }

    fn pending(&self) -> usize {
        self.done.len()
    }

    /// Channel busy time of completed requests (the link is not counted).
    fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    fn reset(&mut self) {
        self.channel_free_ns.fill(0);
        self.link_free_ns = 0;
        self.last_submit_ns = 0;
        self.done.clear();
        self.busy_ns = 0;
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "{}: {} FIFO channels striped every {} KiB, flash read {:.0} µs, \
             channel {} MB/s, link {} MB/s; 4 KiB random read {:.1} µs",
            p.kind,
            p.channels,
            p.stripe_blocks * 4,
            p.read_latency_ns as f64 / 1e3,
            p.channel_bytes_per_s / 1_000_000,
            p.link_bytes_per_s / 1_000_000,
            (self.link_block_ns + p.read_latency_ns + self.channel_block_ns) as f64 / 1e3,
        )
    }

    fn max_throughput_bytes_per_s(&self) -> Option<u64> {
        let p = &self.params;
        Some(
            p.link_bytes_per_s
                .min(p.channels as u64 * p.channel_bytes_per_s),
        )
    }

    fn kind(&self) -> Option<DeviceKind> {
        Some(self.params.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, lbn: u64, blocks: u32) -> DevRequest {
        DevRequest {
            id,
            lbn,
            blocks,
            ..DevRequest::default()
        }
    }

    #[test]
    fn unloaded_4k_read_latency() {
        let mut d = Flash::ssd();
        d.submit(0, req(0, 12345, 1));
        assert_eq!(d.next_completion_ns(), Some(8_192 + 50_000 + 20_480));
        let mut d = Flash::nvme();
        d.submit(0, req(0, 12345, 1));
        assert_eq!(d.next_completion_ns(), Some(1_280 + 10_000 + 5_120));
    }

    /// A request spanning every channel charges each channel once, with its
    /// share of the blocks, including partial stripes at either end.
    #[test]
    fn large_request_uses_every_channel() {
        let mut d = Flash::new(FlashParams {
            stripe_blocks: 4,
            ..SSD_PARAMS
        });
        // Blocks 2..=37: stripes 0..=9 over 8 channels; channels 0 and 1
        // get two stripes each.
        d.submit(0, req(0, 2, 36));
        let link = 36 * 8_192;
        let per_block = 20_480;
        let ch = |blocks: u64| link + 50_000 + blocks * per_block;
        assert_eq!(d.channel_free_ns[0], ch(2 + 4));
        assert_eq!(d.channel_free_ns[1], ch(4 + 2));
        assert_eq!(d.channel_free_ns[2], ch(4));
        assert_eq!(d.channel_free_ns[7], ch(4));
        assert_eq!(d.next_completion_ns(), Some(ch(6)));
        d.complete_next();
        assert_eq!(d.busy_ns(), 8 * 50_000 + 36 * per_block);
    }

    #[test]
    fn channels_are_fifo_and_parallel() {
        let mut d = Flash::ssd();
        // Same channel (lbn 0 and 8): the second waits for the first.
        d.submit(0, req(0, 0, 1));
        d.submit(0, req(1, 8, 1));
        // Another channel: only the link serialises it.
        d.submit(0, req(2, 1, 1));
        let got: Vec<(u64, u64)> = std::iter::from_fn(|| d.complete_next())
            .map(|(t, r)| (t, r.id))
            .collect();
        let (l, f) = (8_192, 70_480);
        assert_eq!(got, [(l + f, 0), (3 * l + f, 2), (l + 2 * f, 1)]);
    }
}
