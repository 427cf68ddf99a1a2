//! The calling thread's place in the fair scheduler: its nice value and
//! its slice (`sched_setattr(2)`, Linux 6.12+ for the slice).
//!
//! Why a slice: under EEVDF a task's virtual deadline lies its slice,
//! scaled by 1024 over its weight, past its virtual runtime, and the
//! task with the earliest deadline among those eligible runs next. At
//! nice 19 (weight 15) the default slice puts a waking task's deadline
//! ~68 slices away: behind a busy task on its core it waits tens of
//! milliseconds or more. A slice of [`SHORTEST_SLICE_NS`] brings that
//! near, and leaves its share of the CPU (its weight) as it was.

use std::io;

/// The shortest slice the kernel takes (it clamps to 0.1-100 ms).
pub const SHORTEST_SLICE_NS: u64 = 100_000;

/// `struct sched_attr` (`SCHED_ATTR_SIZE_VER0` fields: the utilization
/// clamps after them are not used).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Put the calling thread in `SCHED_OTHER` at `nice`, with a slice of
/// `slice_ns` (0: the kernel's default slice). Threads it creates after
/// take both. `EINVAL` on a kernel that takes no slice for a fair task
/// (before 6.12) with `slice_ns` > 0.
pub fn set_fair(nice: i32, slice_ns: u64) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: slice_ns,
        deadline: 0,
        period: 0,
    };
    // SAFETY: a valid, fully initialised attr of the size it states;
    // pid 0 is the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    crate::cvt(r).map(drop)
}

/// The calling thread's slice in ns, from `/proc/thread-self/sched`
/// (`se.slice`); `None` where the kernel does not show it.
pub fn slice_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    let line = text.lines().find(|l| l.starts_with("se.slice"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_takes_a_short_slice_and_gives_it_back() {
        std::thread::spawn(|| {
            let Some(before) = slice_ns() else {
                return; // no se.slice shown (no CONFIG_SCHED_DEBUG)
            };
            match set_fair(19, SHORTEST_SLICE_NS) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return, // before 6.12
                r => r.unwrap(),
            }
            assert_eq!(slice_ns(), Some(SHORTEST_SLICE_NS));
            // SAFETY: no pointers.
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, 19);
            std::thread::spawn(|| assert_eq!(slice_ns(), Some(SHORTEST_SLICE_NS)))
                .join()
                .unwrap();
            set_fair(19, 0).unwrap();
            assert_eq!(slice_ns(), Some(before));
        })
        .join()
        .unwrap();
    }
}
