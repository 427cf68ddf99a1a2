//! eBPF through the raw `bpf(2)` and `perf_event_open(2)` system calls:
//! maps, tracepoint programs given as instructions, and the consumer side
//! of a BPF ring buffer.
//!
//! Why by hand rather than libbpf-rs or aya: both load programs from an
//! ELF object that a BPF compiler (clang, or rustc with bpf-linker) built
//! beforehand, which a fresh machine does not have. outrider's programs
//! are a few dozen instructions generated at run time with the field
//! offsets of the running kernel's tracepoint `format` files, so they need
//! neither a compiler nor BTF relocations; what is left is four system
//! calls and the ring buffer's documented memory layout
//! (`Documentation/bpf/ringbuf.rst`, `include/uapi/linux/bpf.h`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One BPF instruction (`struct bpf_insn`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// `dst_reg` in the low nibble, `src_reg` in the high one.
    pub regs: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

/// Operand sizes of loads and stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B = 0x10,
    /// 2 bytes.
    H = 0x08,
    /// 4 bytes.
    W = 0x00,
    /// 8 bytes.
    DW = 0x18,
}

/// Helper functions called by the programs (`enum bpf_func_id`).
pub mod helper {
    /// `bpf_map_lookup_elem`.
    pub const MAP_LOOKUP_ELEM: i32 = 1;
    /// `bpf_map_update_elem`.
    pub const MAP_UPDATE_ELEM: i32 = 2;
    /// `bpf_map_delete_elem`.
    pub const MAP_DELETE_ELEM: i32 = 3;
    /// `bpf_ktime_get_ns` (CLOCK_MONOTONIC).
    pub const KTIME_GET_NS: i32 = 5;
    /// `bpf_get_current_pid_tgid` (tgid << 32 | tid).
    pub const GET_CURRENT_PID_TGID: i32 = 14;
    /// `bpf_get_current_task`: the running `task_struct`'s address.
    pub const GET_CURRENT_TASK: i32 = 35;
    /// `bpf_ringbuf_reserve`.
    pub const RINGBUF_RESERVE: i32 = 131;
    /// `bpf_ringbuf_submit`.
    pub const RINGBUF_SUBMIT: i32 = 132;
    /// `bpf_ringbuf_query` (ring, flags): with flags 0
    /// (`BPF_RB_AVAIL_DATA`), the bytes written and not yet consumed.
    pub const RINGBUF_QUERY: i32 = 134;
    /// `bpf_probe_read_kernel_str` (dst, size, unsafe_ptr): the bytes
    /// copied, the NUL included, or a negative error.
    pub const PROBE_READ_KERNEL_STR: i32 = 115;
    /// `bpf_probe_read_kernel(dst, size, unsafe_ptr)`: 0 or a negative
    /// error (`dst` zeroed).
    pub const PROBE_READ_KERNEL: i32 = 113;
}

/// Registers: r0 return value, r1-r5 arguments (clobbered by calls), r6-r9
/// kept across calls, r10 the read-only frame pointer.
pub type Reg = u8;
/// The frame pointer.
pub const FP: Reg = 10;

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const ALU: u8 = 0x04;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;
const OP_ADD: u8 = 0x00;
const OP_SUB: u8 = 0x10;
const OP_OR: u8 = 0x40;
const OP_LSH: u8 = 0x60;
const OP_MUL: u8 = 0x20;
const OP_AND: u8 = 0x50;
const OP_RSH: u8 = 0x70;
const OP_XOR: u8 = 0xa0;
/// `BPF_FETCH`: an atomic operation that also returns the old value.
const FETCH: u8 = 0x01;
const OP_MOV: u8 = 0xb0;
const JA: u8 = 0x00;
const JEQ: u8 = 0x10;
const JNE: u8 = 0x50;
const JLT: u8 = 0xa0;
const JGT: u8 = 0x20;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const PSEUDO_MAP_FD: u8 = 1;

fn insn(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
    debug_assert!(dst <= 10 && src <= 10, "BPF has registers r0-r10");
    Insn {
        code,
        regs: (src << 4) | dst,
        off,
        imm,
    }
}

