//! The running kernel's struct layouts, from its BTF
//! (`/sys/kernel/btf/vmlinux`), and the reading of a member: what the
//! raw tracepoints' records ([`raw`](super::raw)) and the exits' waits
//! ([`exits`](super::exits)) are read from. Opened once for both.

use btf_rs::{Backend, Btf, Type};
use outrider_sys::bpf::{helper, Asm, FP};

/// The BTF of the running kernel.
const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The running kernel's BTF. Mapped, not read into memory: read (btf-rs's
/// cache), it took the daemon's resident memory from 10 to 43 MiB for
/// good.
pub struct Kernel(Btf);

impl Kernel {
    /// `None` where the kernel has no BTF.
    pub fn open() -> Option<Kernel> {
        Btf::from_file_with_backend(VMLINUX, Backend::Mmap)
            .ok()
            .map(Kernel)
    }

    /// The byte offset of member `name` of struct `st` (a direct member,
    /// not a bit field).
    pub fn member(&self, st: &str, name: &str) -> Option<i16> {
        let btf = &self.0;
        let types = btf.resolve_types_by_name(st).ok()?;
        types.iter().find_map(|t| {
            let Type::Struct(s) = t else { return None };
            let m = (s.members.iter()).find(|m| btf.resolve_name(*m).is_ok_and(|n| n == name))?;
            let bits = m.bit_offset();
            (bits % 8 == 0 && m.bitfield_size().unwrap_or(0) == 0)
                .then(|| i16::try_from(bits / 8).ok())
                .flatten()
        })
    }
}

/// Read `bytes` at byte `member` of the struct r3 points to into stack
/// slot `slot` (`bpf_probe_read_kernel`: zeros where it faults). Uses
/// r0-r5.
pub fn probe(a: &mut Asm, (slot, bytes): (i16, i32), member: i16) {
    a.add_imm(3, member.into());
    a.mov_reg(1, FP);
    a.add_imm(1, slot.into());
    a.mov_imm(2, bytes);
    a.call(helper::PROBE_READ_KERNEL);
}
