//! `outrider-fuzz`: seeded random-mutation fuzzing of every parser
//! outrider exposes to its users, on stable Rust.
//!
//! Each target starts from valid seeds ([`seeds`]) and feeds the parser
//! mutated copies: bytes flipped, inserted, deleted, duplicated, truncated,
//! spliced from another seed, and runs of digits replaced by edge values
//! (`18446744073709551615`, `4294967296`, `-1`, `1e99`, …). A parser may
//! answer anything but a panic or a hang: every panic is caught, counted
//! and its input saved; a watchdog ends the run if one input takes longer
//! than `--hang-secs`. Build it with `--profile fuzz` (overflow and debug
//! assertions on) so that an integer overflow is a panic, not a silent
//! wrap:
//!
//! ```text
//! cargo run --profile fuzz -p outrider-fuzz -- --inputs 1000000
//! cargo run --profile fuzz -p outrider-fuzz -- --seconds 8 --target size
//! ```
//!
//! Exit code 0 when no target panicked or hung, 1 otherwise, 2 for bad
//! arguments. The same seed gives the same inputs.
#![deny(missing_docs)]

mod seeds;
mod targets;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use targets::Target;

/// What to run, from the command line.
struct Opts {
    /// Inputs per target: a maximum (default 100 000, or no maximum with
    /// `--seconds`).
    inputs: u64,
    /// Seconds per target, if given (then `inputs` is a maximum).
    seconds: Option<f64>,
    /// Seed of the mutator.
    seed: u64,
    /// Targets by name (empty: all).
    only: Vec<String>,
    /// Where failing inputs are saved.
    out: PathBuf,
    /// An input running longer than this is a hang.
    hang_secs: u64,
}

fn usage_exit(msg: &str) -> ! {
    eprintln!("outrider-fuzz: {msg}");
    eprintln!(
        "usage: outrider-fuzz [--inputs N] [--seconds S] [--seed N] [--target NAME]... \
         [--out DIR] [--hang-secs S]\ntargets: {}",
        targets::NAMES.join(" ")
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        inputs: 100_000,
        seconds: None,
        seed: 1,
        only: Vec::new(),
        out: PathBuf::from("target/fuzz-failures"),
        hang_secs: 10,
    };
    let mut inputs = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage_exit(&format!("{a} needs a value")))
        };
        let num = |v: String| {
            v.parse::<u64>()
                .unwrap_or_else(|_| usage_exit(&format!("{a}: '{v}' is not a number")))
        };
        match a.as_str() {
            "--inputs" => inputs = Some(num(value())),
            "--seed" => o.seed = num(value()),
            "--hang-secs" => o.hang_secs = num(value()).max(1),
            "--seconds" => {
                let v = value();
                o.seconds =
                    Some(v.parse().unwrap_or_else(|_| {
                        usage_exit(&format!("--seconds: '{v}' is not a number"))
                    }));
            }
            "--target" => o.only.push(value()),
            "--out" => o.out = PathBuf::from(value()),
            "-h" | "--help" => usage_exit("fuzz outrider's parsers"),
            other => usage_exit(&format!("unknown argument '{other}'")),
        }
    }
    o.inputs = inputs.unwrap_or(if o.seconds.is_some() {
        u64::MAX
    } else {
        100_000
    });
    for t in &o.only {
        if !targets::NAMES.contains(&t.as_str()) {
            usage_exit(&format!("unknown target '{t}'"));
        }
    }
    o
}

/// Counts for one target.
#[derive(Default)]
struct Tally {
    inputs: u64,
    accepted: u64,
    panics: u64,
}

