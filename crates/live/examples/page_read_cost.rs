//! What the eBPF programs cost a launch the daemon follows: a child
//! exec'd while a source follows every exec (the daemon's scope) reads a
//! file 4 KiB at a time from start to end, cold (caches dropped before
//! each child) or cached. Reported per file, medians over the rounds:
//! the time its programs ran (`kernel.bpf_stats_enabled`, on for the
//! run), their runs, and the child's wall time. A file of 16 MiB is sent
//! whole; past that a run is cut (`runs::SENT_PAGES`).
//! `cargo run --release -p outrider-live --example page_read_cost -- ROUNDS cold|cached FILE...`
//! (root).
use outrider_live::ebpf::{EbpfSource, Scope};
use outrider_live::tracefs::{LiveEvent, EVENTS, EXEC_EVENT};
use std::io::{BufRead, Write};
use std::os::unix::fs::FileExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, file] if flag == "--child" => child(file),
        [rounds, how, files @ ..] if !files.is_empty() => {
            let rounds = (rounds.parse())
                .unwrap_or_else(|_| fail(&format!("ROUNDS: expected a count, got {rounds:?}")));
            let cold = match how.as_str() {
                "cold" => true,
                "cached" => false,
                _ => fail(&format!("expected cold or cached, got {how:?}")),
            };
            parent(files, rounds, cold)
        }
        _ => fail("usage: page_read_cost ROUNDS cold|cached FILE..."),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("page_read_cost: {msg}");
    std::process::exit(2);
}

/// Wait for a line, then read `file` 4 KiB at a time.
fn child(file: &str) {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    let f = std::fs::File::open(file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let mut buf = [0u8; 4096];
    let mut off = 0u64;
    while f.read_at(&mut buf, off).unwrap_or(0) > 0 {
        off += 4096;
    }
}

/// `rounds` children per file, the files in turn; the medians.
fn parent(files: &[String], rounds: usize, cold: bool) {
    let mut evs: Vec<(String, String)> = (EVENTS.iter())
        .filter(|(s, _)| *s != "block")
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect();
    evs.push((EXEC_EVENT.0.into(), EXEC_EVENT.1.into()));
    let mut src = EbpfSource::open_scoped(&evs, Scope::Execs, None, 0)
        .unwrap_or_else(|e| fail(&format!("eBPF source: {e}")));
    let stats = "/proc/sys/kernel/bpf_stats_enabled";
    let before = std::fs::read_to_string(stats).unwrap_or_else(|_| "0".into());
    let _ = std::fs::write(stats, "1");
    let mut got = vec![Vec::new(); files.len()];
    for _ in 0..rounds {
        for (file, got) in files.iter().zip(&mut got) {
            if cold {
                let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
            } else {
                let _ = std::fs::read(file);
            }
            got.push(run(file, &mut src));
        }
    }
    let _ = std::fs::write(stats, before.trim());
    for (file, v) in files.iter().zip(got) {
        let med = |f: fn(&[u64; 3]) -> u64| {
            let mut x: Vec<u64> = v.iter().map(f).collect();
            x.sort_unstable();
            x[x.len() / 2]
        };
        let (ns, runs, wall) = (med(|p| p[0]), med(|p| p[1]), med(|p| p[2]));
        println!(
            "{file}: programs {:.2} ms in {runs} runs ({} ns each), wall {:.1} ms",
            ns as f64 / 1e6,
            ns / runs.max(1),
            wall as f64 / 1e6
        );
    }
}

/// One child's programs' ns and runs and its wall ns, the source drained
/// while it runs.
fn run(file: &str, src: &mut EbpfSource) -> [u64; 3] {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("own path: {e}")));
    let mut c = (Command::new(exe).args(["--child", file]))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("child: {e}")));
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !src.reads_attached().is_none_or(|(on, _)| on) && Instant::now() < deadline {
        drain(src, &mut out);
    }
    let (ns0, runs0) = program_stats();
    let t = Instant::now();
    let _ = c.stdin.take().map(|mut i| i.write_all(b"go\n"));
    while c.try_wait().ok().flatten().is_none() {
        drain(src, &mut out);
    }
    let wall = t.elapsed().as_nanos() as u64;
    let (ns1, runs1) = program_stats();
    drain(src, &mut out);
    [ns1 - ns0, runs1 - runs0, wall]
}

/// The run time (ns) and runs of this process's programs (its fds'
/// `fdinfo`).
fn program_stats() -> (u64, u64) {
    let (mut ns, mut runs) = (0, 0);
    let Ok(dir) = std::fs::read_dir("/proc/self/fdinfo") else {
        return (0, 0);
    };
    for e in dir.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            let mut w = line.split_whitespace();
            let (key, n) = (w.next(), w.next().and_then(|n| n.parse::<u64>().ok()));
            match (key, n) {
                (Some("run_time_ns:"), Some(n)) => ns += n,
                (Some("run_cnt:"), Some(n)) => runs += n,
                _ => {}
            }
        }
    }
    (ns, runs)
}

fn drain(src: &mut EbpfSource, out: &mut Vec<LiveEvent>) {
    src.wait(None, Duration::from_millis(5));
    while src.poll(out, 256).unwrap_or(0) > 0 {}
    let _ = src.settle_reads();
    out.clear();
}
