//! `build`: the Andrew benchmark's phase 5 (EPCM §4.2), a compile of 17 C
//! files whose headers are shared and read in Makefile order, then links
//! into two libraries and one program — plus the helpers `patch-build` and
//! `link` share (whole-file reads and writes, exec of a tool).
//!
//! The model (all files on one device, created — and laid out — in this
//! order, contiguous or fragmented with `fragment`):
//!
//! - **tools** `bin/make`, `bin/cc1`, `bin/as`, `bin/ar`, `bin/ld`
//!   (an exec reads the first `exec` bytes of the binary);
//! - **headers**: `headers` shared headers `inc/hNN.h` (lognormal sizes,
//!   median 6 KiB), the first `sys` of them "system" headers every unit
//!   includes first;
//! - **`Makefile`**, then the **sources** `src/uNN.c` (431 KB in all, the
//!   paper's size: lognormal around 25 KiB), each including the system
//!   headers and a seeded subset (`per_unit`) of the others, in a fixed
//!   order;
//! - **objects** `obj/uNN.o` and outputs `lib1.a`, `lib2.a`, `prog`
//!   (written during the run: their blocks enter the cache without a read).
//!
//! One process (pid 1, make and its children run one after the other): read
//! the Makefile; per unit in Makefile order: exec cc1, read the source,
//! read its headers in include order, exec as, write the object; then
//! `ar` reads objects 0–7 and writes `lib1.a`, objects 8–13 into `lib2.a`,
//! and `ld` reads objects 14–16 and both libraries and writes `prog`.
//! Reads are `req` bytes (default 16 KiB), a process thinks `think` (compile
//! work) between requests. Defaults give ~320 records, 17 units.