/// A jump target in an [`Asm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(usize);

/// A program under construction, with forward jumps to labels.
#[derive(Default, Debug)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Asm {
        Asm::default()
    }
    /// A label to [`Asm::bind`] later.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    /// The next instruction is `l`'s target.
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }
    /// `dst = src` (64 bits).
    pub fn mov_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_MOV | X, dst, src, 0, 0));
    }
    /// `dst = (u32) src`: the low half, zero-extended.
    pub fn mov32_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU | OP_MOV | X, dst, src, 0, 0));
    }
    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.insns.push(insn(ALU64 | OP_MOV | K, dst, 0, 0, imm));
    }
    /// `dst += imm`.
    pub fn add_imm(&mut self, dst: Reg, imm: i32) {
        self.insns.push(insn(ALU64 | OP_ADD | K, dst, 0, 0, imm));
    }
    /// `dst += src` (64 bits).
    pub fn add_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_ADD | X, dst, src, 0, 0));
    }
    /// `dst *= src` (64 bits, wrapping).
    pub fn mul_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_MUL | X, dst, src, 0, 0));
    }
    /// `dst ^= src` (64 bits).
    pub fn xor_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_XOR | X, dst, src, 0, 0));
    }
    /// `dst &= imm` (`imm` sign-extended to 64 bits).
    pub fn and_imm(&mut self, dst: Reg, imm: i32) {
        self.insns.push(insn(ALU64 | OP_AND | K, dst, 0, 0, imm));
    }
    /// `dst -= src` (64 bits, wrapping).
    pub fn sub_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_SUB | X, dst, src, 0, 0));
    }
    /// `dst &= src` (64 bits).
    pub fn and_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_AND | X, dst, src, 0, 0));
    }
    /// `dst |= src` (64 bits).
    pub fn or_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_OR | X, dst, src, 0, 0));
    }
    /// `dst <<= imm` (64 bits).
    pub fn lsh_imm(&mut self, dst: Reg, imm: i32) {
        self.insns.push(insn(ALU64 | OP_LSH | K, dst, 0, 0, imm));
    }
    /// `dst <<= src` (64 bits; `src` below 64).
    pub fn lsh_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_LSH | X, dst, src, 0, 0));
    }
    /// `dst >>= src` (logical, 64 bits; `src` below 64).
    pub fn rsh_reg(&mut self, dst: Reg, src: Reg) {
        self.insns.push(insn(ALU64 | OP_RSH | X, dst, src, 0, 0));
    }
    /// `dst >>= imm` (logical, 64 bits).
    pub fn rsh_imm(&mut self, dst: Reg, imm: i32) {
        self.insns.push(insn(ALU64 | OP_RSH | K, dst, 0, 0, imm));
    }
    /// `dst = imm` for any 64-bit constant (a two-instruction load).
    pub fn ld_imm64(&mut self, dst: Reg, imm: u64) {
        self.insns.push(insn(
            LD | Size::DW as u8 | IMM,
            dst,
            0,
            0,
            imm as u32 as i32,
        ));
        self.insns.push(insn(0, 0, 0, 0, (imm >> 32) as u32 as i32));
    }
    /// `dst = the map of descriptor fd` (a two-instruction load).
    pub fn ld_map(&mut self, dst: Reg, map: &Map) {
        self.insns.push(insn(
            LD | Size::DW as u8 | IMM,
            dst,
            PSEUDO_MAP_FD,
            0,
            map.fd.as_raw_fd(),
        ));
        self.insns.push(Insn::default());
    }
    /// `dst = *(size *)(src + off)`.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) {
        self.insns
            .push(insn(LDX | MEM | size as u8, dst, src, off, 0));
    }
    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) {
        self.insns
            .push(insn(STX | MEM | size as u8, dst, src, off, 0));
    }
    /// `*(size *)(dst + off) = imm`.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) {
        self.insns
            .push(insn(ST | MEM | size as u8, dst, 0, off, imm));
    }
    /// `lock *(u64 *)(dst + off) += src`.
    pub fn atomic_add(&mut self, dst: Reg, off: i16, src: Reg) {
        self.atomic(OP_ADD, dst, off, src);
    }
    /// `lock *(u64 *)(dst + off) |= src`.
    pub fn atomic_or(&mut self, dst: Reg, off: i16, src: Reg) {
        self.atomic(OP_OR, dst, off, src);
    }
    /// `lock *(u64 *)(dst + off) &= src`.
    pub fn atomic_and(&mut self, dst: Reg, off: i16, src: Reg) {
        self.atomic(OP_AND, dst, off, src);
    }
    /// `*(u64 *)(dst + off) += src` atomically, `src` then holding the
    /// value before the add (`BPF_ADD | BPF_FETCH`).
    pub fn atomic_fetch_add(&mut self, dst: Reg, off: i16, src: Reg) {
        self.atomic(OP_ADD | FETCH, dst, off, src);
    }
    /// A 64-bit atomic `op` (`BPF_ATOMIC`: the operation in `imm`).
    fn atomic(&mut self, op: u8, dst: Reg, off: i16, src: Reg) {
        self.insns.push(insn(
            STX | ATOMIC | Size::DW as u8,
            dst,
            src,
            off,
            op.into(),
        ));
    }
    /// Call helper `id` (arguments in r1-r5, result in r0).
    pub fn call(&mut self, id: i32) {
        self.insns.push(insn(JMP | CALL, 0, 0, 0, id));
    }
    /// `if dst == imm goto to`.
    pub fn jeq_imm(&mut self, dst: Reg, imm: i32, to: Label) {
        self.jump(JMP | JEQ | K, dst, imm, to);
    }
    /// `if dst != imm goto to`.
    pub fn jne_imm(&mut self, dst: Reg, imm: i32, to: Label) {
        self.jump(JMP | JNE | K, dst, imm, to);
    }
    /// `if dst > imm goto to` (unsigned, 64 bits).
    pub fn jgt_imm(&mut self, dst: Reg, imm: i32, to: Label) {
        self.jump(JMP | JGT | K, dst, imm, to);
    }
    /// `if dst == src goto to` (64 bits).
    pub fn jeq_reg(&mut self, dst: Reg, src: Reg, to: Label) {
        self.jump_reg(JMP | JEQ | X, dst, src, to);
    }
    /// `if dst < src goto to` (unsigned, 64 bits).
    pub fn jlt_reg(&mut self, dst: Reg, src: Reg, to: Label) {
        self.jump_reg(JMP | JLT | X, dst, src, to);
    }
    /// `if dst != src goto to` (64 bits).
    pub fn jne_reg(&mut self, dst: Reg, src: Reg, to: Label) {
        self.jump_reg(JMP | JNE | X, dst, src, to);
    }
    /// `goto to`.
    pub fn ja(&mut self, to: Label) {
        self.jump(JMP | JA, 0, 0, to);
    }
    /// `return r0`.
    pub fn exit(&mut self) {
        self.insns.push(insn(JMP | EXIT, 0, 0, 0, 0));
    }
    fn jump(&mut self, code: u8, dst: Reg, imm: i32, to: Label) {
        self.fixups.push((self.insns.len(), to));
        self.insns.push(insn(code, dst, 0, 0, imm));
    }
    fn jump_reg(&mut self, code: u8, dst: Reg, src: Reg, to: Label) {
        self.fixups.push((self.insns.len(), to));
        self.insns.push(insn(code, dst, src, 0, 0));
    }
    /// The instructions, jumps resolved. Panics on a label never bound or
    /// a jump too far for 16 bits: both are bugs of the program's builder.
    pub fn finish(mut self) -> Vec<Insn> {
        for &(at, l) in &self.fixups {
            let target = self.labels[l.0].expect("every jump target is bound");
            let rel = target as i64 - at as i64 - 1;
            self.insns[at].off = i16::try_from(rel).expect("BPF jumps reach ±32 K instructions");
        }
        self.insns
    }
}

