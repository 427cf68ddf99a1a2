//! The access list (libprefetch §4.2): a bounded buffer of future accesses
//! that the application fills with `request_prefetching`, and the
//! application's position in it, advanced by its reads (§4.1).
//!
//! - **Modes.** [`Mode::Replace`] clears the list; [`Mode::Append`] adds to
//!   its end; [`Mode::AfterMark`] replaces everything after the most
//!   recently accessed marked entry (or, if no marked entry of the current
//!   list has been accessed, everything not yet accessed).
//! - **Bound.** At most `capacity` entries are held; entries already passed
//!   are dropped first. [`AccessList::request`] returns how many entries it
//!   accepted, fewer than offered once the buffer is full (§4.2).
//! - **Position.** [`AccessList::observe`] finds an accessed page at or after
//!   the position. Entries skipped over (pages the application found in its
//!   own cache) are passed, and a skipped marked entry still becomes the
//!   "last marked" one (§4.1: "the most recent marked page need not have
//!   actually been read, as long as subsequent pages were read"). A page
//!   equal to the one just observed (a page read in pieces) does not move
//!   the position. A page found nowhere ahead means the program strayed.

use std::collections::VecDeque;

/// One access-list entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListEntry {
    /// File handle (the caller's numbering).
    pub file: u64,
    /// Page within the file (4 KiB pages).
    pub page: u64,
    /// A landmark the callback can locate progress by (§4.1).
    pub marked: bool,
}

/// How `request_prefetching` changes the list (§4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Replace the whole list.
    Replace,
    /// Append to the list.
    Append,
    /// Replace the part after the most recently accessed marked entry.
    AfterMark,
}

/// What an observed access was, relative to the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The same page as the previous observation: position unchanged.
    Same,
    /// Found at absolute index `index`; `skipped` entries were passed over.
    OnList {
        /// Absolute index of the matched entry.
        index: u64,
        /// Entries between the old position and the match.
        skipped: u64,
    },
    /// Not on the list ahead of the position: the program strayed.
    Strayed,
}

/// The bounded access list with position tracking (see the module docs).
#[derive(Clone, Debug)]
pub struct AccessList {
    entries: VecDeque<ListEntry>,
    /// Absolute index of `entries[0]`.
    base: u64,
    /// Absolute index of the next entry expected.
    pos: u64,
    /// Absolute index of the most recently accessed (or passed) marked
    /// entry of the current list, if it is still held.
    mark_index: Option<u64>,
    /// That entry (kept after the list is replaced, for the callback).
    mark_entry: Option<ListEntry>,
    last_seen: Option<(u64, u64)>,
    capacity: usize,
}

impl AccessList {
    /// An empty list holding at most `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> AccessList {
        AccessList {
            entries: VecDeque::new(),
            base: 0,
            pos: 0,
            mark_index: None,
            mark_entry: None,
            last_seen: None,
            capacity: capacity.max(1),
        }
    }

    /// Maximum entries held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries held (passed ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Absolute index of the next expected entry.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Entries from the position to the end.
    pub fn remaining(&self) -> u64 {
        (self.base + self.entries.len() as u64).saturating_sub(self.pos)
    }

    /// The most recently accessed (or passed) marked entry.
    pub fn last_marked(&self) -> Option<ListEntry> {
        self.mark_entry
    }

    /// The entry at absolute index `index`, if held.
    pub fn get(&self, index: u64) -> Option<&ListEntry> {
        index
            .checked_sub(self.base)
            .and_then(|i| self.entries.get(i as usize))
    }

    /// Entries from the position on, in order.
    pub fn upcoming(&self) -> impl Iterator<Item = &ListEntry> + '_ {
        let skip = (self.pos - self.base) as usize;
        self.entries.iter().skip(skip)
    }

    /// Drop passed entries (keeping the last marked one, which
    /// [`Mode::AfterMark`] cuts after).
    fn compact(&mut self) {
        let keep_from = self.mark_index.map_or(self.pos, |m| m.min(self.pos));
        while self.base < keep_from && !self.entries.is_empty() {
            self.entries.pop_front();
            self.base += 1;
        }
    }

    /// Apply `mode` with `new` entries; returns how many were accepted
    /// (the rest did not fit in the buffer).
    pub fn request(&mut self, new: &[ListEntry], mode: Mode) -> usize {
        match mode {
            Mode::Replace => {
                self.entries.clear();
                self.base = self.pos;
                self.mark_index = None;
                self.last_seen = None;
            }
            Mode::Append => {}
            Mode::AfterMark => {
                let cut = match self.mark_index {
                    Some(m) if m >= self.base => m + 1,
                    _ => self.pos,
                };
                self.entries.truncate((cut - self.base) as usize);
                if self.pos > cut {
                    // The program is somewhere after the mark; the new list
                    // describes from the mark on, observe() will find it.
                    self.pos = cut;
                }
                self.last_seen = None;
            }
        }
        self.compact();
        let room = self.capacity.saturating_sub(self.entries.len());
        let n = new.len().min(room);
        self.entries.extend(&new[..n]);
        n
    }

    /// The program accessed `page` of `file` (see the module docs).
    pub fn observe(&mut self, file: u64, page: u64) -> Observed {
        if self.last_seen == Some((file, page)) {
            return Observed::Same;
        }
        self.last_seen = Some((file, page));
        let start = (self.pos - self.base) as usize;
        let found = self
            .entries
            .iter()
            .skip(start)
            .position(|e| e.file == file && e.page == page);
        let Some(off) = found else {
            return Observed::Strayed;
        };
        for i in start..=start + off {
            if self.entries[i].marked {
                self.mark_index = Some(self.base + i as u64);
                self.mark_entry = Some(self.entries[i]);
            }
        }
        let index = self.base + (start + off) as u64;
        self.pos = index + 1;
        Observed::OnList {
            index,
            skipped: off as u64,
        }
    }
}