use super::rng::SplitMix64;
use super::{bad_value, check_req, Allocator, Emitter, Entry, Nanos, WorkloadError};
use crate::record::OP_WRITE;
use crate::{FileInfo, Record, Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::{Params, BLOCK_SIZE};

outrider_core::params! {
    /// Parameters of `build`.
    pub struct BuildParams {
        /// Compilation units (Andrew phase 5: 17).
        units: u64 = 17,
        /// Shared headers.
        headers: u64 = 24,
        /// System headers every unit includes first.
        sys: u64 = 4,
        /// Other headers per unit (seeded subset, fixed include order).
        per_unit: u64 = 6,
        /// Total source bytes (Andrew: 431 KB in 11215 lines).
        source: ByteSize = ByteSize(431 << 10),
        /// Bytes of a tool binary read at exec.
        exec: ByteSize = ByteSize(128 << 10),
        /// Request size, a multiple of 4KiB.
        req: ByteSize = ByteSize(16 << 10),
        /// Extent size of fragmented files; 0 = contiguous in creation order.
        fragment: ByteSize = ByteSize(0),
        /// Physical byte offset of the first file.
        start: ByteSize = ByteSize(0),
        /// Think (compute) time between requests.
        think: Nanos = Nanos(2_000_000),
        /// Seed (sizes, include lists, fragment gaps).
        seed: u64 = 1,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "build",
    summary: "Andrew phase-5-like compile: 17 units with shared headers read in Makefile \
              order, then links (EPCM section 4.2)",
    specs: BuildParams::specs,
    generate,
};

/// Tool binaries, in creation order.
pub(super) const TOOLS: [(&str, u64); 5] = [
    ("bin/make", 200 << 10),
    ("bin/cc1", 1200 << 10),
    ("bin/as", 300 << 10),
    ("bin/ar", 100 << 10),
    ("bin/ld", 500 << 10),
];
/// Index of each tool in [`TOOLS`].
pub(super) const MAKE: usize = 0;
pub(super) const CC1: usize = 1;
pub(super) const AS: usize = 2;
pub(super) const AR: usize = 3;
pub(super) const LD: usize = 4;

/// A lognormal size around `median` (σ = `spread`), at least 256 bytes.
pub(super) fn lognormal(rng: &mut SplitMix64, median: u64, spread: f64) -> u64 {
    let s = median as f64 * (spread * rng.normal()).exp();
    (s.round() as u64).clamp(256, 64 << 20)
}

/// Whole-file and exec reads and writes on top of [`Emitter`].
pub(super) struct Io<'a> {
    pub em: Emitter,
    pub files: &'a [FileInfo],
    pub req: u64,
    pub exec: u64,
    pub pid: u32,
}

impl Io<'_> {
    /// Bytes a file owns (whole blocks).
    fn owned(&self, f: usize) -> u64 {
        self.files[f].size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE
    }

    /// Read bytes `from..to` of file `f` in `req` requests.
    pub fn read_range(&mut self, f: usize, from: u64, to: u64) {
        let mut off = from;
        while off < to {
            let len = self.req.min(to - off);
            self.em.read_file(self.pid, self.files, f, off, len);
            off += len;
        }
    }

    /// Read file `f` start to end.
    pub fn read(&mut self, f: usize) {
        self.read_range(f, 0, self.owned(f));
    }

    /// Read page `page` of file `f` (4 KiB).
    pub fn read_page(&mut self, f: usize, page: u64) {
        self.em
            .read_file(self.pid, self.files, f, page * BLOCK_SIZE, BLOCK_SIZE);
    }

    /// Exec a binary: its first `exec` bytes are read.
    pub fn exec(&mut self, f: usize) {
        let to = self.exec.min(self.owned(f));
        self.read_range(f, 0, to);
    }

    /// Write file `f` start to end in `req` requests (the engine allocates
    /// written blocks in the cache without a device read).
    pub fn write(&mut self, f: usize) {
        let owned = self.owned(f);
        let mut off = 0;
        while off < owned {
            let len = self.req.min(owned - off);
            let t = self.em.tick(self.pid);
            let info = &self.files[f];
            let phys = info.physical(off).expect("allocated files are mapped");
            // One record per extent piece, as reads are split.
            let i = info
                .extents
                .partition_point(|e| e.file_offset + e.len <= off);
            let piece = (info.extents[i].file_offset + info.extents[i].len).min(off + len) - off;
            self.em.records.push(Record {
                time_ns: t,
                offset: phys,
                file_offset: off,
                file: f as u32 + 1,
                size: piece as u32,
                pid: self.pid,
                dev: info.dev,
                op: OP_WRITE,
                flags: 0,
            });
            off += piece;
        }
    }
}

