//! `strace`: file-level traces from
//! `strace -f -tt -e trace=open,openat,execve,read,pread64,close [-o FILE] CMD`
//! (EPCM: whole-file access events from real programs).
//!
//! # Accepted lines
//!
//! ```text
//! [PID] TIME SYSCALL(ARGS) = RET [ERRNO (message)]
//! [PID] TIME SYSCALL(ARGS <unfinished ...>
//! [PID] TIME <... SYSCALL resumed>REST) = RET
//! [PID] TIME +++ exited with 0 +++        (skipped)
//! [PID] TIME --- SIGCHLD {...} ---        (skipped)
//! ```
//!
//! - `PID`: a bare number (`-o FILE` with `-f`) or `[pid N]` (`-f` to
//!   stderr); absent for the first process when strace writes to stderr,
//!   which is then pid 0.
//! - `TIME`: `HH:MM:SS.ffffff` (`-tt`) or seconds since the epoch
//!   `S.ffffff` (`-ttt`). With `-tt` a time more than 12 h before the
//!   previous one is taken as the next day (midnight wrap). Times are made
//!   relative to the first line; an `<unfinished ...>` call takes the time
//!   it started.
//! - `<unfinished ...>` / `<... NAME resumed>`: the two halves are joined
//!   per pid (strace prints them when another process's line comes between).
//!   A resumed line with no unfinished start is a bad record.
//! - Syscalls: `open("path", ...)`, `openat(DIRFD, "path", ...)`,
//!   `execve("path", ...)`, `read(FD, ..., N)`, `pread64(FD, ..., N,
//!   OFFSET)`, `close(FD)`. Other syscalls are counted as ignored.
//!
//! # Meaning
//!
//! - A successful open (`= FD`, FD ≥ 0) binds FD in that pid's table to the
//!   path's file (paths as written: relative paths are not resolved against
//!   a working directory; `openat` with a directory fd other than
//!   `AT_FDCWD` uses the path as given). **Failed opens** (`= -1 ENOENT
//!   (...)`) are counted as ignored and bind nothing.
//! - `read(FD, …) = N` with N > 0 is a read of N bytes at FD's position,
//!   which then advances; `pread64(FD, …, COUNT, OFFSET) = N` reads N bytes
//!   at OFFSET and leaves the position. A read of 0 bytes (end of file), a
//!   failed read, or a read of an FD the pid did not open here (stdin,
//!   pipes, inherited or `dup`ed descriptors, which this trace set does not
//!   show) is ignored.
//! - `execve("path", …) = 0` is a read of the executable's first 4 KiB page
//!   (the ELF header; later page faults are invisible to strace). The pid's
//!   FD table is kept (close-on-exec is not visible).
//! - `close(FD)` unbinds FD. An open followed by no read is no request.
//!
//! Each read becomes one record with `file` = the file's number (files in
//! order of first successful open or exec), `file_offset` and `size` from
//! the call, `pid`, `time_ns`. A file's size is the largest end of any read
//! of it (at least 1 byte). Files are then laid out contiguously in
//! creation order from byte 0 ([`crate::filelayout::lay_out`]; call it
//! again for a fragmented layout), which gives each record its physical
//! `offset`. Every file event the EPCM policies learn (the first read
//! after an open) is thus in the trace, and `outrider trace convert` writes
//! it in the native format, which carries files, pids and file offsets.

use super::text::{self, Ctx, Line};
use crate::{FileInfo, Record, Trace, TraceError, TraceMeta};
use std::collections::HashMap;

/// Nanoseconds per day (for the `-tt` midnight wrap).
const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// What one line says, before the per-pid state is applied.
#[derive(Debug, PartialEq)]
enum Event {
    Open {
        path: String,
        fd: i64,
    },
    Exec {
        path: String,
        ok: bool,
    },
    Read {
        fd: i64,
        offset: Option<u64>,
        bytes: i64,
    },
    Close {
        fd: i64,
    },
    Other,
}

/// Split `[pid N] TIME REST`, `N TIME REST` or `TIME REST`.
fn split_prefix(line: &str) -> Result<(u32, &str, &str), String> {
    let t = line.trim_start();
    let (pid, rest) = if let Some(r) = t.strip_prefix("[pid") {
        let (n, rest) = r
            .split_once(']')
            .ok_or_else(|| format!("expected `[pid N]`, found {}", text::show(line)))?;
        let pid = n
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("expected a pid in `[pid N]`, found {}", text::show(n)))?;
        (pid, rest.trim_start())
    } else {
        let (first, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty() {
            let pid = first
                .parse::<u32>()
                .map_err(|_| format!("pid {} out of range", text::show(first)))?;
            (pid, rest.trim_start())
        } else {
            (0, t)
        }
    };
    let (time, body) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("expected `TIME SYSCALL(...)`, found {}", text::show(line)))?;
    Ok((pid, time, body.trim_start()))
}

