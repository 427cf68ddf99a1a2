//! The threads a source follows: a hash of thread id → stamp and the
//! thread's run ([`runs`](super::runs)), and beside it a bitmap with one
//! bit per thread id that the programs test first.
//!
//! Why: every program runs on every page-cache read, fault and fork of
//! every task, followed or not, and for a task not followed the hash
//! lookup was most of what it cost. A one-byte `pread` of a cached page,
//! 557 ns with nothing attached, took 757 ns with a tracepoint program
//! that looked its thread up in an empty hash and 705 ns with one that
//! tested a bit of an array instead (702 ns with one that only read its
//! thread id; minima of 5 × 200 000 calls, 8 alternations, this 2-core
//! VM). An array lookup is inlined by the verifier; a hash lookup hashes
//! the key and walks a bucket. With the daemon's programs (the thread
//! not followed): 1 080 ns per call with the hash alone, 974 with the
//! bitmap, 765 with no daemon (means of the minima of 6 alternations,
//! one sitting).
//!
//! How: the word of thread id `t` is `t / 64` (an array of
//! `pid_max / 64` words, at most 512 KiB); a thread id past it (pid_max
//! raised after the load) is looked up in the hash. The invariant: **a
//! followed thread's bit is set**. A thread is added to the hash, then
//! its bit set, by the program that follows it (a fork's child, before
//! it first runs; an exec, the thread itself) or, from user space, by
//! the thread that opens a source following itself ([`Followed::follow`]).
//! Removing a thread (its exit, a let-go, user space) removes its hash
//! entry only; its bit, left set, costs it one hash lookup at its next
//! record, after which the thread clears its own bit. So only a thread
//! clears its own bit, never while another adds it (no one adds a
//! running thread but itself), and a bit is never lost: the programs
//! set and clear bits atomically, and user space sets one only when
//! nothing is followed yet (a new source, or a parked one just emptied),
//! so its read-modify-write of a word can at most set again a bit its
//! thread was clearing.

use super::{MAX_TRACKED, SLOT_SCRATCH, SLOT_STAMP, SLOT_TID, TID};
use outrider_sys::bpf::{helper, Asm, Label, Map, MapType, Reg, Size, FP, NO_PREALLOC};
use std::io;
use std::os::fd::{OwnedFd, RawFd};

/// Bitmap words at most: `PID_MAX_LIMIT` (4 Mi thread ids) / 64.
const WORDS_MAX: u32 = 1 << 16;
/// Stack slot of a word's index.
const SLOT_WORD: i16 = -12;
/// The current thread's word while the programs test it (free then:
/// the programs use r8 and r9 only once a thread passed).
const WORD: Reg = 9;
/// A followed thread's entry once it passed ([`pass`]).
pub const ENTRY: Reg = 8;
/// An entry: the thread's stamp, then its run.
pub const VALUE_BYTES: u32 = 8 + super::runs::RUN_BYTES;
/// Where the run is in an entry.
pub const RUN_AT: i16 = 8;
/// Where [`track`] makes an entry (the repeats' scratch words: unused by
/// the programs of forks and execs).
const SLOT_VALUE: i16 = SLOT_SCRATCH;
const _: () = assert!(VALUE_BYTES as i16 <= 8 * super::repeats::SCRATCH_WORDS);

/// The hash and the bitmap of followed threads.
#[derive(Debug)]
pub struct Followed {
    pub hash: Map,
    bits: Map,
}

impl Followed {
    /// Empty tables, the bitmap sized for the running kernel's `pid_max`.
    pub fn create() -> io::Result<Followed> {
        let hash = Map::create(
            MapType::Hash,
            "outrider_tids",
            4,
            VALUE_BYTES,
            MAX_TRACKED,
            NO_PREALLOC,
        )?;
        let bits = Map::create(MapType::Array, "outrider_tidbits", 4, 8, words(), 0)?;
        Ok(Followed { hash, bits })
    }

    /// The tables of a parked source (`hash`, then `bits`).
    pub fn from_fds(hash: OwnedFd, bits: OwnedFd) -> Followed {
        Followed {
            hash: Map::from_fd(hash, VALUE_BYTES as usize),
            bits: Map::from_fd(bits, 8),
        }
    }

    /// Their descriptors, in [`Followed::from_fds`]'s order.
    pub fn raw_fds(&self) -> [RawFd; 2] {
        [self.hash.raw_fd(), self.bits.raw_fd()]
    }

    /// Follow thread `tid` with `stamp`: only the calling thread, and only
    /// while nothing else is followed (the module comment).
    pub fn follow(&self, tid: u32, stamp: u64) -> io::Result<()> {
        let mut value = [0u8; VALUE_BYTES as usize];
        value[..8].copy_from_slice(&stamp.to_ne_bytes());
        self.hash.update(&tid.to_ne_bytes(), &value)?;
        let Some(word) = self.word(tid)? else {
            return Ok(()); // past the bitmap: the hash alone
        };
        let key = (tid / 64).to_ne_bytes();
        self.bits
            .update(&key, &(word | 1 << (tid % 64)).to_ne_bytes())
    }

