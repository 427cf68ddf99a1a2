//! A followed thread's sequential read of one file is sent up to
//! [`SENT_PAGES`], not to its end ([`Scope::Execs`](super::Scope::Execs),
//! the daemon's scope).
//!
//! Why: each page-cache read of a followed launch costs it, in its own
//! context, a record built, screened and submitted, and the daemon reads
//! and files each record; yet a file read from start to end is what it
//! does least with: its launch sets leave a sequential file of more than
//! 8 MiB to the kernel's readahead. `wc -l` of a 256 MiB file, cold, its
//! launch known (so followed to its end): ~16 400 reads, 638 ns each in
//! the programs (10 ms of its 0.19 s, `kernel.bpf_stats_enabled`), and
//! 0.87x of its time with no daemon (0.93x with the daemon frozen, so
//! that only the programs ran; 0.98x with `wc` not followed; medians of
//! 8, alternated, one sitting).
//!
//! How: per thread, in its entry of the table of followed threads after
//! its stamp ([`followed`](super::followed), made with no run when it is
//! followed), the file of its run (the `address_space` on a raw
//! tracepoint, device and inode on the tracepoint), the page after the
//! run, the pages it read and the pages it skipped. A read of that file
//! from the run's last page (a read that does not start on a page
//! boundary starts there) to [`HOLE_PAGES`] past its end continues it:
//! Linux serves a small read inside one cached folio without
//! `filemap_get_pages`, so a sequential reader's records skip pages. Any other read starts a new run, counted as
//! having skipped the pages before it: a run must start within
//! [`HOLE_PAGES`] of the file's first page to be cut, as the daemon
//! leaves only a file read from its start to readahead and replays a run
//! from its middle, so it is sent all of that. The test comes
//! before anything else is done for the record; a record that finds its
//! run past [`SENT_PAGES`] read, with at most one page in 16
//! ([`HOLES_SHIFT`]) skipped, is dropped. A strided reader skips more than
//! it reads and is sent whole. Reads of threads no launch follows (stamp
//! 0: every task recorded, the boot set) are all sent. Only page reads:
//! a mapped file scanned from start to end is sent whole (its
//! fault-around maps start up to 15 pages before the fault that made
//! them, which no run here or in the daemon's sets continues: 6 798 of
//! a 48 MiB file's 12 288 pages were sent with faults and maps counted
//! in runs); the cache insertions of a run's readahead are sent as they
//! come, the daemon counting them as the launch's misses.
//!
//! Kept in the thread's entry, a read costs no lookup beyond the one that
//! found the thread followed: a cut read cost the programs 42 ns, against
//! 50 ns with the runs in a table of their own (an LRU hash by thread
//! id); a sent one ~130 ns either way (`examples/page_read_cost.rs`: a
//! launch exec'd while followed reads a cold 64 MiB file, and a 16 MiB
//! one, 4 KiB at a time; the difference is over the reads past 16 MiB;
//! medians of 4, the two builds alternated twice).

use super::followed::{ENTRY, RUN_AT};
use super::CTX;
use crate::tracefs::format::EventFormat;
use outrider_sys::bpf::{Asm, Label, Size};

/// Pages of a run sent at most (16 MiB): twice the 8 MiB past which the
/// daemon leaves a file to readahead, so it still sees the run as one.
pub const SENT_PAGES: i32 = 4096;
/// Pages a read may skip past the run's end and still continue it (a
/// folio is at most 2 MiB), as the daemon's launch sets allow.
pub const HOLE_PAGES: i32 = 512;
/// A run is cut only while it skipped at most one page in
/// `1 << HOLES_SHIFT` of those it read, as the daemon's launch sets allow.
pub const HOLES_SHIFT: i32 = 4;
/// Pages skipped by a run that started too far from the file's start to
/// be cut (shifted by [`HOLES_SHIFT`], still far from overflowing).
const NEVER_CUT: u64 = 1 << 40;
/// A run: its file (two words), the page after it, pages read, pages
/// skipped; at [`RUN_AT`] in the thread's entry.
pub const RUN_BYTES: u32 = 40;
const FILE_AT: [i16; 2] = [RUN_AT, RUN_AT + 8];
const NEXT_AT: i16 = RUN_AT + 16;
const READ_AT: i16 = RUN_AT + 24;
const HOLES_AT: i16 = RUN_AT + 32;

/// Where a record says what it read: its file (one or two words), its
/// first and last page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    file: [Option<(i16, Size)>; 2],
    index: (i16, Size),
    last: (i16, Size),
}

/// `f`'s, when it is `mm_filemap_get_pages`: on the raw tracepoint its
/// arguments `(mapping, index, last_index)`, else its record's fields.
pub fn reads_of(f: &EventFormat, raw: bool) -> Option<Reads> {
    if f.name != "mm_filemap_get_pages" {
        return None;
    }
    if raw {
        return Some(Reads {
            file: [Some((0, Size::DW)), None],
            index: (8, Size::DW),
            last: (16, Size::DW),
        });
    }
    let p = super::repeats::pages_of(f)?;
    Some(Reads {
        file: [Some(p.dev), Some(p.ino)],
        index: p.index,
        last: p.last,
    })
}

