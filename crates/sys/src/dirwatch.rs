//! The directories a program opens, from fanotify.
//!
//! A metadata walk (`du`, `find`, `ls -R`, `git status`) waits on
//! directory blocks and inode tables that are read through the block
//! device's page cache: the page-cache tracepoints show that metadata was
//! read, by block number, but not of which directory, and the block device
//! cannot be opened here to read it back by number. fanotify can say which
//! directories were opened: a mark on a whole file system
//! (`FAN_MARK_FILESYSTEM`) for `FAN_OPEN | FAN_ONDIR`, with an ignore mask
//! for `FAN_OPEN` on everything but directories (`FAN_MARK_IGNORE_SURV`,
//! Linux 6.0), events reported by file handle (`FAN_REPORT_FID`: no
//! descriptor is opened per event). A history can then list the same
//! directories ahead of the program's next run.
//!
//! Cost: one event per directory opened on the marked file systems by any
//! process, and a toll on every read of a file there: a marked file
//! system has watchers, so each read takes fsnotify's slow path to find
//! that no mark wants `FAN_ACCESS` (a one-byte `pread` of a cached page,
//! 25-60 ns more with the daemon's mark than without it, on Linux 6.18:
//! minima of 7 × 100 000 calls, 5 alternations); hence
//! [`DirWatch::set_marked`]. Events of other processes are dropped by the
//! caller, which knows the program's process tree. Needs `CAP_SYS_ADMIN`;
//! where a file system cannot be marked (no file handles, not permitted)
//! it is skipped and the watch sees less. Read-only: nothing is written.

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Directory opens kept at most (distinct (pid, directory) pairs): a bound
/// on the watch's memory, ~40 bytes each.
pub const MAX_DIRS: usize = 1 << 17;

/// How long the reader lets events gather after one arrives: reading each
/// event as it came cost 13 µs of CPU per directory of a cold `du` (a
/// wake-up each); the kernel queues 16 384 events.
const GATHER: std::time::Duration = std::time::Duration::from_millis(10);

/// One directory opened: by whom, on which file system, its handle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DirOpen {
    /// The opening process (thread-group id).
    pub pid: u32,
    /// The file system (`statfs` `f_fsid`).
    pub fsid: [i32; 2],
    /// The handle's type and bytes (`struct file_handle`).
    pub kind: i32,
    /// The handle's bytes.
    pub handle: Vec<u8>,
}

/// A marked file system: its `f_fsid` and a descriptor to open handles at.
struct Marked {
    fsid: [i32; 2],
    dir: File,
}

/// A running watch; [`DirWatch::finish`] stops it.
pub struct DirWatch {
    /// The fanotify group. Closing its last descriptor waits for an SRCU
    /// grace period (~20 ms added to every `outrider run` with history,
    /// measured on `ls`): the marks are flushed at [`DirWatch::finish`]
    /// instead, and a history saver forked after it shares the descriptor,
    /// so the last close is the saver's, in the background.
    fan: Arc<OwnedFd>,
    marked: Vec<Marked>,
    /// The marks are held ([`DirWatch::set_marked`]).
    on: bool,
    /// Written to stop the reader (an eventfd it polls beside fanotify's).
    stop: Arc<OwnedFd>,
    reader: Option<JoinHandle<Vec<DirOpen>>>,
}

impl DirWatch {
    /// Watch directory opens on the file systems holding `paths` (each
    /// file system once), kept until [`DirWatch::finish`]. `None` when
    /// fanotify or every mark failed.
    pub fn start<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Option<DirWatch> {
        DirWatch::start_with(paths, Sink::Collect)
    }

