//! Translation: kernel events name files by
//! (device, inode); prefetching needs an open descriptor.
//!
//! How a descriptor is found: when an event names an unknown file, the
//! descriptors of the task that caused it (`/proc/PID/fd/*`) and its file
//! mappings (`/proc/PID/map_files/*`) are searched for that (device, inode),
//! and the match is reopened through the magic link — read-only,
//! `O_CLOEXEC`, `O_NOATIME` where permitted, a regular file only
//! ([`outrider_sys::open_regular`]). This works for files the
//! program opened whatever their path (relative, renamed, deleted since).
//! The events carry no inode generation, so a handle cannot be built from
//! them; instead, the first time a file is opened its
//! `name_to_handle_at(2)` handle is taken from the descriptor and kept with
//! its path ([`FileInfo`]). Files known from history are registered with
//! that location ([`FileTable::seed`]) and reopened on demand
//! ([`FileTable::open_known`]) with `open_by_handle_at(2)` (needs
//! `CAP_DAC_READ_SEARCH`; the handle includes the generation, so a deleted
//! and reused inode fails with `ESTALE`), else by path (never through a
//! final symbolic link, never a FIFO), and kept only when (dev, ino) match.
//! When the program runs as another user than outrider (root under sudo,
//! [`outrider_sys::launch`]), a file from history is registered only if
//! that user can open it ([`FileTableOptions::program_user`]).
//!
//! A search lists a task's descriptors and mappings once and keeps that
//! snapshot for [`FileTableOptions::snapshot_ttl`], so the many unknown files of one batch
//! of events (`grep -r`: hundreds of files a second, mostly closed again by
//! the time their events are read) cost one directory listing, not one
//! each; mappings (`map_files`, named by address range) are stat'ed once
//! per name. Without this, `outrider run` made `grep -r` over the kernel
//! tree 1.7x slower with no prefetching at all (millions of `statx` on
//! `/proc`).
//!
//! Files get dense [`FileId`]s (1, 2, ...) in order of first sight; at
//! most [`FileTableOptions::max_open`] descriptors are kept, least recently
//! used closed first. A failed lookup is remembered so a file that cannot be
//! found is not searched for again on every event.
//!
//! Left unopened: once a file of a device has been opened by inode number
//! ([`FileTable::lazy_ok`]), the controller no longer opens every file the
//! program reads on that device (`open_by_handle_at`, `fstat` and `close`
//! per file were half of outrider's CPU on a tree walker, `perf` on `tar`
//! and `rg` over a source tree). Such a file is opened when something
//! needs its descriptor — a prefetch ([`FileTable::open_known`]) — and at
//! the history's save ([`FileTable::complete_identities`]), which stamps
//! it with its size and mtime then: a file changed between the program's
//! read and the save (which runs as the program exits) keeps the
//! recorded pattern with the new contents.
//!
//! Invalidation: [`FileTable::refresh`] re-`fstat`s a file; a changed size
//! or mtime drops its cached extent map.

use outrider_core::FileId;
use outrider_sys::access::AccessChecker;
use outrider_sys::handle;
use outrider_sys::launch::{self, Credentials};
use outrider_sys::{open_regular, Follow};
use rustc_hash::FxHashMap;
use std::fs::{self, File};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod proc_fds;
#[cfg(test)]
mod tests;

/// Open specs kept for reuse at most (then all are dropped).
const SPECS_KEPT: usize = 1 << 16;
/// Tasks whose listing is kept at most (then all are dropped).
const MAX_SNAPSHOTS: usize = 256;
/// `map_files` names remembered at most (then all are forgotten).
const MAX_MAP_NAMES: usize = 1 << 16;

