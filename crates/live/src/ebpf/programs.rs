//! The programs of [`super`]: one per tracepoint, generated with the
//! offsets of the running kernel's `format` files (the module comment of
//! [`super`] says what each does), and the registers and stack slots they
//! share with [`super::followed`], [`super::hot`], [`super::raw`] and
//! [`super::repeats`].

use super::followed::{self, Tables};
use super::{exits, hot, raw, repeats, runs, Scope, NAME_BYTES, WAKE_SHIFT};
use crate::tracefs::format::EventFormat;
use outrider_sys::bpf::{helper, Asm, Map, Size, FP};
use std::io;

/// Key of the counters map's record-everyone switch (key 0: lost records).
pub(super) const EVERYONE_KEY: u32 = 1;
/// Key of the counters map's count of execs dropped as quiet.
pub(super) const QUIET_KEY: u32 = 2;
/// `bpf_ringbuf_submit` flags.
pub(super) const RB_NO_WAKEUP: i32 = 1;
pub(super) const RB_FORCE_WAKEUP: i32 = 2;

/// When a record wakes the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wake {
    /// The ring's own notification (`Scope::Everyone`).
    Default,
    /// At once.
    Now,
    /// When it takes the ring past a multiple of its wake bytes
    /// ([`wake_when_full`]).
    WhenFull,
    /// So, or at once when the stack slot holds [`RB_FORCE_WAKEUP`].
    WhenFullOr(i16),
}

/// What a program does beyond emitting its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Emit,
    /// `sched_process_exec`: under [`Scope::Execs`], follow the task.
    Exec,
    /// `sched_process_fork`: follow the child (offset of `child_pid`).
    Fork(i16),
    /// `sched_process_exit`: stop following the thread; under
    /// [`Scope::Execs`] with [`Maps::waits`], emit its record with the
    /// thread's block-I/O wait appended, else nothing.
    Exit,
}

/// Registers of the generated programs.
pub(super) const CTX: u8 = 6;
pub(super) const TID: u8 = 7;
pub(super) const REC: u8 = 8;
pub(super) const UNTIL: u8 = 9;
/// Stack slots (offsets from the frame pointer).
pub(super) const SLOT_TID: i16 = -4;
pub(super) const SLOT_CHILD: i16 = -8;
pub(super) const SLOT_ZERO: i16 = -16;
pub(super) const SLOT_NAME: i16 = -24;
pub(super) const SLOT_NAME_BUF: i16 = SLOT_NAME - NAME_BYTES;
/// The followed thread's stamp ([`Scope::Execs`]: its launch's exec).
pub(super) const SLOT_STAMP: i16 = SLOT_NAME_BUF - 8;
/// Index into the table of pages sent ([`repeats`]).
pub(super) const SLOT_SEEN: i16 = SLOT_STAMP - 4;
/// Words of [`repeats`]'s own.
pub(super) const SLOT_SCRATCH: i16 = SLOT_STAMP - 8 - 8 * repeats::SCRATCH_WORDS;

pub(super) struct Maps<'a> {
    pub(super) ring: &'a Map,
    pub(super) tracked: Tables<'a>,
    pub(super) counters: &'a Map,
    pub(super) quiet: Option<&'a Map>,
    pub(super) seen: Option<&'a Map>,
    pub(super) stamps: Option<&'a Map>,
    /// Whether a thread's sequential runs are cut ([`runs`]).
    pub(super) cut_runs: bool,
    /// Where an exiting thread's block-I/O wait is ([`exits::WaitOffsets`]).
    pub(super) waits: Option<exits::WaitOffsets>,
}

pub(super) fn role_of(f: &EventFormat) -> io::Result<Role> {
    Ok(match f.name.as_str() {
        "sched_process_fork" => {
            let c = f.field("child_pid").map_err(io::Error::other)?;
            if c.size != 4 || c.offset % 4 != 0 || c.offset < 8 {
                return Err(io::Error::other(format!(
                    "sched_process_fork: child_pid at {} size {}, expected an aligned 4-byte field",
                    c.offset, c.size
                )));
            }
            Role::Fork(c.offset as i16)
        }
        "sched_process_exit" => Role::Exit,
        "sched_process_exec" => Role::Exec,
        _ => Role::Emit,
    })
}

