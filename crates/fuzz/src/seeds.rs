//! Seed inputs per target: small, valid examples of each format (the
//! layouts of `outrider_trace::formats`' module documentation) and of each
//! specification language, which the mutator then damages.

use outrider_trace::{write_trace, Format};
use std::path::Path;

/// Byte strings the mutator splices in: numbers at the edges of every
/// integer width, signs, exponents, separators and each format's keywords.
pub const TOKENS: &[&str] = &[
    "0",
    "1",
    "-1",
    "4095",
    "4096",
    "4097",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e99",
    "1e-99",
    "0.5",
    ".",
    "+",
    ",",
    " ",
    "\t",
    "\n",
    "\r\n",
    "=",
    ":",
    ";",
    "%",
    "[",
    "]",
    "(",
    ")",
    "\"",
    "\\",
    "#",
    "Q",
    "D",
    "C",
    "R",
    "W",
    "FWS",
    "RA",
    "Read",
    "Write",
    "2a",
    "28",
    "88",
    "8a",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "kB",
    "MB",
    "GB",
    "ns",
    "us",
    "ms",
    "s",
    "µs",
    "help",
    "auto",
    "none",
    "hdd",
    "raid0",
    "off",
    "on",
    "nan",
    "inf",
    "\u{0}",
    "\u{ff}",
    "é",
];

/// Seeds of a trace format, as file contents.
pub fn trace_seeds(format: Format, scratch: &Path) -> Vec<Vec<u8>> {
    let text = |s: &[&str]| s.iter().map(|l| l.as_bytes().to_vec()).collect();
    match format {
        Format::Native => native_seeds(scratch),
        Format::LcsCsv => text(&[
            "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633899,28,4096,8\n",
            "1,0,08,512,1\n1,0,0a,512,1\n1,0,88,512,1\n1,0,35,0,0\n",
        ]),
        Format::Csv(_) => text(&[
            "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633899,28,4096,8\n",
            "1;0;2a;512;1\n1;0;28;512;1\n",
        ]),
        Format::Oracle | Format::OraclePages => vec![oracle_seed()],
        Format::Disksim => text(&[
            "938513000 4 264719034 16 0\n938828000 3 197570570 16 1\n",
            "0.5 0 8 16 1\n2.25 0 8 16 0\n",
        ]),
        Format::Spc => text(&[
            "ASU,LBA,Size,Opcode,Timestamp\n0,303567,3584,w,0.5\n2,8,512,R,0.25\n",
            "0,20941264,8192,W,0.551706\n1,3436288,15872,r,0.554041\n",
        ]),
        Format::Msr => text(&[
            "128166372003061629,wdev,2,Write,3875307520,4096,2315\n128166372013061629,wdev,2,Read,4096,512,10\n",
        ]),
        Format::Blkparse => text(&[
            "  8,0    1       11     0.000123456  4321  Q   R 2048 + 8 [grep]\n  8,0    1       12     0.000200000  4321  Q  WS 4096 + 16 [grep]\n  8,0    1       13     0.000300000  4321  D   R 2048 + 8 [grep]\n  8,0    0        0     0.000400000     0  m   N cfq4321 insert_request\n  8,0    1       14     0.000500000   100  Q FWS [kworker/0:1]\n  8,0    1       15     0.000600000  4321  C   R 2048 + 8 [0]\n  8,0    1       16     0.000700000  4321  P   N [grep]\n  8,0    1       17     0.000800000  4321 UT   N [grep] 1\nCPU0 (8,0):\n Reads Queued:           1,        4KiB\nTotal (8,0):\nThroughput (R/W): 4KiB/s / 8KiB/s\nEvents (8,0): 8 entries\nSkips: 0 forward (0 -   0.0%)\n",
        ]),
        Format::Lines => text(&["# lirs\n0\n1\n2\n7\n  8  \r\n", "1\n2\n3\n"]),
        Format::Strace => text(&[
            "4242 10:00:00.000001 execve(\"/bin/grep\", [\"grep\"], 0x7ffd) = 0\n4242 10:00:00.000100 openat(AT_FDCWD, \"a.txt\", O_RDONLY) = 3\n4242 10:00:00.000200 read(3, \"hello\"..., 4096) = 4096\n4242 10:00:00.000300 pread64(3, \"\", 10, 99) = 10\n[pid 4243] 10:00:00.000400 open(\"b\\\"x\\101\", O_RDONLY) = 4\n4243 10:00:00.000500 read(4, \"x\", 1) = 1\n4242 10:00:00.000600 close(3) = 0\n",
        ]),
    }
}

