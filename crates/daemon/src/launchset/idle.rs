//! Reading a predicted launch's set in the disk's idle time
//! ([`super::ReplayOptions::ahead`]): each piece waits for the disk to
//! have nothing in flight and the program in front to read nothing from
//! storage, and the replay's thread is in the idle I/O class.

use rustc_hash::FxHashMap;
use std::path::Path;

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

/// The disks a replay ahead of its launch reads, by device number, and
/// how long it waited for them. A predicted launch's set is read in the
/// time the disk has nothing else to do: each 1 MiB piece waits until
/// the disk the file is on has no request in flight (sysfs `inflight`,
/// the whole disk's for a partition) and the program in front read
/// nothing since the last look ([`FrontReads`]), so the program running meanwhile
/// never queues behind it (a measured harness that drops the cache
/// before each run would only see the next program's set asked for
/// during the current one). A device with no `inflight` file (network,
/// FUSE, btrfs's anonymous devices) is not waited for.
#[derive(Default)]
pub(super) struct IdleDisks {
    inflight: FxHashMap<u64, Option<std::path::PathBuf>>,
    waited_ns: u64,
    /// The program whose launch predicted this one, while it runs.
    front: Option<FrontReads>,
}

impl IdleDisks {
    /// Idle disks, and also (with `front`, a process id) a pause of
    /// process `front`'s reads from storage ([`FrontReads`]).
    pub(super) fn new(front: Option<u32>) -> IdleDisks {
        IdleDisks {
            front: front.map(FrontReads::of),
            ..IdleDisks::default()
        }
    }

    /// Wait until device `dev` has no request in flight and the program
    /// in front read nothing from storage since the last look; false
    /// once the waits of this replay passed [`IDLE_WAIT_MAX_NS`].
    pub(super) fn wait(&mut self, dev: u64) -> bool {
        let path = self
            .inflight
            .entry(dev)
            .or_insert_with(|| inflight_file(dev));
        let Some(path) = path.as_ref() else {
            return true;
        };
        let start = outrider_sys::monotonic_ns();
        loop {
            let front_reads = self.front.as_mut().is_some_and(FrontReads::read_since);
            if !front_reads && requests_in_flight(path) == Some(0) {
                self.waited_ns += outrider_sys::monotonic_ns().saturating_sub(start);
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

/// The storage reads of the program running in front of a predicted
/// launch (the one whose launch predicted it): `read_bytes` of
/// `/proc/<pid>/io`, counted by the kernel as each read is submitted,
/// metadata included. A disk with nothing in flight between the
/// synchronous reads of a program that waits on them is not idle: an
/// ahead piece sent then is served before the program's next read.
/// `find` over a source tree, which waits on one directory or inode read
/// after another while `rg`'s set is read ahead, against a control with
/// no daemon taking the same steps, in three sittings (medians of 7, 7
/// and 11): 0.93x, 1.05x and 1.06x of it without this check; 0.98x and
/// 1.09x with it in the last two, `rg` after it 0.91x and 1.05x against
/// 0.90x and 1.04x. Within the noise of a sitting, kept because an
/// ahead read must never delay the program in front.
struct FrontReads {
    io: std::path::PathBuf,
    last: Option<u64>,
}

impl FrontReads {
    fn of(pid: u32) -> FrontReads {
        let io = Path::new("/proc").join(pid.to_string()).join("io");
        let last = read_bytes(&io);
        FrontReads { io, last }
    }

    /// It read from storage since the last look (never once it exited).
    fn read_since(&mut self) -> bool {
        let now = read_bytes(&self.io);
        let read = matches!((self.last, now), (Some(a), Some(b)) if b > a);
        self.last = now;
        read
    }
}

/// `read_bytes` of a `/proc/<pid>/io` file, if it can be read.
fn read_bytes(io: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(io).ok()?;
    let line = s.lines().find(|l| l.starts_with("read_bytes:"))?;
    line["read_bytes:".len()..].trim().parse().ok()
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

/// The sysfs `inflight` file of device `dev`'s disk, if it has one.
fn inflight_file(dev: u64) -> Option<std::path::PathBuf> {
    let f = disk_dir(dev)?.join("inflight");
    f.exists().then_some(f)
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

    /// An ahead replay's piece goes when the disk has nothing in flight,
    /// waits while it has, and gives up once its waits reach the bound;
    /// a device with no `inflight` file is not waited for.
    #[test]
    fn an_ahead_piece_waits_for_an_idle_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (idle, busy) = (dir.path().join("idle"), dir.path().join("busy"));
        std::fs::write(&idle, "       0        0\n").unwrap();
        std::fs::write(&busy, "       3        1\n").unwrap();
        assert_eq!(requests_in_flight(&busy), Some(4));
        let mut disks = IdleDisks::default();
        disks.inflight.insert(1, Some(idle));
        disks.inflight.insert(2, Some(busy));
        assert!(disks.wait(1), "an idle disk");
        assert!(!disks.wait(2), "busy past the bound");
        assert!(disks.waited_ns >= IDLE_WAIT_MAX_NS);
        assert!(!disks.wait(2), "the bound is for the whole replay");
        assert!(disks.wait(1));
        assert_eq!(inflight_file(u64::MAX), None);
        assert!(disks.wait(u64::MAX), "no inflight file: not waited for");
    }

    /// A program in front that reads from storage holds an ahead piece
    /// back as a busy disk does; one that read nothing since the last
    /// look, or exited, does not.
    #[test]
    fn an_ahead_piece_waits_while_the_program_in_front_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (idle, io) = (dir.path().join("idle"), dir.path().join("io"));
        std::fs::write(&idle, "0 0\n").unwrap();
        let io_file = |n: u64| format!("rchar: 9\nwchar: 0\nread_bytes: {n}\nwrite_bytes: 0\n");
        std::fs::write(&io, io_file(4096)).unwrap();
        assert_eq!(read_bytes(&io), Some(4096));
        let front = FrontReads {
            io: io.clone(),
            last: read_bytes(&io),
        };
        let mut disks = IdleDisks {
            front: Some(front),
            ..IdleDisks::default()
        };
        disks.inflight.insert(1, Some(idle));
        assert!(disks.wait(1), "read nothing since");
        assert!(disks.waited_ns < IDLE_POLL.as_nanos() as u64, "not held");
        std::fs::write(&io, io_file(8192)).unwrap();
        assert!(disks.wait(1), "read nothing since the look after");
        assert!(
            disks.waited_ns >= IDLE_POLL.as_nanos() as u64,
            "held back one look"
        );
        std::fs::remove_file(&io).unwrap();
        let mut gone = IdleDisks {
            front: Some(FrontReads {
                io,
                last: Some(8192),
            }),
            ..IdleDisks::default()
        };
        gone.inflight = disks.inflight.clone();
        assert!(gone.wait(1), "exited: not waited for");
        assert!(IdleDisks::new(Some(u32::MAX)).front.unwrap().last.is_none());
    }
}
