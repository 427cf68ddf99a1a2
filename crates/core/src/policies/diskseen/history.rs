//! DiskSeen's learned history across processes: the block table's access
//! timestamps (§3.1), which history-aware prefetching (§3.4) matches the
//! current trail against. The paper's prototype keeps one table in kernel
//! memory for the whole system and its life ("old history information
//! could be saved on disk for future use", §3.1); here a process that ends
//! saves it and the next one loads it.
//!
//! With `shared=on` (the default) the table is the history store's, one
//! for every program ([`crate::Policy::shared_history_name`]): a trail
//! program A left is followed when program B reads the same blocks. Two
//! processes may load the same table and end in any order, so a save
//! *merges* ([`DiskSeen::merge_shared`]): the stored table's stamps stay,
//! and this process's own stamps (those after the counter it loaded) are
//! added after the stored counter, as if it had run after everything
//! saved so far. Worked example (`shared_tests.rs`): A and B both load a
//! table of counter 100; each stamps 100 blocks of its own (its counter
//! reaches 200); A saves first (its stamps stay 101..200, counter 200),
//! then B (its stamps become 201..300, counter 300). Each block keeps its
//! four newest stamps, the table is purged to `table_mib` (§2.2) and
//! cleared progressively past 7/8 of the 31-bit space (§3.1) as in a run.
//! With `shared=off` the table is saved per application and policy spec
//! ([`crate::Policy::save_history`]), the behaviour before.
//!
//! Blob (both): `ODSK1`, the access counter (u64), then per block with any
//! timestamp: device (u32), LBN (u64) and its four timestamps (u64 each,
//! newest first, 0 = none), all little-endian. Timestamps are shifted so
//! the oldest is 1: only their order and differences matter (the gap
//! threshold T, §3.3.1). Status bits are per run and not saved.

use super::table::{BlockTable, TIMESTAMPS, TS_BITS};
use super::{purge_to_budget, DiskSeen};

const MAGIC: &[u8] = b"ODSK1";
const ENTRY_BYTES: usize = 4 + 8 + 8 * TIMESTAMPS;

/// The name of the shared table in the store (one per format: every
/// parameter set and stack of DiskSeen shares it).
pub const SHARED_NAME: &str = "diskseen.block-table";

/// One saved block: (device, LBN, timestamps newest first).
type Saved = (u32, u64, [u64; TIMESTAMPS]);

impl DiskSeen {
    /// The block table's timestamps as a blob (see the module docs).
    pub(super) fn encode_history(&self) -> Vec<u8> {
        encode(&self.table, self.counter)
    }

    /// Replace the table with a blob from [`DiskSeen::encode_history`];
    /// checked whole before anything changes. Its stamps count as this
    /// process's own at a shared save (`loaded_counter` 0): a table saved
    /// per application before `shared` existed joins the shared one.
    pub(super) fn decode_history(&mut self, data: &[u8]) -> Result<(), String> {
        let (counter, saved) = parse(data)?;
        self.table = table_of(&saved);
        self.counter = counter;
        self.purge_cut = 0;
        self.loaded_counter = 0;
        Ok(())
    }

    /// Replace the table with the store's shared one; a later
    /// [`DiskSeen::merge_shared`] adds only the stamps after it.
    pub(super) fn decode_shared(&mut self, data: &[u8]) -> Result<(), String> {
        self.decode_history(data)?;
        self.loaded_counter = self.counter;
        Ok(())
    }

    /// The shared table to store, given the one `stored` now: see the
    /// module docs. `None` when this process stamped nothing (nothing to
    /// add). A `stored` blob that does not parse is replaced (its load was
    /// a warning already).
    pub(super) fn merge_shared(&self, stored: Option<&[u8]>) -> Option<Vec<u8>> {
        let own = self.counter.saturating_sub(self.loaded_counter);
        if own == 0 {
            return None;
        }
        let (stored_counter, saved) = stored.and_then(|b| parse(b).ok()).unwrap_or_default();
        let counter = stored_counter + own;
        let mut table = table_of(&saved);
        // §3.1: room for the new stamps within 31 bits; stamps older than
        // the cut are gone from the table and are not added either.
        let mut cut = 0;
        while table.needs_clearing(counter) {
            cut = cut.max(table.clear_progressively(counter));
        }
        let shift = stored_counter;
        let loaded = self.loaded_counter;
        self.table.for_each(|dev, lbn, _| {
            let ts = self.table.timestamps(dev, lbn);
            // Oldest first: each block keeps its four newest.
            for &t in ts.iter().rev().filter(|&&t| t > loaded) {
                let t = t - loaded + shift;
                if t >= cut.max(1) {
                    table.stamp(dev, lbn, t);
                }
            }
        });
        let mut purge_cut = cut;
        purge_to_budget(&mut table, self.p.table_mib, &mut purge_cut, counter);
        Some(encode(&table, counter))
    }
}

/// `table` and `counter` as a blob (see the module docs).
fn encode(table: &BlockTable, counter: u64) -> Vec<u8> {
    let shift = table.oldest().unwrap_or(1).saturating_sub(1);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(counter - shift).to_le_bytes());
    table.for_each(|dev, lbn, _| {
        let ts = table.timestamps(dev, lbn);
        if ts[0] == 0 {
            return;
        }
        out.extend_from_slice(&dev.to_le_bytes());
        out.extend_from_slice(&lbn.to_le_bytes());
        for t in ts {
            out.extend_from_slice(&t.saturating_sub(shift).to_le_bytes());
        }
    });
    out
}

/// A table holding the parsed blocks.
fn table_of(saved: &[Saved]) -> BlockTable {
    let mut table = BlockTable::new();
    for (dev, lbn, ts) in saved {
        for &t in ts.iter().rev().filter(|&&t| t != 0) {
            table.stamp(*dev, *lbn, t);
        }
    }
    table
}

fn parse(data: &[u8]) -> Result<(u64, Vec<Saved>), String> {
    let rest = data
        .strip_prefix(MAGIC)
        .ok_or("not a DiskSeen history (bad magic)")?;
    let (counter, rest) = rest
        .split_first_chunk::<8>()
        .ok_or("DiskSeen history truncated")?;
    let counter = u64::from_le_bytes(*counter);
    if counter >= 1 << TS_BITS {
        return Err(format!(
            "DiskSeen history: counter {counter} beyond 31 bits"
        ));
    }
    if !rest.len().is_multiple_of(ENTRY_BYTES) {
        return Err(format!(
            "DiskSeen history: {} bytes of blocks is not a whole number of {ENTRY_BYTES}-byte entries",
            rest.len()
        ));
    }
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let mut saved = Vec::with_capacity(rest.len() / ENTRY_BYTES);
    for e in rest.chunks_exact(ENTRY_BYTES) {
        let dev = u32::from_le_bytes(e[..4].try_into().expect("4 bytes"));
        let lbn = u64_at(e, 4);
        let mut ts = [0u64; TIMESTAMPS];
        for (i, t) in ts.iter_mut().enumerate() {
            *t = u64_at(e, 12 + 8 * i);
        }
        // Newest first, each within (0, counter]; zeros only at the end.
        let ordered = ts.windows(2).all(|w| w[1] == 0 || w[1] < w[0]);
        if ts[0] == 0 || ts[0] > counter || !ordered || lbn >= 1 << 40 {
            return Err(format!(
                "DiskSeen history: block {dev}:{lbn} has timestamps {ts:?} (counter {counter})"
            ));
        }
        saved.push((dev, lbn, ts));
    }
    Ok((counter, saved))
}