    /// Whether thread `tid`'s bit is set (`None`: past the bitmap).
    pub fn bit(&self, tid: u32) -> io::Result<Option<bool>> {
        Ok(self.word(tid)?.map(|w| w & 1 << (tid % 64) != 0))
    }

    /// The bitmap word of thread `tid` (`None`: past the bitmap).
    fn word(&self, tid: u32) -> io::Result<Option<u64>> {
        let word = self.bits.lookup(&(tid / 64).to_ne_bytes())?;
        Ok(word.map(|w| u64::from_ne_bytes(w[..8].try_into().expect("8-byte words"))))
    }

    /// The programs' view of them.
    pub fn tables(&self) -> Tables<'_> {
        Tables {
            hash: &self.hash,
            bits: &self.bits,
        }
    }
}

/// Bitmap words for the running kernel's `pid_max` (the most when it
/// cannot be read).
fn words() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map_or(WORDS_MAX, |n| n.div_ceil(64).clamp(1, WORDS_MAX))
}

/// The maps the programs use.
#[derive(Clone, Copy)]
pub struct Tables<'a> {
    pub hash: &'a Map,
    pub bits: &'a Map,
}

/// r0 = the address of the word of the thread id at stack slot `slot`,
/// or 0 past the bitmap.
fn word_of(a: &mut Asm, bits: &Map, slot: i16) {
    a.load(Size::W, 1, FP, slot);
    a.rsh_imm(1, 6);
    a.store(Size::W, FP, SLOT_WORD, 1);
    a.ld_map(1, bits);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_WORD.into());
    a.call(helper::MAP_LOOKUP_ELEM);
}

/// r1 = the bit of the thread id at stack slot `slot` in its word.
fn bit_of(a: &mut Asm, slot: i16) {
    a.load(Size::W, 2, FP, slot);
    a.and_imm(2, 63);
    a.mov_imm(1, 1);
    a.lsh_reg(1, 2);
}

/// Go on only when the current thread (at `SLOT_TID`) is followed, its
/// stamp copied to `SLOT_STAMP` and its entry at [`ENTRY`]; to `out`
/// otherwise: at once when its bit is clear, else after the hash lookup,
/// clearing its bit when the hash no longer has it.
pub fn pass(a: &mut Asm, t: Tables<'_>, out: Label) {
    let (lookup, gone, pass) = (a.label(), a.label(), a.label());
    word_of(a, t.bits, SLOT_TID);
    a.mov_reg(WORD, 0);
    a.jeq_imm(0, 0, lookup);
    a.load(Size::DW, 1, 0, 0);
    a.mov_reg(2, TID);
    a.and_imm(2, 63);
    a.rsh_reg(1, 2);
    a.and_imm(1, 1);
    a.jeq_imm(1, 0, out);
    a.bind(lookup);
    a.ld_map(1, t.hash);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_TID.into());
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jeq_imm(0, 0, gone);
    a.mov_reg(ENTRY, 0);
    a.load(Size::DW, 1, 0, 0);
    a.store(Size::DW, FP, SLOT_STAMP, 1);
    a.ja(pass);
    a.bind(gone);
    a.jeq_imm(WORD, 0, out);
    bit_of(a, SLOT_TID);
    a.mov_imm(2, -1);
    a.xor_reg(1, 2);
    a.atomic_and(WORD, 0, 1);
    a.ja(out);
    a.bind(pass);
}

/// Follow the thread id at stack slot `slot` with the stamp at
/// `SLOT_STAMP` and no run: its hash entry, then its bit; to `lost` when
/// the hash is full.
pub fn track(a: &mut Asm, t: Tables<'_>, slot: i16, lost: Label) {
    let done = a.label();
    a.load(Size::DW, 1, FP, SLOT_STAMP);
    a.store(Size::DW, FP, SLOT_VALUE, 1);
    for at in (RUN_AT..VALUE_BYTES as i16).step_by(8) {
        a.store_imm(Size::DW, FP, SLOT_VALUE + at, 0);
    }
    super::programs::update_from_stack(a, t.hash, (slot, SLOT_VALUE), 0);
    a.jne_imm(0, 0, lost);
    word_of(a, t.bits, slot);
    a.jeq_imm(0, 0, done);
    a.mov_reg(3, 0);
    bit_of(a, slot);
    a.atomic_or(3, 0, 1);
    a.bind(done);
}

/// Stop following the current thread (at `SLOT_TID`): its hash entry (its
/// bit it clears at its next record).
pub fn untrack_current(a: &mut Asm, t: Tables<'_>) {
    a.ld_map(1, t.hash);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_TID.into());
    a.call(helper::MAP_DELETE_ELEM);
}