/// Options of a [`FileTable`].
#[derive(Clone, Debug)]
pub struct FileTableOptions {
    /// Descriptors kept open at most (default: a quarter of the soft
    /// `RLIMIT_NOFILE`, between 64 and 4096 — a replayed history of small
    /// files keeps thousands in use at once, and reopening them costs more
    /// than the read it prefetches).
    pub max_open: usize,
    /// Files given an id at most (default 1 << 20); beyond it new files
    /// are ignored (a bound on memory).
    pub max_files: usize,
    /// Directory entries of `/proc/PID/fd` examined per lookup at most
    /// (default 4096).
    pub max_scan: usize,
    /// How long a listing of `/proc/PID/{fd,map_files}` answers lookups
    /// (default 2 ms: a poll batch). A descriptor opened later is found by
    /// the next listing.
    pub snapshot_ttl: Duration,
    /// The program's user when it is not outrider's (default: the sudo
    /// user, [`outrider_sys::launch::program_credentials`]). Then a file
    /// from history is registered ([`FileTable::seed`]) only when this
    /// user can open it by its path, checked on the registering thread
    /// with the user's file-system ids ([`outrider_sys::access`]): one
    /// open per history file before the program starts.
    pub program_user: Option<Credentials>,
}

impl Default for FileTableOptions {
    fn default() -> Self {
        FileTableOptions {
            max_open: (outrider_sys::nofile_limit() / 4).clamp(64, 4096) as usize,
            max_files: 1 << 20,
            max_scan: 4096,
            snapshot_ttl: Duration::from_millis(2),
            program_user: launch::program_credentials().ok().flatten(),
        }
    }
}

/// The device of a reserved id's key ([`FileTable::seed`]): no real
/// file's.
const RESERVED_DEV: u64 = u64::MAX;

/// An open file of the traced program.
#[derive(Debug)]
pub struct OpenFile {
    /// Read-only descriptor.
    pub fd: Arc<OwnedFd>,
    /// Size in bytes at the last [`FileTable::refresh`].
    pub size: u64,
    /// mtime (ns) at the last refresh.
    pub mtime_ns: i64,
    /// Where it was found (`/proc/PID/fd/N`, then its link target).
    pub path: PathBuf,
    /// Extent map, once computed (dropped on change).
    pub extents: Option<Arc<Vec<outrider_sys::Extent>>>,
    last_use: u64,
}

/// What identifies and locates a file across runs (kept per id for as
/// long as the table lives, also after its descriptor is closed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileInfo {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// `name_to_handle_at` handle: (type, bytes, mount id).
    pub handle: Option<(i32, Vec<u8>, i32)>,
    /// Path (the descriptor's link target when found through /proc).
    pub path: PathBuf,
    /// Size when opened.
    pub size: u64,
    /// mtime (ns) when opened.
    pub mtime_ns: i64,
}

/// Size and mtime of a file as `fstat` saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: i64,
}

