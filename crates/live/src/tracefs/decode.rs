//! Turning raw tracefs records into [`LiveEvent`]s, with every field offset
//! looked up in the running kernel's `format` files.

use super::format::{EventFormat, Field, FormatError};
use super::ring::field_u64;
use rustc_hash::FxHashMap;

/// The tracepoints outrider enables, as `(system, event)`.
pub const EVENTS: &[(&str, &str)] = &[
    ("filemap", "mm_filemap_get_pages"),
    ("filemap", "mm_filemap_add_to_page_cache"),
    ("filemap", "mm_filemap_map_pages"),
    ("filemap", "mm_filemap_fault"),
    ("block", "block_rq_issue"),
    ("block", "block_rq_complete"),
    ("sched", "sched_process_fork"),
];

/// `sched_process_exec`: not in [`EVENTS`] (`outrider run` follows one
/// tree it started itself); the machine-wide daemon enables it to see
/// every program start.
pub const EXEC_EVENT: (&str, &str) = ("sched", "sched_process_exec");

/// A decoded kernel event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveEvent {
    /// CLOCK_MONOTONIC nanoseconds (converted by [`super::Instance`]).
    pub ts_ns: u64,
    /// The task that was running (`common_pid`: a thread id).
    pub pid: u32,
    /// What happened.
    pub kind: EventKind,
}

/// The events outrider understands. Device numbers are user-space `dev_t`
/// values (as `stat(2)` gives them), converted from the kernel's
/// `major << 20 | minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `mm_filemap_get_pages`: a read of pages `index..=last_index` (hits
    /// included).
    GetPages {
        /// Device of the file system.
        dev: u64,
        /// Inode.
        ino: u64,
        /// First page.
        index: u64,
        /// Last page (inclusive).
        last_index: u64,
    },
    /// `mm_filemap_add_to_page_cache`: a folio of `1 << order` pages entered
    /// the cache.
    AddToCache {
        /// Device.
        dev: u64,
        /// Inode.
        ino: u64,
        /// First page.
        index: u64,
        /// Folio order.
        order: u8,
    },
    /// `mm_filemap_map_pages`: fault-around mapped `index..=last_index`.
    MapPages {
        /// Device.
        dev: u64,
        /// Inode.
        ino: u64,
        /// First page.
        index: u64,
        /// Last page (inclusive).
        last_index: u64,
    },
    /// `mm_filemap_fault`: a page fault on a file mapping.
    Fault {
        /// Device.
        dev: u64,
        /// Inode.
        ino: u64,
        /// Page.
        index: u64,
    },
    /// `block_rq_issue`: a request went to the device driver.
    BlockIssue {
        /// Block device.
        dev: u64,
        /// First 512-byte sector.
        sector: u64,
        /// Sectors.
        nr_sector: u32,
        /// A write (rwbs contains 'W').
        write: bool,
    },
    /// `block_rq_complete`: a request finished.
    BlockComplete {
        /// Block device.
        dev: u64,
        /// First sector.
        sector: u64,
        /// Sectors.
        nr_sector: u32,
        /// A write.
        write: bool,
    },
    /// `sched_process_fork`: `parent` created task `child` (process or
    /// thread).
    Fork {
        /// Parent task.
        parent: u32,
        /// New task.
        child: u32,
    },
    /// `sched_process_exec`: process `pid` replaced its image (its new
    /// executable is `/proc/PID/exe`).
    Exec {
        /// The process.
        pid: u32,
        /// A hash of the file name the exec was given, as the eBPF source
        /// computes it in the kernel (the key of its quiet names,
        /// `EbpfSource::quiet`); 0 from the tracefs source.
        name: u64,
    },
    /// `sched_process_exit`: thread `tid` exited (sent by the eBPF source
    /// for followed threads only, `EbpfSource::sends_exit_waits`).
    Exit {
        /// The thread.
        tid: u32,
        /// Its block-I/O wait (delay accounting's `blkio_delay`), ns.
        blkio_ns: u64,
    },
}

