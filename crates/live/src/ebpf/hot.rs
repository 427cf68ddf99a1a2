//! A launch that reads from memory is let go in the kernel
//! ([`Scope::Execs`](super::Scope::Execs), the daemon's scope, once
//! [`EbpfSource::let_go_from_memory`](super::EbpfSource::let_go_from_memory)
//! set its bound).
//!
//! Why: a launch with no set of its own is recorded until it read its
//! first `pages` pages; if at most one in `miss_share` of them missed the
//! cache, what it reads is no set to replay and the daemon stops
//! following it. But the daemon runs at nice 19: beside a program that
//! keeps every core busy it is given a CPU late, judges late, and the
//! program pays for every record until then in its own context (`rg`
//! over a source tree in memory, never seen before: 0.76-0.79x of its
//! time with no daemon, medians of 8 in one sitting, the daemon's own
//! CPU 10 ms). The programs keep the count themselves and judge at the
//! same point the daemon would.
//!
//! How: the programs of page reads, faults, fault-around maps and cache
//! insertions keep, per stamp (a launch's exec time, inherited at fork:
//! the threads of one exec'd image share it), the pages its records
//! read ([`pages_of`](super::repeats), before the repeats are dropped)
//! and the pages it brought into the cache, in an LRU table of
//! [`STAMPS_MAX`]. The record that takes the pages read past the bound
//! judges: in memory, the stamp is let go (the record is still sent, so
//! the daemon's own count reaches the bound and judges the same, unless
//! repeats made the kernel's count; then its thread is no longer
//! followed, and each other thread of the stamp stops being followed at
//! its next record, which is dropped); not, the stamp is judged and
//! followed to its end.
//!
//! A stamp still counting wakes the reader at the record that takes its
//! misses to [`WAKE_MISSED`] pages: a launch with no set of its own may
//! follow another application's set once it reads from storage, and is
//! otherwise read at the reader's slow pace (see `outrider_daemon`'s
//! `MATCHING_NS`).
//!
//! Repeats count: a launch reading the same cached pages over and over
//! sends them once, and counted after the repeats were dropped it was
//! never let go. A loop of 1-byte `pread`s of 16 cached pages took 761-779
//! ns a call with the daemon following it, 458 ns once its launch window
//! ended (best of 5 × 200 000 calls, two sittings): every read paid the
//! followed thread's tables for the 5 s of its window. A stamp the daemon keeps
//! ([`EbpfSource::keep_following`](super::EbpfSource::keep_following): a
//! launch with a set of its own, whose replay judges it instead) is never
//! let go here. A stamp evicted from the table starts counting again.

use super::followed::Tables;
use super::programs::{RB_FORCE_WAKEUP, RB_NO_WAKEUP};
use super::{CTX, SLOT_SCRATCH, SLOT_STAMP};
use crate::tracefs::format::EventFormat;
use outrider_sys::bpf::{helper, Asm, Label, Map, MapType, Size, FP};
use std::io;

/// Stamps counted at most (24 bytes each; the least recently used go).
pub const STAMPS_MAX: u32 = 4096;
/// A stamp's value: pages read, pages missed, then its state (at
/// byte `STATE_AT`).
const VALUE_BYTES: u32 = 24;
const STATE_AT: usize = 16;
/// Counting, not yet judged.
const JUDGING: i32 = 0;
/// Judged as reading from storage, or kept by the daemon: followed.
pub const KEPT: u64 = 1;
/// Judged as reading from memory: no longer followed.
pub const LET_GO: u64 = 2;
/// Keys of the counters map: the bound in pages (0: nothing is judged)
/// and the miss share.
pub const PAGES_KEY: u32 = 3;
pub const SHARE_KEY: u32 = 4;

