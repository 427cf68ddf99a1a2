//! DiskSeen's learned history across processes: the block table's access
//! timestamps (§3.1), which history-aware prefetching (§3.4) matches the
//! current trail against. The paper's prototype keeps the table in kernel
//! memory for the life of the system; a process that ends here saves it
//! ([`crate::Policy::save_history`]) and the next one loads it.
//!
//! Blob: `ODSK1`, the access counter (u64), then per block with any
//! timestamp: device (u32), LBN (u64) and its four timestamps (u64 each,
//! newest first, 0 = none), all little-endian. Timestamps are shifted so
//! the oldest is 1: only their order and differences matter (the gap
//! threshold T, §3.3.1). Status bits are per run and not saved.

use super::table::{BlockTable, TIMESTAMPS, TS_BITS};
use super::DiskSeen;

const MAGIC: &[u8] = b"ODSK1";
const ENTRY_BYTES: usize = 4 + 8 + 8 * TIMESTAMPS;

/// One saved block: (device, LBN, timestamps newest first).
type Saved = (u32, u64, [u64; TIMESTAMPS]);

impl DiskSeen {
    /// The block table's timestamps as a blob (see the module docs).
    pub(super) fn encode_history(&self) -> Vec<u8> {
        let shift = self.table.oldest().unwrap_or(1).saturating_sub(1);
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(self.counter - shift).to_le_bytes());
        self.table.for_each(|dev, lbn, _| {
            let ts = self.table.timestamps(dev, lbn);
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

    /// Replace the table with a blob from [`DiskSeen::encode_history`];
    /// checked whole before anything changes.
    pub(super) fn decode_history(&mut self, data: &[u8]) -> Result<(), String> {
        let (counter, saved) = parse(data)?;
        let mut table = BlockTable::new();
        for (dev, lbn, ts) in &saved {
            for &t in ts.iter().rev().filter(|&&t| t != 0) {
                table.stamp(*dev, *lbn, t);
            }
        }
        self.table = table;
        self.counter = counter;
        self.purge_cut = 0;
        Ok(())
    }
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
