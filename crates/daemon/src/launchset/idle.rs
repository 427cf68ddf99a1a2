//! Reading a predicted launch's set in the disk's idle time
//! ([`super::ReplayOptions::ahead`]): each piece waits for the disk to
//! have nothing in flight and no one else to have read from it since
//! the last look, and the replay's thread is in the idle I/O class.

use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How long a replay ahead of its launch waits, in all, for the disks
/// it reads to be idle: a program that keeps the disk busy (a search, a
/// build) is not slowed by the next program's set; what is not asked
/// for by then is left to that program's own replay at its exec.
/// Measured with the caches dropped before each program (as a harness
/// timing cold starts does; `file`, `perl`, `git status`, `gcc`,
/// `python3 -c pass` in turn, a daemon that learned the order, medians of
/// 7 in one sitting): the next three launches' sets read ahead with no
/// wait made `perl` 0.77x and `git status` 0.82x of stock, read in idle
/// time 0.99x and 1.01x. Run back to back with no drop, the wait costs
/// the later programs some of their gain (`gcc` 1.39x against 2.30x,
/// `python3 -c pass` 1.05x against 1.41x).
pub(super) const IDLE_WAIT_MAX_NS: u64 = 500_000_000;
/// Between two looks at a busy disk's requests in flight.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(2);
/// How long a look that found the disk idle stands while this thread
/// read nothing from storage since. A replay ahead verifies each file of
/// its set with the disk idle: looked at for each, three files read each
/// time (`inflight`, `stat`, `/proc/thread-self/io`), the idle looks were
/// a fifth of the daemon's CPU over `rg` launches 6 s apart (its set of
/// 8 192 files read ahead at each `sleep` between them, the cache having
/// lost some of it; perf), with every inode in memory. A file whose
/// inode is not reads from the disk, and the next look is made.
const LOOK_STANDS_NS: u64 = 1_000_000;

/// The disks a replay ahead of its launch reads, by device number, and
/// how long it waited for them. A predicted launch's set is read in the
/// time the disk has nothing else to do: each 1 MiB piece waits until
/// the disk the file is on has no request in flight (sysfs `inflight`,
/// the whole disk's for a partition) and no one else read from it since
/// the last such look ([`Disk::others_read`]), so the program running
/// meanwhile never queues behind it (a measured harness that drops the
/// cache before each run would only see the next program's set asked
/// for during the current one). A device with no `inflight` file
/// (network, FUSE, btrfs's anonymous devices) is not waited for.
#[derive(Default)]
pub(super) struct IdleDisks {
    disks: FxHashMap<u64, Option<Disk>>,
    waited_ns: u64,
    /// Set once the launch read ahead of started
    /// ([`ReplayOptions::launched`](super::ReplayOptions::launched)).
    launched: Arc<AtomicBool>,
}

impl IdleDisks {
    /// For a replay ahead of the launch whose start sets `launched`.
    pub(super) fn new(launched: Arc<AtomicBool>) -> IdleDisks {
        IdleDisks {
            launched,
            ..IdleDisks::default()
        }
    }

    /// Has the launch read ahead of started?
    pub(super) fn launched(&self) -> bool {
        self.launched.load(Ordering::Relaxed)
    }

    /// Wait until device `dev` has no request in flight and no one else
    /// read from it since the last look; false once the waits of this
    /// replay passed [`IDLE_WAIT_MAX_NS`], or its launch started.
    pub(super) fn wait(&mut self, dev: u64) -> bool {
        if self.launched() {
            return false;
        }
        let disk = self.disks.entry(dev).or_insert_with(|| Disk::of(dev));
        let Some(disk) = disk.as_mut() else {
            return true;
        };
        let start = outrider_sys::monotonic_ns();
        let stands = |(at, read)| {
            start.saturating_sub(at) < LOOK_STANDS_NS && outrider_sys::thread_bytes_read() == read
        };
        if disk.idle_at.is_some_and(stands) {
            return true;
        }
        loop {
            if requests_in_flight(&disk.inflight) == Some(0) && !disk.others_read() {
                let now = outrider_sys::monotonic_ns();
                disk.idle_at = Some((now, outrider_sys::thread_bytes_read()));
                self.waited_ns += now.saturating_sub(start);
                return true;
            }
            let waited = self.waited_ns + outrider_sys::monotonic_ns().saturating_sub(start);
            if waited >= IDLE_WAIT_MAX_NS {
                self.waited_ns = waited;
                return false;
            }
            std::thread::sleep(IDLE_POLL);
        }
    }
}

