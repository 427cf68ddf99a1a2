//! Pages a launch has sent already are not sent again
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope).
//!
//! Why: a launch set holds each page once, yet a followed tree that runs
//! the same program over and over sends the same pages each time: in
//! `sh -c 'for i in $(seq 300); do /bin/true; done'`, recorded as the
//! launch of `sh`, every `true` sends ~110 records (fault-around maps,
//! faults, reads of `ld.so` and libc), 33 000 in all, each reserved,
//! copied and submitted to the ring in the program's own context. The
//! records are not the same each time (of 20 `true`s' 224 distinct
//! fault-around ranges, 135 came once: the first page mapped varies), but
//! their pages are.
//!
//! How: the programs of the reads, faults and fault-around maps keep, per
//! CPU, a two-way table of [`SLOTS`] entries, each the pages sent of
//! one aligned block of 64 pages of one file, for one event and one
//! launch: keyed by the followed thread's stamp (the time of its launch's
//! exec, inherited at fork: the threads of one launch share it, and
//! another launch never does), the event id, the device, the inode and
//! the block, with a bitmap of the block's pages sent. A record whose
//! pages (in one block or two) are all in the table is dropped; otherwise
//! its pages are added (an entry of another key in the slot is replaced)
//! and it is sent. So a record is dropped only when this CPU sent every
//! one of its pages for the same launch in records of the same event; a
//! table too small for a launch's files (or the other CPU) sends a page
//! again, which the recorder keeps once. Records over more than two
//! blocks are sent as they are. A per-CPU table needs no lock: a
//! tracepoint program does not interrupt another on its CPU.
//!
//! What is not seen: a second pass of one launch over pages its table
//! still holds (1 024 blocks of 256 KiB per CPU, 256 MiB, fewer when
//! the pages are sparse), which a driver following the launch would
//! take for reads of cached pages anyway; and, while every task is
//! recorded (the boot set), a page's later readers of stamp 0 (the
//! threads no launch follows) once one of them read it.

use super::{CTX, SLOT_SCRATCH, SLOT_SEEN, SLOT_STAMP};
use crate::tracefs::format::EventFormat;
use outrider_sys::bpf::{helper, Asm, Label, Map, MapType, Size, FP};
use std::io;

/// Entries of each CPU's table (48 bytes each), in sets of two: the pages
/// one `true` of the storm above maps lie in ~40 blocks.
pub const SLOTS: u32 = 2 << SET_BITS;
/// Stack words the programs use here ([`SLOT_SCRATCH`]).
pub const SCRATCH_WORDS: i16 = 7;
/// An entry: stamp, event id, device, inode, block, then its bitmap.
const KEY_WORDS: i16 = 5;
const ENTRY_BYTES: u32 = 8 * (KEY_WORDS as u32 + 1);
/// Pages per block: one bit each in a 64-bit word.
const BLOCK_SHIFT: i32 = 6;
/// Sets of two entries: 2^SET_BITS.
const SET_BITS: i32 = 9;
/// Fibonacci hashing's multiplier (2^64 / the golden ratio): each word is
/// mixed in by xor and multiply, and the set is the top bits. (FNV's
/// prime, whose low bits are few, sent the blocks of one file to the same
/// four sets.)
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
/// Scratch words: the key's device and inode (then the block), the
/// record's first and last page, the parts with pages not sent, a mask.
const W_DEV: i16 = 0;
const W_INO: i16 = 1;
const W_BLOCK: i16 = 2;
const W_FIRST: i16 = 3;
const W_LAST: i16 = 4;
const W_NEW: i16 = 5;
const W_MASK: i16 = 6;

/// The per-CPU table of pages sent.
pub fn create() -> io::Result<Map> {
    Map::create(
        MapType::PerCpuArray,
        "outrider_seen",
        4,
        ENTRY_BYTES,
        SLOTS,
        0,
    )
}

/// Where a read record keeps its file and pages: offsets and sizes of
/// `s_dev`, `i_ino`, `index` and `last_index` (the fault's one page:
/// `index` again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pages {
    pub(super) dev: (i16, Size),
    pub(super) ino: (i16, Size),
    pub(super) index: (i16, Size),
    pub(super) last: (i16, Size),
}