/// Misses of a stamp still counting at which the reader is woken: the
/// daemon's `FROM_STORAGE_PAGES`, the misses at which it takes a launch
/// to read from storage.
pub const WAKE_MISSED: u64 = 64;
/// Where a cache insertion's program keeps the flags its record is
/// submitted with: below the scratch words (an exit's program and a raw
/// tracepoint's use them; neither is a cache insertion's).
pub(super) const SLOT_WAKE: i16 = SLOT_SCRATCH - 8;

/// Stack words used here, below the stamp's slot (the repeats' scratch
/// words, free once they were dropped): the record's pages read, and
/// three words of zeros for a new entry.
const W_PAGES: i16 = SLOT_STAMP - 8;
const W_ZEROS: i16 = SLOT_STAMP - 24;

/// The table of stamps.
pub fn create() -> io::Result<Map> {
    Map::create(
        MapType::LruHash,
        "outrider_stamps",
        8,
        VALUE_BYTES,
        STAMPS_MAX,
        0,
    )
}

/// The state of the launch exec'd at `stamp` ([`KEPT`], [`LET_GO`], or
/// still counting); `None` when its stamp is no longer held (the least
/// recently used go).
pub fn state(stamps: &Map, stamp: u64) -> Option<u64> {
    let v = stamps.lookup(&stamp.to_ne_bytes()).ok()??;
    let word = v.get(STATE_AT..STATE_AT + 8)?;
    Some(u64::from_ne_bytes(word.try_into().ok()?))
}

/// Mark the launch exec'd at `stamp` [`KEPT`]: followed whatever it
/// reads from memory (its counts kept, or a new entry).
pub fn keep(stamps: &Map, stamp: u64) -> io::Result<()> {
    let key = stamp.to_ne_bytes();
    let mut v = (stamps.lookup(&key).ok().flatten()).unwrap_or(vec![0; VALUE_BYTES as usize]);
    v[STATE_AT..STATE_AT + 8].copy_from_slice(&KEPT.to_ne_bytes());
    stamps.update(&key, &v)
}

/// What a record counts: pages read (`index`..=`last`), or a cache
/// insertion of `1 << order` pages (a miss).
enum Counts {
    Read {
        index: (i16, Size),
        last: (i16, Size),
    },
    Missed {
        order: i16,
    },
}

fn counts_of(f: &EventFormat) -> Option<Counts> {
    if f.name == "mm_filemap_add_to_page_cache" {
        let o = f.fields.iter().find(|x| x.name == "order")?;
        return (o.size == 1 && !o.data_loc).then_some(Counts::Missed {
            order: o.offset as i16,
        });
    }
    let p = super::repeats::pages_of(f)?;
    Some(Counts::Read {
        index: p.index,
        last: p.last,
    })
}

