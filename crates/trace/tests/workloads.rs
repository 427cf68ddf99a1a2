//! Shape, determinism and error tests for the built-in workloads.

use outrider_trace::workloads::{
    generate, suite, workload_help, WorkloadError, SUITE_NAMES, WORKLOAD_NAMES,
};
use outrider_trace::{Record, Trace};
use std::collections::{HashMap, HashSet};

const KIB: u64 = 1024;

fn gen(spec: &str) -> Trace {
    generate(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn records(t: &Trace) -> Vec<Record> {
    t.records.iter().copied().collect()
}

/// (file_offset / 4 KiB) of every record.
fn pages(t: &Trace) -> Vec<u64> {
    t.records.iter().map(|r| r.first_page()).collect()
}

/// Every default workload, every suite member, and a few odd combinations.
fn all_specs() -> Vec<String> {
    let mut v: Vec<String> = WORKLOAD_NAMES.iter().map(|s| s.to_string()).collect();
    v.extend(suite("paper-suite").unwrap());
    v.push("tree-scan:fragment=8KiB,req=16KiB".into());
    v.push("mixed:parts=interleaved+tree-scan+seq,size=1MiB".into());
    v
}

/// The invariants every workload promises (module docs, "Conventions").
fn check_invariants(spec: &str, t: &Trace) {
    let pids: HashSet<u32> = t.meta.processes.iter().map(|p| p.0).collect();
    assert_eq!(t.meta.source, spec);
    assert!(!t.records.is_empty(), "{spec}: no records");
    let mut prev = 0;
    for r in t.records.iter() {
        assert!(r.time_ns >= prev, "{spec}: time went backwards at {r:?}");
        prev = r.time_ns;
        assert!(
            pids.contains(&r.pid) && r.pid > 0,
            "{spec}: unnamed pid {r:?}"
        );
        assert_eq!(
            (r.offset % 4096, r.size % 4096),
            (0, 0),
            "{spec}: unaligned {r:?}"
        );
        // Only the file-level (EPCM) workloads write their outputs.
        let writes_ok = ["build", "link", "patch-build"]
            .iter()
            .any(|w| spec.split(':').next() == Some(w));
        assert!(
            r.size > 0 && (writes_ok || !r.is_write()) && r.dev == 0,
            "{spec}: {r:?}"
        );
        if r.file == 0 {
            assert_eq!(r.offset, r.file_offset, "{spec}: raw {r:?}");
            continue;
        }
        // The whole request lies in one extent of its file.
        let f = &t.meta.files[r.file as usize - 1];
        let last = u64::from(r.size) - 1;
        assert_eq!(f.physical(r.file_offset), Some(r.offset), "{spec}: {r:?}");
        assert_eq!(
            f.physical(r.file_offset + last),
            Some(r.offset + last),
            "{spec}: request crosses an extent: {r:?}"
        );
    }
}

#[test]
fn every_workload_and_suite_member_keeps_the_conventions() {
    for spec in all_specs() {
        check_invariants(&spec, &gen(&spec));
    }
}

#[test]
fn seq_reads_every_block_in_order() {
    let t = gen("seq:size=40KiB,req=16KiB,start=1MiB");
    let got: Vec<(u64, u64, u32)> = t
        .records
        .iter()
        .map(|r| (r.offset, r.file_offset, r.size))
        .collect();
    let m = 1 << 20;
    assert_eq!(
        got,
        vec![
            (m, 0, 16384),
            (m + 16384, 16384, 16384),
            (m + 32768, 32768, 8192)
        ]
    );
    assert_eq!(t.meta.files[0].size, 40 * KIB);
}

#[test]
fn reversed_yields_blocks_n_minus_1_down_to_0() {
    // DiskSeen's reversed: the file from its end to its beginning.
    let t = gen("reversed:size=64KiB");
    assert_eq!(pages(&t), (0..16).rev().collect::<Vec<_>>());
    // Larger requests are aligned from the end; the first chunk is short.
    let t = gen("reversed:size=40KiB,req=16KiB");
    let got: Vec<(u64, u32)> = t.records.iter().map(|r| (r.file_offset, r.size)).collect();
    assert_eq!(got, vec![(24 * KIB, 16384), (8 * KIB, 16384), (0, 8192)]);
}

#[test]
fn strided_yields_every_other_block() {
    let t = gen("strided:size=64KiB");
    assert_eq!(pages(&t), vec![0, 2, 4, 6, 8, 10, 12, 14]);
    // DiskSeen: "a small amount of compute time after each read".
    let times: Vec<u64> = t.records.iter().map(|r| r.time_ns).collect();
    assert_eq!(times, (0..8).map(|i| i * 10_000).collect::<Vec<_>>());
    let t = gen("strided:size=48KiB,stride=16KiB,req=8KiB");
    let got: Vec<(u64, u32)> = t.records.iter().map(|r| (r.first_page(), r.size)).collect();
    assert_eq!(got, vec![(0, 8192), (4, 8192), (8, 8192)]);
}

#[test]
fn random_reads_stay_in_the_file_and_depend_on_the_seed() {
    let t = gen("random:size=1MiB,count=500,req=8KiB");
    assert_eq!(t.records.len(), 500);
    assert!(t.records.iter().all(|r| r.file_offset + 8192 <= 1 << 20));
    let distinct: HashSet<u64> = t.records.iter().map(|r| r.file_offset).collect();
    assert!(
        distinct.len() > 200,
        "not random enough: {}",
        distinct.len()
    );
    assert_ne!(
        records(&t),
        records(&gen("random:size=1MiB,count=500,req=8KiB,seed=2"))
    );
}

#[test]
fn think_time_spaces_a_process_requests() {
    let t = gen("seq:size=16KiB,think=5us");
    let times: Vec<u64> = t.records.iter().map(|r| r.time_ns).collect();
    assert_eq!(times, vec![0, 5000, 10000, 15000]);
}

#[test]
fn interleaved_alternates_processes_between_distant_regions() {
    let t = gen("interleaved:size=32KiB,files=2,distance=1GiB,start=4MiB,think=1us");
    let got: Vec<(u32, u64, u64)> = t
        .records
        .iter()
        .map(|r| (r.pid, r.offset, r.time_ns))
        .collect();
    let (a, b) = (4u64 << 20, (4u64 << 20) + (1 << 30));
    let mut want = Vec::new();
    for i in 0..8u64 {
        want.push((1, a + i * 4096, i * 1000));
        want.push((2, b + i * 4096, i * 1000));
    }
    assert_eq!(got, want);
    // Each process crosses from its first file into its second at block 4.
    let files: Vec<u32> = t.records.iter().map(|r| r.file).collect();
    assert_eq!(&files[..10], &[1, 3, 1, 3, 1, 3, 1, 3, 2, 4]);
    // Bursts: three requests per turn.
    let t = gen("interleaved:size=32KiB,files=1,burst=3");
    let pids: Vec<u32> = t.records.iter().map(|r| r.pid).collect();
    assert_eq!(pids, [1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 2, 2]);
}

#[test]
fn interleaved_procs_1_is_one_process_alternating_between_the_trees() {
    // cvs diff / diff (DiskSeen section 4.3) are one process: the same
    // requests in the same order, one pid, one think time between each.
    let t = gen("interleaved:size=16KiB,files=1,distance=1GiB,procs=1,think=1us");
    let got: Vec<(u32, u64, u64)> = t
        .records
        .iter()
        .map(|r| (r.pid, r.offset, r.time_ns))
        .collect();
    let b = 1u64 << 30;
    let want: Vec<(u32, u64, u64)> = (0..4u64)
        .flat_map(|i| {
            [
                (1, i * 4096, 2 * i * 1000),
                (1, b + i * 4096, (2 * i + 1) * 1000),
            ]
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(t.meta.processes.len(), 1);
    let msg = generate("interleaved:procs=3").err().unwrap().to_string();
    assert!(msg.contains("procs"), "{msg}");
}

/// tree-scan's group of a physical offset (default group size, start 0).
fn group_of(offset: u64) -> u64 {
    offset / (128 << 20)
}

#[test]
fn tree_scan_reads_every_file_once_after_its_metadata() {
    for order in ["name", "layout"] {
        let spec = format!("tree-scan:files=300,dirs=20,dirs_per_group=4,order={order}");
        let t = gen(&spec);
        let n = t.meta.files.len();
        assert_eq!(n, 300);
        // Every page of every file read exactly once.
        let mut seen: HashMap<(u32, u64), u32> = HashMap::new();
        for r in t.records.iter().filter(|r| r.file != 0) {
            *seen.entry((r.file, r.first_page())).or_default() += 1;
        }
        let want: usize = t
            .meta
            .files
            .iter()
            .map(|f| f.size.div_ceil(4096) as usize)
            .sum();
        assert_eq!(seen.len(), want, "{spec}");
        assert!(seen.values().all(|&c| c == 1), "{spec}: a page read twice");
        // Metadata: raw, each block once (inode cache), and the group's
        // inode table (its first 2 MiB) is read before each file's data.
        let raw: Vec<u64> = t
            .records
            .iter()
            .filter(|r| r.file == 0)
            .map(|r| r.offset)
            .collect();
        assert_eq!(
            raw.len(),
            raw.iter().collect::<HashSet<_>>().len(),
            "{spec}"
        );
        let mut tables_read: HashSet<u64> = HashSet::new();
        let mut first_read: Vec<u32> = Vec::new();
        for r in t.records.iter() {
            let g = group_of(r.offset);
            if r.file == 0 {
                if r.offset - g * (128 << 20) < 2 << 20 {
                    tables_read.insert(g);
                }
            } else if !first_read.contains(&r.file) {
                assert!(tables_read.contains(&g), "{spec}: file data before inode");
                first_read.push(r.file);
            }
        }
        assert_eq!(first_read.len(), n);
        // meta.files is in layout (creation) order: grep visits files in
        // it, diff (name order) does not.
        let layout: Vec<u32> = (1..=n as u32).collect();
        if order == "layout" {
            assert_eq!(first_read, layout, "{spec}");
            assert_eq!(t.meta.processes[0].1, "grep");
        } else {
            assert_ne!(first_read, layout, "{spec}");
            let names: Vec<&str> = first_read
                .iter()
                .map(|&f| t.meta.files[f as usize - 1].path.as_str())
                .collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted, "{spec}: diff reads in name order");
        }
    }
}

#[test]
fn tree_scan_sizes_look_like_a_source_tree() {
    let t = gen("tree-scan");
    let mut sizes: Vec<u64> = t.meta.files.iter().map(|f| f.size).collect();
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let mean = sizes.iter().sum::<u64>() / sizes.len() as u64;
    assert!((4 * KIB..6 * KIB).contains(&median), "median {median}");
    assert!(
        mean > median * 3 / 2,
        "mean {mean} not skewed above median {median}"
    );
    // Thirteen groups of up to eight directories.
    let groups: HashSet<u64> = t.records.iter().map(|r| group_of(r.offset)).collect();
    assert_eq!(groups.len(), 13);
}

#[test]
fn fragmented_files_split_requests_at_extents() {
    let t = gen("seq:size=1MiB,req=64KiB,fragment=16KiB");
    assert_eq!(t.meta.files[0].extents.len(), 64);
    // 64 KiB requests become four 16 KiB records sharing one issue time.
    assert_eq!(t.records.len(), 64);
    let offs: Vec<u64> = t.records.iter().map(|r| r.file_offset).collect();
    assert_eq!(offs, (0..64).map(|i| i * 16 * KIB).collect::<Vec<_>>());
    let r = records(&t);
    assert!(r.windows(2).all(|w| w[1].offset > w[0].offset + 16 * KIB));
}

#[test]
fn mixed_runs_members_as_separate_processes_in_separate_regions() {
    let t = gen("mixed:parts=seq+reversed+random,size=1MiB,spacing=1GiB");
    let names: Vec<&str> = t.meta.processes.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(names, ["seq", "reversed", "random"]);
    assert_eq!(t.records.len(), 256 + 256 + 4096);
    // Each process stays in its own region and keeps its own order.
    for pid in 1..=3u32 {
        let mine: Vec<&Record> = t.records.iter().filter(|r| r.pid == pid).collect();
        let base = u64::from(pid - 1) << 30;
        assert!(mine
            .iter()
            .all(|r| r.offset >= base && r.offset < base + (1 << 30)));
        assert!(mine.iter().all(|r| r.file == pid));
        if pid == 2 {
            let p: Vec<u64> = mine.iter().map(|r| r.first_page()).collect();
            assert_eq!(p, (0..256).rev().collect::<Vec<_>>());
        }
    }
    // Interleaved in time, not one after the other.
    let head: HashSet<u32> = t.records.iter().take(200).map(|r| r.pid).collect();
    assert_eq!(head.len(), 3);
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    for name in WORKLOAD_NAMES {
        let a = gen(name);
        assert_eq!(records(&a), records(&gen(name)), "{name}");
        assert_eq!(a.meta, gen(name).meta, "{name}");
    }
    for spec in ["random", "tree-scan", "mixed", "seq:fragment=16KiB"] {
        let sep = if spec.contains(':') { "," } else { ":" };
        let other = format!("{spec}{sep}seed=99");
        assert_ne!(records(&gen(spec)), records(&gen(&other)), "{spec}");
    }
}

#[test]
fn errors_name_the_valid_choices() {
    let e = generate("nosuch").err().unwrap();
    assert!(matches!(e, WorkloadError::UnknownWorkload { .. }));
    let msg = e.to_string();
    for n in WORKLOAD_NAMES.iter().chain(SUITE_NAMES) {
        assert!(msg.contains(n), "{msg}");
    }
    let msg = generate("strided:strde=3").err().unwrap().to_string();
    assert!(
        msg.contains("workload 'strided' has no parameter 'strde'")
            && msg.contains("stride (default 8KiB)")
            && msg.contains("think (default 10us)"),
        "{msg}"
    );
    let msg = generate("seq:req=1000").err().unwrap().to_string();
    assert!(msg.contains("multiple of 4KiB"), "{msg}");
    let msg = generate("seq:req=2GiB").err().unwrap().to_string();
    assert!(msg.contains("at most 1GiB"), "{msg}");
    let msg = generate("seq:size").err().unwrap().to_string();
    assert!(msg.contains("expected key=value"), "{msg}");
    let msg = generate("interleaved:size=2GiB,distance=1GiB")
        .err()
        .unwrap()
        .to_string();
    assert!(msg.contains("do not overlap"), "{msg}");
    let msg = generate("mixed:parts=seq+mixed").err().unwrap().to_string();
    assert!(msg.contains("parameter 'parts=seq+mixed'"), "{msg}");
}

#[test]
fn help_lists_parameters_with_defaults() {
    for name in WORKLOAD_NAMES {
        let h = workload_help(name).unwrap();
        assert!(
            h.contains("seed=1") && h.contains("think=") && h.contains("start=0"),
            "{h}"
        );
        match generate(&format!("{name}:help")) {
            Err(WorkloadError::Help(t)) => assert_eq!(t, h),
            _ => panic!("{name}:help must return the help text"),
        }
    }
    assert!(workload_help("tree-scan").unwrap().contains("order=name"));
    assert!(workload_help("paper-suite")
        .unwrap()
        .contains("tree-scan:order=layout"));
    assert!(workload_help("nosuch").is_err());
}

#[test]
fn suites_expand_to_generatable_members() {
    for name in SUITE_NAMES {
        let members = suite(name).unwrap();
        assert!(members.len() >= WORKLOAD_NAMES.len());
        match generate(name) {
            Err(WorkloadError::Suite { members: m, .. }) => assert_eq!(m, members),
            _ => panic!("{name} must be reported as a suite"),
        }
    }
    assert!(suite("seq").is_none());
    for m in suite("paper-suite").unwrap() {
        gen(&m);
    }
}

#[test]
fn large_suite_members_generate() {
    // The papers' sizes: slower, but must stay valid specs.
    for m in suite("paper-suite-large").unwrap() {
        let t = gen(&m);
        assert!(t.records.len() >= 16384, "{m}: {}", t.records.len());
    }
}

/// FNV-1a over every record's fields.
fn fingerprint(t: &Trace) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for r in t.records.iter() {
        for x in [
            r.time_ns,
            r.offset,
            r.file_offset,
            u64::from(r.file),
            u64::from(r.size),
            u64::from(r.pid),
        ] {
            for b in x.to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    h
}

#[test]
fn default_traces_never_change_silently() {
    // Results files compare runs across versions: a given spec must keep
    // producing the same trace. If a change here is intended, say so in
    // the commit and update the pinned values.
    let got: Vec<(&str, usize, u64)> = ["random", "tree-scan", "mixed", "seq:fragment=64KiB"]
        .iter()
        .map(|s| {
            let t = gen(s);
            (*s, t.records.len(), fingerprint(&t))
        })
        .collect();
    assert_eq!(got, PINNED);
}

const PINNED: &[(&str, usize, u64)] = &[
    ("random", 4096, 0x02bd_659f_f790_02c5),
    ("tree-scan", 6192, 0x804c_cee4_1c0f_f5dc),
    ("mixed", 20536, 0x15fe_d14a_e1c1_d89a),
    ("seq:fragment=64KiB", 16384, 0xeee1_ad70_5d46_aaeb),
];
