//! The [`Recorder`]: what a launch (or the boot) read, in first-touch
//! order, each page once, up to its cap (the module comment of
//! [`crate::launchset`]).

use super::PAGE;
use outrider_core::FileId;
use outrider_live::files::{FileTable, FileTableOptions};
use outrider_live::history;
use outrider_store::{AccessRecord, AppHistory};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;

/// Pages of one recorded range at most (a `GetPages` of a huge read is
/// cut: the launch set is bounded by its cap anyway).
const MAX_RANGE_PAGES: u64 = 1 << 16;

/// Reads a [`Recorder`] holds at most ([`Recorder::holding`]): then
/// it records them and the rest as they come. A launch reading from
/// memory is judged at its `judge_from_memory_mib` (64 MiB by default),
/// before it gets here if its reads average 2 pages or more (`rg` over a source tree: ~8 a read). 32
/// bytes each: 256 KiB a launch, 16 MiB for 64 launches recorded at once.
const HELD_MAX: usize = 8192;

/// A read held ([`Recorder::holding`]).
#[derive(Clone, Copy, Debug)]
struct Held {
    id: FileId,
    index: u64,
    pages: u32,
    pid: u32,
    mapped: bool,
}

/// Pages a task read: `pages` pages of file (dev, ino) from `index`,
/// through page faults if `mapped` (an event of a mapping: a fault, or
/// the pages mapped around one).
#[derive(Clone, Copy, Debug)]
pub struct PagesRead {
    /// Device number of the file.
    pub dev: u64,
    /// Inode number of the file.
    pub ino: u64,
    /// First page.
    pub index: u64,
    /// Pages.
    pub pages: u64,
    /// Read through page faults.
    pub mapped: bool,
}

/// The reads of one launch (or of the boot), as they come, or held
/// until the launch is judged ([`Recorder::holding`]).
pub struct Recorder {
    table: FileTable,
    accesses: Vec<AccessRecord>,
    /// Reads not yet recorded ([`Recorder::holding`]), in their order,
    /// at most [`HELD_MAX`]; `None`: each is recorded as it comes.
    held: Option<Vec<Held>>,
    /// Pages recorded, as 64-page bitmaps keyed by (file, page / 64):
    /// 16 bytes of key and word per 64 pages where a set of (file,
    /// page) pairs held 16 per page.
    seen: FxHashMap<(u32, u64), u64>,
    /// Files the table resolved once (their identity is kept after the
    /// descriptor is closed): not opened again at every read. Resolving
    /// at every read reopened each file past the table's 64 descriptors
    /// per event; `open_by_handle_at`, `readlink` and `close` were a
    /// quarter of the daemon's CPU over the day in miniature (perf).
    /// Each with its pages as last seen ([`Recorder::end_page`]).
    resolved: FxHashMap<u32, u64>,
    /// Files read through page faults ([`outrider_store::FileRecord::mapped`]).
    mapped: FxHashSet<u32>,
    cap_pages: u64,
    /// Files held at most (`launch_files_max`, [`crate::config`]).
    files_max: usize,
    /// Pages recorded.
    pub pages: u64,
    /// Pages not recorded: over the cap, or of files not found.
    pub dropped_pages: u64,
}

impl Recorder {
    /// A recorder holding at most `cap_bytes` of `files_max` files.
    pub fn new(cap_bytes: u64, files_max: usize) -> Recorder {
        Recorder {
            held: None,
            table: FileTable::new(FileTableOptions {
                program_user: None,
                max_open: 64,
                ..FileTableOptions::default()
            }),
            accesses: Vec::new(),
            seen: FxHashMap::default(),
            resolved: FxHashMap::default(),
            mapped: FxHashSet::default(),
            cap_pages: cap_bytes / PAGE,
            files_max,
            pages: 0,
            dropped_pages: 0,
        }
    }