/// Map types outrider uses (`enum bpf_map_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapType {
    /// Hash table.
    Hash = 1,
    /// Array (keys 0..max_entries, u32).
    Array = 2,
    /// Array with a copy of each value per CPU: a program reads and
    /// writes its own CPU's (never read from user space here).
    PerCpuArray = 6,
    /// Hash table that, full, drops its least recently used entries.
    LruHash = 9,
    /// Multi-producer, single-consumer ring buffer.
    RingBuf = 27,
}

/// `BPF_F_NO_PREALLOC`: a hash map allocates its entries as they come
/// (preallocating 65 536 of them took ~1 ms at creation, measured here).
pub const NO_PREALLOC: u32 = 1;

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_MAP_DELETE_ELEM: i64 = 3;
const BPF_MAP_GET_NEXT_KEY: i64 = 4;
const BPF_PROG_LOAD: i64 = 5;
const PROG_TYPE_TRACEPOINT: u32 = 5;
const PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
const BPF_RAW_TRACEPOINT_OPEN: i64 = 17;

/// `union bpf_attr` as the commands used here lay it out; larger than any
/// of them, zero beyond what they set (the kernel requires that).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(mut self, at: usize, v: u32) -> Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(mut self, at: usize, v: u64) -> Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(mut self, at: usize, name: &str) -> Attr {
        let n = name.len().min(15);
        self.0[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

fn sys_bpf(cmd: i64, attr: &mut Attr) -> io::Result<i64> {
    // SAFETY: `attr` is a valid, writable, fully initialised bpf_attr of
    // the size passed; pointers inside it point to live buffers the
    // caller keeps for the call's duration.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned(fd: i64) -> OwnedFd {
    // SAFETY: a descriptor the kernel just returned to us, owned by no one
    // else.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// A BPF map.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    value_size: usize,
}

/// The most keys [`Map::keys`] lists in one walk.
pub const MAX_KEYS_LISTED: usize = 1 << 20;

impl Map {
    /// Create a map. For [`MapType::RingBuf`] `max_entries` is the size in
    /// bytes (a power of two, a multiple of the page size) and the key and
    /// value sizes are 0. `flags`: 0 or [`NO_PREALLOC`].
    pub fn create(
        ty: MapType,
        name: &str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        flags: u32,
    ) -> io::Result<Map> {
        let mut a = Attr::new()
            .u32(0, ty as u32)
            .u32(4, key_size)
            .u32(8, value_size)
            .u32(12, max_entries)
            .u32(16, flags)
            .name(28, name);
        let fd = sys_bpf(BPF_MAP_CREATE, &mut a)?;
        Ok(Map {
            fd: owned(fd),
            value_size: value_size as usize,
        })
    }

    /// A map received from another process (its descriptor), whose values
    /// are `value_size` bytes.
    pub fn from_fd(fd: OwnedFd, value_size: usize) -> Map {
        Map { fd, value_size }
    }

    /// Another handle on the same map (a duplicated descriptor).
    pub fn try_clone(&self) -> io::Result<Map> {
        Ok(Map {
            fd: self.fd.try_clone()?,
            value_size: self.value_size,
        })
    }

    /// The descriptor (to hand the map to another process).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Remove every key of a map whose keys are `key_size` bytes, keys
    /// added meanwhile included. The keys are listed first, each found
    /// from the one before, then deleted: finding each from the first key
    /// made a hash map scan its buckets from the start once per key
    /// (65 536 of them; `htab_map_get_next_key` was 4% of `outrider run
    /// -- true`'s CPU, perf).
    pub fn clear(&self, key_size: usize) -> io::Result<()> {
        loop {
            let keys = self.keys(key_size)?;
            if keys.is_empty() {
                return Ok(());
            }
            for key in &keys {
                self.delete(key)?;
            }
        }
    }

    /// Remove `key`; false when it was not there.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        let mut d = Attr::new()
            .u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64);
        match sys_bpf(BPF_MAP_DELETE_ELEM, &mut d) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The keys present now (`key_size` bytes each), in the map's order.
    /// A key deleted under the walk restarts it from the first (the
    /// kernel's rule), so the list is cut at [`MAX_KEYS_LISTED`].
    pub fn keys(&self, key_size: usize) -> io::Result<Vec<Vec<u8>>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        while keys.len() < MAX_KEYS_LISTED {
            match self.next_key(keys.last().map(Vec::as_slice), key_size)? {
                Some(next) => keys.push(next),
                None => break,
            }
        }
        Ok(keys)
    }

    /// Whether the map holds no key: one `BPF_MAP_GET_NEXT_KEY` from
    /// none (a hash scans its buckets up to its first key).
    pub fn is_empty(&self, key_size: usize) -> io::Result<bool> {
        Ok(self.next_key(None, key_size)?.is_none())
    }

    /// The key after `prev` (`None`: the first key), or `None` past the
    /// last.
    fn next_key(&self, prev: Option<&[u8]>, key_size: usize) -> io::Result<Option<Vec<u8>>> {
        let mut next = vec![0u8; key_size];
        // A NULL key pointer asks for the first key.
        let prev = prev.map_or(0, |k| k.as_ptr() as u64);
        let mut a = Attr::new()
            .u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, prev)
            .u64(16, next.as_mut_ptr() as u64);
        match sys_bpf(BPF_MAP_GET_NEXT_KEY, &mut a) {
            Ok(_) => Ok(Some(next)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Set `key` to `value` (sizes as created).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        assert_eq!(value.len(), self.value_size, "a map value has its size");
        let mut a = Attr::new()
            .u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value.as_ptr() as u64);
        sys_bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(drop)
    }

    /// The value of `key`, or `None` when absent.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let mut value = vec![0u8; self.value_size];
        let mut a = Attr::new()
            .u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value.as_mut_ptr() as u64);
        match sys_bpf(BPF_MAP_LOOKUP_ELEM, &mut a) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A loaded program.
