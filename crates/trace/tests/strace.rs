//! The strace reader end to end: detection, file layout, the native round
//! trip (the native format carries file-level traces: files, pids, file
//! offsets), and fuzzing with strace's own tokens.

use outrider_trace::{detect_format, read_trace, write_native, Format, ReadOptions};
use proptest::prelude::*;

const SAMPLE: &str = "\
4242  09:15:00.000100 execve(\"/usr/bin/gcc\", [\"gcc\", \"-c\", \"u.c\"], 0x7ffc /* 30 vars */) = 0
4242  09:15:00.000200 openat(AT_FDCWD, \"u.c\", O_RDONLY|O_NOCTTY) = 3
4242  09:15:00.000300 read(3, \"#include <stdio.h>\\n\"..., 8192) = 8192
4242  09:15:00.000400 read(3, \"\"..., 8192) = 100
4242  09:15:00.000500 close(3)                = 0
4243  09:15:00.000550 openat(AT_FDCWD, \"/usr/include/stdio.h\", O_RDONLY) = 3
4242  09:15:00.000600 openat(AT_FDCWD, \"missing.h\", O_RDONLY) = -1 ENOENT (No such file or directory)
4243  09:15:00.000700 pread64(3,  <unfinished ...>
4242  09:15:00.000750 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
4243  09:15:00.000800 <... pread64 resumed>\"/* stdio */\"..., 4096, 4096) = 4096
4243  09:15:00.000900 +++ exited with 0 +++
";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn strace_is_detected_laid_out_and_round_trips_through_native() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "gcc.strace", SAMPLE);
    assert_eq!(detect_format(&p).unwrap(), Format::Strace);
    let (t, rep) = read_trace(&p, &ReadOptions::default()).unwrap();
    assert_eq!(rep.ignored, 1, "the failed open");
    let paths: Vec<&str> = t.meta.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["/usr/bin/gcc", "u.c", "/usr/include/stdio.h"]);
    // Sizes from the trace: gcc's first page, u.c 8292 bytes, stdio.h up
    // to 8192; laid out contiguously in creation order on 4 KiB blocks.
    let sizes: Vec<u64> = t.meta.files.iter().map(|f| f.size).collect();
    assert_eq!(sizes, [4096, 8292, 8192]);
    let got: Vec<(u64, u32, u64, u64, u32, u32)> = t
        .records
        .iter()
        .map(|r| (r.time_ns, r.file, r.file_offset, r.offset, r.size, r.pid))
        .collect();
    assert_eq!(
        got,
        [
            (0, 1, 0, 0, 4096, 4242),
            (200_000, 2, 0, 4096, 8192, 4242),
            (300_000, 2, 8192, 12288, 100, 4242),
            (600_000, 3, 4096, 16384 + 4096, 4096, 4243),
        ]
    );
    let native = dir.path().join("gcc.otr");
    write_native(&native, &t, false).unwrap();
    let (u, _) = read_trace(&native, &ReadOptions::default()).unwrap();
    assert_eq!(u.meta.files, t.meta.files);
    assert_eq!(u.records.to_vec(), t.records.to_vec());
}

#[test]
fn strace_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "bad.strace",
        "1 10:00:00.1 close(3) = 0\n1 10:00:00.2 read(3, \"\", 1\n",
    );
    let e = match read_trace(&p, &ReadOptions::default().format(Format::Strace)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a line without a result must be an error"),
    };
    assert!(e.contains("record 2") && e.contains("= RESULT"), "{e}");
    // Lenient, the bad line is skipped; with no request left, the answer
    // is an error naming it rather than an empty trace.
    let e = match read_trace(
        &p,
        &ReadOptions::default().format(Format::Strace).lenient(true),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a trace with no request must be an error"),
    };
    assert!(e.contains("1 malformed") && e.contains("record 2"), "{e}");
}

fn near_strace() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just("4242 ".to_string()),
        Just("[pid 7] ".into()),
        Just("10:00:00.000001 ".into()),
        Just("1700000000.5 ".into()),
        Just("openat(AT_FDCWD, \"a\", O_RDONLY)".into()),
        Just("open(\"b\\\"x\\101\", O_RDONLY)".into()),
        Just("read(3, \"x\"..., 4096)".into()),
        Just("pread64(3, \"\", 10, 99)".into()),
        Just("execve(\"/bin/sh\", [], 0)".into()),
        Just("close(3)".into()),
        Just(" = 3".into()),
        Just(" = 0".into()),
        Just(" = -1 ENOENT (No such file or directory)".into()),
        Just(" = 18446744073709551615".into()),
        Just("read(3, <unfinished ...>".into()),
        Just("<... read resumed>\"\", 5)".into()),
        Just("+++ exited with 0 +++".into()),
        Just("\"".into()),
        Just("\\".into()),
        Just("(".into()),
        Just(")".into()),
        Just("\n".into()),
        any::<i32>().prop_map(|n| n.to_string()),
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat().into_bytes())
}

proptest! {
    #[test]
    fn near_strace_never_panics(bytes in near_strace()) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fuzz");
        std::fs::write(&p, &bytes).unwrap();
        let _ = detect_format(&p);
        for lenient in [false, true] {
            if let Ok((t, _)) = read_trace(&p, &ReadOptions::default().format(Format::Strace).lenient(lenient)) {
                // Every record lies inside its file's extents.
                for r in t.records.iter() {
                    let f = &t.meta.files[r.file as usize - 1];
                    prop_assert_eq!(f.physical(r.file_offset), Some(r.offset));
                }
            }
        }
    }
}

/// Seconds of up to 12 digits once overflowed `s × 10^9` (found by
/// `outrider-fuzz` with overflow checks on): an error now, not a wrap.
#[test]
fn strace_times_past_2_pow_64_ns_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "big.strace",
        "1 999999999999.5 openat(AT_FDCWD, \"a\", O_RDONLY) = 3\n",
    );
    let e = match read_trace(&p, &ReadOptions::default().format(Format::Strace)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a time past 2^64 ns must be an error"),
    };
    assert!(e.contains("record 1") && e.contains("below 2^64 ns"), "{e}");
}