/// The hang watchdog: `beat` moves on after every input; if it stands
/// still for `hang_secs`, the current input (`current()` names its file)
/// is reported as a hang and the process exits 1.
fn watchdog(beat: Arc<AtomicU64>, hang_secs: u64, current: Arc<std::sync::Mutex<String>>) {
    std::thread::spawn(move || {
        let mut last = u64::MAX;
        let mut still = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = beat.load(Ordering::Relaxed);
            if now != last {
                last = now;
                still = Instant::now();
            } else if still.elapsed() >= Duration::from_secs(hang_secs) {
                let what = current.lock().map(|s| s.clone()).unwrap_or_default();
                eprintln!("outrider-fuzz: HANG: one input ran over {hang_secs} s: {what}");
                std::process::exit(1);
            }
        }
    });
}

fn main() {
    let o = parse_opts();
    std::fs::create_dir_all(&o.out)
        .unwrap_or_else(|e| usage_exit(&format!("--out {}: {e}", o.out.display())));
    // tmpfs where there is one: ext4 flushes a file truncated and rewritten
    // on close (auto_da_alloc), which made each trace input cost 5 ms.
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let scratch = base.join(format!("outrider-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a writable temporary directory");
    // Panics are expected answers to count, not messages to print.
    let last_panic = Arc::new(std::sync::Mutex::new(String::new()));
    let lp = Arc::clone(&last_panic);
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut s) = lp.lock() {
            *s = info.to_string();
        }
    }));
    let beat = Arc::new(AtomicU64::new(0));
    let current = Arc::new(std::sync::Mutex::new(String::new()));
    watchdog(Arc::clone(&beat), o.hang_secs, Arc::clone(&current));
    println!(
        "{:<10} {:>10} {:>10} {:>7} {:>8}",
        "target", "inputs", "accepted", "panics", "seconds"
    );
    let mut failed = false;
    for name in targets::NAMES {
        if !o.only.is_empty() && !o.only.iter().any(|t| t == name) {
            continue;
        }
        let mut target = Target::new(name, &scratch);
        if let Ok(mut c) = current.lock() {
            *c = format!(
                "target {name}, input file {}",
                target.input_path().display()
            );
        }
        let started = Instant::now();
        let tally = run_target(&mut target, &o, &beat, &last_panic, &current);
        failed |= tally.panics > 0;
        println!(
            "{:<10} {:>10} {:>10} {:>7} {:>8.1}",
            name,
            tally.inputs,
            tally.accepted,
            tally.panics,
            started.elapsed().as_secs_f64()
        );
        let _ = std::io::stdout().flush();
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!("hangs: 0 (an input over {} s ends the run)", o.hang_secs);
    std::process::exit(i32::from(failed));
}

/// Feed `target` mutated inputs until the count or the time is reached.
fn run_target(
    target: &mut Target,
    o: &Opts,
    beat: &AtomicU64,
    last_panic: &std::sync::Mutex<String>,
    current: &std::sync::Mutex<String>,
) -> Tally {
    let mut rng = targets::Rng::new(o.seed ^ targets::name_hash(target.name()));
    let deadline = o
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut t = Tally::default();
    while t.inputs < o.inputs {
        if t.inputs % 64 == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let input = target.mutate(&mut rng);
        if target.is_spec() {
            if let Ok(mut c) = current.lock() {
                c.clear();
                c.push_str(&format!(
                    "target {}, input {:?}",
                    target.name(),
                    String::from_utf8_lossy(&input)
                ));
            }
        }
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.feed(&input)));
        beat.fetch_add(1, Ordering::Relaxed);
        t.inputs += 1;
        match answer {
            Ok(true) => t.accepted += 1,
            Ok(false) => {}
            Err(_) => {
                t.panics += 1;
                let msg = last_panic.lock().map(|s| s.clone()).unwrap_or_default();
                let path = o
                    .out
                    .join(format!("{}-panic-{}.bin", target.name(), t.panics));
                let _ = std::fs::write(&path, &input);
                if t.panics <= 5 {
                    eprintln!(
                        "outrider-fuzz: {} PANIC ({}): {msg}",
                        target.name(),
                        path.display()
                    );
                }
            }
        }
    }
    t
}
