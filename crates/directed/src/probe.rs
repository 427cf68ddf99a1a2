//! A quick per-device cost probe that decides the infill limit
//! (`infill=auto`, the default).
//!
//! libprefetch found infill up to 32 KiB helps on some disks and is neutral
//! on others (§3.3, Fig. 3; §5.5, Fig. 11), and that it pays exactly where a
//! seek costs more than reading the same distance at full throughput (§3.3).
//! Whether that holds depends on the device, so it is measured, not assumed:
//! on this project's virtual disk a random 4 KiB read issued with many
//! others costs only 2–4 sequential pages, and the paper's 32 KiB infill
//! (8-page gaps) made random reads 1.5× slower (bench/results/directed.md).
//!
//! The client probes at its first round that has gaps to fill (a list read
//! in file order never needs it), on the largest registered range of each
//! region. The probe uses the mechanism rounds use, on pages of the registered file
//! that are not cached (checked with `cachestat(2)`):
//! - **request cost**: WILLNEED on `R` lone pages spread over the region,
//!   issued back to back, then a `pread` of each (waits for its I/O); the
//!   time divided by `R` is the cost of one more request at depth;
//! - **page cost**: WILLNEED on `S` consecutive pages, then a `pread` of
//!   each; time / `S` is the cost of one more page read through.
//!
//! Each is measured three times, interleaved, after a warm-up batch, and
//! the median is kept (the machine may be shared: one disturbed batch does
//! not decide). A device whose warm-up shows more than 0.5 ms per request (a
//! rotating disk) is measured once, to keep the probe short. The pages the
//! probe read are dropped again with DONTNEED (they were not cached
//! before). [`outrider_core::mechanism::infill::from_costs`] turns the costs into a limit, capped at
//! the paper's 32 KiB; live infill pages occupy the page cache and the
//! reorder buffer (`charge=on`), so the charged rule is the default: reading
//! a gap through may cost at most half the request it saves. The result is kept per device for the process.
//!
//! Reads only (O_RDONLY descriptors the application registered).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Mutex;
use std::time::Instant;

use outrider_core::mechanism::infill;
use outrider_core::policies::directed::plan::PAPER_INFILL_PAGES;
use outrider_sys::{advise, cachestat, Advice};

const PAGE: u64 = 4096;
/// Lone pages per request-cost batch.
const RANDOM_PAGES: u64 = 256;
/// Pages per page-cost run (2 MiB).
const SEQ_PAGES: u64 = 512;
/// Warm-up batch (file metadata, first-touch costs).
const WARMUP_PAGES: u64 = 32;
/// Above this per-request cost the device seeks (rotating): measure once.
const SLOW_REQUEST_NS: f64 = 500_000.0;
/// Smallest region worth probing: the lone pages must be spread out.
pub const MIN_PROBE_PAGES: u64 = 16 * RANDOM_PAGES;

/// What the probe measured on one device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceCost {
    /// Cost of one more lone 4 KiB request, issued with many others (ns).
    pub request_ns: f64,
    /// Cost of one more page read sequentially (ns).
    pub page_ns: f64,
    /// The infill limit these costs justify for charged (live) infill,
    /// pages, capped at 32 KiB.
    pub infill_pages: u64,
    /// The same for uncharged infill (`charge=off`).
    pub infill_pages_uncharged: u64,
}

static CACHE: Mutex<Option<HashMap<u64, DeviceCost>>> = Mutex::new(None);

fn dev_of(fd: BorrowedFd<'_>) -> Option<u64> {
    // SAFETY: fstat writes into a zeroed stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0).then_some(st.st_dev)
}