/// Go to `out` when the read (its thread's entry at [`ENTRY`], 0 when
/// not followed) continues its thread's run past [`SENT_PAGES`];
/// otherwise count it in its run, or start one, and go on. Uses r1-r5.
pub fn cut(a: &mut Asm, r: &Reads, out: Label) {
    let (fresh, send) = (a.label(), a.label());
    a.jeq_imm(ENTRY, 0, send);
    for (field, at) in r.file.iter().zip(FILE_AT) {
        let Some((off, size)) = *field else { continue };
        a.load(size, 1, CTX, off);
        a.load(Size::DW, 2, ENTRY, at);
        a.jne_reg(1, 2, fresh);
    }
    // r1 = index + 1, r2 = the page after the run: continued when
    // next <= index + 1 <= next + HOLE_PAGES + 1.
    a.load(r.index.1, 1, CTX, r.index.0);
    a.add_imm(1, 1);
    a.load(Size::DW, 2, ENTRY, NEXT_AT);
    a.jlt_reg(1, 2, fresh);
    a.mov_reg(3, 2);
    a.add_imm(3, HOLE_PAGES + 1);
    a.jlt_reg(3, 1, fresh);
    skipped(a);
    grown(a, r);
    // Cut: more than SENT_PAGES read, at most one in 16 skipped.
    let long = a.label();
    a.load(Size::DW, 1, ENTRY, READ_AT);
    a.jgt_imm(1, SENT_PAGES, long);
    a.ja(send);
    a.bind(long);
    a.load(Size::DW, 2, ENTRY, HOLES_AT);
    a.lsh_imm(2, HOLES_SHIFT);
    a.jlt_reg(1, 2, send);
    a.ja(out);
    // Another run of the thread: its entry's run becomes the new run.
    a.bind(fresh);
    start(a, r);
    a.bind(send);
}

/// Count the pages the read skipped (r1 = index + 1, r2 = next): index -
/// next when it starts past the run's end.
fn skipped(a: &mut Asm) {
    let none = a.label();
    a.mov_reg(3, 2);
    a.add_imm(3, 1);
    a.jlt_reg(1, 3, none);
    a.sub_reg(1, 3);
    a.load(Size::DW, 4, ENTRY, HOLES_AT);
    a.add_reg(4, 1);
    a.store(Size::DW, ENTRY, HOLES_AT, 4);
    a.bind(none);
}

/// Grow the run to last + 1 when that is past its end, counting
/// the pages read past it: last + 1 - max(index, next).
fn grown(a: &mut Asm, r: &Reads) {
    let (done, from_next) = (a.label(), a.label());
    a.load(r.last.1, 4, CTX, r.last.0);
    a.add_imm(4, 1);
    a.load(Size::DW, 2, ENTRY, NEXT_AT);
    a.jlt_reg(2, 4, from_next);
    a.ja(done);
    a.bind(from_next);
    a.store(Size::DW, ENTRY, NEXT_AT, 4);
    a.load(r.index.1, 1, CTX, r.index.0);
    let past = a.label();
    a.jlt_reg(2, 1, past);
    a.mov_reg(1, 2);
    a.bind(past);
    a.sub_reg(4, 1);
    a.load(Size::DW, 5, ENTRY, READ_AT);
    a.add_reg(5, 4);
    a.store(Size::DW, ENTRY, READ_AT, 5);
    a.bind(done);
}

/// Write the run of the read's pages in the thread's entry, in place (a
/// followed thread's run is written by the thread alone). In place, a
/// tree reader that starts a run at each file pays no table update per file: the
/// update and its LRU list were a quarter of the page-read program's
/// samples (perf, a cold `tar` of 2 054 files, never seen), and in place
/// the program's time per run fell by 18% (`kernel.bpf_stats_enabled`,
/// against the cache insertions' program as the yardstick: 2.76 to 2.25
/// times its time, medians of 6 such `tar`s each, alternated).
fn start(a: &mut Asm, r: &Reads) {
    let far = a.label();
    for (field, at) in r.file.iter().zip(FILE_AT) {
        match *field {
            Some((o, size)) => {
                a.load(size, 1, CTX, o);
                a.store(Size::DW, ENTRY, at, 1);
            }
            None => a.store_imm(Size::DW, ENTRY, at, 0),
        }
    }
    a.load(r.last.1, 1, CTX, r.last.0);
    a.add_imm(1, 1);
    a.store(Size::DW, ENTRY, NEXT_AT, 1);
    a.load(r.index.1, 2, CTX, r.index.0);
    a.sub_reg(1, 2);
    a.store(Size::DW, ENTRY, READ_AT, 1);
    // Skipped so far: the pages before it, or, from past HOLE_PAGES,
    // too many for it ever to be cut.
    let near = a.label();
    a.mov_imm(3, HOLE_PAGES);
    a.jlt_reg(3, 2, far);
    a.mov_reg(3, 2);
    a.ja(near);
    a.bind(far);
    a.ld_imm64(3, NEVER_CUT);
    a.bind(near);
    a.store(Size::DW, ENTRY, HOLES_AT, 3);
}
