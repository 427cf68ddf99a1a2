//! The command line as a user meets it: the README's commands, every
//! sample trace, and bad input (exit code 2 with a message naming the file,
//! the record and what was expected).

mod common;
use common::*;

use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

fn traces() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    assert!(
        p.is_dir(),
        "{} is missing: the repository must sit beside shared/",
        p.display()
    );
    p
}

fn sample(name: &str) -> String {
    traces().join(name).display().to_string()
}

/// The request counts the samples' README lists (lirs: their line counts;
/// two files lack a final newline, so `wc -l` shows one less).
const SAMPLES: &[(&str, u64)] = &[
    ("cloudPhysicsIO.csv", 113_872),
    ("cloudPhysicsIO.oracleGeneral.bin", 113_872),
    ("mqsim_wsrch-small.trace", 24_783),
    ("mqsim_tpcc-small.trace", 6_999),
    ("lirs_cs.trc", 6_781),
    ("lirs_multi2.trc", 26_311),
];

#[test]
fn readme_first_command_prints_a_table_per_workload_with_every_policy() {
    let o = outrider(&["compare", "--workload", "paper-suite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for w in [
        "seq",
        "reversed",
        "strided",
        "random",
        "interleaved",
        "tree-scan",
        "mixed",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(w)),
            "no table for {w}:\n{out}"
        );
    }
    for p in outrider_core::POLICY_NAMES {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(p)),
            "no row for {p}"
        );
    }
}

#[test]
fn trace_info_reads_every_sample_with_the_published_request_counts() {
    for (name, requests) in SAMPLES {
        let o = outrider(&["trace", "info", "--json", &sample(name)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["requests"].as_u64(), Some(*requests), "{name}");
        assert!(v["distinct_blocks"].as_u64().unwrap() > 0);
        assert_eq!(
            v["footprint_bytes"].as_u64().unwrap(),
            v["distinct_blocks"].as_u64().unwrap() * 4096
        );
    }
}

#[test]
fn sim_runs_on_every_sample_and_prints_design_md_metrics() {
    for (name, requests) in SAMPLES {
        let o = outrider(&[
            "sim",
            "--policy",
            "readahead",
            "--trace",
            &sample(name),
            "--device",
            "ssd",
            "--json",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        for key in [
            "policy",
            "run",
            "requests",
            "demand_blocks",
            "prefetched_blocks",
            "hit_ratio",
            "prefetch_accuracy",
            "coverage",
            "cost",
            "io_wait_s",
            "elapsed_s",
            "lead_time",
            "mis_prefetched_windows",
            "events_per_s",
        ] {
            assert!(!v[key].is_null(), "{name}: missing {key}");
        }
        assert_eq!(v["requests"].as_u64(), Some(*requests), "{name}");
        assert!(v["elapsed_s"].as_f64().unwrap() > 0.0, "{name}");
    }
}

#[test]
fn runs_keep_one_json_line_per_policy_and_run() {
    let o = outrider(&[
        "compare",
        "--policies",
        "none,obl",
        "--workload",
        "seq:size=1MiB",
        "--runs",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let keys: Vec<(String, u64)> = lines
        .iter()
        .map(|v| {
            (
                v["policy"].as_str().unwrap().to_string(),
                v["run"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            ("none".into(), 1),
            ("none".into(), 2),
            ("obl".into(), 1),
            ("obl".into(), 2)
        ]
    );
}

#[test]
fn policy_help_lists_parameters_and_unknown_keys_name_the_valid_ones() {
    let o = outrider(&["sim", "--policy", "readahead:help", "--workload", "seq"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("ra_pages=32"), "{}", stdout(&o));
    let o = outrider(&["sim", "--policy", "obl:kk=2", "--workload", "seq"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no parameter 'kk'") && stderr(&o).contains("k (default 4)"),
        "{}",
        stderr(&o)
    );
    let o = outrider(&["sim", "--policy", "nosuch", "--workload", "seq"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown policy 'nosuch'"));
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--cache",
                "12XB",
            ],
            "unknown size unit",
        ),
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--cache",
                "0%",
            ],
            "percentage",
        ),
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--device",
                "floppy",
            ],
            "unknown device",
        ),
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--device",
                "raid0:0",
            ],
            "raid0",
        ),
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--cache-model",
                "arc",
            ],
            "lru or split",
        ),
        (
            &[
                "sim",
                "--policy",
                "none",
                "--workload",
                "seq",
                "--think",
                "5 parsecs",
            ],
            "time unit",
        ),
        (
            &["sim", "--policy", "none", "--workload", "nosuch"],
            "nosuch",
        ),
        (
            &["sim", "--policy", "none", "--workload", "seq:size=x"],
            "size",
        ),
        (
            &["sim", "--policy", "none", "--trace", "/nonexistent/t.csv"],
            "/nonexistent/t.csv",
        ),
        (
            &[
                "sim", "--policy", "none", "--trace", "x", "--format", "parquet",
            ],
            "parquet",
        ),
        (&["sim", "--policy", "none"], "--trace"),
    ];
    for (args, needle) in cases {
        let o = outrider(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

#[test]
fn bad_input_in_every_format_exits_2_naming_the_file_and_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let oracle = std::fs::read(traces().join("cloudPhysicsIO.oracleGeneral.bin")).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("lcs-csv", write(d, "a.csv", b"version,time,op,size,lbn\n1,5,28,512,100\n1,6,zz,512,7\n"), "record 3"),
        ("oracle", write(d, "a.bin", &oracle[..30]), "record 2"),
        ("disksim", write(d, "a.trace", b"1000 0 100 8 1\n1000 0 abc\n"), "record 2"),
        ("spc", write(d, "s.csv", b"0,100,4096,r,0.1\n0,zz,4096,r,0.2\n"), "record 2"),
        ("msr", write(d, "m.csv", b"128166372003061629,hm,1,Read,4096,4096,100\n128166372003061629,hm,1,Bogus,4096,4096,1\n"), "record 2"),
        ("blkparse", write(d, "b.txt", b"  8,0    1       11     0.000123456  4321  Q   R 2048 + 8 [grep]\n  8,0    1  12  0.1  4321  Q   R zz + 8 [grep]\n"), "record 2"),
        ("lines", write(d, "l.txt", b"1\n2\nthree\n"), "record 3"),
        ("native", write(d, "n.otr", b"OUTRIDR1\x01\x00\x00\x00"), "record 0"),
    ];
    for (format, path, record) in &cases {
        for args in [
            vec!["trace", "info", "--format", format, path.as_str()],
            vec![
                "sim",
                "--policy",
                "none",
                "--format",
                format,
                "--trace",
                path.as_str(),
            ],
        ] {
            let o = outrider(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{format}: {err}");
            assert!(
                err.contains(path.as_str()) && err.contains(record) && err.contains("expected"),
                "{format}: {err}"
            );
            assert!(!err.contains("panicked"), "{format}: {err}");
        }
    }
}

#[test]
fn lenient_skips_and_reports_bad_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "l.txt", b"1\n2\nthree\n4\n");
    let o = outrider(&[
        "trace",
        "info",
        "--lenient",
        "--format",
        "lines",
        "--json",
        &p,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["requests"].as_u64(), v["skipped"].as_u64()),
        (Some(3), Some(1))
    );
}