/// `HH:MM:SS.ffffff` or `S.ffffff` to nanoseconds.
fn parse_time(t: &str) -> Result<(u64, bool), String> {
    let bad = || {
        format!(
            "expected a time HH:MM:SS.ffffff or seconds.ffffff, found {}",
            text::show(t)
        )
    };
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let frac_ns = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32)
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let num = |s: &str| -> Result<u64, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 12 {
            return Err(bad());
        }
        s.parse::<u64>().map_err(|_| bad())
    };
    match parts.as_slice() {
        [h, m, s] => {
            let (h, m, s) = (num(h)?, num(m)?, num(s)?);
            if h > 23 || m > 59 || s > 60 {
                return Err(bad());
            }
            Ok(((h * 3600 + m * 60 + s) * 1_000_000_000 + frac_ns, true))
        }
        [s] => {
            // Up to 12 digits of seconds: 10^12 s is past 2^64 ns.
            let ns = num(s)?
                .checked_mul(1_000_000_000)
                .and_then(|ns| ns.checked_add(frac_ns))
                .ok_or_else(|| {
                    format!(
                        "expected a time below 2^64 ns (584 years), found {}",
                        text::show(t)
                    )
                })?;
            Ok((ns, false))
        }
        _ => Err(bad()),
    }
}

/// The C-escaped string starting at the first `"` of `s`.
fn quoted(s: &str) -> Result<String, String> {
    let start = s
        .find('"')
        .ok_or_else(|| format!("expected a quoted path, found {}", text::show(s)))?;
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'"' => return Ok(String::from_utf8_lossy(&out).into_owned()),
            b'\\' if i + 1 < b.len() => {
                i += 1;
                match b[i] {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'x' => {
                        let h = s
                            .get(i + 1..i + 3)
                            .and_then(|h| u8::from_str_radix(h, 16).ok());
                        let h = h.ok_or_else(|| "expected \\xHH in a quoted path".to_string())?;
                        out.push(h);
                        i += 2;
                    }
                    d @ b'0'..=b'7' => {
                        let mut v = u32::from(d - b'0');
                        let mut n = 1;
                        while n < 3 && i + 1 < b.len() && (b'0'..=b'7').contains(&b[i + 1]) {
                            i += 1;
                            v = v * 8 + u32::from(b[i] - b'0');
                            n += 1;
                        }
                        out.push((v & 0xff) as u8);
                    }
                    c => out.push(c),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    Err(format!("unterminated quoted path in {}", text::show(s)))
}

fn int(s: &str, what: &str) -> Result<i64, String> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| format!("expected {what}, found {}", text::show(s)))
}

/// Parse a complete call `NAME(ARGS) = RET ...`.
fn parse_call(body: &str) -> Result<Event, String> {
    let (call, ret) = body.rsplit_once(" = ").ok_or_else(|| {
        format!(
            "expected `SYSCALL(...) = RESULT`, found {}",
            text::show(body)
        )
    })?;
    let ret_first = ret.split_whitespace().next().unwrap_or("");
    let (name, args) = call
        .split_once('(')
        .ok_or_else(|| format!("expected `SYSCALL(`, found {}", text::show(call)))?;
    let args = args.trim_end();
    let args = args.strip_suffix(')').unwrap_or(args);
    let name = name.trim();
    let retv = |what| int(ret_first, what);
    Ok(match name {
        "open" | "openat" => {
            let path = quoted(args)?;
            if name == "openat" && !args.trim_start().starts_with("AT_FDCWD") {
                let fd = args.split(',').next().unwrap_or("");
                int(fd, "a directory fd or AT_FDCWD")?;
            }
            Event::Open {
                path,
                fd: retv("a file descriptor or -1")?,
            }
        }
        "execve" => Event::Exec {
            path: quoted(args)?,
            ok: retv("0 or -1")? == 0,
        },
        "read" | "pread64" => {
            let fd = int(args.split(',').next().unwrap_or(""), "a file descriptor")?;
            let offset = if name == "pread64" {
                let last = args.rsplit(',').next().unwrap_or("");
                let o = int(last, "a pread64 offset")?;
                Some(u64::try_from(o).map_err(|_| format!("negative pread64 offset {o}"))?)
            } else {
                None
            };
            Event::Read {
                fd,
                offset,
                bytes: retv("a byte count or -1")?,
            }
        }
        "close" => Event::Close {
            fd: int(args, "a file descriptor")?,
        },
        _ => Event::Other,
    })
}

