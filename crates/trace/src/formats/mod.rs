//! Trace formats: names, detection, and dispatch to the per-format readers
//! and writers.
//!
//! One module per format; each opens with the layout it reads, cited from
//! where the format is published. Every reader turns its input into
//! [`Record`](crate::Record)s with times in nanoseconds, offsets and sizes in
//! bytes. Text readers make times relative to the earliest request.
//!
//! Errors are never silent: without [`ReadOptions::lenient`] the first bad
//! record is a [`TraceError::Bad`] naming the 1-based record (line) number,
//! what was expected and what was found; with it, bad records are skipped
//! and counted in [`ReadReport::skipped`]. No input makes a reader panic
//! (the tests feed arbitrary bytes to every reader).

mod blkparse;
mod csv;
mod detect;
mod disksim;
mod lcs_csv;
mod lines;
mod msr;
mod native;
pub(crate) mod oracle;
mod source;
mod spc;
mod strace;
mod text;

pub use csv::{Column, CsvSpec};
pub use detect::detect_format;
pub use native::{write_native, NATIVE_MAGIC, NATIVE_VERSION};
pub use source::Compression;

use crate::{Trace, TraceError};
use std::path::Path;

/// A trace format outrider reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// `native`: outrider's own versioned binary format (see
    /// [`write_native`]): header, JSON metadata, 40-byte records mapped
    /// without copying, optionally zstd-compressed.
    Native,
    /// `lcs-csv`: libCacheSim's CloudPhysics block CSV,
    /// `version,time,op,size,lbn` (op = SCSI opcode in hex, size in bytes,
    /// lbn in 512-byte sectors).
    LcsCsv,
    /// `oracle`: libCacheSim oracleGeneral binary, packed little-endian
    /// `<u32 clock_time, u64 obj_id, u32 obj_size, i64 next_access_vtime>`
    /// (24 bytes per request); `obj_id` in 512-byte sectors, as in
    /// libCacheSim's published block traces.
    Oracle,
    /// `oracle-pages`: the same records with `obj_id` in 4 KiB pages, the
    /// page stream libCacheSim's block prefetchers expect (OBL fetches
    /// `obj_id + 1`). Never detected (the bytes look like `oracle`); the
    /// one binary format outrider also writes besides native.
    OraclePages,
    /// `disksim`: DiskSim / MQSim ASCII,
    /// `time device lba_512B size_sectors flags` (flags bit 0: 1 = read).
    Disksim,
    /// `spc`: UMass SPC CSV, `ASU,LBA,Size,Opcode,Timestamp`.
    Spc,
    /// `msr`: MSR Cambridge CSV,
    /// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// `blkparse`: blkparse's default text output,
    /// `maj,min cpu seq seconds pid action RWBS sector + count [process]`.
    Blkparse,
    /// `lines`: one 4 KiB block number per line (LIRS-style traces).
    Lines,
    /// `strace`: file-level trace from
    /// `strace -f -tt -e trace=open,openat,execve,read,pread64,close`
    /// (opens, execs and reads per pid; files laid out contiguously).
    Strace,
    /// `csv:MAPPING`: any delimited text, given which column holds the
    /// address, size, time, operation, device and pid, with units
    /// (`csv:time=1:us,op=3,lbn=5,size=4`; see [`CsvSpec`]). Never
    /// detected: it needs its mapping.
    Csv(CsvSpec),
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 10] = [
        Format::Native,
        Format::LcsCsv,
        Format::Oracle,
        Format::OraclePages,
        Format::Disksim,
        Format::Spc,
        Format::Msr,
        Format::Blkparse,
        Format::Lines,
        Format::Strace,
    ];

    /// The name used on the command line (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::LcsCsv => "lcs-csv",
            Format::Oracle => "oracle",
            Format::OraclePages => "oracle-pages",
            Format::Disksim => "disksim",
            Format::Spc => "spc",
            Format::Msr => "msr",
            Format::Blkparse => "blkparse",
            Format::Lines => "lines",
            Format::Strace => "strace",
            Format::Csv(_) => "csv",
        }
    }

    /// The format called `name` (case-insensitive), or `csv:MAPPING`; an
    /// unknown name is an error listing the valid ones.
    pub fn from_name(name: &str) -> Result<Format, TraceError> {
        let t = name.trim();
        if t.len() >= 3 && t[..3].eq_ignore_ascii_case("csv") {
            let mapping = t[3..].strip_prefix(':').unwrap_or("");
            return CsvSpec::parse(mapping).map(Format::Csv).map_err(|why| {
                TraceError::BadFormatSpec {
                    spec: name.to_string(),
                    why,
                }
            });
        }
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| TraceError::UnknownFormatName {
                name: name.to_string(),
                known: Format::names(),
            })
    }

    /// All names, comma-separated (for messages).
    pub fn names() -> String {
        format!("{}, csv:MAPPING", Format::ALL.map(Format::name).join(", "))
    }

    /// Can [`write_trace`] produce this format?
    pub fn writable(self) -> bool {
        matches!(self, Format::Native | Format::LcsCsv)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::from_name(s)
    }
}