#[derive(Debug)]
pub struct Program {
    fd: OwnedFd,
}

impl Program {
    /// Load a tracepoint program (its context: the tracepoint's record, as
    /// its `format` file lays it out, from offset 8 on). On a rejection
    /// the error carries the verifier's log.
    pub fn load_tracepoint(name: &str, insns: &[Insn]) -> io::Result<Program> {
        Program::load(PROG_TYPE_TRACEPOINT, name, insns)
    }

    /// Load a raw tracepoint program (its context: the tracepoint's
    /// arguments, a `u64` each).
    pub fn load_raw_tracepoint(name: &str, insns: &[Insn]) -> io::Result<Program> {
        Program::load(PROG_TYPE_RAW_TRACEPOINT, name, insns)
    }

    fn load(ty: u32, name: &str, insns: &[Insn]) -> io::Result<Program> {
        let license = c"GPL";
        let attempt = |log: &mut [u8]| {
            let mut a = Attr::new()
                .u32(0, ty)
                .u32(4, insns.len() as u32)
                .u64(8, insns.as_ptr() as u64)
                .u64(16, license.as_ptr() as u64)
                .u32(24, u32::from(!log.is_empty()))
                .u32(28, log.len() as u32)
                .u64(
                    32,
                    if log.is_empty() {
                        0
                    } else {
                        log.as_mut_ptr() as u64
                    },
                )
                .name(48, name);
            sys_bpf(BPF_PROG_LOAD, &mut a)
        };
        match attempt(&mut []) {
            Ok(fd) => Ok(Program { fd: owned(fd) }),
            Err(first) => {
                let mut log = vec![0u8; 64 * 1024];
                let _ = attempt(&mut log);
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                let tail: Vec<&str> = text.lines().rev().take(6).collect();
                Err(io::Error::new(
                    first.kind(),
                    format!(
                        "BPF program {name} rejected ({first}): {}",
                        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                    ),
                ))
            }
        }
    }