/// One disk an ahead replay reads: its sysfs `inflight` and `stat`
/// files, and what others had read from it at the last idle look.
///
/// A disk with nothing in flight between the synchronous reads of a
/// program that waits on each is not idle: a piece sent then is served
/// before the program's next read. `find` over a source tree (one
/// directory or inode read after another) ran at 0.85x of stock in the
/// day in miniature while the next program's set was read in those
/// gaps (`bench/daemon/launch.sh`, twice); 0.99x with this check, and
/// no program under 0.98x. In two sittings of a shorter day (medians of
/// 7, against the check's absence): `find` 1.19x / 1.03x of stock
/// against 0.99x / 0.99x, `perl` 1.07x / 0.91x against 0.89x / 0.83x;
/// its price, the later programs' sets read less far ahead: `gcc` 1.40x /
/// 1.29x against 1.50x / 1.51x, `rustc` 3.17x / 3.14x against 3.32x /
/// 3.30x; in a routine of short programs outside the bench's suite
/// (`gdb`, `cmake`, `convert`, `vim`, `curl`, `make`, `xz`, `lua`,
/// `php`, `ruby`, medians of 7) `cmake` 1.24x against 2.05x, `convert`
/// 1.62x against 2.01x, `ruby` 1.26x against 1.39x, `vim` 1.00x
/// against 1.09x, `lua` (2 ms) 0.88x against 0.95x, the rest within
/// 0.05x. So a piece also waits until no
/// one else read from the disk since the last look: the disk's sectors
/// read (`stat`, counted as each read completes) less this thread's own
/// reads (`/proc/thread-self/io` `read_bytes`, counted as each is
/// submitted). With nothing in flight, every read this thread submitted
/// has completed, so the difference is exactly what others read.
struct Disk {
    inflight: std::path::PathBuf,
    stat: std::path::PathBuf,
    /// Bytes others had read at the last idle look (`None`: no look yet).
    others: Option<u64>,
    /// When the last look found it idle, and this thread's bytes read
    /// from storage then ([`LOOK_STANDS_NS`]).
    idle_at: Option<(u64, u64)>,
}

impl Disk {
    fn of(dev: u64) -> Option<Disk> {
        let dir = disk_dir(dev)?;
        let (inflight, stat) = (dir.join("inflight"), dir.join("stat"));
        (inflight.exists() && stat.exists()).then_some(Disk {
            inflight,
            stat,
            others: None,
            idle_at: None,
        })
    }

    /// Others read from the disk since the last look, with nothing in
    /// flight (the first look counts as a read: nothing to compare yet).
    fn others_read(&mut self) -> bool {
        let ours = io_fields(Path::new("/proc/thread-self/io"), ["read_bytes"]).map(|[b]| b);
        let now = sectors_read(&self.stat)
            .zip(ours)
            .map(|(d, o)| (d * 512).saturating_sub(o));
        let before = std::mem::replace(&mut self.others, now);
        match (before, now) {
            (Some(b), Some(n)) => n > b,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }
}

/// Fields `names` (`rchar`, `read_bytes`, ...) of a `/proc/.../io` file,
/// in that order, if it can be read and has them all.
pub(super) fn io_fields<const N: usize>(io: &Path, names: [&str; N]) -> Option<[u64; N]> {
    let s = std::fs::read_to_string(io).ok()?;
    let field = |name: &str| -> Option<u64> {
        let rest = s
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
        rest.trim().parse().ok()
    };
    let mut out = [0; N];
    for (o, name) in out.iter_mut().zip(names) {
        *o = field(name)?;
    }
    Some(out)
}

/// Sectors read (the third field) of a sysfs block `stat` file.
fn sectors_read(stat: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(stat).ok()?;
    s.split_whitespace().nth(2)?.parse().ok()
}

/// The calling thread in the idle I/O class (`ioprio_set(2)`,
/// `IOPRIO_CLASS_IDLE`) until dropped, when its class before comes back:
/// a replay ahead of its launch is read only when no other program
/// waits on the disk (mq-deadline and BFQ dispatch the idle class last).
pub(super) struct IdleClass(Option<libc::c_long>);

impl IdleClass {
    const WHO_THREAD: libc::c_long = 1; // IOPRIO_WHO_PROCESS: a thread id, 0 the caller
    const IDLE: libc::c_long = 3 << 13; // IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT

