//! History shared across programs: a program with no launch set of its
//! own that starts reading, in the same order, files another
//! application's launch set holds gets that set replayed from there (a
//! tree `diff -r` read yesterday helps `grep -r` today).
//!
//! DiskSeen shares its block-level trails among all programs (§4: the
//! history is the disk's, not a program's) and EPCM's tries are keyed by
//! file, not by program; the daemon's unit of history is the launch set,
//! so it shares those: an [`Index`] from each file to the sets holding it
//! and where each first reads it, and per new launch a [`Matcher`] that
//! looks for [`MATCH_FILES`] files read one after another at increasing
//! positions of one set. Only files at most [`SPECIFIC_MAX`] sets hold
//! count: shared libraries and locale files, read by every program in
//! the same order, would match any two programs. The daemon replays a
//! match once its launch is seen to read from storage
//! (`Daemon::replay_shared_if_cold`): a launch reading from memory has
//! nothing to gain from it.

use outrider_store::AppHistory;
use rustc_hash::{FxHashMap, FxHashSet};

/// Files read in a row, in one set's order, that make a match.
pub const MATCH_FILES: u32 = 3;
/// A file held by more sets than this identifies no program.
pub const SPECIFIC_MAX: usize = 2;
/// Files indexed at most (about 48 bytes each); beyond it the index is
/// emptied and filled again by the sets saved from then on.
pub const MAX_FILES: usize = 1 << 17;

/// (dev, ino) of a file.
type Key = (u64, u64);

/// Which launch sets hold each file, and at which position of their
/// access list they first read it.
#[derive(Default)]
pub struct Index {
    /// Per file: (set slot, position), at most [`SPECIFIC_MAX`] + 1 (one
    /// more marks the file as common).
    files: FxHashMap<Key, Vec<(u32, u32)>>,
    /// Set key per slot; `None` once replaced by a newer slot.
    sets: Vec<Option<String>>,
    slot_of: FxHashMap<String, u32>,
}

impl Index {
    /// Index launch set `h`, saved under `key` (replacing what an earlier
    /// save of `key` indexed).
    pub fn add(&mut self, key: &str, h: &AppHistory) {
        if self.files.len() >= MAX_FILES {
            *self = Index::default();
        }
        if let Some(old) = self.slot_of.remove(key) {
            self.sets[old as usize] = None;
        }
        let slot = self.sets.len() as u32;
        self.sets.push(Some(key.to_string()));
        self.slot_of.insert(key.to_string(), slot);
        let ids = crate::launchset::file_keys(h);
        let mut first = FxHashSet::default();
        for (pos, a) in h.accesses.iter().enumerate() {
            let Some(&k) = ids.get(&a.file) else { continue };
            if !first.insert(k) {
                continue;
            }
            let e = self.files.entry(k).or_default();
            e.retain(|(s, _)| self.sets[*s as usize].is_some());
            if e.len() <= SPECIFIC_MAX {
                e.push((slot, pos as u32));
            }
        }
    }

    /// The live sets holding file `k`, when few enough hold it to
    /// identify a program.
    fn holders(&self, k: Key) -> impl Iterator<Item = (u32, u32)> + '_ {
        let e = self.files.get(&k).map_or(&[][..], Vec::as_slice);
        let live = || e.iter().filter(|(s, _)| self.sets[*s as usize].is_some());
        let specific = live().count() <= SPECIFIC_MAX;
        live().filter(move |_| specific).copied()
    }

    /// The key of set `slot`, if not replaced.
    fn key(&self, slot: u32) -> Option<&str> {
        self.sets.get(slot as usize)?.as_deref()
    }

    /// Files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Nothing indexed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// One launch's search for a set it follows.
#[derive(Default)]
pub struct Matcher {
    seen: FxHashSet<Key>,
    /// The set and position the last counted file matched.
    last: Option<(u32, u32)>,
    run: u32,
    /// A match was made (or given up on): nothing more to do.
    pub done: bool,
}