/// `f`'s [`Pages`], when it is a record of pages of a file (the cache
/// insertions are not: each is a miss, counted as one).
pub(super) fn pages_of(f: &EventFormat) -> Option<Pages> {
    if !f.name.starts_with("mm_filemap_") || f.name == "mm_filemap_add_to_page_cache" {
        return None;
    }
    let at = |name: &str| {
        let x = f.fields.iter().find(|x| x.name == name)?;
        let size = match x.size {
            8 => Size::DW,
            4 => Size::W,
            _ => return None,
        };
        (!x.data_loc && x.offset % x.size == 0).then_some((x.offset as i16, size))
    };
    let index = at("index")?;
    Some(Pages {
        dev: at("s_dev")?,
        ino: at("i_ino")?,
        index,
        last: at("last_index").unwrap_or(index),
    })
}

/// Go to `out` when this CPU's table holds every page of the record (for
/// the stamp at `SLOT_STAMP`); otherwise add them and go on. Nothing for
/// a record that is not of pages.
pub fn skip(a: &mut Asm, f: &EventFormat, seen: &Map, out: Label) {
    let Some(p) = pages_of(f) else { return };
    let (send, one_block) = (a.label(), a.label());
    for (w, (off, size)) in [
        (W_DEV, p.dev),
        (W_INO, p.ino),
        (W_FIRST, p.index),
        (W_LAST, p.last),
    ] {
        a.load(size, 1, CTX, off);
        a.store(Size::DW, FP, word(w), 1);
    }
    a.store_imm(Size::DW, FP, word(W_NEW), 0);
    // r3 = first block, r4 = last block - first block: at most 1.
    a.load(Size::DW, 3, FP, word(W_FIRST));
    a.rsh_imm(3, BLOCK_SHIFT);
    a.load(Size::DW, 4, FP, word(W_LAST));
    a.rsh_imm(4, BLOCK_SHIFT);
    a.sub_reg(4, 3);
    a.jgt_imm(4, 1, send);
    // The first block: pages first..(last, or the block's end).
    a.store(Size::DW, FP, word(W_BLOCK), 3);
    a.load(Size::DW, 1, FP, word(W_FIRST));
    a.load(Size::DW, 2, FP, word(W_LAST));
    a.jeq_imm(4, 0, one_block);
    a.mov_imm(2, 63);
    a.bind(one_block);
    mark(a, f.id, seen);
    // The second block, if the record reaches it: pages 0..last.
    let done = a.label();
    a.load(Size::DW, 3, FP, word(W_FIRST));
    a.rsh_imm(3, BLOCK_SHIFT);
    a.load(Size::DW, 4, FP, word(W_LAST));
    a.rsh_imm(4, BLOCK_SHIFT);
    a.jeq_reg(3, 4, done);
    a.store(Size::DW, FP, word(W_BLOCK), 4);
    a.mov_imm(1, 0);
    a.load(Size::DW, 2, FP, word(W_LAST));
    mark(a, f.id, seen);
    a.bind(done);
    a.load(Size::DW, 1, FP, word(W_NEW));
    a.jeq_imm(1, 0, out);
    a.bind(send);
}