    /// A recorder like [`Recorder::new`] that holds the reads it is
    /// given, its files not opened, until [`Recorder::commit`] (the
    /// launch reads from storage) or [`Recorder::discard`] (from
    /// memory: nothing of it will be saved). Resolving a file opens it
    /// by its inode, looks at it and closes it, on the daemon's thread,
    /// while the program runs on the cores it needs: an `rg` never seen,
    /// over a tree in memory, had 3 170 files resolved before it was
    /// judged (at its 64 MiB) and dropped; `open_by_handle_at`, `close`
    /// and `fstatat` were 38% of the daemon's CPU in its runs (perf), and
    /// it ran at 0.92x of its speed with no daemon.
    pub fn holding(cap_bytes: u64, files_max: usize) -> Recorder {
        Recorder {
            held: Some(Vec::new()),
            ..Recorder::new(cap_bytes, files_max)
        }
    }

    /// Is it holding its reads ([`Recorder::holding`])?
    pub fn is_holding(&self) -> bool {
        self.held.is_some()
    }

    /// Record the reads held, and each read from now on as it comes.
    pub fn commit(&mut self) {
        for h in self.held.take().unwrap_or_default() {
            self.record(h.pid, h.id, h.index, u64::from(h.pages), h.mapped);
        }
    }

    /// Drop the reads held and any to come: the launch is not recorded.
    pub fn discard(&mut self) {
        self.held = Some(Vec::new());
        self.files_max = 0;
    }

    /// Task `pid` read `r`.
    pub fn read(&mut self, pid: u32, r: PagesRead) {
        let PagesRead {
            dev,
            ino,
            index,
            pages,
            mapped,
        } = r;
        let pages = pages.min(MAX_RANGE_PAGES);
        // A full set takes nothing more: no file is resolved for it (a
        // tree walker's launch opened, stamped and saved 31 577 files
        // after its cap, most of the daemon's CPU over the day in
        // miniature, perf).
        if self.is_full() {
            self.dropped_pages += pages;
            return;
        }
        let Some(id) = self.table.id_of(dev, ino) else {
            self.dropped_pages += pages;
            return;
        };
        if let Some(held) = &mut self.held {
            let h = Held {
                id,
                index,
                pages: pages as u32,
                pid,
                mapped,
            };
            held.push(h);
            if held.len() >= HELD_MAX {
                self.commit();
            }
            return;
        }
        self.record(pid, id, index, pages, mapped);
    }

    /// Record what task `pid` read of file `id`.
    fn record(&mut self, pid: u32, id: FileId, index: u64, pages: u64, mapped: bool) {
        if self.is_full() {
            self.dropped_pages += pages;
            return;
        }
        let Ok(fid) = u32::try_from(id.0) else {
            return;
        };
        // Only regular files the table can open are kept (not pipes,
        // not anonymous memory files).
        if !self.resolved.contains_key(&fid) {
            let f = (self.resolved.len() < self.files_max)
                .then(|| self.table.resolve(id, pid))
                .flatten();
            let Some(f) = f else {
                self.dropped_pages += pages;
                return;
            };
            self.resolved.insert(fid, f.size.div_ceil(PAGE));
        }
        if mapped {
            self.mapped.insert(fid);
        }
        let end = (index + pages).min(self.end_page(id, fid, index + pages));
        let mut run: Option<AccessRecord> = None;
        for p in index..end {
            let word = self.seen.entry((fid, p / 64)).or_insert(0);
            if *word & (1 << (p % 64)) != 0 {
                continue;
            }
            *word |= 1 << (p % 64);
            if self.pages >= self.cap_pages {
                self.dropped_pages += 1;
                continue;
            }
            self.pages += 1;
            match &mut run {
                Some(r) if r.page + u64::from(r.pages) == p => r.pages += 1,
                _ => {
                    if let Some(r) = run.take() {
                        self.accesses.push(r);
                    }
                    run = Some(AccessRecord {
                        file: fid,
                        page: p,
                        pages: 1,
                    });
                }
            }
        }
        self.accesses.extend(run);
    }

    /// The pages file `fid` has, for a read that ends at page `end`:
    /// those a read asked for past the end of the file are none of its
    /// (a read is traced with the pages it asked for: `rg`'s 64 KiB reads
    /// of 8 KiB files filled its 256 MiB set with 87% such pages, and a
    /// replay waited in vain for each one's arrival). Past the size last
    /// seen the file is looked at again, if still open: it may have grown.
    fn end_page(&mut self, id: FileId, fid: u32, end: u64) -> u64 {
        let known = self.resolved[&fid];
        if end <= known || !self.table.refresh(id) {
            return known;
        }
        let now = self.table.get(id).map_or(known, |f| f.size.div_ceil(PAGE));
        self.resolved.insert(fid, now);
        now
    }

