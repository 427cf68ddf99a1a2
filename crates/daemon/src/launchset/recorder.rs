//! The [`Recorder`]: what a launch (or the boot) read, in first-touch
//! order, each page once, up to its cap (the module comment of
//! [`crate::launchset`]).

use super::PAGE;
use outrider_core::FileId;
use outrider_live::files::{FileTable, FileTableOptions};
use outrider_live::history;
use outrider_store::{AccessRecord, AppHistory, FileRecord};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Pages of one recorded range at most (a `GetPages` of a huge read is
/// cut: the launch set is bounded by its cap anyway).
const MAX_RANGE_PAGES: u64 = 1 << 16;

/// Reads a [`Recorder`] holds at most ([`Recorder::holding`]): then
/// it records them and the rest as they come. A launch reading from
/// memory is judged at its `judge_from_memory_mib` (64 MiB by default,
/// 16 384 pages), before it gets here even at one page a read (a small
/// file read whole, or a file read on in pieces, [`hold`]). At 8 192, a
/// `tar` of a source tree in memory (31 572 files, 8 KiB on average)
/// got here at 60 MiB (11 000-11 900 pages recorded, so ~1 400 files
/// opened by inode, looked at and closed on the daemon's thread) and was
/// then judged from memory and dropped: `open_by_handle_at`, `fstat` and
/// `close` were most of the daemon's syscalls over its runs (`strace
/// -c`: 13 886 opens over 10 runs; 142 with this bound and reads joined
/// from within, the daemon's CPU over 20 runs 2-4 ticks against 7-8).
/// 24 bytes each: 384 KiB a launch, 24 MiB for 64 launches recorded at
/// once.
const HELD_MAX: usize = 16_384;

/// Reads a [`Recorder`] judged to record ([`Recorder::record_later`])
/// holds at most, a run of one file's pages counting once: 2 MiB a
/// launch. A tree walker's first cold launch (`tar` of the suite's
/// 31 572 files) sends ~54 000 reads, ~31 000 once runs are joined.
const DEFERRED_MAX: usize = 65_536;

/// Hold read `h`: joined to the last one held when it goes on from it
/// (a file read in small pieces from start to end is one run, up to
/// [`MAX_RANGE_PAGES`]), from within it too: reads that do not start on
/// a page boundary (`tar`'s 10 KiB blocks) share a page with the last.
fn hold(held: &mut Vec<Held>, h: Held) {
    if let Some(last) = held.last_mut() {
        let next = last.index + u64::from(last.pages);
        let on = (last.id, last.pid, last.mapped) == (h.id, h.pid, h.mapped)
            && (last.index..=next).contains(&h.index);
        let end = next.max(h.index + u64::from(h.pages));
        if on && end - last.index <= MAX_RANGE_PAGES {
            last.pages = (end - last.index) as u32;
            return;
        }
    }
    held.push(h);
}

/// A read held ([`Recorder::holding`]); its file's id fits 32 bits, as
/// the recorded ones do ([`Recorder::record`]).
#[derive(Clone, Copy, Debug)]
struct Held {
    index: u64,
    id: u32,
    pages: u32,
    pid: u32,
    mapped: bool,
}

impl Held {
    fn file(&self) -> FileId {
        FileId(u64::from(self.id))
    }
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
    /// at most [`HELD_MAX`] ([`DEFERRED_MAX`] once judged to record);
    /// `None`: each is recorded as it comes.
    held: Option<Vec<Held>>,
    /// Judged to be recorded, its files resolved later
    /// ([`Recorder::record_later`]).
    deferred: bool,
    /// The pages held once judged to record, as [`Recorder::seen`], and
    /// how many ([`Recorder::count_held`]).
    held_seen: FxHashMap<(u32, u64), u64>,
    held_count: u64,
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
    /// The set its launch replayed ([`Recorder::knowing`]), and the
    /// pages of each of its files by (dev, ino), taken from it at the
    /// first file it is asked for ([`PriorPages`]).
    prior: Option<Arc<AppHistory>>,
    prior_pages: Option<PriorPages>,
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
            deferred: false,
            held_seen: FxHashMap::default(),
            held_count: 0,
            table: FileTable::new(FileTableOptions {
                program_user: None,
                max_open: 64,
                ..FileTableOptions::default()
            }),
            accesses: Vec::new(),
            seen: FxHashMap::default(),
            resolved: FxHashMap::default(),
            mapped: FxHashSet::default(),
            prior: None,
            prior_pages: None,
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

    /// The recorder, knowing the set its launch replayed (`prior`): a
    /// file of that set is recorded with the size the set holds, not
    /// opened as it is recorded ([`Recorder::pages_of`]).
    pub fn knowing(self, prior: Option<Arc<AppHistory>>) -> Recorder {
        Recorder { prior, ..self }
    }

    /// Is it holding its reads ([`Recorder::holding`])?
    pub fn is_holding(&self) -> bool {
        self.held.is_some()
    }

    /// Is what it reads to be recorded: committed, or judged to be
    /// ([`Recorder::record_later`])?
    pub fn is_recording(&self) -> bool {
        self.held.is_none() || self.deferred
    }

    /// Is it holding reads judged to be recorded, for
    /// [`Recorder::commit`] once the program is done?
    pub fn is_deferred(&self) -> bool {
        debug_assert!(!self.deferred || self.held.is_some(), "deferred holds");
        self.deferred
    }

    /// Judged to be recorded, but its files resolved later: go on holding
    /// the reads (up to [`DEFERRED_MAX`], or the set's cap in pages:
    /// [`Recorder::count_held`]) until [`Recorder::commit`],
    /// which the daemon calls once the launch's program exited or its
    /// window ended. Resolving a file opens it by its inode, looks at it
    /// and closes it: done as the reads came, a cold `tar` of the suite's
    /// source tree, never seen before, ran at 0.954x of its time with no
    /// daemon, and 0.968x with the daemon frozen (SIGSTOP) so that only
    /// the kernel's programs ran (medians of 30 alternations; the
    /// daemon's CPU over the `tar`: 350 ms, 60% of it `open_by_handle_at`,
    /// `close` and `fstat`, perf). Only while the files read can be
    /// opened by inode later ([`FileTable::lazy_ok`]; one file of a
    /// device not known so is resolved to learn it): else they are found
    /// through the program's descriptors, which are gone once it exits,
    /// so what is held is recorded now and the rest as it comes.
    pub fn record_later(&mut self) {
        if self.held.is_none() || self.is_full() {
            return;
        }
        self.deferred = true;
        let held = self.held.take().unwrap_or_default();
        for h in &held {
            self.count_held(h.file(), h.index, u64::from(h.pages));
        }
        self.held = Some(held);
    }

    /// Record the reads held, and each read from now on as it comes.
    pub fn commit(&mut self) {
        self.deferred = false;
        self.held_seen = FxHashMap::default();
        for h in self.held.take().unwrap_or_default() {
            self.record(h.pid, h.file(), h.index, u64::from(h.pages), h.mapped);
        }
    }

    /// Drop the reads held and any to come: the launch is not recorded.
    pub fn discard(&mut self) {
        self.held = Some(Vec::new());
        (self.deferred, self.held_seen) = (false, FxHashMap::default());
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
        let Some((id, fid)) =
            (self.table.id_of(dev, ino)).and_then(|id| Some((id, u32::try_from(id.0).ok()?)))
        else {
            self.dropped_pages += pages;
            return;
        };
        if self.deferred && !self.opens_later(id, dev, pid) {
            self.commit();
        }
        let Some(held) = &mut self.held else {
            self.record(pid, id, index, pages, mapped);
            return;
        };
        hold(
            held,
            Held {
                id: fid,
                index,
                pages: pages as u32,
                pid,
                mapped,
            },
        );
        let bound = if self.deferred {
            DEFERRED_MAX
        } else {
            HELD_MAX
        };
        let full = held.len() >= bound;
        if full || self.deferred && self.count_held(id, index, pages) >= self.cap_pages {
            self.commit();
        }
    }

    /// Pages held so far, each once, with `pages` pages of file `id`
    /// from `index` (past the end of the file too: a bound from above of
    /// what they record). Judged to record, a recorder holding its cap
    /// records now: its set full, its launch is no longer followed
    /// ([`Recorder::is_full`]), where holding on, it was followed to its
    /// end (8 192 single-page reads of a launch with a set capped at
    /// 1 MiB were all sent). Counted only once judged: a launch not yet
    /// judged may be one reading from memory, whose reads cost the daemon
    /// only their holding.
    fn count_held(&mut self, id: FileId, index: u64, pages: u64) -> u64 {
        let fid = u32::try_from(id.0).unwrap_or(u32::MAX);
        for p in index..index + pages {
            let word = self.held_seen.entry((fid, p / 64)).or_insert(0);
            self.held_count += u64::from(*word & (1 << (p % 64)) == 0);
            *word |= 1 << (p % 64);
        }
        self.held_count
    }

    /// Can file `id` on `dev` be opened by its inode once the program is
    /// gone? Known for a device one of whose files was so opened; else
    /// this file is resolved now to learn it.
    fn opens_later(&mut self, id: FileId, dev: u64, pid: u32) -> bool {
        if self.table.lazy_ok(dev) {
            return true;
        }
        self.table.resolve(id, pid);
        self.table.lazy_ok(dev)
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
            let Some(size) = self.pages_of(id, pid) else {
                self.dropped_pages += pages;
                return;
            };
            self.resolved.insert(fid, size);
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

    /// The pages of file `id` (read by task `pid`), for a file first
    /// recorded: as the set its launch replayed holds them, when the file
    /// is in it and can be opened by its inode at the save
    /// ([`FileTable::lazy_ok`], which stamps it then with its size and
    /// mtime); else from the file, opened now. A replayed launch reads
    /// its set's files again: `rg` over the suite's tree, its set of
    /// 31 516 files replayed and recorded again (its reads reach the
    /// cap's count, pages past the ends of files included, a few
    /// thousand files in, so it records them as they come),
    /// had each opened by inode, looked at and closed on the daemon's
    /// main thread while it ran, then opened again at the save: a quarter
    /// of the daemon's CPU in its run (perf), the daemon using 1.5-2.1 s
    /// of CPU over rg's 2.1-2.5 s on 2 cores. `None`: the set holds
    /// `files_max` files, or the file cannot be opened.
    fn pages_of(&mut self, id: FileId, pid: u32) -> Option<u64> {
        if self.resolved.len() >= self.files_max {
            return None;
        }
        let (dev, ino) = self.table.key_of(id)?;
        if self.table.lazy_ok(dev) {
            if let Some(&pages) = self.prior_pages().map.get(&(dev, ino)) {
                return Some(pages);
            }
        }
        (self.table.resolve(id, pid)).map(|f| f.size.div_ceil(PAGE))
    }

    /// The pages of each file of the set replayed, by (dev, ino).
    fn prior_pages(&mut self) -> &PriorPages {
        let prior = &self.prior;
        (self.prior_pages).get_or_insert_with(|| {
            let files = prior.as_deref().map_or(&[][..], |h| &h.files);
            PriorPages::of(files, &PRIOR_ENTRIES, PRIOR_ENTRIES_MAX)
        })
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
        let files = super::file_keys(h);
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

/// The pages of each file of a set replayed, by (dev, ino), for its
/// launch's recorder ([`Recorder::pages_of`]); empty when all the
/// recorders' maps would hold more than their bound: its files are then
/// opened as they are recorded.
struct PriorPages {
    map: FxHashMap<(u64, u64), u64>,
    /// The count its files are in, and how many: given back when it is
    /// dropped.
    held: Option<(&'static AtomicUsize, usize)>,
}

/// Entries of all the recorders' [`PriorPages`] at once, at most: two
/// sets of `launch_files_max`'s default (32 768 files). At about 40
/// bytes an entry (its key and value, and the hash table's control byte
/// and spare room; computed, not measured), 2.5 MiB; with no bound, 64
/// launches at once (`max_recording`), each replaying such a set, would
/// hold some 80 MiB.
const PRIOR_ENTRIES_MAX: usize = 1 << 16;

/// Entries of the [`PriorPages`] alive.
static PRIOR_ENTRIES: AtomicUsize = AtomicUsize::new(0);

impl PriorPages {
    /// The map of `files`, its entries counted in `count` unless that
    /// would take it past `max` (then empty).
    fn of(files: &[FileRecord], count: &'static AtomicUsize, max: usize) -> PriorPages {
        let n = files.len();
        let fits = count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
            (c + n <= max).then_some(c + n)
        });
        if fits.is_err() || n == 0 {
            return PriorPages {
                map: FxHashMap::default(),
                held: None,
            };
        }
        let map = (files.iter())
            .map(|f| ((f.dev, f.ino), f.size.div_ceil(PAGE)))
            .collect();
        PriorPages {
            map,
            held: Some((count, n)),
        }
    }
}

impl Drop for PriorPages {
    fn drop(&mut self) {
        if let Some((count, n)) = self.held {
            count.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launchset::tests::read_of;

    /// The size maps of the sets replayed are bounded all together: one
    /// that would pass the bound is left empty, and a map dropped gives
    /// its room back.
    #[test]
    fn the_replayed_sets_size_maps_are_bounded_together() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let file = |ino| FileRecord {
            dev: 1,
            ino,
            size: 3 * PAGE,
            ..FileRecord::default()
        };
        let files: Vec<FileRecord> = (0..3).map(file).collect();
        let a = PriorPages::of(&files, &COUNT, 5);
        assert_eq!(a.map.get(&(1, 2)), Some(&3));
        let b = PriorPages::of(&files, &COUNT, 5);
        assert!(b.map.is_empty(), "6 entries would pass the bound of 5");
        assert_eq!(COUNT.load(Ordering::Relaxed), 3);
        drop(a);
        let c = PriorPages::of(&files[..2], &COUNT, 5);
        assert_eq!((c.map.len(), COUNT.load(Ordering::Relaxed)), (2, 2));
        drop((b, c));
        assert_eq!(COUNT.load(Ordering::Relaxed), 0);
    }

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

    /// A file of the set its launch replayed is recorded with the size
    /// that set holds, not opened as it is recorded; the save opens it
    /// once, and stamps it with its path and size now.
    #[test]
    fn a_file_of_the_set_replayed_is_opened_only_at_the_save() {
        use std::os::unix::fs::MetadataExt;
        if unsafe { libc::geteuid() } != 0 {
            return; // files are found by inode, which needs root
        }
        let (_a, first) = file_of_pages(4);
        let (dir, known) = file_of_pages(16);
        let prior = AppHistory {
            files: vec![outrider_store::FileRecord {
                id: 1,
                dev: known.dev(),
                ino: known.ino(),
                size: 8 * PAGE,
                ..Default::default()
            }],
            ..AppHistory::default()
        };
        let me = std::process::id();
        let mut r = Recorder::new(1 << 20, 8192).knowing(Some(Arc::new(prior)));
        // Opened: its device is then known to open by inode.
        r.read(me, read_of(&first, 0, 1));
        assert!(
            r.table.lazy_ok(first.dev()),
            "a file system opened by inode"
        );
        r.read(me, read_of(&known, 0, 16));
        assert_eq!(r.table.resolved, 1, "the file of the set is not opened");
        assert_eq!(
            r.pages,
            1 + 8,
            "its pages past the set's size are not recorded"
        );
        let h = r.finish("/bin/x");
        let f = h.files.iter().find(|f| f.ino == known.ino());
        let f = f.expect("the file of the set is saved");
        assert_eq!(Path::new(&f.path), dir.path().join("f"));
        assert_eq!(f.size, 16 * PAGE, "stamped at the save");
        assert!(f.handle.is_some());
    }

    /// Reads of one file that go on from the last, from its end or from
    /// within it (reads not on page boundaries share a page), are held
    /// as one run; a read back, or of another file, starts another.
    #[test]
    fn reads_that_go_on_from_within_the_last_are_held_as_one() {
        let at = |index, pages| Held {
            index,
            id: 1,
            pages,
            pid: 1,
            mapped: false,
        };
        let mut held = Vec::new();
        for (index, pages) in [(0, 3), (2, 3), (5, 1), (5, 1), (4, 1)] {
            hold(&mut held, at(index, pages));
        }
        hold(&mut held, Held { id: 2, ..at(6, 1) });
        hold(&mut held, at(1, 1));
        let runs: Vec<(u32, u64, u32)> = held.iter().map(|h| (h.id, h.index, h.pages)).collect();
        assert_eq!(runs, vec![(1, 0, 6), (2, 6, 1), (1, 1, 1)]);
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
        for i in 0..HELD_MAX as u64 - 1 {
            r.read(1, read_of(&md, 2 * i, 1));
        }
        assert!(r.is_holding());
        r.read(1, read_of(&md, 0, 1));
        assert_eq!((r.is_holding(), r.pages), (false, 1));
    }

    /// A recorder judged to record goes on holding its reads, a read
    /// that goes on from the last joined to it, with one file resolved
    /// (to learn that its device's files open by inode); committed, it
    /// records what a recorder committed at once records, in its order.
    #[test]
    fn a_recorder_judged_to_record_resolves_its_files_when_committed() {
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let ((_a, a), (_b, b)) = (file_of_pages(16), file_of_pages(16));
        let reads = [(&a, 0, 2), (&a, 2, 3), (&b, 8, 1), (&a, 9, 1), (&b, 0, 2)];
        let me = std::process::id();
        let mut now = Recorder::holding(1 << 20, 8192);
        let mut later = Recorder::holding(1 << 20, 8192);
        now.read(me, read_of(reads[0].0, reads[0].1, reads[0].2));
        later.read(me, read_of(reads[0].0, reads[0].1, reads[0].2));
        now.commit();
        later.record_later();
        assert!(later.is_deferred() && later.is_recording());
        for &(md, index, pages) in &reads[1..] {
            now.read(me, read_of(md, index, pages));
            later.read(me, read_of(md, index, pages));
        }
        let held = later.held.as_ref().map(Vec::len);
        assert_eq!((held, later.table.resolved, later.pages), (Some(4), 1, 0));
        later.commit();
        assert!(!later.is_deferred() && later.is_recording());
        assert_eq!((later.pages, later.table.resolved), (9, 2));
        let pages = |h: AppHistory| -> Vec<(u32, u64)> {
            let each = |x: &AccessRecord| {
                let file = x.file;
                (x.page..x.page + u64::from(x.pages)).map(move |p| (file, p))
            };
            h.accesses.iter().flat_map(each).collect()
        };
        let eager = pages(now.finish("/bin/x"));
        assert_eq!(eager.len(), 9);
        assert_eq!(pages(later.finish("/bin/x")), eager);
    }

    /// Judged to record, a recorder holding its cap's worth of pages (each
    /// once) records them: its set is then full, and its launch no
    /// longer followed.
    #[test]
    fn a_recorder_judged_to_record_records_at_its_cap() {
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let (_dir, md) = file_of_pages(16);
        let mut r = Recorder::holding(4 * PAGE, 8192);
        r.record_later();
        r.read(1, read_of(&md, 0, 2));
        r.read(1, read_of(&md, 0, 2));
        assert!(r.is_deferred() && !r.is_full());
        r.read(1, read_of(&md, 2, 2));
        assert_eq!((r.is_deferred(), r.is_full(), r.pages), (false, true, 4));
    }

    /// Judged to record, a recorder holds at most [`DEFERRED_MAX`] reads,
    /// then records them and the rest as they come.
    #[test]
    fn a_recorder_judged_to_record_holds_at_most_its_bound() {
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let (_dir, md) = file_of_pages(1);
        let mut r = Recorder::holding(1 << 30, 8192);
        r.record_later();
        for i in 0..DEFERRED_MAX as u64 - 1 {
            r.read(1, read_of(&md, 2 * i, 1));
        }
        assert!(r.is_deferred());
        r.read(1, read_of(&md, 0, 1));
        assert_eq!(
            (r.is_deferred(), r.is_holding(), r.pages),
            (false, false, 1)
        );
    }
}