/// The device cost of the device holding `fd`, probing `[offset, offset +
/// len)` of it the first time the device is seen in this process. `None`
/// when the region is too small or too much of it is cached to probe (then
/// the next region on the device tries again).
pub fn device_cost(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<DeviceCost> {
    let dev = dev_of(fd)?;
    if let Some(c) = CACHE.lock().ok()?.as_ref().and_then(|m| m.get(&dev)) {
        return Some(*c);
    }
    let cost = probe(fd, offset, len)?;
    CACHE
        .lock()
        .ok()?
        .get_or_insert_with(HashMap::new)
        .insert(dev, cost);
    Some(cost)
}

/// A xorshift generator (the probe needs spread, not quality).
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn cached(fd: BorrowedFd<'_>, off: u64, len: u64) -> bool {
    cachestat(fd, off, len).map_or(true, |s| s.cache > 0)
}

fn read_page(fd: BorrowedFd<'_>, page: u64, buf: &mut [u8; PAGE as usize]) {
    // SAFETY: `buf` is valid for PAGE bytes; a failed read only makes the
    // probe slower or faster, never unsafe.
    unsafe {
        libc::pread(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            PAGE as usize,
            (page * PAGE) as libc::off_t,
        );
    }
}

/// `n` uncached lone pages of `[first, first + pages)`, sorted, or fewer
/// if they cannot be found.
fn lone_pages(fd: BorrowedFd<'_>, first: u64, pages: u64, n: u64, rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(n as usize);
    let mut tries = 0;
    while (v.len() as u64) < n && tries < 8 * n {
        tries += 1;
        let p = first + rng.next(pages);
        // A lone page: neither it nor its neighbours cached or chosen.
        if v.iter().any(|&q| q.abs_diff(p) <= 1) || cached(fd, p.saturating_sub(1) * PAGE, 3 * PAGE)
        {
            continue;
        }
        v.push(p);
    }
    v.sort_unstable();
    v
}

/// Time (ns per page) to fetch `pages` with one WILLNEED each, then read them.
fn time_lone(fd: BorrowedFd<'_>, pages: &[u64], buf: &mut [u8; PAGE as usize]) -> f64 {
    let t = Instant::now();
    for &p in pages {
        let _ = advise(fd, p * PAGE, PAGE, Advice::WillNeed);
    }
    for &p in pages {
        read_page(fd, p, buf);
    }
    t.elapsed().as_nanos() as f64 / pages.len().max(1) as f64
}

/// An uncached run of `n` pages in `[first, first + pages)`.
fn seq_run(fd: BorrowedFd<'_>, first: u64, pages: u64, n: u64, rng: &mut Rng) -> Option<u64> {
    (0..32).find_map(|_| {
        let s = first + rng.next(pages.saturating_sub(n));
        (!cached(fd, s * PAGE, n * PAGE)).then_some(s)
    })
}

/// Time (ns per page) to fetch `n` pages from `start` with WILLNEED (in
/// readahead-cap chunks), then read them.
fn time_seq(fd: BorrowedFd<'_>, start: u64, n: u64, buf: &mut [u8; PAGE as usize]) -> f64 {
    let cap = outrider_sys::ra_cap_bytes(fd);
    let t = Instant::now();
    let _ = outrider_sys::fetch_chunks(
        fd,
        start * PAGE,
        n * PAGE,
        cap,
        outrider_sys::Fetch::WillNeed,
    );
    for p in start..start + n {
        read_page(fd, p, buf);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The median (upper of the middle two), `None` for no values.
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Measure the device behind `fd` on `[offset, offset + len)` (see the
/// module docs). `None` when the region is under [`MIN_PROBE_PAGES`] or
/// too much of it is cached.
pub fn probe(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<DeviceCost> {
    let first = offset.div_ceil(PAGE);
    let pages = ((offset + len) / PAGE).saturating_sub(first);
    if pages < MIN_PROBE_PAGES {
        return None;
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ pages);
    let mut buf = [0u8; PAGE as usize];
    let mut read: Vec<(u64, u64)> = Vec::new();
    let warm = lone_pages(fd, first, pages, WARMUP_PAGES, &mut rng);
    if warm.len() < WARMUP_PAGES as usize / 2 {
        return None;
    }
    let warm_ns = time_lone(fd, &warm, &mut buf);
    read.extend(warm.iter().map(|&p| (p, 1)));
    let reps = if warm_ns > SLOW_REQUEST_NS { 1 } else { 3 };
    let n_lone = if warm_ns > SLOW_REQUEST_NS {
        WARMUP_PAGES
    } else {
        RANDOM_PAGES
    };
    let (mut reqs, mut pgs): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let lone = lone_pages(fd, first, pages, n_lone, &mut rng);
        if lone.len() as u64 >= n_lone / 2 {
            reqs.push(time_lone(fd, &lone, &mut buf));
            read.extend(lone.iter().map(|&p| (p, 1)));
        }
        if let Some(s) = seq_run(fd, first, pages, SEQ_PAGES, &mut rng) {
            pgs.push(time_seq(fd, s, SEQ_PAGES, &mut buf));
            read.push((s, SEQ_PAGES));
        }
    }
    // Leave the cache as it was: these pages were not cached before.
    for (p, n) in read {
        let _ = advise(fd, p * PAGE, n * PAGE, Advice::DontNeed);
    }
    let (Some(req), Some(page)) = (median(&mut reqs), median(&mut pgs)) else {
        return None;
    };
    Some(DeviceCost {
        request_ns: req,
        page_ns: page,
        infill_pages: infill::from_costs(req, page, PAPER_INFILL_PAGES, true),
        infill_pages_uncharged: infill::from_costs(req, page, PAPER_INFILL_PAGES, false),
    })
}
