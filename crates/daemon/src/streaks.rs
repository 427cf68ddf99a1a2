//! How a launch set ages: per file, how many launches in a row read it.
//!
//! An application's key names files by their role (`cat <file>`,
//! `python3 <file>`, [`crate::launchset::app_name`]), so the set the last
//! launch left holds two kinds of file: those every launch reads (the
//! interpreter, its libraries, the program's own data) and those only
//! that launch read (the file it was given). Replaying the second kind
//! for the next launch, given another file, is all waste, and the
//! benefit gate then throttles the whole set, the useful part with it.
//!
//! So each saved set carries a *streak* per file: 1 when the launch that
//! saved it read the file and the set before did not hold it, else the
//! set before's streak plus one (the Windows Prefetcher and IORap likewise
//! build what they replay from more than one traced launch). A set saved
//! by two or more launches replays only its files with a streak of at
//! least [`STABLE`]; a set saved by one launch replays whole (one launch
//! tells nothing about which files stay). A file dropped this way comes
//! back after two launches in a row read it. Sets saved before streaks
//! existed (no blob) replay whole.

use outrider_store::AppHistory;
use rustc_hash::{FxHashMap, FxHashSet};

/// Launches in a row that must have read a file for it to be replayed.
pub const STABLE: u32 = 2;

/// One record of the encoded form: dev, ino (u64 LE each), streak (u32 LE).
const RECORD: usize = 20;

/// Streak per file, by (dev, ino).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Streaks(FxHashMap<(u64, u64), u32>);

impl Streaks {
    /// Every file of `h` at streak `n`.
    pub fn all(h: &AppHistory, n: u32) -> Streaks {
        Streaks(h.files.iter().map(|f| ((f.dev, f.ino), n)).collect())
    }

    /// The streaks of `set`, saved by a launch that followed a set with
    /// streaks `prev` (`None`: no set before).
    pub fn after(prev: Option<&Streaks>, set: &AppHistory) -> Streaks {
        let before = |k: &(u64, u64)| prev.and_then(|p| p.0.get(k)).copied().unwrap_or(0);
        Streaks(
            (set.files.iter())
                .map(|f| ((f.dev, f.ino), before(&(f.dev, f.ino)).saturating_add(1)))
                .collect(),
        )
    }

    /// Streak of file (dev, ino); 0 when the set does not hold it.
    pub fn of(&self, dev: u64, ino: u64) -> u32 {
        self.0.get(&(dev, ino)).copied().unwrap_or(0)
    }

    /// What of `h` (saved by `h.runs` launches) to replay: with two or
    /// more launches behind it, only its files read [`STABLE`] launches
    /// in a row and their accesses; else all of it.
    pub fn stable_part(&self, mut h: AppHistory) -> AppHistory {
        if h.runs < 2 {
            return h;
        }
        let keep: FxHashSet<u32> = (h.files.iter())
            .filter(|f| self.of(f.dev, f.ino) >= STABLE)
            .map(|f| f.id)
            .collect();
        h.files.retain(|f| keep.contains(&f.id));
        h.accesses.retain(|a| keep.contains(&a.file));
        h
    }

    /// Is [`Streaks::stable_part`] of `h` all of it?
    pub fn keeps_all(&self, h: &AppHistory) -> bool {
        h.runs < 2 || (h.files.iter()).all(|f| self.of(f.dev, f.ino) >= STABLE)
    }

    /// The stored form: 20-byte records (dev, ino: u64 LE; streak: u32
    /// LE), sorted.
    pub fn encode(&self) -> Vec<u8> {
        let mut v: Vec<_> = self.0.iter().collect();
        v.sort_unstable();
        let mut out = Vec::with_capacity(v.len() * RECORD);
        for (&(dev, ino), &n) in v {
            out.extend_from_slice(&dev.to_le_bytes());
            out.extend_from_slice(&ino.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        out
    }

    /// [`Streaks::encode`]'s form back; `None` if it is not that.
    pub fn decode(b: &[u8]) -> Option<Streaks> {
        if !b.len().is_multiple_of(RECORD) {
            return None;
        }
        let u64_at = |c: &[u8], i: usize| u64::from_le_bytes(c[i..i + 8].try_into().expect("8"));
        Some(Streaks(
            b.chunks_exact(RECORD)
                .map(|c| {
                    let n = u32::from_le_bytes(c[16..20].try_into().expect("4"));
                    ((u64_at(c, 0), u64_at(c, 8)), n)
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrider_store::{AccessRecord, FileRecord};

    /// A set of one page of each file (device 1, inode = id), saved by
    /// `runs` launches.
    fn set(inos: &[u64], runs: u64) -> AppHistory {
        AppHistory {
            runs,
            files: (inos.iter())
                .map(|&ino| FileRecord {
                    id: ino as u32,
                    dev: 1,
                    ino,
                    ..FileRecord::default()
                })
                .collect(),
            accesses: (inos.iter())
                .map(|&ino| AccessRecord {
                    file: ino as u32,
                    page: 0,
                    pages: 1,
                })
                .collect(),
            ..AppHistory::default()
        }
    }

    /// `cat a`, `cat b`, `cat a`, `cat a`: the library (1) stays, the file
    /// given (2 or 3) is replayed once two launches in a row read it.
    #[test]
    fn a_file_only_the_last_launch_read_is_not_replayed() {
        let first = set(&[1, 2], 1);
        let s1 = Streaks::after(None, &first);
        assert_eq!(
            s1.stable_part(first.clone()),
            first,
            "one launch: all of it"
        );
        let second = set(&[1, 3], 2);
        let s2 = Streaks::after(Some(&s1), &second);
        assert_eq!((s2.of(1, 1), s2.of(1, 3), s2.of(1, 2)), (2, 1, 0));
        assert_eq!(s2.stable_part(second.clone()), set(&[1], 2));
        let third = set(&[1, 2], 3);
        let s3 = Streaks::after(Some(&s2), &third);
        assert_eq!(s3.stable_part(third.clone()), set(&[1], 3));
        let fourth = set(&[1, 2], 4);
        let s4 = Streaks::after(Some(&s3), &fourth);
        assert_eq!(
            s4.stable_part(fourth.clone()),
            fourth,
            "read twice in a row"
        );
    }

    #[test]
    fn streaks_survive_their_stored_form_and_refuse_a_torn_one() {
        let s = Streaks::after(Some(&Streaks::all(&set(&[1], 1), 4)), &set(&[1, 9], 2));
        let b = s.encode();
        assert_eq!(b.len(), 2 * RECORD);
        assert_eq!(Streaks::decode(&b), Some(s));
        assert_eq!(Streaks::decode(&b[..RECORD + 1]), None);
        assert_eq!(Streaks::decode(&[]), Some(Streaks::default()));
    }
}