/// The end of the record's fixed fields (a `__data_loc` string's bytes lie
/// past them and are not needed).
pub(super) fn record_end(f: &EventFormat) -> usize {
    (f.fields.iter())
        .filter(|x| !x.name.starts_with("common_"))
        .map(|x| x.offset + x.size)
        .max()
        .unwrap_or(8)
        .max(8)
}

/// The program of one tracepoint (the module comment).
pub(super) fn program(
    f: &EventFormat,
    role: Role,
    scope: Scope,
    m: &Maps<'_>,
    raw: Option<(raw::Layout, raw::Offsets)>,
) -> io::Result<Vec<outrider_sys::bpf::Insn>> {
    let end = record_end(f);
    if end > 512 {
        return Err(io::Error::other(format!(
            "{}: record of {end} bytes, more than the 512 copied at most",
            f.name
        )));
    }
    let mut a = Asm::new();
    let out = a.label();
    let lost = a.label();
    a.mov_reg(CTX, 1);
    a.call(helper::GET_CURRENT_PID_TGID);
    a.mov32_reg(TID, 0);
    a.store(Size::W, FP, SLOT_TID, TID);
    // Under Scope::Execs the exec program appends its name's hash.
    let mut name = None;
    match (scope, role, m.quiet) {
        (Scope::Execs, Role::Exec, Some(quiet)) => {
            let loc = f.field("filename").map_err(io::Error::other)?;
            hash_name(&mut a, loc.offset as i16);
            pass_unless_quiet(&mut a, (quiet, m.counters), out);
            name = Some(SLOT_NAME);
        }
        (Scope::Everyone, _, _) | (Scope::Execs, Role::Exec, None) => {}
        (Scope::Execs, Role::Emit, _) => pass_tracked_or_switched_on(&mut a, m, out),
        _ => followed::pass(&mut a, m.tracked, out),
    }
    // Before anything is built for the record: most of a long run's go.
    let reads = runs::reads_of(f, raw.is_some()).filter(|_| m.cut_runs);
    if let (Role::Emit, Some(r)) = (role, reads) {
        runs::cut(&mut a, &r, out);
    }
    if let Some((layout, offsets)) = raw {
        raw::record(&mut a, layout, offsets);
    }
    let mut wake = match (scope, role) {
        (Scope::Execs, Role::Exec) => Wake::Now,
        (Scope::Execs, _) => Wake::WhenFull,
        _ => Wake::Default,
    };
    match (role, m.waits) {
        (Role::Exit, Some(waits)) if scope == Scope::Execs => {
            followed::untrack_current(&mut a, m.tracked);
            exits::blkio_wait(&mut a, waits, SLOT_NAME);
            name = Some(SLOT_NAME);
        }
        (Role::Exit, _) => {
            followed::untrack_current(&mut a, m.tracked);
            a.ja(out);
        }
        (Role::Fork(child_off), _) if scope != Scope::Everyone => {
            a.load(Size::W, 1, CTX, child_off);
            a.store(Size::W, FP, SLOT_CHILD, 1);
            followed::track(&mut a, m.tracked, SLOT_CHILD, lost);
        }
        (Role::Exec, _) if scope == Scope::Execs => {
            // A launch's stamp: the time of its exec.
            a.call(helper::KTIME_GET_NS);
            a.store(Size::DW, FP, SLOT_STAMP, 0);
            followed::track(&mut a, m.tracked, SLOT_TID, lost);
        }
        (Role::Emit, _) => {
            // Judged first: a page read again counts as read from memory.
            if let Some(stamps) = m.stamps {
                if hot::judge(&mut a, f, (stamps, m.counters, m.tracked), out) {
                    wake = Wake::WhenFullOr(hot::SLOT_WAKE);
                }
            }
            if let Some(seen) = m.seen {
                repeats::skip(&mut a, f, seen, out);
            }
        }
        _ => {}
    }
    if role != Role::Exit || name.is_some() {
        let stamped = role == Role::Exec && scope == Scope::Execs;
        emit(&mut a, (f.id, end, name), stamped, m, lost, wake);
        a.ja(out);
        a.bind(lost);
        count(&mut a, m.counters, 0, out);
    }
    a.bind(out);
    a.mov_imm(0, 0);
    a.exit();
    Ok(a.finish())
}