/// Reader state across lines.
#[derive(Default)]
struct State {
    files: Vec<FileInfo>,
    by_path: HashMap<String, u32>,
    /// (pid, fd) → (file number, position).
    fds: HashMap<(u32, i64), (u32, u64)>,
    /// pid → (start time, call text so far) of an unfinished call.
    pending: HashMap<u32, (u64, String)>,
    records: Vec<Record>,
    last_time: Option<u64>,
    day_ns: u64,
}

impl State {
    fn file(&mut self, path: String) -> u32 {
        if let Some(&f) = self.by_path.get(&path) {
            return f;
        }
        self.files.push(FileInfo {
            path: path.clone(),
            size: 1,
            ..FileInfo::default()
        });
        let f = self.files.len() as u32;
        self.by_path.insert(path, f);
        f
    }

    fn read(&mut self, time_ns: u64, pid: u32, file: u32, at: u64, bytes: u64) {
        let size = bytes.min(u64::from(u32::MAX)) as u32;
        let info = &mut self.files[file as usize - 1];
        info.size = info.size.max(at.saturating_add(u64::from(size)));
        self.records.push(Record {
            time_ns,
            offset: 0,
            file_offset: at,
            file,
            size,
            pid,
            dev: 0,
            op: crate::record::OP_READ,
            flags: 0,
        });
    }

    fn apply(&mut self, time_ns: u64, pid: u32, ev: Event) -> Line {
        match ev {
            Event::Open { path, fd } if fd >= 0 => {
                let f = self.file(path);
                self.fds.insert((pid, fd), (f, 0));
                Line::Skip
            }
            Event::Exec { path, ok: true } => {
                let f = self.file(path);
                self.read(time_ns, pid, f, 0, 4096);
                Line::Skip
            }
            Event::Read { fd, offset, bytes } if bytes > 0 => {
                let Some(&(f, pos)) = self.fds.get(&(pid, fd)) else {
                    return Line::Ignored;
                };
                let bytes = bytes as u64;
                match offset {
                    Some(o) => self.read(time_ns, pid, f, o, bytes),
                    None => {
                        self.read(time_ns, pid, f, pos, bytes);
                        self.fds.insert((pid, fd), (f, pos.saturating_add(bytes)));
                    }
                }
                Line::Skip
            }
            Event::Close { fd } => {
                self.fds.remove(&(pid, fd));
                Line::Skip
            }
            _ => Line::Ignored,
        }
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let (pid, time, body) = split_prefix(line)?;
        let (mut t, wall) = parse_time(time)?;
        if wall {
            if let Some(last) = self.last_time {
                if t + self.day_ns + DAY_NS / 2 < last {
                    self.day_ns += DAY_NS;
                }
            }
            t += self.day_ns;
        }
        self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
        if body.starts_with("+++") || body.starts_with("---") {
            return Ok(Line::Skip);
        }
        if let Some(head) = body.strip_suffix("<unfinished ...>") {
            self.pending.insert(pid, (t, head.to_string()));
            return Ok(Line::Skip);
        }
        if let Some(rest) = body.strip_prefix("<...") {
            let (name, tail) = rest.split_once("resumed>").ok_or_else(|| {
                format!("expected `<... NAME resumed>`, found {}", text::show(body))
            })?;
            let (start, head) = self.pending.remove(&pid).ok_or_else(|| {
                format!(
                    "`<...{name}resumed>` of pid {pid} without an `<unfinished ...>` call before it"
                )
            })?;
            let joined = format!("{head}{tail}");
            let ev = parse_call(&joined)?;
            return Ok(self.apply(start, pid, ev));
        }
        let ev = parse_call(body)?;
        Ok(self.apply(t, pid, ev))
    }
}

/// Parse one line on its own (format detection): a syscall line, resumed or
/// unfinished half, or an exit/signal line.
pub(crate) fn accepts_line(line: &str) -> bool {
    let Ok((_, time, body)) = split_prefix(line) else {
        return false;
    };
    if parse_time(time).is_err() {
        return false;
    }
    body.starts_with("+++")
        || body.starts_with("---")
        || body.ends_with("<unfinished ...>")
        || (body.starts_with("<...") && body.contains("resumed>"))
        || parse_call(body).is_ok_and(|e| e != Event::Other)
}