    pub(super) fn enter() -> IdleClass {
        // SAFETY: ioprio_get/ioprio_set of the calling thread; no memory
        // is passed.
        let before = unsafe { libc::syscall(libc::SYS_ioprio_get, Self::WHO_THREAD, 0) };
        // SAFETY: as above.
        let set = unsafe { libc::syscall(libc::SYS_ioprio_set, Self::WHO_THREAD, 0, Self::IDLE) };
        IdleClass((before >= 0 && set == 0).then_some(before))
    }
}

impl Drop for IdleClass {
    fn drop(&mut self) {
        if let Some(before) = self.0 {
            // SAFETY: as in [`IdleClass::enter`].
            unsafe { libc::syscall(libc::SYS_ioprio_set, Self::WHO_THREAD, 0, before) };
        }
    }
}

/// The sysfs directory of user-space device number `dev`'s disk (a
/// partition's parent), if it is a block device.
pub(super) fn disk_dir(dev: u64) -> Option<std::path::PathBuf> {
    let dir =
        Path::new("/sys/dev/block").join(format!("{}:{}", libc::major(dev), libc::minor(dev)));
    let dir = std::fs::canonicalize(dir).ok()?;
    if dir.join("partition").exists() {
        Some(dir.parent()?.to_path_buf())
    } else {
        Some(dir)
    }
}

/// Reads and writes in flight, as sysfs `inflight` gives them.
fn requests_in_flight(path: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    let mut sum = 0;
    for w in s.split_whitespace() {
        sum += w.parse::<u64>().ok()?;
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields come back in the order asked for, by their exact names; a
    /// name the file lacks, or a file that is not there, is `None`.
    #[test]
    fn io_fields_are_read_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let io = dir.path().join("io");
        std::fs::write(
            &io,
            "rchar: 70\nread_bytes: 4096\ncancelled_write_bytes: 1\n",
        )
        .unwrap();
        assert_eq!(io_fields(&io, ["read_bytes", "rchar"]), Some([4096, 70]));
        assert_eq!(io_fields(&io, ["bytes"]), None);
        assert_eq!(io_fields(&dir.path().join("gone"), ["rchar"]), None);
    }

    /// A disk of test files: `inflight` holding `in_flight` requests and
    /// a `stat` with `sectors` read, already looked at once.
    fn disk(dir: &Path, name: &str, in_flight: u64, sectors: u64) -> Disk {
        let (inflight, stat) = (
            dir.join(format!("{name}.inflight")),
            dir.join(format!("{name}.stat")),
        );
        std::fs::write(&inflight, format!("       {in_flight}        0\n")).unwrap();
        set_sectors(&stat, sectors);
        let mut d = Disk {
            inflight,
            stat,
            others: None,
            idle_at: None,
        };
        assert!(d.others_read(), "the first look has nothing to compare");
        d
    }

    fn set_sectors(stat: &Path, sectors: u64) {
        std::fs::write(
            stat,
            format!("    9  0  {sectors}  5  0  0  0  0  0  4  5  0 0 0 0\n"),
        )
        .unwrap();
    }

    /// An ahead replay's piece goes when the disk has nothing in flight,
    /// waits while it has, and gives up once its waits reach the bound;
    /// a device with no sysfs files is not waited for.
    #[test]
    fn an_ahead_piece_waits_for_an_idle_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (idle, busy) = (
            disk(dir.path(), "idle", 0, 8),
            disk(dir.path(), "busy", 3, 8),
        );
        assert_eq!(requests_in_flight(&busy.inflight), Some(3));
        let mut disks = IdleDisks::default();
        disks.disks.insert(1, Some(idle));
        disks.disks.insert(2, Some(busy));
        assert!(disks.wait(1), "an idle disk");
        assert!(!disks.wait(2), "busy past the bound");
        assert!(disks.waited_ns >= IDLE_WAIT_MAX_NS);
        assert!(!disks.wait(2), "the bound is for the whole replay");
        assert!(disks.wait(1));
        assert!(Disk::of(u64::MAX).is_none());
        assert!(disks.wait(u64::MAX), "no sysfs files: not waited for");
    }

    /// Another reader of the disk holds a piece back one look, as a
    /// request in flight does; a disk whose `stat` cannot be read is
    /// judged by its requests in flight alone.
    #[test]
    fn an_ahead_piece_waits_while_others_read_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let d = disk(dir.path(), "vdz", 0, 800);
        let stat = d.stat.clone();
        let mut disks = IdleDisks::default();
        disks.disks.insert(1, Some(d));
        let poll = IDLE_POLL.as_nanos() as u64;
        assert!(disks.wait(1), "no one read since");
        assert!(disks.waited_ns < poll, "not held: {}", disks.waited_ns);
        set_sectors(&stat, 808);
        std::thread::sleep(std::time::Duration::from_nanos(LOOK_STANDS_NS));
        assert!(disks.wait(1), "no one read since the look after");
        assert!(disks.waited_ns >= poll, "held back one look");
        std::fs::remove_file(&stat).unwrap();
        let before = disks.waited_ns;
        assert!(disks.wait(1));
        assert!(disks.waited_ns - before < poll, "no stat: not held");
    }

    /// A look that found the disk idle stands (for [`LOOK_STANDS_NS`])
    /// while this thread read nothing from storage: the disk, busy since,
    /// is not looked at again; once the thread read, it is, and waited for.
    #[test]
    fn an_idle_look_stands_until_this_thread_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut busy = disk(dir.path(), "busy", 3, 8);
        let read = outrider_sys::thread_bytes_read();
        let far = outrider_sys::monotonic_ns() + 3_600_000_000_000;
        busy.idle_at = Some((far, read));
        let mut disks = IdleDisks::default();
        disks.disks.insert(1, Some(busy));
        assert!(disks.wait(1), "the look stands");
        assert_eq!(disks.waited_ns, 0);
        if let Some(Some(d)) = disks.disks.get_mut(&1) {
            d.idle_at = Some((far, read + 4096));
        }
        assert!(!disks.wait(1), "read since: looked at, busy past the bound");
        assert!(disks.waited_ns >= IDLE_WAIT_MAX_NS);
    }
}
