//! The event model shared by every driver and policy (DESIGN.md "Events and
//! keys").
//!
//! One [`Access`] is one request of a process: a run of contiguous 4 KiB
//! blocks, with both its block-space key (`dev`, `lbn`) and its file-page key
//! (`file`, `page`). Block traces that know no files use `file = FileId::RAW`
//! and `page == lbn`.

/// Block (and page) size in bytes used throughout outrider: 4 KiB.
pub const BLOCK_SIZE: u64 = 4096;

/// An unknown physical position ([`Access::lbn`]).
pub const NO_LBN: u64 = u64::MAX;

/// Process id as the kernel or the trace names it.
pub type Pid = u32;

/// A file identity: in the simulator the trace's file number, live the
/// (device, inode) pair folded into 64 bits by the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u64);

impl FileId {
    /// The raw block device itself: the file-page space equals the block
    /// space (`page == lbn`). Block traces use it for every request.
    pub const RAW: FileId = FileId(0);
}

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Op {
    /// A read.
    #[default]
    Read,
    /// A write.
    Write,
}

/// Who caused an access to reach the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Origin {
    /// The application asked for it.
    #[default]
    Demand,
    /// A file-level prefetcher below us (the kernel's readahead, live).
    FilePrefetch,
    /// outrider's own prefetch.
    OurPrefetch,
    /// Resident pages the kernel mapped for the application around one of
    /// its page faults (live: fault-around, `mm_filemap_map_pages`): pages
    /// it may use without a fault of its own, or never. Always hits; not
    /// demand, and the order they arrive in says little about the
    /// program's (a library's pages are mapped again by every process that
    /// maps it).
    Mapped,
}

/// Identifies one prefetch window (or stream) so that accuracy can be
/// accounted per window (`mis_prefetched_windows`). Allocated by the driver
/// through [`crate::Sink::new_window`], so ids are unique across stacked
/// policies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WindowId(pub u64);

/// One demand (or observed) access: a run of `blocks` contiguous 4 KiB blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Logical time: a counter incremented once per access by the driver.
    pub seq: u64,
    /// Modelled (sim) or measured (live) time in nanoseconds.
    pub time_ns: u64,
    /// Issuing process.
    pub pid: Pid,
    /// Device number (trace-defined; 0 when there is one device).
    pub dev: u32,
    /// First block on the device, in 4 KiB blocks ([`NO_LBN`]: unknown,
    /// live, to a policy asking [`crate::Positions::WhenKnown`]).
    pub lbn: u64,
    /// File the blocks belong to ([`FileId::RAW`] for block traces).
    pub file: FileId,
    /// First page within `file`, in 4 KiB pages (== `lbn` for RAW).
    pub page: u64,
    /// Length in 4 KiB blocks (at least 1).
    pub blocks: u32,
    /// Read or write.
    pub op: Op,
    /// Who issued it.
    pub origin: Origin,
}

impl Access {
    /// One past the last block (`lbn + blocks`).
    pub fn end_lbn(&self) -> u64 {
        self.lbn.saturating_add(u64::from(self.blocks))
    }
    /// One past the last page (`page + blocks`).
    pub fn end_page(&self) -> u64 {
        self.page + u64::from(self.blocks)
    }
}

/// What the cache made of an access, block by block, summed.
///
/// `hit_blocks + inflight_blocks + miss_blocks == blocks`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Blocks found resident.
    pub hit_blocks: u32,
    /// Of `hit_blocks`, those brought in by a prefetch and used for the
    /// first time now.
    pub prefetched_hit_blocks: u32,
    /// Blocks whose prefetch was still in flight: the access waits only for
    /// that completion (EPCM's "partial hit").
    pub inflight_blocks: u32,
    /// Blocks that had to be read from the device on demand.
    pub miss_blocks: u32,
}

impl Outcome {
    /// True when every block was resident.
    pub fn is_hit(&self) -> bool {
        self.inflight_blocks == 0 && self.miss_blocks == 0
    }
    /// Blocks served by a prefetch (resident-prefetched or in flight).
    pub fn served_by_prefetch(&self) -> u32 {
        self.prefetched_hit_blocks + self.inflight_blocks
    }
}

/// Where a prefetch request points: block space or file-page space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `blocks` blocks from `lbn` on device `dev`.
    Block {
        /// Device number.
        dev: u32,
        /// First block.
        lbn: u64,
    },
    /// `blocks` pages from `page` of `file`.
    File {
        /// The file.
        file: FileId,
        /// First page.
        page: u64,
    },
}

/// A policy's answer: prefetch a key range, accounted to `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrefetchRequest {
    /// Start of the range.
    pub target: Target,
    /// Length in 4 KiB blocks.
    pub blocks: u32,
    /// Window (stream) the blocks are accounted to.
    pub window: WindowId,
}

/// Feedback: the device finished reading a prefetched range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchDone {
    /// Window the request belonged to.
    pub window: WindowId,
    /// Device number.
    pub dev: u32,
    /// First block read.
    pub lbn: u64,
    /// Blocks read.
    pub blocks: u32,
    /// When the request was issued (ns).
    pub issue_ns: u64,
    /// When it completed (ns).
    pub done_ns: u64,
}

/// A whole-file access event (EPCM §3.1: the open/exec of a file and its
/// first read), what the file-level models of `policies::filepred` learn.
///
/// Drivers feed [`Access`]es; file events are derived from them by the
/// file-level policies themselves (no separate hook): a read of file F by
/// process P is a file event when P's previous read was of another file.
/// Trace readers that see opens (strace) emit a read for every open, so an
/// open followed by reads of F is one event at its first read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileEvent {
    /// When (ns, driver time).
    pub time_ns: u64,
    /// Process that opened or read the file.
    pub pid: Pid,
    /// The file.
    pub file: FileId,
}

/// A read that reached the device (flashy §IV-A's second event stream):
/// a demand miss of the application, or a prefetch read. Drivers report
/// it when the request is submitted to the device (live: `block_rq_issue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceRequest {
    /// When it was submitted (ns, the driver's clock).
    pub time_ns: u64,
    /// Process it was read for (the application's pid for a demand miss;
    /// 0 or the prefetcher's own pid for a prefetch).
    pub pid: Pid,
    /// Device number.
    pub dev: u32,
    /// First block, in 4 KiB blocks.
    pub lbn: u64,
    /// Length in 4 KiB blocks.
    pub blocks: u32,
    /// [`Origin::Demand`] for a demand miss, [`Origin::OurPrefetch`] for
    /// outrider's own prefetch, [`Origin::FilePrefetch`] for the kernel's
    /// readahead (live).
    pub origin: Origin,
    /// For [`Origin::OurPrefetch`]: the window it was requested under,
    /// when the driver knows it (the simulator does).
    pub window: Option<WindowId>,
}

impl DeviceRequest {
    /// One past the last block.
    pub fn end_lbn(&self) -> u64 {
        self.lbn + u64::from(self.blocks)
    }
}

/// What the driver knows about a device, told to the policy at the start of
/// every run ([`crate::Policy::on_start`]'s devices).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device this describes; `None` = every device the driver serves
    /// (the simulator's one device model, which all trace devices share).
    pub dev: Option<u32>,
    /// Measured or modelled maximum read throughput (bytes/s), if known
    /// (sim: `Device::max_throughput_bytes_per_s`; live: `outrider
    /// calibrate`).
    pub max_read_bytes_per_s: Option<u64>,
}