/// Native traces written by outrider itself: plain and zstd, with a file
/// layout (a workload) and without.
fn native_seeds(scratch: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let trace = outrider_trace::workloads::generate("tree-scan:files=6,dirs=2,median=8KiB")
        .expect("a valid built-in workload");
    for zstd in [false, true] {
        let p = scratch.join(format!("seed-native-{zstd}"));
        write_trace(&p, &trace, Format::Native, zstd).expect("scratch directory is writable");
        out.push(std::fs::read(&p).expect("just written"));
        let _ = std::fs::remove_file(&p);
    }
    out
}

/// Three oracleGeneral records: `<u32 time, u64 id, u32 size, i64 next>`.
fn oracle_seed() -> Vec<u8> {
    let mut b = Vec::new();
    for (t, id, size, next) in [
        (1u32, 7u64, 4096u32, 2i64),
        (2, 8, 512, -1),
        (3, 7, 4096, -1),
    ] {
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&next.to_le_bytes());
    }
    b
}

/// Seeds of the specification languages.
pub fn spec_seeds(target: &str) -> Vec<Vec<u8>> {
    let list: &[&str] = match target {
        "size" => &[
            "4096", "64KiB", "256MiB", "1.5GiB", "100MB", "2G", "0.5KiB", "1TiB",
        ],
        "duration" => &["0", "250ns", "20us", "1.5ms", "2s", "5µs"],
        "policy" => &[
            "none",
            "obl:k=2",
            "readahead:ra_pages=64",
            "diskseen:k=8,min=8,max=32",
            "last-successor",
            "pcm",
            "epcm",
            "flashy:chunk=8MiB",
            "directed:buffer=1MiB,infill=32KiB",
            "stride",
            "auto:seq_limit=0",
            "readahead+diskseen",
            "epcm+diskseen",
            "obl:help",
        ],
        "workload" => &[
            "seq:size=64KiB",
            "reversed:size=64KiB,req=8KiB",
            "strided:size=64KiB,stride=16KiB",
            "random:size=1MiB,count=16",
            "interleaved:size=256KiB,files=2",
            "tree-scan:files=8,dirs=2",
            "mixed:size=256KiB",
            "build:units=2",
            "link:dirs=2,per_dir=2",
            "traversal:files=8,dirs=2",
            "patch-build:units=2,versions=2",
            "slowthink:size=4MiB",
            "lfs:size=1MiB,count=8",
            "blast:size=4MiB,phases=2",
            "seq:size=64KiB,fragment=8KiB,start=1GiB,think=5us",
        ],
        "device" => &[
            "hdd",
            "ssd",
            "nvme",
            "none",
            "raid0:4",
            "raid0:2:ssd",
            "raid0:3:hdd",
        ],
        "daemon-request" => &[
            "{\"argv\":[\"make\",\"-j2\"],\"policy\":\"auto\",\"budget_bytes\":1073741824,\"workers\":2,\"no_history\":false,\"app_key\":null,\"metadata_walk\":true}\n",
            "{\"argv\":[\"cat\"],\"policy\":\"stride\",\"budget_bytes\":1,\"workers\":1,\"no_history\":true,\"app_key\":\"k\",\"metadata_walk\":false}\n",
            "{\"code\":3}\n",
            "{\"reply\":\"ready\"}\n",
        ],
        "daemon-config" => &[
            include_str!("../../../dist/daemon.toml"),
            "watch = [\"/usr/bin/python3.11\"]\nlaunch_window_s = 3\n",
            "socket = \"\"\nmax_clients = 2\npressure_max_pct = 5.5\n",
        ],
        other => unreachable!("no seeds for target {other}"),
    };
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
}
