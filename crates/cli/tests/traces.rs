//! Traces as users have them: compressed (`.zst`, `.gz`), piped, or in a
//! CSV layout outrider has no reader for.

mod common;
use common::{outrider, sample, stderr, stdout, SAMPLE_NAMES};
use std::io::Write;
use std::process::{Command, Stdio};

/// `trace info`'s text without its first line (which names the file).
fn info_body(path: &str) -> String {
    let o = outrider(&["trace", "info", path]);
    assert!(o.status.success(), "{path}: {}", stderr(&o));
    let out = stdout(&o);
    out.split_once('\n').expect("two lines").1.to_string()
}

#[test]
fn zst_and_gz_copies_of_every_sample_give_the_same_trace_info() {
    let dir = tempfile::tempdir().unwrap();
    for name in SAMPLE_NAMES {
        let original = sample(name);
        let bytes = std::fs::read(&original).unwrap();
        let zst = dir.path().join(format!("{name}.zst"));
        std::fs::write(&zst, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
        let gz = dir.path().join(format!("{name}.gz"));
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&bytes).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let want = info_body(&original.display().to_string());
        assert!(want.contains("reuses:"), "{want}");
        for copy in [&zst, &gz] {
            assert_eq!(info_body(&copy.display().to_string()), want, "{name}");
        }
        let o = outrider(&["trace", "info", "--json", &zst.display().to_string()]);
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["compression"], "zstd", "{name}");
    }
}

/// `outrider trace info <(cat t)`: detection must not consume the pipe
/// (a second open of a pipe reads nothing, and the trace had 0 requests).
#[test]
fn a_piped_trace_is_detected_and_read_whole() {
    let bytes = std::fs::read(sample("lirs_cs.trc")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_outrider"))
        .args(["trace", "info", "--json", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["requests"].as_u64()),
        (Some("lines"), Some(6_781))
    );
}

#[test]
fn a_csv_mapping_reads_a_layout_outrider_has_no_reader_for() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.tsv");
    // time (us), device, op, offset (bytes), size (sectors)
    std::fs::write(
        &p,
        "t\tdev\top\toff\tlen\n10\t0\tR\t0\t8\n30\t0\tW\t4096\t16\n",
    )
    .unwrap();
    let p = p.display().to_string();
    let fmt = "csv:time=1:us,dev=2,op=3,offset=4,size=5:sectors,sep=tab";
    let o = outrider(&["trace", "info", "--json", "--format", fmt, &p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["requests"], 2);
    assert_eq!(
        (v["reads"].as_u64(), v["writes"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["block_accesses"], 3); // 4 KiB, then 8 KiB from block 1
    assert_eq!(v["duration_s"], 20e-6);
    for (bad, needle) in [("csv:time=1", "address column"), ("csv:lbn=9", "column 9")] {
        let o = outrider(&["sim", "--policy", "none", "--trace", &p, "--format", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(needle), "{bad}: {}", stderr(&o));
    }
}
