//! The live safety rules against the real kernel: a tracing fault
//! degrades to no prefetching with a warning — never a crash, never a hung
//! program — and the program's exit code is passed through; files are
//! opened read-only and close-on-exec. Tracing tests are skipped (pass
//! vacuously, with a note) when not root.

use outrider_live::session::{exit_code, run_traced, Handler};
use outrider_live::source::SourceChoice;
use outrider_live::tracefs::{InstanceOptions, LiveEvent};
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Records what the session told it.
#[derive(Default)]
struct Probe {
    events: usize,
    faults: Vec<String>,
    finished: bool,
}

impl Handler for Probe {
    fn on_events(&mut self, events: &[LiveEvent], _in_tree: &[bool]) {
        self.events += events.len();
    }
    fn on_fault(&mut self, why: &str) {
        self.faults.push(why.to_string());
    }
    fn on_finish(&mut self, _now_ns: u64) {
        self.finished = true;
    }
}

/// The kernel follows forks of the *task* named in `set_event_pid`, and
/// tests run on their own threads: follow this thread.
fn my_tid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() as u32 }
}

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Tracing that cannot start (here: an event the kernel does not have, as
/// when tracefs lacks the filemap events) is a warning and a fault to the
/// handler; the program still runs to its end and its exit code comes
/// back unchanged. Also holds without root (tracefs then is unavailable).
#[test]
fn tracing_that_cannot_start_runs_the_program_unchanged() {
    let opts = InstanceOptions {
        name: format!("outrider-{}-safety-missing", std::process::id()),
        events: vec![("outrider_no_such_system".into(), "no_such_event".into())],
        ..InstanceOptions::default()
    };
    let mut probe = Probe::default();
    let t = Instant::now();
    let out = run_traced(
        &argv(&["sh", "-c", "exit 3"]),
        &opts,
        SourceChoice::TraceFs,
        &mut probe,
    )
    .unwrap();
    assert_eq!(exit_code(&out.status), 3);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].starts_with("tracing unavailable"),
        "{:?}",
        out.warnings
    );
    assert_eq!(probe.faults, out.warnings);
    assert!(probe.finished);
    assert_eq!(probe.events, 0);
    assert!(t.elapsed() < Duration::from_secs(60), "no hang");
    assert!(
        !std::path::Path::new(&format!("/sys/kernel/tracing/instances/{}", opts.name)).exists(),
        "a half-made instance is removed"
    );
}

/// Events the kernel drops (a ring buffer of one page per CPU, overrun by
/// tens of thousands of cached reads) are a fault: one warning naming the
/// loss, prefetching stops, the program finishes with its own exit code.
#[test]
fn lost_events_are_a_warning_and_the_program_finishes() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("data");
    std::fs::write(&f, vec![1u8; 32 << 20]).unwrap();
    let fs = f.display().to_string();
    let opts = InstanceOptions {
        name: format!("outrider-{}-safety-lost", std::process::id()),
        buffer_kb_per_cpu: 4,
        follow_pid: Some(my_tid()),
        ..InstanceOptions::default()
    };
    let mut probe = Probe::default();
    // 8192 cached 4 KiB reads, three times: far more events than one page
    // holds between two polls. Then exit 5.
    let script =
        format!("for i in 1 2 3; do dd if={fs} of=/dev/null bs=4096 2>/dev/null; done; exit 5");
    let out = run_traced(
        &argv(&["sh", "-c", &script]),
        &opts,
        SourceChoice::TraceFs,
        &mut probe,
    )
    .unwrap();
    assert_eq!(exit_code(&out.status), 5);
    assert!(out.source.lost_events > 0, "{:?}", out.source);
    let lost: Vec<_> = out
        .warnings
        .iter()
        .filter(|w| w.starts_with("the kernel lost"))
        .collect();
    assert_eq!(
        lost.len(),
        1,
        "one warning, not one per poll: {:?}",
        out.warnings
    );
    assert_eq!(probe.faults, out.warnings);
    assert!(probe.finished);
    assert!(
        !std::path::Path::new(&format!("/sys/kernel/tracing/instances/{}", opts.name)).exists(),
        "instance removed"
    );
}

/// Someone switching tracing off in our instance mid-run (the closest to
/// "instance removed" the kernel allows: rmdir of an instance whose pipes
/// are open fails with EBUSY) starves the controller of events but never
/// hangs the program: it runs to its end, its exit code comes back, and
/// the instance is removed afterwards.
#[test]
fn tracing_switched_off_mid_run_does_not_hang_the_program() {
    if !is_root() {
        eprintln!("skipped: needs root for tracefs");
        return;
    }
    let name = format!("outrider-{}-safety-off", std::process::id());
    let opts = InstanceOptions {
        name: name.clone(),
        follow_pid: Some(my_tid()),
        ..InstanceOptions::default()
    };
    let inst = format!("/sys/kernel/tracing/instances/{name}");
    let off = {
        let inst = inst.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                if std::path::Path::new(&inst).join("tracing_on").exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(100));
            let _ = std::fs::write(format!("{inst}/tracing_on"), "0");
            // Removing it is refused while outrider reads it.
            std::fs::remove_dir(&inst).map_err(|e| e.raw_os_error())
        })
    };
    let mut probe = Probe::default();
    let t = Instant::now();
    let out = run_traced(
        &argv(&["sh", "-c", "sleep 1; exit 9"]),
        &opts,
        SourceChoice::TraceFs,
        &mut probe,
    )
    .unwrap();
    assert_eq!(exit_code(&out.status), 9);
    assert_eq!(off.join().unwrap(), Err(Some(libc::EBUSY)));
    assert!(probe.finished);
    assert!(t.elapsed() < Duration::from_secs(60), "no hang");
    assert!(!std::path::Path::new(&inst).exists(), "instance removed");
}

/// Every file outrider opens for prefetching is read-only and
/// close-on-exec (so the traced program never inherits it), with
/// O_NOATIME when permitted (root, or the file's owner).
#[test]
fn files_are_opened_read_only_and_close_on_exec() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let p = dir.path().join("f");
    std::fs::write(&p, b"x").unwrap();
    let f = outrider_sys::open_regular(&p, outrider_sys::Follow::Never).unwrap();
    // SAFETY: fcntl on a descriptor we own.
    let (fl, fd_fl) = unsafe {
        (
            libc::fcntl(f.as_raw_fd(), libc::F_GETFL),
            libc::fcntl(f.as_raw_fd(), libc::F_GETFD),
        )
    };
    assert_eq!(fl & libc::O_ACCMODE, libc::O_RDONLY);
    assert_eq!(fd_fl & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    assert_eq!(fl & libc::O_NOATIME, libc::O_NOATIME, "we own the file");
}