impl Matcher {
    /// The launch read file `k`; when this makes [`MATCH_FILES`] files
    /// in a row at increasing positions of one set, that set's key and
    /// the position to replay it from (the next access after this file's
    /// first).
    pub fn read(&mut self, idx: &Index, k: Key) -> Option<(String, usize)> {
        if self.done || !self.seen.insert(k) {
            return None;
        }
        let holders: Vec<(u32, u32)> = idx.holders(k).collect();
        if holders.is_empty() {
            return None; // a file no set identifies: neither for nor against
        }
        let follows = self
            .last
            .and_then(|(s, p)| holders.iter().find(|(hs, hp)| *hs == s && *hp > p));
        match follows {
            Some(&next) => {
                self.run += 1;
                self.last = Some(next);
            }
            None => {
                self.run = 1;
                self.last = Some(holders[0]);
            }
        }
        if self.run < MATCH_FILES {
            return None;
        }
        self.done = true;
        let (s, p) = self.last?;
        Some((idx.key(s)?.to_string(), p as usize + 1))
    }
}

/// The part of `h` from access `from` on (its files kept whole: the
/// replay looks each up by id).
pub fn from_position(h: &AppHistory, from: usize) -> AppHistory {
    AppHistory {
        exe: h.exe.clone(),
        args: h.args.clone(),
        cwd: h.cwd.clone(),
        runs: h.runs,
        files: h.files.clone(),
        accesses: h.accesses.get(from..).unwrap_or(&[]).to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrider_store::{AccessRecord, FileRecord};

    /// A set reading files `inos` (device 1) in that order, one page each.
    fn set(inos: &[u64]) -> AppHistory {
        AppHistory {
            files: (inos.iter().enumerate())
                .map(|(i, &ino)| FileRecord {
                    id: i as u32 + 1,
                    dev: 1,
                    ino,
                    ..FileRecord::default()
                })
                .collect(),
            accesses: (0..inos.len())
                .map(|i| AccessRecord {
                    file: i as u32 + 1,
                    page: 0,
                    pages: 1,
                })
                .collect(),
            ..AppHistory::default()
        }
    }

    #[test]
    fn three_files_in_the_order_of_a_set_replay_it_from_there() {
        let mut idx = Index::default();
        // diff -r read a1 b1 a2 b2 a3 b3 a4 b4.
        idx.add(
            "exe:/usr/bin/diff [diff -r]",
            &set(&[11, 21, 12, 22, 13, 23, 14, 24]),
        );
        let mut m = Matcher::default();
        // grep -r reads its own library first, then a1 a2 a3.
        assert_eq!(m.read(&idx, (1, 99)), None);
        assert_eq!(m.read(&idx, (1, 11)), None);
        assert_eq!(m.read(&idx, (1, 12)), None);
        let got = m.read(&idx, (1, 13));
        assert_eq!(
            got,
            Some(("exe:/usr/bin/diff [diff -r]".to_string(), 5)),
            "after a3 (position 4)"
        );
        assert!(m.done);
        let h = set(&[11, 21, 12, 22, 13, 23, 14, 24]);
        assert_eq!(from_position(&h, 5).accesses.len(), 3, "b3 a4 b4");
        assert_eq!(m.read(&idx, (1, 14)), None, "one match per launch");
    }

    #[test]
    fn files_out_of_order_or_common_to_many_sets_do_not_match() {
        let mut idx = Index::default();
        idx.add("exe:/a", &set(&[1, 2, 3, 50]));
        let mut m = Matcher::default();
        for ino in [3, 2, 1] {
            assert_eq!(m.read(&idx, (1, ino)), None, "backwards");
        }
        // A file every set holds (libc) identifies nothing.
        for k in ["exe:/b", "exe:/c", "exe:/d"] {
            idx.add(k, &set(&[7, 8, 9]));
        }
        let mut m = Matcher::default();
        for ino in [7, 8, 9] {
            assert_eq!(m.read(&idx, (1, ino)), None, "common files");
        }
        // A set saved again replaces its positions.
        idx.add("exe:/a", &set(&[50, 3, 2, 1]));
        let mut m = Matcher::default();
        assert_eq!(m.read(&idx, (1, 3)), None);
        assert_eq!(m.read(&idx, (1, 2)), None);
        assert_eq!(m.read(&idx, (1, 1)), Some(("exe:/a".to_string(), 4)));
    }
}