    /// Watch as [`DirWatch::start`], sending the directory opens to `tx`
    /// in batches as they are read (each (pid, directory) once per
    /// batch): for a watch that runs for good, where what is kept is the
    /// receiver's business. A batch the receiver has no room for is
    /// dropped.
    pub fn stream<'a>(
        paths: impl IntoIterator<Item = &'a Path>,
        tx: SyncSender<Vec<DirOpen>>,
    ) -> Option<DirWatch> {
        DirWatch::start_with(paths, Sink::Stream(tx))
    }

    fn start_with<'a>(paths: impl IntoIterator<Item = &'a Path>, sink: Sink) -> Option<DirWatch> {
        let flags =
            libc::FAN_CLASS_NOTIF | libc::FAN_REPORT_FID | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK;
        // SAFETY: plain system call.
        let fd = unsafe { libc::fanotify_init(flags, (libc::O_RDONLY | libc::O_CLOEXEC) as u32) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut marked: Vec<Marked> = Vec::new();
        for p in paths {
            let Some(m) = mark(&fd, p) else { continue };
            if !marked.iter().any(|x| x.fsid == m.fsid) {
                marked.push(m);
            }
        }
        if marked.is_empty() {
            return None;
        }
        // SAFETY: plain system call.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if efd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor we own.
        let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });
        let (s, fan) = (Arc::clone(&stop), Arc::new(fd));
        let f = Arc::clone(&fan);
        let reader = std::thread::Builder::new()
            .name("outrider-dirs".into())
            .spawn(move || read_events(&f, &s, sink))
            .ok()?;
        Some(DirWatch {
            fan,
            marked,
            on: true,
            stop,
            reader: Some(reader),
        })
    }

    /// Stop and return the directories opened, in first-open order, each
    /// (pid, directory) once.
    pub fn finish(&mut self) -> Vec<DirOpen> {
        // No more events (the marks' own release is deferred by the kernel).
        flush_marks(&self.fan);
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), 8) };
        (self.reader.take())
            .and_then(|r| r.join().ok())
            .unwrap_or_default()
    }

    /// Hold the marks (`true`, as after start) or remove them (`false`)
    /// until told again: a marked file system costs every open and read
    /// there (the module comment), so a watch needed only at times is
    /// marked only then. Directories opened while unmarked are not seen;
    /// [`DirWatch::path_of`] still works. Whether the marks are held.
    pub fn set_marked(&mut self, on: bool) -> bool {
        if on != self.on {
            if on {
                self.on = self.marked.iter().all(|m| add_marks(&self.fan, &m.dir));
            } else {
                flush_marks(&self.fan);
                self.on = false;
            }
        }
        self.on
    }

    /// Whether the marks are held ([`DirWatch::set_marked`]).
    pub fn marked(&self) -> bool {
        self.on
    }

    /// The path of a directory now (`None`: deleted, or its file system
    /// not marked). Needs `CAP_DAC_READ_SEARCH`.
    pub fn path_of(&self, d: &DirOpen) -> Option<PathBuf> {
        let m = self.marked.iter().find(|m| m.fsid == d.fsid)?;
        let f = open_dir_handle(m.dir.as_raw_fd(), d.kind, &d.handle)?;
        std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()
    }
}

