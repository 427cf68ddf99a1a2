//! `patch-build`: the SSH series of EPCM §4.5 — a code base compiled at
//! version 1.2.18, then patched and rebuilt version by version up to
//! 1.2.31, "trained on the initial version" and tested on the later ones
//! without retraining.
//!
//! The whole history is generated from the seed, independently of which
//! versions a trace contains, so every trace of the series shares one file
//! table (file *k* is the same file in every version's trace; a policy
//! trained on one trace predicts on the next):
//!
//! - version 0: the tools of `build`, `headers` headers, a Makefile,
//!   `units` sources `src/uNNN.c` (lognormal, median 12 KiB) with objects,
//!   `lib.a` and `prog`; each unit includes the `sys` system headers and a
//!   seeded subset (`per_unit`) of the others;
//! - each later version v (1..=`versions`): a patch file `patches/vNN`;
//!   a fraction `change` of the units edited (same file; one include
//!   replaced by another); with probability 1/2 a unit added (at a seeded
//!   place in Makefile order), 1/3 one removed, 1/3 one renamed (new source
//!   and object files, same includes), 1/5 a header added and included by
//!   a few units. Files created by version v are laid out after those of
//!   v−1 (creation order), contiguous or fragmented (`fragment`).
//!
//! A trace holds versions `from..=to`: for v ≥ 1 first the patch (read the
//! patch file; read and write every edited or renamed source), then the
//! build: exec make, read the Makefile, compile every unit in Makefile order
//! (as `build`), `ar` all objects into `lib.a`, `ld` `lib.a` into `prog`.
//! One process (pid 1). Defaults: 40 units, 13 versions (1.2.18 → 1.2.31).