/// Pages in a folio of `order` (an [`EventKind::AddToCache`]'s): the
/// order is bounded at 20 (4 GiB) so a malformed record cannot shift past
/// the width.
pub fn folio_pages(order: u8) -> u32 {
    1 << order.min(20)
}

/// Convert the kernel's internal `dev_t` (major << 20 | minor) to the
/// user-space encoding `stat(2)` returns.
pub fn kernel_dev_to_user(kdev: u64) -> u64 {
    let major = (kdev >> 20) as u32;
    let minor = (kdev & 0xfffff) as u32;
    libc::makedev(major, minor)
}

#[derive(Clone, Copy, Debug)]
struct Off {
    offset: usize,
    size: usize,
}

impl From<&Field> for Off {
    fn from(f: &Field) -> Self {
        Off {
            offset: f.offset,
            size: f.size,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Which {
    GetPages,
    AddToCache,
    MapPages,
    Fault,
    Issue,
    Complete,
    Fork,
    Exec,
    Exit,
}

#[derive(Clone, Debug)]
struct Layout {
    which: Which,
    /// Up to four fields, in the order the kind needs them.
    f: [Off; 4],
}

/// Threads whose last read is remembered at most by [`Continuations`]
/// (all are forgotten past it: a bound on its memory, ~40 bytes each).
const CONTINUATIONS_MAX: usize = 4096;

/// Drops the `mm_filemap_get_pages` events that continue a read already
/// reported. The kernel's `filemap_read` fills a batch of at most 31
/// folios per call of `filemap_get_pages`, and each call reports from
/// where it is to the end of the whole read: python's one `read` of a 16
/// MiB file in memory came as 82 events of 4 097, 4 066, 4 035, ...
/// pages, 218 796 pages counted for 4 097 read (Linux 6.18, tracefs).
/// The first event of a read
/// names all of it; an event of the same thread, file and last page that
/// starts after the last one's start is the same read going on.
#[derive(Debug, Default)]
pub struct Continuations {
    last: FxHashMap<u32, (u64, u64, u64, u64)>,
}

impl Continuations {
    /// Remove from `events[from..]` the continuations of reads reported
    /// before them (in this call or an earlier one); the others keep
    /// their order.
    pub fn drop_from(&mut self, events: &mut Vec<LiveEvent>, from: usize) {
        let mut i = from;
        for j in from..events.len() {
            if !self.continues(&events[j]) {
                events.swap(i, j);
                i += 1;
            }
        }
        events.truncate(i);
    }

    /// Does `e` continue its thread's last read (and remember it if not)?
    fn continues(&mut self, e: &LiveEvent) -> bool {
        let EventKind::GetPages {
            dev,
            ino,
            index,
            last_index,
        } = e.kind
        else {
            return false;
        };
        if let Some(l) = self.last.get_mut(&e.pid) {
            let (d, i, from, to) = *l;
            if (d, i, to) == (dev, ino, last_index) && from < index && index <= to {
                l.2 = index;
                return true;
            }
        }
        if self.last.len() >= CONTINUATIONS_MAX {
            self.last.clear();
        }
        self.last.insert(e.pid, (dev, ino, index, last_index));
        false
    }
}

/// Decodes records of the enabled events by their `common_type`.
#[derive(Clone, Debug)]
pub struct Decoder {
    by_id: FxHashMap<u16, Layout>,
    ty: Off,
    pid: Off,
}

impl Decoder {
    /// Build from the parsed format files of [`EVENTS`] (in any order).
    pub fn new(formats: &[EventFormat]) -> Result<Decoder, FormatError> {
        let mut by_id = FxHashMap::default();
        let mut ty = Off { offset: 0, size: 2 };
        let mut pid = Off { offset: 4, size: 4 };
        for f in formats {
            ty = f.field("common_type")?.into();
            pid = f.field("common_pid")?.into();
            let get = |n: &str| -> Result<Off, FormatError> { Ok(f.field(n)?.into()) };
            let unused = Off { offset: 0, size: 0 };
            let (which, fields) = match f.name.as_str() {
                "mm_filemap_get_pages" => (
                    Which::GetPages,
                    [
                        get("s_dev")?,
                        get("i_ino")?,
                        get("index")?,
                        get("last_index")?,
                    ],
                ),
                "mm_filemap_map_pages" => (
                    Which::MapPages,
                    [
                        get("s_dev")?,
                        get("i_ino")?,
                        get("index")?,
                        get("last_index")?,
                    ],
                ),
                "mm_filemap_add_to_page_cache" => (
                    Which::AddToCache,
                    [get("s_dev")?, get("i_ino")?, get("index")?, get("order")?],
                ),
                "mm_filemap_fault" => (
                    Which::Fault,
                    [get("s_dev")?, get("i_ino")?, get("index")?, unused],
                ),
                "block_rq_issue" => (
                    Which::Issue,
                    [get("dev")?, get("sector")?, get("nr_sector")?, get("rwbs")?],
                ),
                "block_rq_complete" => (
                    Which::Complete,
                    [get("dev")?, get("sector")?, get("nr_sector")?, get("rwbs")?],
                ),
                "sched_process_fork" => (
                    Which::Fork,
                    [get("parent_pid")?, get("child_pid")?, unused, unused],
                ),
                "sched_process_exec" => (Which::Exec, [get("pid")?, unused, unused, unused]),
                "sched_process_exit" => (Which::Exit, [get("pid")?, unused, unused, unused]),
                _ => continue,
            };
            by_id.insert(f.id, Layout { which, f: fields });
        }
        Ok(Decoder { by_id, ty, pid })
    }

    /// Decode one record; `None` for events not enabled by outrider.
    pub fn decode(&self, ts_ns: u64, rec: &[u8]) -> Option<LiveEvent> {
        let id = field_u64(rec, self.ty.offset, self.ty.size) as u16;
        let l = self.by_id.get(&id)?;
        let pid = field_u64(rec, self.pid.offset, self.pid.size) as u32;
        let v = |i: usize| field_u64(rec, l.f[i].offset, l.f[i].size);
        let write = |i: usize| {
            let o = l.f[i];
            rec.get(o.offset..o.offset + o.size)
                .is_some_and(|s| s.contains(&b'W'))
        };
        let kind = match l.which {
            Which::GetPages => EventKind::GetPages {
                dev: kernel_dev_to_user(v(0)),
                ino: v(1),
                index: v(2),
                last_index: v(3),
            },
            Which::MapPages => EventKind::MapPages {
                dev: kernel_dev_to_user(v(0)),
                ino: v(1),
                index: v(2),
                last_index: v(3),
            },
            Which::AddToCache => EventKind::AddToCache {
                dev: kernel_dev_to_user(v(0)),
                ino: v(1),
                index: v(2),
                order: v(3) as u8,
            },
            Which::Fault => EventKind::Fault {
                dev: kernel_dev_to_user(v(0)),
                ino: v(1),
                index: v(2),
            },
            Which::Issue => EventKind::BlockIssue {
                dev: kernel_dev_to_user(v(0)),
                sector: v(1),
                nr_sector: v(2) as u32,
                write: write(3),
            },
            Which::Complete => EventKind::BlockComplete {
                dev: kernel_dev_to_user(v(0)),
                sector: v(1),
                nr_sector: v(2) as u32,
                write: write(3),
            },
            Which::Fork => EventKind::Fork {
                parent: v(0) as u32,
                child: v(1) as u32,
            },
            Which::Exit => EventKind::Exit {
                tid: v(0) as u32,
                blkio_ns: 0,
            },
            Which::Exec => EventKind::Exec {
                pid: v(0) as u32,
                name: 0,
            },
        };
        Some(LiveEvent { ts_ns, pid, kind })
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::parse_format;
    use super::*;

    #[test]
    fn a_folio_holds_two_to_its_order_pages_bounded() {
        assert_eq!(folio_pages(0), 1);
        assert_eq!(folio_pages(9), 512);
        assert_eq!(folio_pages(20), 1 << 20);
        assert_eq!(folio_pages(u8::MAX), 1 << 20);
    }

    const ISSUE: &str = "name: block_rq_issue
ID: 2104
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;
";

    #[test]
    fn decodes_block_issue_with_offsets_from_format() {
        let f = parse_format(ISSUE, "issue").unwrap();
        let d = Decoder::new(&[f]).unwrap();
        let mut rec = vec![0u8; 64];
        rec[0..2].copy_from_slice(&2104u16.to_le_bytes());
        rec[4..8].copy_from_slice(&4321u32.to_le_bytes());
        // 253:16 in the kernel's encoding
        rec[8..12].copy_from_slice(&((253u32 << 20) | 16).to_le_bytes());
        rec[16..24].copy_from_slice(&123456u64.to_le_bytes());
        rec[24..28].copy_from_slice(&256u32.to_le_bytes());
        rec[34..36].copy_from_slice(b"RA");
        let e = d.decode(77, &rec).unwrap();
        assert_eq!(
            e,
            LiveEvent {
                ts_ns: 77,
                pid: 4321,
                kind: EventKind::BlockIssue {
                    dev: libc::makedev(253, 16),
                    sector: 123456,
                    nr_sector: 256,
                    write: false
                }
            }
        );
        rec[0..2].copy_from_slice(&9u16.to_le_bytes());
        assert_eq!(d.decode(1, &rec), None, "unknown ids are skipped");
    }

    #[test]
    fn decodes_exec_with_the_pid_field() {
        let text = "name: sched_process_exec
ID: 365
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;
";
        let d = Decoder::new(&[parse_format(text, "exec").unwrap()]).unwrap();
        let mut rec = vec![0u8; 20];
        rec[0..2].copy_from_slice(&365u16.to_le_bytes());
        rec[4..8].copy_from_slice(&77u32.to_le_bytes());
        rec[12..16].copy_from_slice(&88u32.to_le_bytes());
        let e = d.decode(5, &rec).unwrap();
        assert_eq!(e.kind, EventKind::Exec { pid: 88, name: 0 });
    }

    #[test]
    fn a_read_reported_again_as_it_goes_on_is_kept_once() {
        let get = |pid, ino, index, last_index| LiveEvent {
            ts_ns: 0,
            pid,
            kind: EventKind::GetPages {
                dev: 1,
                ino,
                index,
                last_index,
            },
        };
        let fork = LiveEvent {
            ts_ns: 0,
            pid: 7,
            kind: EventKind::Fork {
                parent: 7,
                child: 8,
            },
        };
        let mut c = Continuations::default();
        let mut ev = vec![get(7, 5, 0, 99), get(7, 5, 31, 99), fork, get(8, 5, 31, 99)];
        c.drop_from(&mut ev, 0);
        assert_eq!(ev, [get(7, 5, 0, 99), fork, get(8, 5, 31, 99)]);
        // The same read goes on in the next poll; what is already there
        // is left alone.
        ev.extend([get(7, 5, 62, 99), get(7, 5, 93, 99)]);
        c.drop_from(&mut ev, 3);
        assert_eq!(ev.len(), 3);
        // A new read: another file, an earlier start, another end, or the
        // same page again.
        let new = [
            get(7, 6, 93, 99),
            get(7, 5, 0, 99),
            get(7, 5, 0, 100),
            get(7, 5, 0, 100),
        ];
        let mut ev = new.to_vec();
        c.drop_from(&mut ev, 0);
        assert_eq!(ev, new);
    }

    #[test]
    fn kernel_dev_conversion_matches_makedev() {
        assert_eq!(kernel_dev_to_user((8 << 20) | 1), libc::makedev(8, 1));
        assert_eq!(kernel_dev_to_user(0), 0);
    }
}