impl DirWatch {
    /// The paths of `opened` now, each once, in their order (those gone
    /// since are left out).
    pub fn paths_of(&self, opened: &[DirOpen]) -> Vec<PathBuf> {
        let mut seen = HashSet::new();
        (opened.iter())
            .filter_map(|d| self.path_of(d))
            .filter(|p| seen.insert(p.clone()))
            .collect()
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Mark the file system of `path`; its fsid and a descriptor of `path`.
fn mark(fd: &OwnedFd, path: &Path) -> Option<Marked> {
    let dir = File::open(path).ok()?;
    if !add_marks(fd, &dir) {
        return None;
    }
    // SAFETY: a stat buffer we own and a valid descriptor.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut sfs) } != 0 {
        return None;
    }
    // SAFETY: fsid_t is two ints.
    let fsid: [i32; 2] = unsafe { std::mem::transmute(sfs.f_fsid) };
    Some(Marked { fsid, dir })
}

/// Mark the file system of `dir` (a descriptor of it): directory opens
/// reported, file opens ignored. Whether both marks were made.
fn add_marks(fd: &OwnedFd, dir: &File) -> bool {
    let add = libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM;
    let at = |flags, mask| {
        // SAFETY: valid descriptors; a null path marks `dir`'s object.
        unsafe {
            libc::fanotify_mark(
                fd.as_raw_fd(),
                flags,
                mask,
                dir.as_raw_fd(),
                std::ptr::null(),
            ) == 0
        }
    };
    at(add, libc::FAN_OPEN | libc::FAN_ONDIR)
        && at(add | libc::FAN_MARK_IGNORE_SURV, libc::FAN_OPEN)
}

/// Remove every file-system mark of the group `fd`.
fn flush_marks(fd: &OwnedFd) {
    let flush = libc::FAN_MARK_FLUSH | libc::FAN_MARK_FILESYSTEM;
    // SAFETY: plain system call on our descriptor.
    unsafe { libc::fanotify_mark(fd.as_raw_fd(), flush, 0, libc::AT_FDCWD, std::ptr::null()) };
}

/// Where a watch's reader puts the directory opens it reads.
enum Sink {
    /// Kept, each (pid, directory) once, at most [`MAX_DIRS`]; returned
    /// when the reader stops.
    Collect,
    /// Sent in batches as read (each (pid, directory) once per batch).
    Stream(SyncSender<Vec<DirOpen>>),
}

/// Read events until `stop` is written, into `sink`; what it collected.
fn read_events(fd: &OwnedFd, stop: &OwnedFd, sink: Sink) -> Vec<DirOpen> {
    let mut seen: HashSet<DirOpen> = HashSet::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut stopping = false;
    while !stopping {
        let mut p = [fd.as_raw_fd(), stop.as_raw_fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: two valid pollfds.
        if unsafe { libc::poll(p.as_mut_ptr(), 2, -1) } < 0 {
            break;
        }
        stopping = p[1].revents != 0;
        if !stopping {
            // Let events gather, unless told to stop meanwhile.
            let mut s = p[1];
            // SAFETY: one valid pollfd.
            stopping = unsafe { libc::poll(&mut s, 1, GATHER.as_millis() as i32) } > 0;
        }
        if let Sink::Stream(_) = sink {
            seen.clear();
        }
        // What is queued now (the last read when stopping).
        loop {
            // SAFETY: reading into a buffer we own; the descriptor is
            // non-blocking.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            for d in parse_events(&buf[..n as usize]) {
                if out.len() < MAX_DIRS && seen.insert(d.clone()) {
                    out.push(d);
                }
            }
        }
        if let Sink::Stream(tx) = &sink {
            if !out.is_empty() {
                let _ = tx.try_send(std::mem::take(&mut out));
            }
        }
    }
    out
}

/// The directory opens in a buffer of fanotify events (`FAN_REPORT_FID`
/// layout: `fanotify_event_metadata`, then info records; the first FID
/// record names the object). Malformed records end the parse.
pub fn parse_events(buf: &[u8]) -> Vec<DirOpen> {
    let mut out = Vec::new();
    let mut at = 0;
    while buf.len() - at >= META_LEN {
        let ev = &buf[at..];
        let event_len = u32_at(ev, 0) as usize;
        let meta_len = u16::from_le_bytes([ev[6], ev[7]]) as usize;
        if event_len < META_LEN
            || event_len > ev.len()
            || meta_len < META_LEN
            || meta_len > event_len
        {
            break;
        }
        let mask = u64::from_le_bytes(ev[8..16].try_into().unwrap_or_default());
        let pid = u32_at(ev, 20);
        if mask & libc::FAN_ONDIR != 0 {
            if let Some((fsid, kind, handle)) = fid_record(&ev[meta_len..event_len]) {
                out.push(DirOpen {
                    pid,
                    fsid,
                    kind,
                    handle,
                });
            }
        }
        at += event_len;
    }
    out
}

/// `sizeof(struct fanotify_event_metadata)`.
const META_LEN: usize = 24;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The first `FAN_EVENT_INFO_TYPE_FID` record of an event's info records:
/// header (type u8, pad u8, len u16), fsid (2 × i32), then a
/// `struct file_handle` (bytes u32, type i32, bytes...).
fn fid_record(mut info: &[u8]) -> Option<([i32; 2], i32, Vec<u8>)> {
    while info.len() >= 4 {
        let (kind, len) = (info[0], u16::from_le_bytes([info[2], info[3]]) as usize);
        if len < 4 || len > info.len() {
            return None;
        }
        let rec = &info[..len];
        if kind == libc::FAN_EVENT_INFO_TYPE_FID && len >= 20 {
            let fsid = [u32_at(rec, 4) as i32, u32_at(rec, 8) as i32];
            let bytes = u32_at(rec, 12) as usize;
            let htype = u32_at(rec, 16) as i32;
            let handle = rec.get(20..20 + bytes)?.to_vec();
            return Some((fsid, htype, handle));
        }
        info = &info[len..];
    }
    None
}

/// `open_by_handle_at(O_PATH | O_DIRECTORY)` on the file system of `mfd`.
fn open_dir_handle(mfd: i32, kind: i32, bytes: &[u8]) -> Option<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    crate::handle::open_handle_flags(mfd, kind, bytes, flags).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(mask: u64, pid: u32, info: &[u8]) -> Vec<u8> {
        let len = (META_LEN + info.len()) as u32;
        let mut e = Vec::new();
        e.extend_from_slice(&len.to_le_bytes());
        e.extend_from_slice(&[3, 0]);
        e.extend_from_slice(&(META_LEN as u16).to_le_bytes());
        e.extend_from_slice(&mask.to_le_bytes());
        e.extend_from_slice(&(-1i32).to_le_bytes());
        e.extend_from_slice(&pid.to_le_bytes());
        e.extend_from_slice(info);
        e
    }

