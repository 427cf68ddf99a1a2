//! Arguments and inputs that were once accepted without complaint, aborted
//! or panicked: each is a clear exit-2 message now; and commands whose
//! reader goes away end quietly.

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Exit code 2 and a message containing every needle.
#[track_caller]
fn assert_usage(args: &[&str], needles: &[&str]) {
    let o = outrider(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{args:?}: {e}");
    for n in needles {
        assert!(e.contains(n), "{args:?}: `{e}` lacks `{n}`");
    }
}

/// Run `args` with stdout a pipe whose reader has gone away (as `| head`
/// does once it has its lines), closed before the program starts so that
/// a short output cannot slip into the pipe's buffer first.
fn with_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// `outrider workloads | head -3` and `outrider compare ... | head -1` once
/// panicked in `println!` (exit 101). They end like other filters now:
/// killed by SIGPIPE, nothing on stderr.
#[test]
fn printing_commands_end_quietly_when_the_reader_goes_away() {
    use std::os::unix::process::ExitStatusExt;
    for args in [
        &["workloads"][..],
        &["policies"],
        &[
            "compare",
            "--workload",
            "paper-suite",
            "--policies",
            "none,obl",
        ],
        &["completions", "bash"],
    ] {
        let o = with_closed_pipe(args);
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(
            o.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?} {e}",
            o.status
        );
    }
}