/// Count the record in its stamp's entry (the stamp at `SLOT_STAMP`,
/// the thread at `SLOT_TID`) and judge it at the bound; to `out` when the
/// stamp was let go before. Uses r8 and r9 (set again by the emitter).
/// A cache insertion's program has its submit flags at [`SLOT_WAKE`]
/// then: true.
pub fn judge(
    a: &mut Asm,
    f: &EventFormat,
    (stamps, counters, tracked): (&Map, &Map, Tables<'_>),
    out: Label,
) -> bool {
    let Some(counts) = counts_of(f) else {
        return false;
    };
    let missed = matches!(counts, Counts::Missed { .. });
    if missed {
        a.store_imm(Size::DW, FP, SLOT_WAKE, RB_NO_WAKEUP);
    }
    let (done, gone) = (a.label(), a.label());
    a.load(Size::DW, 1, FP, SLOT_STAMP);
    a.jeq_imm(1, 0, done);
    counter(a, counters, PAGES_KEY, done);
    a.mov_reg(9, 0);
    a.jeq_imm(9, 0, done);
    entry(a, stamps, done);
    a.load(Size::DW, 1, 8, STATE_AT as i16);
    a.jeq_imm(1, LET_GO as i32, gone);
    a.jne_imm(1, JUDGING, done);
    match counts {
        Counts::Missed { order } => {
            a.load(Size::B, 2, CTX, order);
            a.and_imm(2, 63);
            a.mov_imm(1, 1);
            a.lsh_reg(1, 2);
            a.mov_reg(2, 1);
            a.atomic_fetch_add(8, 8, 1);
            wake_at_missed(a, done);
        }
        Counts::Read { index, last } => read(a, (index, last), counters, tracked, done),
    }
    a.ja(done);
    a.bind(gone);
    super::followed::untrack_current(a, tracked);
    a.ja(out);
    a.bind(done);
    missed
}

/// The stamp had r1 pages missed before this record's r2: a forced
/// wake-up to [`SLOT_WAKE`] when the record takes them to
/// [`WAKE_MISSED`] (before < bound <= after).
fn wake_at_missed(a: &mut Asm, done: Label) {
    let crossed = a.label();
    let below = WAKE_MISSED as i32 - 1;
    a.jgt_imm(1, below, done);
    a.add_reg(1, 2);
    a.jgt_imm(1, below, crossed);
    a.ja(done);
    a.bind(crossed);
    a.store_imm(Size::DW, FP, SLOT_WAKE, RB_FORCE_WAKEUP);
}

/// r0 = `counters[key]`'s value; to `none` when it is not there.
fn counter(a: &mut Asm, counters: &Map, key: u32, none: Label) {
    super::programs::counter_at(a, counters, key, none);
    a.load(Size::DW, 0, 0, 0);
}

/// r8 = the stamp's entry, made (zeros) if missing; to `none` when the
/// table has none for it.
fn entry(a: &mut Asm, stamps: &Map, none: Label) {
    let have = a.label();
    let lookup = |a: &mut Asm| {
        a.ld_map(1, stamps);
        a.mov_reg(2, FP);
        a.add_imm(2, SLOT_STAMP.into());
        a.call(helper::MAP_LOOKUP_ELEM);
    };
    lookup(a);
    a.jne_imm(0, 0, have);
    // Zeros for the value: the scratch words below the stamp's slot.
    for w in 0..3 {
        a.store_imm(Size::DW, FP, W_ZEROS + 8 * w, 0);
    }
    // BPF_NOEXIST: another CPU may have made it.
    super::programs::update_from_stack(a, stamps, (SLOT_STAMP, W_ZEROS), 1);
    lookup(a);
    a.jeq_imm(0, 0, none);
    a.bind(have);
    a.mov_reg(8, 0);
}

/// Add the record's pages read to the entry at r8 (the bound in r9);
/// the record that crosses the bound judges the stamp.
fn read(
    a: &mut Asm,
    (index, last): ((i16, Size), (i16, Size)),
    counters: &Map,
    tracked: Tables<'_>,
    done: Label,
) {
    let (crossed, cold) = (a.label(), a.label());
    a.load(last.1, 1, CTX, last.0);
    a.load(index.1, 2, CTX, index.0);
    a.sub_reg(1, 2);
    a.add_imm(1, 1);
    a.store(Size::DW, FP, W_PAGES, 1);
    a.atomic_fetch_add(8, 0, 1);
    // Before < bound <= after.
    a.jlt_reg(1, 9, crossed);
    a.ja(done);
    a.bind(crossed);
    a.load(Size::DW, 2, FP, W_PAGES);
    a.add_reg(1, 2);
    a.jlt_reg(1, 9, done);
    a.store(Size::DW, FP, W_PAGES, 1);
    counter(a, counters, SHARE_KEY, done);
    a.load(Size::DW, 3, 8, 8);
    a.mul_reg(3, 0);
    a.load(Size::DW, 1, FP, W_PAGES);
    a.jlt_reg(1, 3, cold);
    a.store_imm(Size::DW, 8, STATE_AT as i16, LET_GO as i32);
    super::followed::untrack_current(a, tracked);
    a.ja(done);
    a.bind(cold);
    a.store_imm(Size::DW, 8, STATE_AT as i16, KEPT as i32);
}