    fn fid(fsid: [i32; 2], kind: i32, handle: &[u8]) -> Vec<u8> {
        let len = (20 + handle.len()) as u16;
        let mut r = vec![libc::FAN_EVENT_INFO_TYPE_FID, 0];
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(&fsid[0].to_le_bytes());
        r.extend_from_slice(&fsid[1].to_le_bytes());
        r.extend_from_slice(&(handle.len() as u32).to_le_bytes());
        r.extend_from_slice(&kind.to_le_bytes());
        r.extend_from_slice(handle);
        r
    }

    #[test]
    fn directory_opens_are_parsed_and_file_opens_skipped() {
        let mut buf = event(
            libc::FAN_OPEN | libc::FAN_ONDIR,
            42,
            &fid([7, 9], 1, &[1, 2, 3, 4, 5, 6, 7, 8]),
        );
        buf.extend(event(libc::FAN_OPEN, 43, &fid([7, 9], 1, &[9; 8])));
        buf.extend(event(
            libc::FAN_OPEN | libc::FAN_ONDIR,
            44,
            &fid([7, 9], 2, &[5; 12]),
        ));
        let got = parse_events(&buf);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            DirOpen {
                pid: 42,
                fsid: [7, 9],
                kind: 1,
                handle: vec![1, 2, 3, 4, 5, 6, 7, 8]
            }
        );
        assert_eq!((got[1].pid, got[1].kind, got[1].handle.len()), (44, 2, 12));
    }

    #[test]
    fn truncated_or_malformed_events_end_the_parse() {
        let good = event(
            libc::FAN_OPEN | libc::FAN_ONDIR,
            1,
            &fid([1, 1], 1, &[1; 8]),
        );
        assert!(parse_events(&good[..good.len() - 1]).is_empty());
        let mut bad = good.clone();
        bad[0..4].copy_from_slice(&3u32.to_le_bytes()); // event_len below the header
        assert!(parse_events(&bad).is_empty());
        let mut short_handle = good.clone();
        short_handle[META_LEN + 12..META_LEN + 16].copy_from_slice(&200u32.to_le_bytes());
        assert!(parse_events(&short_handle).is_empty());
    }

    #[test]
    fn a_watch_sees_a_directory_this_process_opens() {
        let dir = std::env::temp_dir().join(format!("outrider-dirwatch-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let Some(mut w) = DirWatch::start([dir.as_path()]) else {
            eprintln!("skipped: fanotify needs CAP_SYS_ADMIN");
            return;
        };
        let _ = std::fs::read_dir(dir.join("sub")).unwrap().count();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let me = std::process::id();
        let got = w.finish();
        let paths: Vec<PathBuf> = got
            .iter()
            .filter(|d| d.pid == me)
            .filter_map(|d| w.path_of(d))
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(paths.contains(&dir.join("sub")), "{paths:?}");
    }

    #[test]
    fn an_unmarked_watch_sees_nothing_until_marked_again() {
        let dir = std::env::temp_dir().join(format!("outrider-dirwatch-un-{}", std::process::id()));
        for d in ["off", "on"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let Some(mut w) = DirWatch::start([dir.as_path()]) else {
            eprintln!("skipped: fanotify needs CAP_SYS_ADMIN");
            return;
        };
        assert!(!w.set_marked(false));
        let _ = std::fs::read_dir(dir.join("off")).unwrap().count();
        assert!(w.set_marked(true));
        let _ = std::fs::read_dir(dir.join("on")).unwrap().count();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let me = std::process::id();
        let got = w.finish();
        let paths: Vec<PathBuf> = (got.iter())
            .filter(|d| d.pid == me)
            .filter_map(|d| w.path_of(d))
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(paths.contains(&dir.join("on")), "{paths:?}");
        assert!(!paths.contains(&dir.join("off")), "{paths:?}");
    }
}