    /// Has the set reached its cap (nothing more will be recorded)?
    pub fn is_full(&self) -> bool {
        self.pages >= self.cap_pages || self.resolved.len() >= self.files_max
    }

    /// Was page `page` of (dev, ino) recorded?
    pub fn has(&self, dev: u64, ino: u64, page: u64) -> bool {
        (self.table.lookup(dev, ino))
            .and_then(|id| u32::try_from(id.0).ok())
            .and_then(|fid| self.seen.get(&(fid, page / 64)))
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }

    /// Pages of the launch set `h` that this recording read too: what a
    /// replay of `h` brought in for it (or would have).
    pub fn overlap(&self, h: &AppHistory) -> u64 {
        let files: rustc_hash::FxHashMap<u32, (u64, u64)> =
            h.files.iter().map(|f| (f.id, (f.dev, f.ino))).collect();
        h.accesses
            .iter()
            .filter_map(|a| files.get(&a.file).map(|&(d, i)| (d, i, a)))
            .map(|(d, i, a)| {
                (a.page..a.page + u64::from(a.pages))
                    .filter(|&p| self.has(d, i, p))
                    .count() as u64
            })
            .sum()
    }

    /// The recorded set as a history for the store (`exe` for people).
    pub fn finish(mut self, exe: &str) -> AppHistory {
        self.commit();
        let mut h = history::collect(&mut self.table, &[exe.into()], Path::new("/"));
        for f in &mut h.files {
            f.mapped = self.mapped.contains(&f.id);
        }
        h.accesses = self.accesses;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launchset::tests::read_of;

    /// history names the file so a replay finds it again (as root).
    /// A file of `pages` pages in a directory of its own.
    fn file_of_pages(pages: usize) -> (tempfile::TempDir, std::fs::Metadata) {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; pages * 4096]).unwrap();
        let md = std::fs::metadata(&p).unwrap();
        (dir, md)
    }

    /// A holding recorder opens no file until it commits, then records
    /// what it held in its order; one that discards records nothing.
    #[test]
    fn a_holding_recorder_resolves_files_only_once_it_commits() {
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let (_dir, md) = file_of_pages(16);
        let me = std::process::id();
        let mut r = Recorder::holding(1 << 20, 8192);
        r.read(me, read_of(&md, 8, 2));
        r.read(me, read_of(&md, 0, 3));
        assert_eq!((r.pages, r.table.resolved, r.is_holding()), (0, 0, true));
        r.commit();
        assert_eq!((r.pages, r.table.resolved, r.is_holding()), (5, 1, false));
        r.read(me, read_of(&md, 12, 1)); // recorded as it comes
        let h = r.finish("/bin/x");
        let pages: Vec<(u64, u32)> = h.accesses.iter().map(|a| (a.page, a.pages)).collect();
        assert_eq!(pages, vec![(8, 2), (0, 3), (12, 1)]);
        let mut hot = Recorder::holding(1 << 20, 8192);
        hot.read(me, read_of(&md, 0, 4));
        hot.discard();
        hot.read(me, read_of(&md, 4, 4));
        assert_eq!(hot.table.resolved, 0);
        let h = hot.finish("/bin/x");
        assert_eq!((h.files.len(), h.accesses.len()), (0, 0));
    }

    /// Past [`HELD_MAX`] reads held, a recorder records them and the rest
    /// as they come: what it holds is bounded.
    #[test]
    fn a_holding_recorder_holds_at_most_its_bound() {
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let (_dir, md) = file_of_pages(1);
        let mut r = Recorder::holding(1 << 30, 8192);
        for _ in 0..HELD_MAX - 1 {
            r.read(1, read_of(&md, 0, 1));
        }
        assert!(r.is_holding());
        r.read(1, read_of(&md, 0, 1));
        assert_eq!((r.is_holding(), r.pages), (false, 1));
    }
}