use super::compile::{compile, link, lognormal, Io, AR, LD, MAKE, TOOLS};
use super::rng::SplitMix64;
use super::{bad_value, Allocator, Emitter, Entry, Nanos, WorkloadError};
use crate::{FileInfo, Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::Params;

outrider_core::params! {
    /// Parameters of `patch-build`.
    pub struct PatchBuildParams {
        /// Compilation units at version 0.
        units: u64 = 40,
        /// Headers at version 0.
        headers: u64 = 24,
        /// System headers every unit includes first.
        sys: u64 = 4,
        /// Other headers per unit.
        per_unit: u64 = 6,
        /// Later versions in the series (SSH 1.2.18 to 1.2.31: 13).
        versions: u64 = 13,
        /// First version in this trace (0 = the initial one).
        from: u64 = 0,
        /// Last version in this trace.
        to: u64 = 0,
        /// Fraction of units edited per version.
        change: f64 = 0.1,
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
        /// Seed (sizes, include lists, changes, fragment gaps).
        seed: u64 = 1,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "patch-build",
    summary: "a code base patched and rebuilt version after version, files added, removed \
              and renamed (EPCM section 4.5, SSH 1.2.18-1.2.31)",
    specs: PatchBuildParams::specs,
    generate,
};

#[derive(Clone, Debug)]
struct Unit {
    src: usize,
    obj: usize,
    includes: Vec<usize>,
}

/// One version: its units in Makefile order, and its patch (patch file,
/// (old source, new source) pairs edited or renamed).
struct Version {
    units: Vec<Unit>,
    patch: Option<(usize, Vec<(usize, usize)>)>,
}

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "patch-build";
    let p = PatchBuildParams::parse(NAME, text)?;
    super::compile::check_sizes(NAME, p.req.0, p.exec.0)?;
    if p.units < 2 {
        return Err(bad_value(NAME, "units", p.units, "at least 2"));
    }
    if p.sys + p.per_unit > p.headers || p.per_unit == 0 {
        return Err(bad_value(NAME, "per_unit", p.per_unit, "1..=headers - sys"));
    }
    if p.to < p.from || p.to > p.versions {
        return Err(bad_value(NAME, "to", p.to, "from..=versions"));
    }
    if !(0.0..=1.0).contains(&p.change) {
        return Err(bad_value(NAME, "change", p.change, "a fraction in [0, 1]"));
    }
    let mut rng = SplitMix64::new(p.seed);
    let mut alloc = Allocator::fragmented(p.start.0, p.fragment.0, rng.next_u64());
    let mut files: Vec<FileInfo> = Vec::new();
    for (path, size) in TOOLS {
        files.push(alloc.file(path, size));
    }
    let mut headers: Vec<usize> = Vec::new();
    for h in 0..p.headers {
        headers.push(files.len());
        let size = lognormal(&mut rng, 6 << 10, 0.8);
        files.push(alloc.file(format!("inc/h{h:03}.h"), size));
    }
    let makefile = files.len();
    files.push(alloc.file("Makefile", 8 << 10));
    let mut next_id = 0u64;
    let mut new_unit = |files: &mut Vec<FileInfo>,
                        alloc: &mut Allocator,
                        rng: &mut SplitMix64,
                        includes: Vec<usize>| {
        let id = next_id;
        next_id += 1;
        let size = lognormal(rng, 12 << 10, 0.7);
        let src = files.len();
        files.push(alloc.file(format!("src/u{id:03}.c"), size));
        let obj = files.len();
        files.push(alloc.file(format!("obj/u{id:03}.o"), (size * 3 / 5).max(4096)));
        Unit { src, obj, includes }
    };
    let pick_includes = |rng: &mut SplitMix64, headers: &[usize]| -> Vec<usize> {
        let mut others: Vec<usize> = headers[p.sys as usize..].to_vec();
        rng.shuffle(&mut others);
        headers[..p.sys as usize]
            .iter()
            .copied()
            .chain(others.into_iter().take(p.per_unit as usize))
            .collect()
    };
    let mut units: Vec<Unit> = Vec::new();
    for _ in 0..p.units {
        let inc = pick_includes(&mut rng, &headers);
        units.push(new_unit(&mut files, &mut alloc, &mut rng, inc));
    }
    let lib = files.len();
    files.push(alloc.file("lib.a", 4 << 20));
    let prog = files.len();
    files.push(alloc.file("prog", 2 << 20));

    let mut versions = vec![Version {
        units: units.clone(),
        patch: None,
    }];
    for v in 1..=p.versions {
        let patch = files.len();
        files.push(alloc.file(format!("patches/v{v:02}"), 0));
        let mut edited: Vec<(usize, usize)> = Vec::new();
        // Edits: one include replaced by another header.
        let n_edit = ((units.len() as f64 * p.change).round() as usize).max(1);
        for _ in 0..n_edit {
            let u = rng.below(units.len() as u64) as usize;
            let unit = &mut units[u];
            let slot = p.sys as usize + rng.below(p.per_unit) as usize;
            let candidates: Vec<usize> = headers
                .iter()
                .copied()
                .filter(|h| !unit.includes.contains(h))
                .collect();
            if let Some(&h) = candidates.get(rng.below(candidates.len().max(1) as u64) as usize) {
                if slot < unit.includes.len() {
                    unit.includes[slot] = h;
                }
            }
            edited.push((unit.src, unit.src));
        }
        if rng.below(5) == 0 {
            headers.push(files.len());
            let size = lognormal(&mut rng, 6 << 10, 0.8);
            files.push(alloc.file(format!("inc/h{:03}.h", headers.len() - 1), size));
            let h = *headers.last().expect("just pushed");
            for _ in 0..3 {
                let u = rng.below(units.len() as u64) as usize;
                units[u].includes.push(h);
                edited.push((units[u].src, units[u].src));
            }
        }
        if rng.below(2) == 0 {
            let inc = pick_includes(&mut rng, &headers);
            let at = rng.below(units.len() as u64 + 1) as usize;
            let u = new_unit(&mut files, &mut alloc, &mut rng, inc);
            edited.push((u.src, u.src));
            units.insert(at, u);
        }
        if rng.below(3) == 0 && units.len() > 2 {
            let at = rng.below(units.len() as u64) as usize;
            units.remove(at);
        }
        if rng.below(3) == 0 {
            let at = rng.below(units.len() as u64) as usize;
            let old = units[at].src;
            let inc = units[at].includes.clone();
            let u = new_unit(&mut files, &mut alloc, &mut rng, inc);
            edited.push((old, u.src));
            units[at] = u;
        }
        edited.dedup();
        files[patch].size = 2048 * edited.len() as u64 + 1024;
        versions.push(Version {
            units: units.clone(),
            patch: Some((patch, edited)),
        });
    }
    // Patch files were created before their sizes were known: give each
    // the blocks it now needs by re-allocating it at the end (a patch is
    // downloaded after the tree exists).
    for v in versions.iter().skip(1) {
        if let Some((patch, _)) = v.patch {
            let path = files[patch].path.clone();
            files[patch] = alloc.file(path, files[patch].size);
        }
    }

    let mut io = Io {
        em: Emitter::new(p.think.0),
        files: &files,
        req: p.req.0,
        exec: p.exec.0,
        pid: 1,
    };
    for v in &versions[p.from as usize..=p.to as usize] {
        if let Some((patch, edited)) = &v.patch {
            io.read(*patch);
            for &(old, new) in edited {
                io.read(old);
                io.write(new);
            }
        }
        io.exec(MAKE);
        io.read(makefile);
        for u in &v.units {
            compile(&mut io, u.src, &u.includes, u.obj);
        }
        let objs: Vec<usize> = v.units.iter().map(|u| u.obj).collect();
        link(&mut io, AR, &objs, lib);
        link(&mut io, LD, &[lib], prog);
    }
    let em = io.em;
    Ok(em.finish(TraceMeta {
        source: String::new(),
        processes: vec![(1, "make".into())],
        files,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::generate;

    #[test]
    fn versions_share_one_file_table_and_change_the_pattern() {
        let v0 = generate("patch-build").unwrap();
        let v5 = generate("patch-build:from=5,to=5").unwrap();
        assert_eq!(v0.meta.files, v5.meta.files);
        let seq = |t: &crate::Trace| {
            let mut s: Vec<u32> = vec![];
            for r in t.records.iter().filter(|r| r.op == 0) {
                if s.last() != Some(&r.file) {
                    s.push(r.file);
                }
            }
            s
        };
        let (a, b) = (seq(&v0), seq(&v5));
        assert_ne!(a, b);
        // Most of the build is unchanged: the pattern is largely shared.
        let common = b.iter().filter(|f| a.contains(f)).count();
        assert!(common * 10 >= b.len() * 8, "{common} of {}", b.len());
        assert!(generate("patch-build:from=3,to=2").is_err());
    }
}
