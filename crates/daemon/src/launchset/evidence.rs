//! Whether a launch's set is in memory, and whether its launch reads
//! from memory: the judge that lets a replay stop before it asks for
//! anything ([`RESIDENT_PROBES`]) and its launch go unrecorded, from the
//! set's probes ([`probes`], [`spread`]) and the launch's own first reads
//! ([`LaunchReads`], at most one page in [`MISS_SHARE`] missed).

use super::idle::io_fields;
use super::PAGE;
use outrider_store::AccessRecord;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Pages a launch read and pages of them it missed (brought into the
/// cache itself), as the daemon's events told them so far.
#[derive(Debug, Default)]
pub struct LaunchReads {
    /// Pages its process tree read (`mm_filemap` events).
    pub read: AtomicU64,
    /// Pages its tasks brought into the cache (`add_to_page_cache`).
    pub missed: AtomicU64,
    /// The daemon judged it to read from memory ([`LaunchReads::judge_hot`]).
    hot: AtomicBool,
}

impl LaunchReads {
    /// The launch reads from memory, as the daemon judged it (its own
    /// count, or the kernel's): its replay asks for nothing more.
    pub fn judge_hot(&self) {
        self.hot.store(true, Ordering::Relaxed);
    }

    /// Was the launch judged to read from memory?
    pub fn judged_hot(&self) -> bool {
        self.hot.load(Ordering::Relaxed)
    }

    /// Did the launch read at least [`EVIDENCE_PAGES`], at most one in
    /// [`MISS_SHARE`] of them missed? Waited for up to [`EVIDENCE_WAIT`]
    /// while it read fewer and missed no more than that share of them.
    /// Its events reach the daemon a few milliseconds after its reads, or
    /// much later when its main thread, at nice 19, waits for a CPU the
    /// launch keeps busy: so the launcher's own counts are looked at too
    /// (`/proc/PID/io`: `rchar`, the bytes its `read`s returned, and
    /// `read_bytes`, those it had read from storage), whichever tells
    /// first. Neither telling within [`EVIDENCE_WAIT`], a launcher that
    /// read nothing from storage (`read_bytes`, faults' reads included) is
    /// taken as reading from memory: its first reads may come before the
    /// daemon's programs of page reads and faults are attached again at
    /// its exec (`outrider_live::ebpf`, module `reads`). With the faults'
    /// programs detached that way, `python3 -c` reading a file in memory, its
    /// libraries mapped before, had 20 ms pass with fewer pages seen (its
    /// set found in memory, then asked for whole, in each of 3 launches of
    /// 4 test runs). With the events alone, `rg` over a tree in memory, on
    /// both cores, was judged 38 ms after its exec in one run and 291 ms in
    /// another, and in a third not at all (its 20 ms passed): its set
    /// was then asked for whole. A replay whose first reorder buffer is
    /// its libraries gets there before the launch reads anything
    /// (`python3` reading a file in memory, its first 1 MiB not yet
    /// seen, was recorded and its set asked for whole).
    pub(super) fn read_from_memory(&self, launcher: Option<u32>) -> bool {
        let t0 = std::time::Instant::now();
        let io = launcher.map(|pid| std::path::PathBuf::from(format!("/proc/{pid}/io")));
        loop {
            let seen = self.evidence();
            let own_pages = io.as_deref().and_then(io_pages);
            match (seen, own_pages.and_then(evidence_of)) {
                (Some(from_memory), _) | (None, Some(from_memory)) => return from_memory,
                (None, None) if t0.elapsed() >= EVIDENCE_WAIT => {
                    return own_pages.is_some_and(|(_, missed)| missed == 0)
                }
                (None, None) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    /// Did the daemon's events see the launch read from storage: at
    /// least [`FROM_STORAGE_PAGES`] of its pages missed, and more than
    /// one in [`MISS_SHARE`] of those it read, or of [`EVIDENCE_PAGES`]
    /// while it read fewer? A `python3` reading files in memory had 14
    /// of its first pages missed (this VM's page cache loses pages in
    /// the background).
    pub fn from_storage(&self) -> bool {
        self.missed.load(Ordering::Relaxed) >= FROM_STORAGE_PAGES && self.evidence() == Some(false)
    }

    /// What the daemon's events tell so far ([`evidence_of`]).
    fn evidence(&self) -> Option<bool> {
        evidence_of((
            self.read.load(Ordering::Relaxed),
            self.missed.load(Ordering::Relaxed),
        ))
    }
}

/// Of pages `read`, `missed` not in memory: read from memory (at least
/// [`EVIDENCE_PAGES`], at most one in [`MISS_SHARE`] missed), not (more
/// missed than that share of them, or of [`EVIDENCE_PAGES`]), or too
/// soon to tell.
fn evidence_of((read, missed): (u64, u64)) -> Option<bool> {
    if missed * MISS_SHARE > read.max(EVIDENCE_PAGES) {
        return Some(false);
    }
    (read >= EVIDENCE_PAGES).then_some(true)
}

/// Pages a launch misses at least before [`LaunchReads::from_storage`]
/// holds: a cold launch reading small files misses them within its
/// first few dozen files.
pub const FROM_STORAGE_PAGES: u64 = 64;

/// Whether a replay found its set in memory: not known until it looked.
#[derive(Debug, Default)]
pub struct Verdict(std::sync::atomic::AtomicU8);

impl Verdict {
    const IN_MEMORY: u8 = 1;
    const NOT: u8 = 2;

    /// The replay looked: the set was in memory or not.
    pub fn set(&self, in_memory: bool) {
        let v = if in_memory {
            Self::IN_MEMORY
        } else {
            Self::NOT
        };
        self.0.store(v, Ordering::SeqCst);
    }

    /// `None` until the replay looked.
    pub fn get(&self) -> Option<bool> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            v => Some(v == Self::IN_MEMORY),
        }
    }
}

/// Pages a process's `read`s returned and pages it read from storage,
/// from its `/proc/PID/io` (`rchar`, `read_bytes`), if it can be read.
fn io_pages(io: &std::path::Path) -> Option<(u64, u64)> {
    let [rchar, read_bytes] = io_fields(io, ["rchar", "read_bytes"])?;
    Some((rchar / PAGE, read_bytes / PAGE))
}

/// How long a replay whose set's probes found it in memory waits, at
/// most, for its launch's own first [`EVIDENCE_PAGES`].
pub const EVIDENCE_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Pages a launch reads before its own reads can tell that it reads
/// from memory (1 MiB).
pub const EVIDENCE_PAGES: u64 = 256;

/// Accesses looked at, at most, in each of a set's two parts (its first
/// reorder buffer, the rest) to find it in memory before any of it is
/// asked for, while no other replay read from storage lately
/// ([`OTHERS_QUIET_NS`]); then its launch's own first reads must come
/// from there too ([`LaunchReads`]). A set found there is not asked for,
/// its metadata walk does not start and its launch is not recorded.
/// Looked for after its first reorder buffer had been verified and asked
/// for (by how much of it the replay's thread read from storage), the
/// set of `rg` over a tree in memory was found there 30-45 ms after the
/// exec, and 217-278 ms in one run of five: the replay, at nice 19,
/// waits for the cores `rg` keeps busy, and `rg` is followed until then.
/// A set in memory costs its program the replay's opens and requests,
/// the walk's and the recording's, on the cores it needs: during `rg`
/// over a source tree in memory, its set of 8 192 files known, the
/// daemon ran 0.16-0.20 s of CPU in that 0.2 s run (half of it
/// `open_by_handle_at`, in the replay and in the recording; perf). Each guard was needed once:
/// probed beside another replay, sets that replay had only begun to read
/// were taken for sets in memory (`rustc` in the day in miniature, 0.80x
/// of stock); without the launch's own reads, a `cat` of a file dropped
/// from the cache, whose set's probes fell on its libraries and other
/// files in memory, was. A replay ahead of its launch looks too: a
/// predicted `rg`'s set, in memory, read ahead whole at each of the
/// launches before it cost the daemon 0.5-0.6 s of CPU (8 192 files
/// opened by path, each 1 MiB piece's idle-disk polls; perf), which
/// then turned `rg`'s own launch away at the CPU cap.
pub const RESIDENT_PROBES: usize = 16;

/// The accesses of `accesses` at [`RESIDENT_PROBES`] pages spread
/// evenly over its pages, the last first, each once: an access is looked
/// at as often as its share of the pages (a launch's one read of a data
/// file among a hundred of its libraries' pages is).
pub(super) fn probes(accesses: &[AccessRecord]) -> Vec<AccessRecord> {
    let ends: Vec<u64> = (accesses.iter())
        .scan(0u64, |t, a| {
            *t += u64::from(a.pages);
            Some(*t)
        })
        .collect();
    let total = ends.last().copied().unwrap_or(0);
    let n = RESIDENT_PROBES as u64;
    let mut at: Vec<usize> = (0..n)
        .rev()
        .map(|k| ends.partition_point(|&e| e <= total * (2 * k + 1) / (2 * n)))
        .collect();
    at.dedup();
    at.into_iter()
        .filter_map(|i| accesses.get(i).copied())
        .collect()
}

/// How long after one of the daemon's replays read from storage no
/// replay looks for its set in memory ([`ReplayOptions::storage_read_ns`](super::ReplayOptions::storage_read_ns)):
/// a 16 MiB reorder buffer asked for at once arrives over 30-160 ms at
/// 100-500 MB/s.
pub const OTHERS_QUIET_NS: u64 = 500_000_000;

/// Pages of one probe ([`RESIDENT_PROBES`]) read without waiting, at
/// most.
pub const PAGES_PER_PROBE: u64 = 8;

/// Up to [`PAGES_PER_PROBE`] pages spread evenly over the `pages` pages
/// from `page`, its first and last among them.
pub(super) fn spread(page: u64, pages: u64) -> Vec<u64> {
    let n = pages.min(PAGES_PER_PROBE);
    (0..n)
        .map(|k| page + if n > 1 { k * (pages - 1) / (n - 1) } else { 0 })
        .collect()
}

/// What reads "from memory": at most one page in this many not cached.
/// Some always are not: this machine's page cache loses pages in the
/// background (DAMON reclaim; a 32 MiB file read a second before had 2
/// to 136 of its 8 192 pages evicted, in three runs of five).
pub const MISS_SHARE: u64 = 32;
