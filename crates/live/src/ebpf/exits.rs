//! A followed thread's exit is sent with its block-I/O wait
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope, where the
//! kernel's BTF says where the wait is).
//!
//! Why: the daemon adds each launch's threads' wait on storage (delay
//! accounting's `blkio_delay`) to the launch, to estimate the stall time
//! a replay saved. It had it from a taskstats socket registered for every
//! CPU, and the kernel then filled and sent a message at every exit on
//! the machine, followed or not: `fork` + `_exit` + `waitpid` × 1 500 ran
//! 0.925x of its time with no daemon, 0.991x with delay accounting off
//! (medians, 12 alternations); read here, by the exit's program of a
//! followed thread only, 0.962x (the rest is the following itself).
//!
//! How: `current->delays->blkio_delay` is read with
//! `bpf_probe_read_kernel` at the offsets of the running kernel's BTF
//! and appended to the exit's record (0 where the task has no delay
//! record, delay accounting off).

use super::kernel::{probe, Kernel};
use super::SLOT_SCRATCH;
use outrider_sys::bpf::{helper, Asm, Size, FP};

/// Where `task_struct.delays` is read to: below the slots the exit's
/// program uses (the raw tracepoints' record area, not built here).
const SLOT_DELAYS: i16 = SLOT_SCRATCH - 8;

/// Where an exiting task's block-I/O wait is: `task_struct.delays`, then
/// `task_delay_info.blkio_delay` (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitOffsets {
    delays: i16,
    blkio: i16,
}

impl WaitOffsets {
    /// The kernel's; `None` without delay accounting in it.
    pub fn of(kernel: &Kernel) -> Option<WaitOffsets> {
        Some(WaitOffsets {
            delays: kernel.member("task_struct", "delays")?,
            blkio: kernel.member("task_delay_info", "blkio_delay")?,
        })
    }
}

/// The running task's block-I/O wait so far (ns; 0 when it has no
/// delay record) to stack slot `slot`. Uses r0-r5.
pub fn blkio_wait(a: &mut Asm, off: WaitOffsets, slot: i16) {
    let done = a.label();
    a.store_imm(Size::DW, FP, slot, 0);
    a.call(helper::GET_CURRENT_TASK);
    a.mov_reg(3, 0);
    probe(a, (SLOT_DELAYS, 8), off.delays);
    a.load(Size::DW, 3, FP, SLOT_DELAYS);
    a.jeq_imm(3, 0, done);
    probe(a, (slot, 8), off.blkio);
    a.bind(done);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_kernels_wait_is_found_where_it_has_btf() {
        let Some(k) = Kernel::open() else { return };
        let w = WaitOffsets::of(&k).expect("task_struct.delays");
        assert!(w.delays > 0 && w.blkio >= 0);
    }
}