    /// Run the program at every hit of tracepoint `id` (its `events/*/*/id`
    /// number), on every CPU; detached when the returned descriptor is
    /// closed. One perf event on CPU 0 is enough, as libbpf does it: the
    /// program goes into the tracepoint's own program array, which runs
    /// wherever the tracepoint fires (attaching it to a second CPU's
    /// event fails with EEXIST).
    pub fn attach_tracepoint(&self, id: u32) -> io::Result<OwnedFd> {
        let fd = perf_tracepoint(id, 0)?;
        ioctl(
            &fd,
            PERF_EVENT_IOC_SET_BPF,
            self.fd.as_raw_fd() as libc::c_ulong,
        )
        .map_err(|e| io::Error::new(e.kind(), format!("PERF_EVENT_IOC_SET_BPF: {e}")))?;
        ioctl(&fd, PERF_EVENT_IOC_ENABLE, 0)
            .map_err(|e| io::Error::new(e.kind(), format!("PERF_EVENT_IOC_ENABLE: {e}")))?;
        Ok(fd)
    }
}

impl Program {
    /// Another descriptor of the same program (for a thread that attaches
    /// it).
    pub fn try_clone(&self) -> io::Result<Program> {
        Ok(Program {
            fd: self.fd.try_clone()?,
        })
    }

