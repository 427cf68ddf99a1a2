//! The page reads, faults and fault-around maps through raw tracepoints
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope).
//!
//! Why: a program on a tracepoint runs after the kernel built the
//! tracepoint's record for it, for every task, followed or not; on a raw
//! tracepoint it is handed the tracepoint's arguments and nothing is
//! built. A one-byte `pread` of a cached page, 557 ns with nothing
//! attached: 705 ns with a tracepoint program that tested its thread's
//! bit ([`followed`](super::followed)) and left, 640 ns with the same
//! program on the raw tracepoint (minima of 5 × 200 000 calls, 8
//! alternations, this 2-core VM). These three events are the ones every
//! page-cache read and mapped-file fault of every task fires. With the
//! daemon's programs (the thread not followed): 1 004 ns per call on the
//! tracepoints, 923 on the raw tracepoints, 772 with no daemon (means of
//! the minima of 6 alternations, one sitting).
//!
//! How: their arguments are `(mapping, index, last_index)`
//! (`mm_filemap_get_pages`, `mm_filemap_map_pages`) and `(mapping,
//! index)` (`mm_filemap_fault`). Once the thread passed, the program
//! builds on its stack the record tracefs would have made (its `format`
//! file's offsets): `i_ino` = `mapping->host->i_ino`, `s_dev` =
//! `host->i_sb->s_dev` (`host->i_rdev` without a super block), as the
//! tracepoints' own `TP_fast_assign` does, read with
//! `bpf_probe_read_kernel` at the member offsets of the running kernel's
//! BTF; then it points its context register there, and the rest of the
//! program is the tracepoint's. Without BTF, or a member not found, the
//! tracepoints are used.

use super::kernel::{probe, Kernel};
use super::{CTX, SLOT_SCRATCH};
use crate::tracefs::format::EventFormat;
use outrider_sys::bpf::{Asm, Size, FP};

/// Bytes of a record built here at most.
const RECORD_MAX: i16 = 64;
/// Where it is built: below every other slot.
const SLOT_REC: i16 = SLOT_SCRATCH - RECORD_MAX;
/// The host inode, then its super block, as read.
const SLOT_HOST: i16 = SLOT_REC - 8;
const SLOT_SB: i16 = SLOT_REC - 16;

/// Byte offsets of the members the records are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offsets {
    /// `address_space.host`.
    host: i16,
    /// `inode.i_ino`, `inode.i_sb`, `inode.i_rdev`.
    ino: i16,
    sb: i16,
    rdev: i16,
    /// `super_block.s_dev`.
    dev: i16,
}

impl Offsets {
    /// The kernel's; `None` where a member is not found.
    pub fn of(kernel: &Kernel) -> Option<Offsets> {
        Some(Offsets {
            host: kernel.member("address_space", "host")?,
            ino: kernel.member("inode", "i_ino")?,
            sb: kernel.member("inode", "i_sb")?,
            rdev: kernel.member("inode", "i_rdev")?,
            dev: kernel.member("super_block", "s_dev")?,
        })
    }
}

/// Where `f`'s record takes what: the byte offsets of `i_ino` (8 bytes),
/// `s_dev` (4), `index` (8) and `last_index` (8, when the event has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    ino: i16,
    dev: i16,
    index: i16,
    last: Option<i16>,
    /// The record's fixed fields end here.
    end: i16,
}

/// `f`'s layout when it is one of the three page events, its fields
/// ([`repeats::pages_of`](super::repeats)) as this module fills them.
pub fn layout(f: &EventFormat, end: usize) -> Option<Layout> {
    let with_last = match f.name.as_str() {
        "mm_filemap_get_pages" | "mm_filemap_map_pages" => true,
        "mm_filemap_fault" => false,
        _ => return None,
    };
    let p = super::repeats::pages_of(f)?;
    let sized = |(at, size): (i16, Size), want: Size| (size == want).then_some(at);
    let index = sized(p.index, Size::DW)?;
    let last = sized(p.last, Size::DW)?;
    let end = i16::try_from(end).ok().filter(|&e| e <= RECORD_MAX)?;
    Some(Layout {
        ino: sized(p.ino, Size::DW)?,
        dev: sized(p.dev, Size::W)?,
        index,
        // Without `last_index`, pages_of gives the index again.
        last: (with_last && last != index).then_some(last),
        end,
    })
}

/// Build the record on the stack from the arguments (the context in
/// `CTX`), then point `CTX` at it. Uses r1-r5.
pub fn record(a: &mut Asm, l: Layout, off: Offsets) {
    let (no_sb, done) = (a.label(), a.label());
    for at in (0..(l.end + 7) / 8 * 8).step_by(8) {
        a.store_imm(Size::DW, FP, SLOT_REC + at, 0);
    }
    a.load(Size::DW, 1, CTX, 8);
    a.store(Size::DW, FP, SLOT_REC + l.index, 1);
    if let Some(last) = l.last {
        a.load(Size::DW, 1, CTX, 16);
        a.store(Size::DW, FP, SLOT_REC + last, 1);
    }
    a.load(Size::DW, 3, CTX, 0);
    probe(a, (SLOT_HOST, 8), off.host);
    a.load(Size::DW, 3, FP, SLOT_HOST);
    a.jeq_imm(3, 0, done);
    probe(a, (SLOT_REC + l.ino, 8), off.ino);
    a.load(Size::DW, 3, FP, SLOT_HOST);
    probe(a, (SLOT_SB, 8), off.sb);
    a.load(Size::DW, 3, FP, SLOT_SB);
    a.jeq_imm(3, 0, no_sb);
    probe(a, (SLOT_REC + l.dev, 4), off.dev);
    a.ja(done);
    a.bind(no_sb);
    a.load(Size::DW, 3, FP, SLOT_HOST);
    probe(a, (SLOT_REC + l.dev, 4), off.rdev);
    a.bind(done);
    a.mov_reg(CTX, FP);
    a.add_imm(CTX, SLOT_REC.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::format::{parse_format, tests::GET_PAGES};

    #[test]
    fn the_record_of_get_pages_is_laid_out_as_its_format_says() {
        let f = parse_format(GET_PAGES, "t").unwrap();
        let l = layout(&f, super::super::programs::record_end(&f)).unwrap();
        assert_eq!((l.ino, l.dev, l.index, l.last), (8, 16, 24, Some(32)));
        assert!(l.end <= RECORD_MAX && SLOT_SB >= -512);
    }

    #[test]
    fn the_running_kernels_members_are_found_where_it_has_btf() {
        let Some(k) = Kernel::open() else { return };
        let o = Offsets::of(&k).expect("address_space, inode and super_block");
        // i_ino, i_sb and i_rdev are distinct members of one struct.
        assert!(o.ino != o.sb && o.sb != o.rdev && o.ino != o.rdev);
        assert!(o.host >= 0 && o.dev >= 0);
    }
}