/// Add pages r1..=r2 (taken modulo 64) of the block at `W_BLOCK` to its
/// entry; count the block in `W_NEW` unless all were there. The table is
/// two-way: a block is looked for in the two entries of its set, and a
/// new one goes first, the first moving second (two blocks that shared
/// one entry evicted each other at every record: `ld.so`'s and libc's
/// first pages were sent by every `true` of the storm).
fn mark(a: &mut Asm, id: u16, seen: &Map) {
    let (new, end) = (a.label(), a.label());
    // mask = (!0 << (r1 & 63)) & (!0 >> (63 - (r2 & 63)))
    a.and_imm(1, 63);
    a.and_imm(2, 63);
    a.mov_imm(3, 63);
    a.sub_reg(3, 2);
    a.mov_imm(4, -1);
    a.lsh_reg(4, 1);
    a.mov_imm(5, -1);
    a.rsh_reg(5, 3);
    a.and_reg(4, 5);
    a.store(Size::DW, FP, word(W_MASK), 4);
    // r0 = the hash of the key; its set's first entry to SLOT_SEEN.
    a.load(Size::DW, 0, FP, SLOT_STAMP);
    a.ld_imm64(2, GOLDEN);
    a.mov_imm(1, id.into());
    a.xor_reg(0, 1);
    a.mul_reg(0, 2);
    for w in [W_DEV, W_INO, W_BLOCK] {
        a.load(Size::DW, 1, FP, word(w));
        a.xor_reg(0, 1);
        a.mul_reg(0, 2);
    }
    a.rsh_imm(0, 64 - SET_BITS);
    a.lsh_imm(0, 1);
    a.store(Size::W, FP, SLOT_SEEN, 0);
    lookup(a, seen, FIRST, new);
    a.load(Size::W, 1, FP, SLOT_SEEN);
    a.add_imm(1, 1);
    a.store(Size::W, FP, SLOT_SEEN, 1);
    lookup(a, seen, SECOND, new);
    for way in [FIRST, SECOND] {
        let other = a.label();
        differs(a, id, way, other);
        add_pages(a, way, (new, end));
        a.bind(other);
    }
    // Neither: the first moves second, ours goes first.
    for k in 0..=KEY_WORDS {
        a.load(Size::DW, 1, FIRST, 8 * k);
        a.store(Size::DW, SECOND, 8 * k, 1);
    }
    a.load(Size::DW, 1, FP, SLOT_STAMP);
    a.store(Size::DW, FIRST, 0, 1);
    a.mov_imm(1, id.into());
    a.store(Size::DW, FIRST, 8, 1);
    for (k, w) in [W_DEV, W_INO, W_BLOCK].into_iter().enumerate() {
        a.load(Size::DW, 1, FP, word(w));
        a.store(Size::DW, FIRST, 16 + 8 * k as i16, 1);
    }
    a.load(Size::DW, 1, FP, word(W_MASK));
    a.store(Size::DW, FIRST, 8 * KEY_WORDS, 1);
    a.bind(new);
    a.load(Size::DW, 1, FP, word(W_NEW));
    a.add_imm(1, 1);
    a.store(Size::DW, FP, word(W_NEW), 1);
    a.bind(end);
}

/// Registers holding the set's two entries (free until the record is
/// reserved; r9 is the exec program's alone).
const FIRST: u8 = 8;
const SECOND: u8 = 9;

/// `way` = the entry at `SLOT_SEEN`; to `absent` when there is none
/// (its pages then count as new).
fn lookup(a: &mut Asm, seen: &Map, way: u8, absent: Label) {
    a.ld_map(1, seen);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_SEEN.into());
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jeq_imm(0, 0, absent);
    a.mov_reg(way, 0);
}

/// To `other` unless the entry at `way` has our key.
fn differs(a: &mut Asm, id: u16, way: u8, other: Label) {
    a.load(Size::DW, 1, way, 0);
    a.load(Size::DW, 2, FP, SLOT_STAMP);
    a.jne_reg(1, 2, other);
    a.load(Size::DW, 1, way, 8);
    a.mov_imm(2, id.into());
    a.jne_reg(1, 2, other);
    for (k, w) in [W_DEV, W_INO, W_BLOCK].into_iter().enumerate() {
        a.load(Size::DW, 1, way, 16 + 8 * k as i16);
        a.load(Size::DW, 2, FP, word(w));
        a.jne_reg(1, 2, other);
    }
}

/// Our entry at `way`: to `end` when the mask's pages are all there,
/// else add them and go to `new`.
fn add_pages(a: &mut Asm, way: u8, (new, end): (Label, Label)) {
    a.load(Size::DW, 1, way, 8 * KEY_WORDS);
    a.load(Size::DW, 2, FP, word(W_MASK));
    a.mov_reg(3, 1);
    a.and_reg(3, 2);
    a.jeq_reg(3, 2, end);
    a.or_reg(1, 2);
    a.store(Size::DW, way, 8 * KEY_WORDS, 1);
    a.ja(new);
}

fn word(w: i16) -> i16 {
    SLOT_SCRATCH + 8 * w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::format::{parse_format, tests::GET_PAGES};

    #[test]
    fn a_read_record_is_keyed_by_its_file_and_pages_at_their_widths() {
        let f = parse_format(GET_PAGES, "t").unwrap();
        let p = pages_of(&f).unwrap();
        assert_eq!(p.ino, (8, Size::DW));
        assert_eq!(p.dev, (16, Size::W));
        assert_eq!(p.index, (24, Size::DW));
        assert_eq!(p.last, (32, Size::DW));
    }
}