    /// Run the program at every hit of raw tracepoint `name` (as
    /// `events/*/NAME`); detached when the returned descriptor is closed.
    pub fn attach_raw_tracepoint(&self, name: &str) -> io::Result<OwnedFd> {
        let c = std::ffi::CString::new(name).map_err(io::Error::other)?;
        let mut a = Attr::new()
            .u64(0, c.as_ptr() as u64)
            .u32(8, self.fd.as_raw_fd() as u32);
        let fd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &mut a).map_err(|e| {
            io::Error::new(e.kind(), format!("attaching to raw tracepoint {name}: {e}"))
        })?;
        Ok(owned(fd))
    }
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
/// `PERF_ATTR_SIZE_VER0`: the fields up to `config1`.
const PERF_ATTR_SIZE: usize = 64;

fn perf_tracepoint(id: u32, cpu: u32) -> io::Result<OwnedFd> {
    let mut attr = [0u8; PERF_ATTR_SIZE];
    attr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_ne_bytes());
    attr[4..8].copy_from_slice(&(PERF_ATTR_SIZE as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&u64::from(id).to_ne_bytes());
    attr[16..24].copy_from_slice(&1u64.to_ne_bytes()); // sample_period
    attr[40..48].copy_from_slice(&1u64.to_ne_bytes()); // flags: disabled
                                                       // SAFETY: a perf_event_attr of the size it states; pid -1 with a CPU
                                                       // means every task on that CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("perf_event_open of tracepoint {id} on CPU {cpu}: {e}"),
        ));
    }
    Ok(owned(fd))
}