/// Check the shared size parameters.
pub(super) fn check_sizes(name: &str, req: u64, exec: u64) -> Result<(), WorkloadError> {
    check_req(name, req)?;
    if exec == 0 {
        return Err(bad_value(name, "exec", 0, "a positive size"));
    }
    Ok(())
}

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "build";
    let p = BuildParams::parse(NAME, text)?;
    check_sizes(NAME, p.req.0, p.exec.0)?;
    if p.units < 3 {
        return Err(bad_value(NAME, "units", p.units, "at least 3"));
    }
    if p.sys + p.per_unit > p.headers {
        return Err(bad_value(
            NAME,
            "per_unit",
            p.per_unit,
            "at most headers - sys",
        ));
    }
    let mut rng = SplitMix64::new(p.seed);
    let mut alloc = Allocator::fragmented(p.start.0, p.fragment.0, rng.next_u64());
    let mut files: Vec<FileInfo> = Vec::new();
    for (path, size) in TOOLS {
        files.push(alloc.file(path, size));
    }
    let h0 = files.len();
    for h in 0..p.headers {
        let size = lognormal(&mut rng, 6 << 10, 0.8);
        files.push(alloc.file(format!("inc/h{h:02}.h"), size));
    }
    let makefile = files.len();
    files.push(alloc.file("Makefile", 6 << 10));
    let src0 = files.len();
    let weights: Vec<f64> = (0..p.units).map(|_| (0.5 * rng.normal()).exp()).collect();
    let total: f64 = weights.iter().sum();
    for (u, w) in weights.iter().enumerate() {
        let size = ((p.source.0 as f64 * w / total).round() as u64).max(256);
        files.push(alloc.file(format!("src/u{u:02}.c"), size));
    }
    let includes: Vec<Vec<usize>> = (0..p.units)
        .map(|_| {
            let mut others: Vec<u64> = (p.sys..p.headers).collect();
            rng.shuffle(&mut others);
            (0..p.sys)
                .chain(others.into_iter().take(p.per_unit as usize))
                .map(|h| h0 + h as usize)
                .collect()
        })
        .collect();
    let obj0 = files.len();
    for u in 0..p.units as usize {
        let size = (files[src0 + u].size * 3 / 5).max(4096);
        files.push(alloc.file(format!("obj/u{u:02}.o"), size));
    }
    let obj_total: u64 = (0..p.units as usize).map(|u| files[obj0 + u].size).sum();
    let lib1 = files.len();
    files.push(alloc.file("lib1.a", obj_total / 2));
    let lib2 = files.len();
    files.push(alloc.file("lib2.a", obj_total / 3));
    let prog = files.len();
    files.push(alloc.file("prog", obj_total / 2));

    let mut io = Io {
        em: Emitter::new(p.think.0),
        files: &files,
        req: p.req.0,
        exec: p.exec.0,
        pid: 1,
    };
    io.exec(MAKE);
    io.read(makefile);
    for (u, inc) in includes.iter().enumerate() {
        compile(&mut io, src0 + u, inc, obj0 + u);
    }
    // Links: two libraries, then the program (Andrew: two libraries and one
    // executable).
    let n = p.units as usize;
    let (a, b) = (n * 8 / 17, n * 14 / 17);
    link(&mut io, AR, &(obj0..obj0 + a).collect::<Vec<_>>(), lib1);
    link(&mut io, AR, &(obj0 + a..obj0 + b).collect::<Vec<_>>(), lib2);
    let mut last: Vec<usize> = (obj0 + b..obj0 + n).collect();
    last.extend([lib1, lib2]);
    link(&mut io, LD, &last, prog);
    let em = io.em;
    Ok(em.finish(TraceMeta {
        source: String::new(),
        processes: vec![(1, "make".into())],
        files,
    }))
}

/// One compile: exec cc1, read the source and its headers in include
/// order, exec as, write the object.
pub(super) fn compile(io: &mut Io<'_>, src: usize, headers: &[usize], obj: usize) {
    io.exec(CC1);
    io.read(src);
    for &h in headers {
        io.read(h);
    }
    io.exec(AS);
    io.write(obj);
}

/// One link: exec the tool, read the inputs whole, write the output.
pub(super) fn link(io: &mut Io<'_>, tool: usize, inputs: &[usize], out: usize) {
    io.exec(tool);
    for &f in inputs {
        io.read(f);
    }
    io.write(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_reads_every_unit_with_its_headers_in_makefile_order() {
        let t = super::super::generate("build").unwrap();
        let paths: Vec<&str> = t.meta.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths.iter().filter(|p| p.ends_with(".c")).count(), 17);
        // Sources are first read in Makefile order u00, u01, ...
        let mut firsts = vec![];
        for r in t.records.iter().filter(|r| r.op == 0) {
            let p = paths[r.file as usize - 1];
            if p.ends_with(".c") && !firsts.contains(&p) {
                firsts.push(p);
            }
        }
        let want: Vec<String> = (0..17).map(|u| format!("src/u{u:02}.c")).collect();
        assert_eq!(firsts, want);
        let src: u64 = t
            .meta
            .files
            .iter()
            .filter(|f| f.path.ends_with(".c"))
            .map(|f| f.size)
            .sum();
        assert!((430 << 10..=432 << 10).contains(&src), "{src}");
        // Objects are written, then read by the links.
        assert!(t.records.iter().any(|r| r.op == OP_WRITE));
        // Deterministic.
        let u = super::super::generate("build").unwrap();
        assert_eq!(t.records.to_vec(), u.records.to_vec());
    }
}