/// Hash the file name of the exec record (its `__data_loc` field at
/// `loc`: offset in the low 16 bits) to `SLOT_NAME`: its first
/// [`NAME_BYTES`] bytes, zero-padded, as 64-bit words mixed FNV-1a style
/// (xor, multiply by the FNV prime), then the high half folded in.
fn hash_name(a: &mut Asm, loc: i16) {
    for at in (SLOT_NAME_BUF..SLOT_NAME).step_by(8) {
        a.store_imm(Size::DW, FP, at, 0);
    }
    a.mov_reg(1, FP);
    a.add_imm(1, SLOT_NAME_BUF.into());
    a.mov_imm(2, NAME_BYTES.into());
    a.load(Size::W, 3, CTX, loc);
    a.and_imm(3, 0xffff);
    a.add_reg(3, CTX);
    a.call(helper::PROBE_READ_KERNEL_STR);
    a.ld_imm64(0, 0xcbf2_9ce4_8422_2325);
    a.ld_imm64(2, 0x0100_0000_01b3);
    for at in (SLOT_NAME_BUF..SLOT_NAME).step_by(8) {
        a.load(Size::DW, 1, FP, at);
        a.xor_reg(0, 1);
        a.mul_reg(0, 2);
    }
    a.mov_reg(1, 0);
    a.rsh_imm(1, 32);
    a.xor_reg(0, 1);
    a.store(Size::DW, FP, SLOT_NAME, 0);
}

/// Go on unless the name at `SLOT_NAME` is in `quiet` with a time still
/// to come; else count the exec in `counters` and go to `out`.
fn pass_unless_quiet(a: &mut Asm, (quiet, counters): (&Map, &Map), out: outrider_sys::bpf::Label) {
    let (pass, drop) = (a.label(), a.label());
    a.ld_map(1, quiet);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_NAME.into());
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jeq_imm(0, 0, pass);
    a.load(Size::DW, UNTIL, 0, 0);
    a.call(helper::KTIME_GET_NS);
    a.jlt_reg(0, UNTIL, drop);
    a.ja(pass);
    a.bind(drop);
    count(a, counters, QUIET_KEY, out);
    a.ja(out);
    a.bind(pass);
}

/// Add one to the counter `key` of `counters`, then go on (to `out` if
/// the counter is not there).
fn count(a: &mut Asm, counters: &Map, key: u32, out: outrider_sys::bpf::Label) {
    counter_at(a, counters, key, out);
    a.mov_imm(1, 1);
    a.atomic_add(0, 0, 1);
}

/// r0 = the address of counter `key` of `counters`; to `none` when it
/// is not there.
pub(super) fn counter_at(a: &mut Asm, counters: &Map, key: u32, none: outrider_sys::bpf::Label) {
    a.store_imm(Size::W, FP, SLOT_ZERO, key as i32);
    a.ld_map(1, counters);
    a.mov_reg(2, FP);
    a.add_imm(2, SLOT_ZERO.into());
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jeq_imm(0, 0, none);
}

/// `bpf_map_update_elem(map, FP + key, FP + value, flags)`: r0 = 0 when
/// done. Uses r1-r5.
pub(super) fn update_from_stack(a: &mut Asm, map: &Map, (key, value): (i16, i16), flags: i32) {
    a.ld_map(1, map);
    a.mov_reg(2, FP);
    a.add_imm(2, key.into());
    a.mov_reg(3, FP);
    a.add_imm(3, value.into());
    a.mov_imm(4, flags);
    a.call(helper::MAP_UPDATE_ELEM);
}

/// Go on as [`followed::pass`], or, for a thread not followed, when the
/// record-everyone switch is on, with stamp 0 and no entry (0 at
/// [`followed::ENTRY`]).
fn pass_tracked_or_switched_on(a: &mut Asm, m: &Maps<'_>, out: outrider_sys::bpf::Label) {
    let (untracked, pass) = (a.label(), a.label());
    followed::pass(a, m.tracked, untracked);
    a.ja(pass);
    a.bind(untracked);
    counter_at(a, m.counters, EVERYONE_KEY, out);
    a.load(Size::DW, 1, 0, 0);
    a.jeq_imm(1, 0, out);
    a.store_imm(Size::DW, FP, SLOT_STAMP, 0);
    a.mov_imm(followed::ENTRY, 0);
    a.bind(pass);
}