/// `sim --policy obl:help` (in the README) once failed with "--trace
/// required"; a missing input names both ways of giving one.
#[test]
fn policy_help_needs_no_input_and_a_missing_input_names_both_options() {
    let o = outrider(&["sim", "--policy", "obl:help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("parameters"), "{}", stdout(&o));
    let o = outrider(&["sim", "--policy", "obl", "--workload", "seq:help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("size=64MiB"), "{}", stdout(&o));
    assert_usage(&["sim", "--policy", "obl"], &["--trace", "--workload"]);
    assert_usage(
        &["compare", "--policies", "none"],
        &["--trace", "--workload"],
    );
}

/// `workloads` lists the suites the README runs.
#[test]
fn workloads_lists_the_suites() {
    let o = outrider(&["workloads"]);
    let text = stdout(&o);
    assert!(
        text.contains("paper-suite:") && text.contains("paper-suite-large:"),
        "{text}"
    );
}

/// Bounds that once aborted (134) or ran for ever, and contradictions that
/// were silently resolved.
#[test]
fn out_of_range_and_contradictory_arguments_are_exit_2() {
    let seq = ["--workload", "seq:size=1MiB"];
    let sim = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["sim", "--policy", "none", "--device", "none"];
        v.extend_from_slice(&seq);
        v.extend_from_slice(extra);
        v
    };
    assert_usage(&sim(&["--runs", "4294967295"]), &["--runs", "1 to 1000"]);
    assert_usage(&sim(&["--think", "5"]), &["--think", "unit", "5ms"]);
    assert_usage(&sim(&["--think", "18446744074s"]), &["--think", "too long"]);
    assert_usage(
        &["sim", "--policy", "none", "--workload", "seq:size=1TiB"],
        &["size", "at most 64GiB"],
    );
    assert_usage(
        &[
            "sim",
            "--policy",
            "diskseen:min=64,max=8",
            "--workload",
            "seq",
        ],
        &["min=64 is above max=8"],
    );
    assert_usage(
        &["sim", "--policy", "obl:k=1,k=2", "--workload", "seq"],
        &["'k' is given more than once"],
    );
}

fn cache_bytes(cache: &str) -> u64 {
    let o = outrider(&[
        "sim",
        "--policy",
        "none",
        "--device",
        "none",
        "--workload",
        "seq:size=1MiB",
        "--json",
        "--cache",
        cache,
    ]);
    assert!(o.status.success(), "--cache {cache}: {}", stderr(&o));
    let line: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    line["cache_bytes"].as_u64().unwrap()
}

/// `--cache 1MB` was silently 1 MiB and `--cache 1.5GiB` an "unknown unit
/// '.5gib'": SI units are powers of 1000, IEC units powers of 1024, and
/// fractions are exact. (The cache holds whole 4 KiB blocks.)
#[test]
fn cache_sizes_take_si_and_iec_units_and_fractions() {
    assert_eq!(cache_bytes("1MB"), 1_000_000 / 4096 * 4096);
    assert_eq!(cache_bytes("1MiB"), 1 << 20);
    assert_eq!(cache_bytes("1.5GiB"), 3 << 29);
    assert_usage(
        &[
            "sim",
            "--policy",
            "none",
            "--workload",
            "seq",
            "--cache",
            "1Mbit",
        ],
        &["--cache", "unknown size unit"],
    );
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

/// Empty files with an explicit format, all-garbage files with
/// `--lenient`, and `--repeat 4294967295` (which aborted).
#[test]
fn empty_garbage_and_oversized_trace_inputs_are_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.csv", b"");
    let blank = write(dir.path(), "blank.txt", b"  \n\n");
    let junk = write(dir.path(), "junk.csv", b"no,such\nrecords here\n");
    let sim = |t: &str, extra: &[&str], needles: &[&str]| {
        let mut v = vec!["sim", "--policy", "none", "--trace", t];
        v.extend_from_slice(extra);
        assert_usage(&v, needles);
    };
    sim(&empty, &["--format", "lcs-csv"], &[&empty, "found none"]);
    sim(&blank, &["--format", "lines"], &[&blank, "found none"]);
    sim(
        &junk,
        &["--format", "spc", "--lenient"],
        &[&junk, "2 malformed", "record 1"],
    );
    let small = write(dir.path(), "small.trc", b"1\n2\n3\n");
    let out = dir.path().join("big.otr").display().to_string();
    assert_usage(
        &["trace", "convert", &small, &out, "--repeat", "4294967295"],
        &["--repeat", "more than"],
    );
}

/// A native trace carries the `source` it was made from; messages about
/// it name the file given instead. The record lies beyond what a device
/// model holds (2^52 bytes), which `sim` refuses.
#[test]
fn errors_name_the_file_given_not_the_traces_recorded_source() {
    let dir = tempfile::tempdir().unwrap();
    let text = write(dir.path(), "far.disksim", b"0 0 9007199254740000 8 1\n");
    let native = dir.path().join("copy.otr").display().to_string();
    let o = outrider(&["trace", "convert", &text, &native]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = outrider(&["sim", "--policy", "none", "--trace", &native]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("copy.otr") && !e.contains("far.disksim"), "{e}");
}

/// One meaning per option: `run` writes its JSON with `--json-file`;
/// `record` compresses with `--zstd` (as `trace convert`) and writes
/// `.otr` by default.
#[test]
fn options_have_one_meaning_across_commands() {
    let help = stdout(&outrider(&["run", "--help"]));
    assert!(help.contains("--json-file <FILE>"), "{help}");
    let help = stdout(&outrider(&["record", "--help"]));
    assert!(
        help.contains("--zstd") && !help.contains("--compress"),
        "{help}"
    );
    assert!(help.contains("outrider.otr"), "{help}");
}

/// Every subcommand's --help shows examples; sim's lists every device
/// kind and trace format.
#[test]
fn help_shows_examples_and_every_accepted_value() {
    for cmd in [
        "sim",
        "compare",
        "run",
        "record",
        "stat",
        "warm",
        "evict",
        "calibrate",
        "policies",
        "workloads",
    ] {
        let help = stdout(&outrider(&[cmd, "--help"]));
        assert!(help.contains("Example"), "{cmd}: {help}");
    }
    let help = stdout(&outrider(&["sim", "--help"]));
    for v in [
        "raid0:N:MEMBER",
        "none",
        "strace",
        "blkparse",
        "docs/metrics.md",
    ] {
        assert!(help.contains(v), "sim --help lacks {v}");
    }
}

/// Man pages and completions come from the same definition as --help.
#[test]
fn man_pages_and_completions_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let o = outrider(&["man", &man.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for page in ["outrider.1", "outrider-sim.1", "outrider-trace-convert.1"] {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let o = outrider(&["completions", shell]);
        assert!(
            o.status.success() && stdout(&o).contains("--workload"),
            "{shell}"
        );
    }
}