/// Read a whole strace output.
pub(crate) fn read(ctx: &mut Ctx<'_>) -> Result<Trace, TraceError> {
    let mut st = State::default();
    let _ = text::read_lines(ctx, |_, line| st.line(line))?;
    let mut records = std::mem::take(&mut st.records);
    text::relative_times(&mut records);
    let meta = TraceMeta {
        source: String::new(),
        processes: Vec::new(),
        files: std::mem::take(&mut st.files),
    };
    Ok(crate::filelayout::lay_out(
        &Trace::new(meta, records),
        0,
        0,
        0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(Vec<Record>, Vec<String>, u64), String> {
        let mut st = State::default();
        let mut ignored = 0;
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Line::Ignored = st.line(l)? {
                ignored += 1;
            }
        }
        Ok((
            st.records,
            st.files.into_iter().map(|f| f.path).collect(),
            ignored,
        ))
    }

    #[test]
    fn opens_reads_and_closes_per_pid() {
        let (r, files, ignored) = parse(
            "100 12:00:00.000001 execve(\"/usr/bin/cc\", [\"cc\"], 0x7ffd /* 3 vars */) = 0\n\
             100 12:00:00.000010 openat(AT_FDCWD, \"/usr/include/stdio.h\", O_RDONLY) = 3\n\
             100 12:00:00.000020 read(3, \"#ifndef\"..., 4096) = 4096\n\
             100 12:00:00.000030 read(3, \"x\"..., 4096) = 1000\n\
             100 12:00:00.000040 read(3, \"\", 4096) = 0\n\
             100 12:00:00.000050 pread64(3, \"\\177ELF\"..., 64, 8192) = 64\n\
             100 12:00:00.000060 close(3) = 0\n\
             100 12:00:00.000070 read(3, 0x7ffd, 10) = -1 EBADF (Bad file descriptor)\n\
             100 12:00:00.000080 open(\"/nonexistent\", O_RDONLY) = -1 ENOENT (No such file or directory)\n\
             100 12:00:00.000090 read(0, \"y\", 1) = 1\n\
             100 12:00:00.000100 +++ exited with 0 +++\n",
        )
        .unwrap();
        assert_eq!(files, vec!["/usr/bin/cc", "/usr/include/stdio.h"]);
        let got: Vec<(u32, u64, u32, u32)> = r
            .iter()
            .map(|r| (r.file, r.file_offset, r.size, r.pid))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0, 4096, 100),
                (2, 0, 4096, 100),
                (2, 4096, 1000, 100),
                (2, 8192, 64, 100)
            ]
        );
        // end-of-file read, failed read, failed open, read of stdin
        assert_eq!(ignored, 4);
    }

    #[test]
    fn unfinished_and_resumed_halves_join_per_pid() {
        let (r, _, _) = parse(
            "[pid   7] 10:00:00.5 openat(AT_FDCWD, \"a\", O_RDONLY) = 4\n\
             [pid   7] 10:00:01.0 read(4,  <unfinished ...>\n\
             [pid   8] 10:00:01.1 openat(AT_FDCWD, \"b\", O_RDONLY) = 4\n\
             [pid   7] 10:00:01.2 <... read resumed>\"abc\", 4096) = 3\n\
             [pid   8] 10:00:01.3 read(4, \"z\", 10) = 10\n",
        )
        .unwrap();
        let got: Vec<(u64, u32, u32)> = r.iter().map(|r| (r.time_ns, r.file, r.pid)).collect();
        // The resumed read takes the time its call started.
        assert_eq!(
            got,
            vec![(36_001_000_000_000, 1, 7), (36_001_300_000_000, 2, 8)]
        );
        let e = parse("1 10:00:00 <... read resumed>\"\", 1) = 0\n").unwrap_err();
        assert!(e.contains("without an `<unfinished ...>`"), "{e}");
    }

    #[test]
    fn midnight_wraps_and_bad_lines_say_what_was_expected() {
        let (r, _, _) = parse(
            "1 23:59:59.9 open(\"a\", O_RDONLY) = 3\n1 23:59:59.95 read(3, \"\", 1) = 1\n1 00:00:00.1 read(3, \"\", 1) = 1\n",
        )
        .unwrap();
        assert_eq!(r[1].time_ns - r[0].time_ns, 150_000_000);
        assert!(parse("1 25:00:00 close(3) = 0")
            .unwrap_err()
            .contains("expected a time"));
        assert!(parse("1 10:00:00 read(x, \"\", 1) = 1")
            .unwrap_err()
            .contains("file descriptor"));
        assert!(parse("1 10:00:00 open(\"a")
            .unwrap_err()
            .contains("= RESULT"));
        assert!(accepts_line("1 10:00:00.1 close(3) = 0"));
        assert!(!accepts_line("1 2 3 4 5"));
    }
}