impl Stamp {
    fn of_md(m: &fs::Metadata) -> Stamp {
        Stamp {
            size: m.size(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        }
    }

    fn of_stat(st: &libc::stat) -> Stamp {
        Stamp {
            size: st.st_size as u64,
            mtime_ns: st.st_mtime * 1_000_000_000 + st.st_mtime_nsec,
        }
    }

    fn info(
        self,
        dev: u64,
        ino: u64,
        handle: Option<(i32, Vec<u8>, i32)>,
        path: PathBuf,
    ) -> FileInfo {
        FileInfo {
            dev,
            ino,
            handle,
            path,
            size: self.size,
            mtime_ns: self.mtime_ns,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    dev: u64,
    ino: u64,
}

/// (device, inode) ↔ [`FileId`] ↔ open descriptor.
#[derive(Debug, Default)]
pub struct FileTable {
    opts: FileTableOptions,
    ids: FxHashMap<Key, FileId>,
    keys: Vec<Key>,
    /// Open descriptors, least recently used first.
    open: hashlink::LinkedHashMap<FileId, OpenFile, rustc_hash::FxBuildHasher>,
    /// Extent maps of files whose descriptor was closed (or that history
    /// brought), reused when the file is reopened unchanged.
    closed_extents: FxHashMap<FileId, Arc<Vec<outrider_sys::Extent>>>,
    /// Open specs handed to workers lately (bounded by [`SPECS_KEPT`]).
    specs: FxHashMap<FileId, Arc<OpenSpec>>,
    failed: FxHashMap<FileId, u32>,
    info: FxHashMap<FileId, FileInfo>,
    mounts: handle::Mounts,
    by_ino_ok: bool,
    /// Devices where a file was opened by inode number: their files need
    /// not be opened while the program reads them ([`FileTable::lazy_ok`]).
    ino_devs: rustc_hash::FxHashSet<u64>,
    /// Answers "can the program's user open this?" when
    /// [`FileTableOptions::program_user`] is set (`Err`: it could not be
    /// started, and nothing from history is registered).
    access: Option<Result<AccessChecker, String>>,
    /// Answers of [`FileTable::check_access`] not yet used by
    /// [`FileTable::seed`]: (dev, ino) → (the path asked about, yes or no).
    access_answers: FxHashMap<Key, (PathBuf, bool)>,
    clock: u64,
    /// Per task: when its descriptors and mappings were listed, and what
    /// (dev, ino) each entry led to.
    snapshots: FxHashMap<u32, (Instant, FxHashMap<Key, PathBuf>)>,
    /// (task, `map_files` entry name) → (dev, ino): a mapping's name is its
    /// address range, stable while it exists.
    map_names: FxHashMap<(u32, std::ffi::OsString), Key>,
    /// Listings of `/proc/PID/{fd,map_files}` made.
    pub scans: u64,
    /// Lookups that found a descriptor.
    pub resolved: u64,
    /// Lookups that found none.
    pub unresolved: u64,
    /// Files the program had open that its user could not open by path
    /// ([`FileTableOptions::program_user`]): never prefetched.
    pub refused: u64,
    /// Files opened by inode number (ext4 handle with generation 0), no
    /// descriptor of the program needed.
    pub opened_by_ino: u64,
    /// Files reopened from a known location by handle.
    pub reopened_by_handle: u64,
    /// Files reopened from a known location by path.
    pub reopened_by_path: u64,
}

/// How to open a known file away from the table (an I/O worker opens it
/// just for its calls): by handle through the mount's descriptor, then
/// checked by `fstat` to be the same, unchanged file (device, inode, size
/// and mtime as recorded).
#[derive(Debug)]
pub struct OpenSpec {
    mount: Arc<OwnedFd>,
    kind: i32,
    bytes: Vec<u8>,
    info_dev: u64,
    info_ino: u64,
    size: u64,
    mtime_ns: i64,
}

impl OpenSpec {
    /// Open it read-only; `None` when it cannot be opened or changed.
    pub fn open(&self) -> Option<File> {
        let f = handle::open_handle_at(self.mount.as_raw_fd(), self.kind, &self.bytes).ok()?;
        let m = f.metadata().ok()?;
        (m.dev() == self.info_dev
            && m.ino() == self.info_ino
            && m.size() == self.size
            && m.mtime() * 1_000_000_000 + m.mtime_nsec() == self.mtime_ns)
            .then_some(f)
    }
}

impl FileTable {
    /// An empty table.
    pub fn new(opts: FileTableOptions) -> Self {
        let access = opts
            .program_user
            .as_ref()
            .map(|c| AccessChecker::new(c).map_err(|e| e.to_string()));
        FileTable {
            by_ino_ok: true,
            opts,
            access,
            ..FileTable::default()
        }
    }

    /// The id of (dev, ino), allocated on first sight; `None` past
    /// [`FileTableOptions::max_files`].
    pub fn id_of(&mut self, dev: u64, ino: u64) -> Option<FileId> {
        let key = Key { dev, ino };
        if let Some(id) = self.ids.get(&key) {
            return Some(*id);
        }
        if self.keys.len() >= self.opts.max_files {
            return None;
        }
        self.keys.push(key);
        let id = FileId(self.keys.len() as u64);
        self.ids.insert(key, id);
        Some(id)
    }

    /// The id of (dev, ino) if it has one (none is allocated).
    pub fn lookup(&self, dev: u64, ino: u64) -> Option<FileId> {
        self.ids.get(&Key { dev, ino }).copied()
    }

    /// (dev, ino) of an id.
    pub fn key_of(&self, id: FileId) -> Option<(u64, u64)> {
        let k = self.keys.get((id.0 as usize).checked_sub(1)?)?;
        Some((k.dev, k.ino))
    }

    /// Number of files given an id.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No file seen yet.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The open file for `id`, searching the descriptors and mappings of
    /// `pid` if it is not open yet. Failed searches are retried at most 3
    /// times per file.
    pub fn resolve(&mut self, id: FileId, pid: u32) -> Option<&mut OpenFile> {
        self.clock += 1;
        if self.open.to_back(&id).is_some() {
            let f = self.open.get_mut(&id).expect("present");
            f.last_use = self.clock;
            return Some(f);
        }
        if self.failed.get(&id).copied().unwrap_or(0) >= 3 {
            return None;
        }
        if self.info.contains_key(&id) && self.reopen(id) {
            return self.open.get_mut(&id);
        }
        let (dev, ino) = self.key_of(id)?;
        if self.open_by_ino(id) {
            return self.open.get_mut(&id);
        }
        match self.find_in_proc(pid, Key { dev, ino }) {
            Some((file, path)) => {
                self.resolved += 1;
                self.insert(id, file, path);
                self.open.get_mut(&id)
            }
            None => {
                self.unresolved += 1;
                *self.failed.entry(id).or_insert(0) += 1;
                None
            }
        }
    }

    /// Can `dev`'s files be opened later by inode number alone (one was)?
    /// Then the controller leaves a file the program reads unopened until
    /// something needs its descriptor: a prefetch, or the history's save.
    pub fn lazy_ok(&self, dev: u64) -> bool {
        self.by_ino_ok && self.ino_devs.contains(&dev)
    }

    /// Open `id` by its inode number (no descriptor of the program
    /// needed); true when it is open now.
    fn open_by_ino(&mut self, id: FileId) -> bool {
        let Some((dev, ino)) = self.key_of(id) else {
            return false;
        };
        if !self.by_ino_ok {
            return false;
        }
        match handle::open_by_ino(&mut self.mounts, dev, ino) {
            Ok((f, st)) if st.st_dev == dev && st.st_ino == ino => {
                if !self.user_may_open(&f, dev, ino) {
                    return false;
                }
                self.resolved += 1;
                self.opened_by_ino += 1;
                self.ino_devs.insert(dev);
                // Path and handle wait for the history's save
                // ([`FileTable::complete_identities`]): a tree walker
                // opens a new file every few events, and the two
                // lookups were a third of outrider's work per file.
                let stamp = Stamp::of_stat(&st);
                self.info
                    .insert(id, stamp.info(dev, ino, None, PathBuf::new()));
                self.insert_open(id, f, PathBuf::new(), Some(stamp));
                true
            }
            Ok(_) => false,
            Err(e) => {
                if e.raw_os_error() == Some(libc::EPERM) {
                    self.by_ino_ok = false;
                }
                false
            }
        }
    }

    /// The open file for `id`: open already, or reopened from its known
    /// location (handle, then path) if it has one. No /proc search.
    pub fn open_known(&mut self, id: FileId) -> Option<&mut OpenFile> {
        if !self.open.contains_key(&id)
            && (self.failed.get(&id).copied().unwrap_or(0) >= 3
                || !(self.reopen(id) || self.open_left(id)))
        {
            return None;
        }
        self.open.to_back(&id);
        let f = self.open.get_mut(&id)?;
        self.clock += 1;
        f.last_use = self.clock;
        Some(f)
    }

    /// Open a file the program read that was left unopened
    /// ([`FileTable::lazy_ok`]); a failure counts against it.
    fn open_left(&mut self, id: FileId) -> bool {
        if self.info.contains_key(&id) || !self.key_of(id).is_some_and(|(d, _)| self.lazy_ok(d)) {
            return false;
        }
        let ok = self.open_by_ino(id);
        if !ok {
            *self.failed.entry(id).or_insert(0) += 1;
        }
        ok
    }

    /// Reopen `id` from its [`FileInfo`]; true when it is open now.
    fn reopen(&mut self, id: FileId) -> bool {
        let Some(info) = self.info.get(&id) else {
            return false;
        };
        let (dev, ino) = (info.dev, info.ino);
        let path = info.path.clone();
        // The file, the (dev, ino) and stamp it has, and whether a handle
        // (or its inode number) opened it: the `fstat` that checked it
        // is a regular file tells them, not one more.
        let of_stat =
            |(f, st): (File, libc::stat)| (f, (st.st_dev, st.st_ino), Stamp::of_stat(&st), true);
        let opened = match &info.handle {
            Some((t, b, m)) => handle::open_by_handle_stat(&mut self.mounts, *m, *t, b)
                .ok()
                .map(of_stat),
            None => None,
        };
        let opened = opened.or_else(|| {
            if path.as_os_str().is_empty() {
                // Opened by inode number and not completed yet: again so.
                return handle::open_by_ino(&mut self.mounts, dev, ino)
                    .ok()
                    .map(of_stat);
            }
            let f = open_regular(&path, Follow::Never).ok()?;
            let md = f.metadata().ok()?;
            Some((f, (md.dev(), md.ino()), Stamp::of_md(&md), false))
        });
        match opened {
            Some((f, key, stamp, by_handle)) if key == (dev, ino) => {
                if by_handle {
                    self.reopened_by_handle += 1;
                } else {
                    self.reopened_by_path += 1;
                }
                self.insert_open(id, f, path, Some(stamp));
                true
            }
            _ => {
                *self.failed.entry(id).or_insert(0) += 1;
                false
            }
        }
    }

    /// Register file `id` (from history) at (dev, ino) with its location.
    /// Ids must be seeded before the run allocates any; ids skipped are
    /// reserved (they match no file), so the ids of a history stay the
    /// same in the next run, and may be seeded later (a replay for
    /// another user registers its set a reorder buffer at a time, in
    /// one table). Returns false when `id` is taken, or past the bound, or
    /// when the program's user could not open the file
    /// ([`FileTableOptions::program_user`]).
    pub fn seed(&mut self, id: FileId, info: FileInfo) -> bool {
        let want = id.0 as usize;
        let reserved = (want.checked_sub(1))
            .and_then(|i| self.keys.get(i))
            .is_some_and(|k| k.dev == RESERVED_DEV);
        if want == 0 || (want <= self.keys.len() && !reserved) || want > self.opts.max_files {
            return false;
        }
        if !self.permitted(&info.path, info.dev, info.ino) {
            return false;
        }
        let key = Key {
            dev: info.dev,
            ino: info.ino,
        };
        if self.ids.contains_key(&key) {
            return false;
        }
        while self.keys.len() < want {
            // Reserved: a key no real file has.
            let n = self.keys.len() as u64 + 1;
            self.keys.push(Key {
                dev: RESERVED_DEV,
                ino: n,
            });
        }
        self.keys[want - 1] = key;
        self.ids.insert(key, id);
        self.info.insert(id, info);
        true
    }

    /// Acting for another user, ask at once whether that user may open
    /// each of `files` (path, dev, ino): [`FileTable::seed`] of them then
    /// takes the answer kept here. The calling thread takes the user's
    /// identity once for a batch of a history's files, not once per file.
    /// Nothing when acting for no one.
    pub fn check_access(&mut self, files: impl IntoIterator<Item = (PathBuf, u64, u64)>) {
        let Some(Ok(checker)) = &self.access else {
            return;
        };
        let files: Vec<_> = files.into_iter().collect();
        let answers = checker.can_open_all(&files);
        for ((path, dev, ino), ok) in files.into_iter().zip(answers) {
            self.access_answers.insert(Key { dev, ino }, (path, ok));
        }
    }

    /// Acting for another user, may that user open the file `f` (opened
    /// by inode number, which checks no permission) by its path? Always
    /// when acting for no one. A refusal is counted.
    fn user_may_open(&mut self, f: &File, dev: u64, ino: u64) -> bool {
        if self.access.is_none() {
            return true;
        }
        let path = fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()));
        let ok = path.is_ok_and(|p| self.permitted(&p, dev, ino));
        if !ok {
            self.refused += 1;
        }
        ok
    }

    /// May the program's user ([`FileTableOptions::program_user`]) open
    /// `path`, and is it (`dev`, `ino`)? Always when there is none. An
    /// answer [`FileTable::check_access`] kept for that path is used once.
    fn permitted(&mut self, path: &Path, dev: u64, ino: u64) -> bool {
        if let Some((asked, ok)) = self.access_answers.remove(&Key { dev, ino }) {
            if asked == path {
                return ok;
            }
        }
        match &self.access {
            None => true,
            Some(Ok(checker)) => checker.can_open(path, dev, ino),
            Some(Err(_)) => false,
        }
    }

    /// The extent map of history file `id` (seeded), computed when the
    /// history was verified: used when the file is opened, if unchanged.
    pub fn seed_extents(&mut self, id: FileId, extents: Vec<outrider_sys::Extent>) {
        self.closed_extents.insert(id, Arc::new(extents));
    }

    /// How a worker can open `id` itself (it has a handle on a mount we
    /// can reach), shared between the chunks of one file.
    pub fn open_spec(&mut self, id: FileId) -> Option<Arc<OpenSpec>> {
        if let Some(s) = self.specs.get(&id) {
            return Some(Arc::clone(s));
        }
        let info = self.info.get(&id)?;
        let (kind, bytes, mount_id) = info.handle.clone()?;
        let (dev, ino, size, mtime_ns) = (info.dev, info.ino, info.size, info.mtime_ns);
        let mount = self.mounts.fd_shared(mount_id)?;
        let spec = Arc::new(OpenSpec {
            mount,
            kind,
            bytes,
            info_dev: dev,
            info_ino: ino,
            size,
            mtime_ns,
        });
        if self.specs.len() >= SPECS_KEPT {
            self.specs.clear();
        }
        self.specs.insert(id, Arc::clone(&spec));
        Some(spec)
    }

    /// Is `id` open, or can it be opened from what is known of it?
    pub fn is_known(&self, id: FileId) -> bool {
        let known = self.info.contains_key(&id)
            || self.key_of(id).is_some_and(|(dev, _)| self.lazy_ok(dev));
        self.open.contains_key(&id) || (known && self.failed.get(&id).copied().unwrap_or(0) < 3)
    }

    /// The extent map of `id` if known without a system call (open, or
    /// kept from before).
    pub fn known_extents(&self, id: FileId) -> Option<Arc<Vec<outrider_sys::Extent>>> {
        match self.open.get(&id) {
            Some(f) => f.extents.clone(),
            None => self.closed_extents.get(&id).cloned(),
        }
    }

    /// What is known about `id`'s identity and location.
    pub fn info(&self, id: FileId) -> Option<&FileInfo> {
        self.info.get(&id)
    }

    /// The open file for `id` if it is open (no search).
    pub fn get(&mut self, id: FileId) -> Option<&mut OpenFile> {
        self.open.get_mut(&id)
    }

    /// Register a file opened by the caller (warm, tests). The (dev, ino)
    /// comes from `fstat`.
    pub fn insert_file(&mut self, file: File, path: PathBuf) -> Option<FileId> {
        let md = file.metadata().ok()?;
        let id = self.id_of(md.dev(), md.ino())?;
        self.insert(id, file, path);
        Some(id)
    }

    fn insert(&mut self, id: FileId, file: File, path: PathBuf) {
        let path = fs::read_link(&path).unwrap_or(path);
        let md = file.metadata().ok();
        if let Some(md) = &md {
            let handle = handle::name_to_handle(file.as_fd());
            let info = Stamp::of_md(md).info(md.dev(), md.ino(), handle, path.clone());
            self.info.insert(id, info);
        }
        self.insert_open(id, file, path, md.as_ref().map(Stamp::of_md));
    }

    /// Fill in the path and handle of every file opened by inode number
    /// (left empty then, see [`FileTable::resolve`]), and of every file
    /// left unopened ([`FileTable::lazy_ok`]; opened and stamped with its
    /// size and mtime now): what the history saves so the next run can
    /// reopen it. The size and mtime of a file opened during the run stay
    /// those seen then, so a file changed since is dropped by the next
    /// run's check, as one changed after the save is. Files
    /// that cannot be opened again keep an empty path and no handle (the
    /// history leaves them out).
    pub fn complete_identities(&mut self) {
        let ids: Vec<FileId> = (self.ids.iter())
            .filter(|(k, id)| match self.info.get(id) {
                Some(i) => i.path.as_os_str().is_empty(),
                None => self.lazy_ok(k.dev),
            })
            .map(|(_, id)| *id)
            .collect();
        for id in ids {
            // A file left unopened is opened (and stamped) now, once.
            if self.info.contains_key(&id) || self.open_left(id) {
                self.complete_identity(id);
            }
        }
    }

    /// The path of `id`, looked up now if it was left for later.
    pub fn path_of(&mut self, id: FileId) -> Option<PathBuf> {
        self.complete_identity(id);
        let p = &self.info.get(&id)?.path;
        (!p.as_os_str().is_empty()).then(|| p.clone())
    }

    fn complete_identity(&mut self, id: FileId) {
        let Some(info) = self.info.get(&id) else {
            return;
        };
        if !info.path.as_os_str().is_empty() {
            return;
        }
        let (dev, ino) = (info.dev, info.ino);
        let fd = match self.open.get(&id) {
            Some(f) => Arc::clone(&f.fd),
            None if !self.by_ino_ok => return,
            None => match handle::open_by_ino(&mut self.mounts, dev, ino) {
                Ok((f, st))
                    if st.st_dev == dev && st.st_ino == ino && self.user_may_open(&f, dev, ino) =>
                {
                    Arc::new(OwnedFd::from(f))
                }
                _ => return,
            },
        };
        let path = fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let handle = handle::name_to_handle(fd.as_fd());
        if let (Ok(path), Some(info)) = (path, self.info.get_mut(&id)) {
            info.path = path;
            info.handle = handle;
        }
    }

    fn insert_open(&mut self, id: FileId, file: File, path: PathBuf, stamp: Option<Stamp>) {
        self.clock += 1;
        if self.open.len() >= self.opts.max_open {
            if let Some((victim, f)) = self.open.pop_front() {
                if let Some(ex) = f.extents {
                    self.closed_extents.insert(victim, ex);
                }
            }
        }
        // An extent map known from before is kept if the file is unchanged.
        let extents = self.closed_extents.remove(&id).filter(|_| {
            self.info.get(&id).is_some_and(|i| {
                stamp.is_some_and(|m| m.size == i.size && m.mtime_ns == i.mtime_ns)
            })
        });
        self.open.insert(
            id,
            OpenFile {
                fd: Arc::new(OwnedFd::from(file)),
                size: stamp.map_or(0, |m| m.size),
                mtime_ns: stamp.map_or(0, |m| m.mtime_ns),
                path,
                extents,
                last_use: self.clock,
            },
        );
    }

    /// Re-`fstat` an open file; on a size or mtime change its extent map is
    /// dropped. Returns whether it changed.
    pub fn refresh(&mut self, id: FileId) -> bool {
        let Some(f) = self.open.get_mut(&id) else {
            return false;
        };
        let Ok(st) = outrider_sys::files::fstat(&*f.fd) else {
            return false;
        };
        let now = Stamp::of_stat(&st);
        if now.size != f.size || now.mtime_ns != f.mtime_ns {
            f.size = now.size;
            f.mtime_ns = now.mtime_ns;
            f.extents = None;
            return true;
        }
        false
    }

    /// The extent map of `id` if it was already computed (no system call).
    pub fn cached_extents(&self, id: FileId) -> Option<&[outrider_sys::Extent]> {
        self.open.get(&id)?.extents.as_deref().map(|v| v.as_slice())
    }

    /// Extent map of an open file (computed once, until it changes).
    pub fn extents(&mut self, id: FileId) -> Option<Arc<Vec<outrider_sys::Extent>>> {
        let f = self.open.get_mut(&id)?;
        if f.extents.is_none() {
            f.extents = outrider_sys::fiemap(f.fd.as_fd()).ok().map(Arc::new);
        }
        f.extents.clone()
    }
}