/// Reserve `[u64 time][header][fields][u64 name]` (the fields' `end`
/// rounded up to 8; the name, the u64 at stack slot `name`, only when
/// given), fill it and submit it with `wake` (`bpf_ringbuf_submit`
/// flags); to `lost` when the ring is full. The time is now, or, when
/// `stamped`, the stamp at `SLOT_STAMP` (an exec's: its reader then knows
/// the launch's stamp, [`super::EbpfSource::let_go`]). The fields are
/// copied in the largest aligned pieces that stay below `end`: the kernel
/// refuses to attach a program that reads past a tracepoint record's last
/// field (EACCES).
fn emit(
    a: &mut Asm,
    (id, end, name): (u16, usize, Option<i16>),
    stamped: bool,
    m: &Maps<'_>,
    lost: outrider_sys::bpf::Label,
    wake: Wake,
) {
    let span = end.div_ceil(8) * 8;
    let tail = if name.is_some() { 8 } else { 0 };
    a.ld_map(1, m.ring);
    let size = (16 + span - 8 + tail) as i32;
    a.mov_imm(2, size);
    a.mov_imm(3, 0);
    a.call(helper::RINGBUF_RESERVE);
    a.jeq_imm(0, 0, lost);
    a.mov_reg(REC, 0);
    if stamped {
        a.load(Size::DW, 0, FP, SLOT_STAMP);
    } else {
        a.call(helper::KTIME_GET_NS);
    }
    a.store(Size::DW, REC, 0, 0);
    a.store_imm(Size::H, REC, 8, i32::from(id));
    a.store_imm(Size::H, REC, 10, 0);
    a.store(Size::W, REC, 12, TID);
    let mut off = 8;
    while off < end {
        let size = [(8, Size::DW), (4, Size::W), (2, Size::H), (1, Size::B)]
            .into_iter()
            .find(|&(n, _)| off % n == 0 && off + n <= end)
            .map_or(Size::B, |(_, s)| s);
        a.load(size, 1, CTX, off as i16);
        a.store(size, REC, 8 + off as i16, 1);
        off += match size {
            Size::DW => 8,
            Size::W => 4,
            Size::H => 2,
            Size::B => 1,
        };
    }
    if let Some(slot) = name {
        a.load(Size::DW, 1, FP, slot);
        a.store(Size::DW, REC, (8 + span) as i16, 1);
    }
    let bytes = (8 + size as usize).next_multiple_of(8) as i32;
    match wake {
        Wake::Default => a.mov_imm(2, 0),
        Wake::Now => a.mov_imm(2, RB_FORCE_WAKEUP),
        Wake::WhenFull => wake_when_full(a, m.ring, bytes),
        Wake::WhenFullOr(slot) => {
            wake_when_full(a, m.ring, bytes);
            a.load(Size::DW, 1, FP, slot);
            a.or_reg(2, 1);
        }
    }
    a.mov_reg(1, REC);
    a.call(helper::RINGBUF_SUBMIT);
}

/// `bpf_ringbuf_submit`'s flags to r2 for a record of `bytes` (its
/// header included): no wake-up, unless it is the record that takes the
/// ring's unread bytes (`bpf_ringbuf_query`, this record counted) past a
/// multiple of [`WAKE_BYTES`](super::WAKE_BYTES), so a reader that waits long between polls
/// is still woken in time by a busy program. Woken at every record past
/// that point instead, `rg` over a tree in memory took 20% more CPU, in
/// its own context (waking a reader at nice 19 that could not run).
fn wake_when_full(a: &mut Asm, ring: &Map, bytes: i32) {
    let (full, done) = (a.label(), a.label());
    a.ld_map(1, ring);
    a.mov_imm(2, 0);
    a.call(helper::RINGBUF_QUERY);
    a.mov_reg(1, 0);
    a.add_imm(1, -bytes);
    a.rsh_imm(0, WAKE_SHIFT);
    a.rsh_imm(1, WAKE_SHIFT);
    a.jne_reg(0, 1, full);
    a.mov_imm(2, RB_NO_WAKEUP);
    a.ja(done);
    a.bind(full);
    a.mov_imm(2, RB_FORCE_WAKEUP);
    a.bind(done);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::format::parse_format;
    use crate::tracefs::format::tests::GET_PAGES;

    #[test]
    fn the_copy_ends_at_the_last_fixed_field() {
        let f = parse_format(GET_PAGES, "t").unwrap();
        assert_eq!(record_end(&f), 40);
    }
}