fn ioctl(fd: &OwnedFd, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: a perf event descriptor and a request taking an integer.
    if unsafe { libc::ioctl(fd.as_raw_fd(), req, arg) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

const RINGBUF_BUSY: u32 = 1 << 31;
const RINGBUF_DISCARD: u32 = 1 << 30;
const RINGBUF_HDR: usize = 8;

/// The consumer side of a [`MapType::RingBuf`] map: the consumer position
/// page mapped writable, the producer position page and the data (mapped
/// twice in a row by the kernel, so a record that wraps is contiguous)
/// read-only.
pub struct RingBuf {
    map: Map,
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
}

// SAFETY: the mappings belong to this value alone; the kernel's producers
// synchronise through the positions' acquire/release protocol.
unsafe impl Send for RingBuf {}

impl RingBuf {
    /// A ring buffer of `size` bytes (a power of two ≥ the page size).
    pub fn create(name: &str, size: usize) -> io::Result<RingBuf> {
        let map = Map::create(MapType::RingBuf, name, 0, 0, size as u32, 0)?;
        RingBuf::mapped(map, size)
    }

    /// The consumer side of a ring buffer map of `size` bytes received
    /// from another process; the records waiting in it are skipped.
    pub fn from_fd(fd: OwnedFd, size: usize) -> io::Result<RingBuf> {
        let ring = RingBuf::mapped(Map::from_fd(fd, 0), size)?;
        // SAFETY: the position words of our own mappings (see `consume`).
        unsafe {
            let prod = (*(ring.producer as *const AtomicU64)).load(Ordering::Acquire);
            (*(ring.consumer as *const AtomicU64)).store(prod, Ordering::Release);
        }
        Ok(ring)
    }

    fn mapped(map: Map, size: usize) -> io::Result<RingBuf> {
        let page = crate::page_size();
        let fd = map.fd.as_raw_fd();
        // SAFETY: mapping the ring buffer's documented regions of a
        // descriptor we own; results checked before use.
        unsafe {
            let rw = libc::PROT_READ | libc::PROT_WRITE;
            let consumer = libc::mmap(std::ptr::null_mut(), page, rw, libc::MAP_SHARED, fd, 0);
            if consumer == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let len = page + 2 * size;
            let producer = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                page as libc::off_t,
            );
            if producer == libc::MAP_FAILED {
                let e = io::Error::last_os_error();
                libc::munmap(consumer, page);
                return Err(e);
            }
            // The detached processes forked later (the parker) need the
            // descriptor, not the mappings: not copying their page tables
            // made the fork cheaper.
            libc::madvise(consumer, page, libc::MADV_DONTFORK);
            libc::madvise(producer, len, libc::MADV_DONTFORK);
            Ok(RingBuf {
                map,
                consumer: consumer.cast(),
                producer: producer.cast(),
                page,
                size,
            })
        }
    }

    /// The map, for a program to write to.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// The descriptor to poll: readable when a record is waiting.
    pub fn fd(&self) -> RawFd {
        self.map.fd.as_raw_fd()
    }

    /// Hand every committed record to `each`, at most `max_bytes` of them
    /// (a bound on one call's work), freeing their space. Returns the
    /// bytes consumed (headers included).
    pub fn consume(&mut self, max_bytes: usize, mut each: impl FnMut(&[u8])) -> usize {
        // SAFETY: the position words are 8-byte aligned at the start of
        // their pages, live as long as `self`, and only the kernel writes
        // the producer's; records lie within the doubly mapped data area.
        unsafe {
            let cons_pos = &*(self.consumer as *const AtomicU64);
            let prod_pos = &*(self.producer as *const AtomicU64);
            let data = self.producer.add(self.page);
            let mask = self.size as u64 - 1;
            let start = cons_pos.load(Ordering::Acquire);
            let mut cons = start;
            let prod = prod_pos.load(Ordering::Acquire);
            while cons < prod && ((cons - start) as usize) < max_bytes {
                let hdr = data.add((cons & mask) as usize);
                let len_flags = (*(hdr as *const AtomicU32)).load(Ordering::Acquire);
                if len_flags & RINGBUF_BUSY != 0 {
                    break;
                }
                let len = (len_flags & !(RINGBUF_BUSY | RINGBUF_DISCARD)) as usize;
                if len_flags & RINGBUF_DISCARD == 0 {
                    each(std::slice::from_raw_parts(hdr.add(RINGBUF_HDR), len));
                }
                cons += ((len + RINGBUF_HDR + 7) & !7) as u64;
                cons_pos.store(cons, Ordering::Release);
            }
            (cons - start) as usize
        }
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `create` mapped.
        unsafe {
            libc::munmap(self.consumer.cast(), self.page);
            libc::munmap(self.producer.cast(), self.page + 2 * self.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_removes_every_key_of_a_hash_map() {
        let Ok(m) = Map::create(MapType::Hash, "outrider_test", 4, 4, 1 << 16, NO_PREALLOC) else {
            eprintln!("skipped: no BPF maps here (needs root or CAP_BPF)");
            return;
        };
        for k in 0u32..300 {
            m.update(&k.to_ne_bytes(), &k.to_ne_bytes()).unwrap();
        }
        let mut keys = m.keys(4).unwrap();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 300);
        m.clear(4).unwrap();
        assert!(m.keys(4).unwrap().is_empty());
        assert_eq!(m.lookup(&7u32.to_ne_bytes()).unwrap(), None);
        m.clear(4).unwrap();
    }

    #[test]
    fn jumps_resolve_relative_to_the_next_instruction() {
        let mut a = Asm::new();
        let out = a.label();
        a.jeq_imm(0, 0, out);
        a.mov_imm(0, 1);
        a.bind(out);
        a.exit();
        let p = a.finish();
        assert_eq!(p[0].off, 1);
        assert_eq!(p[0].code, 0x15);
        assert_eq!(p[1], insn(0xb7, 0, 0, 0, 1));
        assert_eq!(p[2].code, 0x95);
    }
}