/// How to read a trace.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Format, or `None` to detect it with [`detect_format`]. Default `None`.
    pub format: Option<Format>,
    /// Skip bad records, counting them in [`ReadReport::skipped`], instead
    /// of failing on the first. Default `false`.
    pub lenient: bool,
    /// Override the time unit of the time column, in nanoseconds per unit
    /// (e.g. `1_000_000` for DiskSim's original millisecond traces, `1_000`
    /// for a CSV in microseconds). Default `None`: each format's own unit
    /// (see the format modules). Ignored by `native`, `msr` (a fixed
    /// 100 ns tick) and `lines` (no time).
    pub time_unit_ns: Option<u64>,
    /// The blkparse action taken as requests. Default `'Q'` (queued: the
    /// requests as the application's I/O submitted them, before merging);
    /// `'D'` (issued to the driver) or `'C'` (completed) give the device's
    /// view.
    pub blkparse_action: char,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            lenient: false,
            time_unit_ns: None,
            blkparse_action: 'Q',
        }
    }
}

impl ReadOptions {
    /// Read as `format` (default: detect).
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// Skip and count bad records (default: fail on the first).
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.lenient = lenient;
        self
    }

    /// Time column unit in ns (default: the format's own).
    pub fn time_unit_ns(mut self, unit_ns: u64) -> Self {
        self.time_unit_ns = Some(unit_ns);
        self
    }

    /// blkparse action to take (default `'Q'`).
    pub fn blkparse_action(mut self, action: char) -> Self {
        self.blkparse_action = action;
        self
    }
}

/// What a read found besides the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReport {
    /// The format read (given or detected).
    pub format: Format,
    /// How the file was compressed (`None`: it was not).
    pub compression: Option<Compression>,
    /// Bad records skipped (only in lenient mode; otherwise the first bad
    /// record is an error).
    pub skipped: u64,
    /// Well-formed events that are not reads or writes and so are not
    /// requests (blkparse flushes and discards). Not errors.
    pub ignored: u64,
}

/// Read a whole trace, detecting its format unless `opts.format` is given.
/// zstd- and gzip-compressed files are decompressed on the fly and pipes
/// are read once (see `source.rs`): the format is detected inside the
/// decompressed stream.
pub fn read_trace(path: &Path, opts: &ReadOptions) -> Result<(Trace, ReadReport), TraceError> {
    let source = source::Source::open(path)?;
    let format = match opts.format {
        Some(f) => f,
        None => detect::detect_source(path, &source)?,
    };
    let compression = source.compression();
    let mut ctx = text::Ctx::new(path, opts.lenient, source);
    let unit = opts.time_unit_ns;
    let mut trace = match format {
        Format::Native => native::read(&mut ctx)?,
        Format::LcsCsv => lcs_csv::read(&mut ctx, unit)?,
        Format::Oracle => oracle::read(&mut ctx, unit, oracle::ObjId::Sector)?,
        Format::OraclePages => oracle::read(&mut ctx, unit, oracle::ObjId::Page)?,
        Format::Disksim => disksim::read(&mut ctx, unit)?,
        Format::Spc => spc::read(&mut ctx, unit)?,
        Format::Msr => msr::read(&mut ctx)?,
        Format::Blkparse => blkparse::read(&mut ctx, unit, opts.blkparse_action)?,
        Format::Lines => lines::read(&mut ctx)?,
        Format::Strace => strace::read(&mut ctx)?,
        Format::Csv(spec) => csv::read(&mut ctx, &spec)?,
    };
    check_records(&mut ctx, &mut trace, format)?;
    if trace.meta.source.is_empty() {
        trace.meta.source = path.display().to_string();
    }
    let report = ReadReport {
        format,
        compression,
        skipped: ctx.skipped,
        ignored: ctx.ignored,
    };
    Ok((trace, report))
}