#[test]
fn convert_to_native_and_back_keeps_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.otr").display().to_string();
    let o = outrider(&[
        "trace",
        "convert",
        &sample("mqsim_tpcc-small.trace"),
        &out,
        "--zstd",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = outrider(&["trace", "info", "--json", &out]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["requests"].as_u64()),
        (Some("native"), Some(6_999))
    );
}

#[test]
fn compare_writes_an_html_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html").display().to_string();
    let o = outrider(&[
        "compare",
        "--policies",
        "none,readahead",
        "--workload",
        "seq:size=1MiB",
        "--html",
        &page,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<table") && html.contains("readahead"));
}

/// `run` and `record` with their own stderr a pipe nobody reads: the
/// program still runs to its end and its exit code comes through (the
/// summary and warnings are lost, nothing else; no panic, no SIGPIPE).
#[test]
fn run_and_record_survive_a_closed_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.otr").display().to_string();
    for args in [
        vec!["run", "--no-history", "--", "sh", "-c", "exit 3"],
        vec!["record", "--out", &trace, "--", "sh", "-c", "exit 3"],
    ] {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array we pass.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors are ours; the read end is closed at once.
        let write_end = unsafe {
            libc::close(fds[0]);
            std::os::fd::OwnedFd::from_raw_fd(fds[1])
        };
        let status = Command::new(env!("CARGO_BIN_EXE_outrider"))
            .args(&args)
            .stderr(std::process::Stdio::from(write_end))
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3), "{args:?}: {status:?}");
    }
}

/// `outrider` serves `run` itself and runs `outrider-tools` (beside it) for
/// every other command, as `outrider`; without the tools it says so.
#[test]
fn commands_other_than_run_are_the_tools_beside_outrider() {
    let version = outrider(&["--version"]);
    assert!(version.status.success(), "{}", stderr(&version));
    assert!(
        stdout(&version).starts_with("outrider "),
        "{}",
        stdout(&version)
    );
    let help = outrider(&["help", "run"]);
    assert!(
        stdout(&help).contains("Usage: outrider run"),
        "{}",
        stdout(&help)
    );
    let front = outrider(&["run", "--help"]);
    assert_eq!(stdout(&front), stdout(&help));

    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("outrider");
    // Copied by `cp`, not from this process: a write descriptor of ours
    // inherited by another test's child mid-fork made exec fail (ETXTBSY).
    let cp = Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_outrider"))
        .arg(&alone)
        .status();
    assert!(cp.unwrap().success());
    let o = Command::new(&alone).args(["policies"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    let tools = dir.path().join("outrider-tools");
    assert!(
        err.contains(&format!("cannot run {}", tools.display()))
            && err.contains("install it beside"),
        "{err}"
    );
    let run = Command::new(&alone)
        .args(["run", "--no-history", "-q", "--", "sh", "-c", "exit 4"])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