/// What every reader's output must satisfy: requests whose byte ranges
/// end below 2^64 (text readers check each line as they go; this catches
/// the binary ones), and at least one request unless the file is a native
/// trace, which may be empty on purpose (a recording of a program that
/// read nothing). An empty or blank file, or one whose every record was
/// malformed (`--lenient`), is an error rather than a zero-request answer.
fn check_records(
    ctx: &mut text::Ctx<'_>,
    trace: &mut Trace,
    format: Format,
) -> Result<(), TraceError> {
    // Packed records were checked as they were mapped (`packed.rs`).
    let packed = matches!(trace.records, crate::Records::Packed(_));
    let bad = (!packed)
        .then(|| trace.records.iter().position(|r| r.check_ranges().is_err()))
        .flatten();
    if let Some(i) = bad {
        let expected = trace.records[i].check_ranges().unwrap_err();
        match &mut trace.records {
            crate::Records::Owned(v) if ctx.lenient => {
                let before = v.len();
                v.retain(|r| r.check_ranges().is_ok());
                ctx.bad(i as u64 + 1, expected)?;
                ctx.skipped += (before - v.len()) as u64 - 1;
            }
            _ => return Err(ctx.error(i as u64 + 1, expected)),
        }
    }
    if !trace.records.is_empty() || format == Format::Native {
        return Ok(());
    }
    let expected = match (&ctx.first_bad, ctx.ignored) {
        (Some(first), _) => format!(
            "expected at least one well-formed {format} request, found {} malformed records \
             and no request; the first: {first}",
            ctx.skipped
        ),
        (None, 0) => format!("expected {format} requests, found none (the file is empty or blank)"),
        (None, n) => {
            format!("expected at least one {format} read or write, found none ({n} other events)")
        }
    };
    Err(ctx.error(0, expected))
}

/// Write `trace` to `path` as `format` (`native` or `lcs-csv`; the others
/// are read-only). `compress` asks for zstd where the format has it
/// (`native`); elsewhere it is ignored.
pub fn write_trace(
    path: &Path,
    trace: &Trace,
    format: Format,
    compress: bool,
) -> Result<(), TraceError> {
    match format {
        Format::Native => write_native(path, trace, compress),
        Format::LcsCsv => lcs_csv::write(path, trace),
        Format::OraclePages => oracle::write_pages(path, trace),
        other => Err(TraceError::Unsupported {
            path: path.into(),
            format: other.name(),
            why: "outrider writes only native, lcs-csv and oracle-pages".into(),
        }),
    }
}

/// Write what `fill` produces to `path` atomically: a temporary file in
/// the same directory, then a rename over `path`.
///
/// The temporary file has an unpredictable name and is created with
/// `O_EXCL` (the `tempfile` crate), so a symbolic link planted under a
/// guessable name cannot redirect the write; the rename replaces `path`
/// itself, never writing through a link found there. The file is `0600`
/// when written by root (a recorded trace names the files a program read
/// and where they lie on disk), else `0666` less the umask, like any file
/// the user creates.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), TraceError> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let result = (|| {
        let tmp = tempfile::Builder::new()
            .prefix(".outrider-")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        if let Some(mode) = user_file_mode() {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file().try_clone()?);
        fill(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all()?;
        drop(w);
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    })();
    result.map_err(|e: std::io::Error| TraceError::io(path, e))
}

/// The mode of a new output file: `None` (keep `tempfile`'s `0600`) for
/// root, else `0666` less the process's umask (from `/proc/self/status`;
/// `0022` assumed when unreadable).
fn user_file_mode() -> Option<u32> {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return None;
    }
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022);
    Some(0o666 & !umask)
}
