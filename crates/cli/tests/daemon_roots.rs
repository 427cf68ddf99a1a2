//! `outrider daemon` against the real kernel: which files of a launch
//! set are replayed for a launch given other files (its command line's
//! roots, its working directory) than the launches behind the set.
//! Tracing needs root: without it the tests return early.

mod common;

use common::daemon::{cold_lock, drop_caches, resident_pct, saved_launch, watching_python, Daemon};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `python3 -c 'read argv[1]' FILE` is one application whatever FILE
/// is: the file given to the last launch alone is not replayed once two
/// launches are behind the set, the interpreter still is.
/// Three launches of one application (`python3 -c SCRIPT <file>`),
/// caches dropped before each, given `a`, `b`, then `a` (4 MiB each):
/// their status once saved, and how much of `a` was cached after the
/// second and of `b` after the third, percent.
///
/// `by_cwd`: each file is `data` in a directory of its own, the launch's
/// working directory, and the command line names none.
fn a_b_a(extra: &str, by_cwd: bool) -> Option<([Value; 3], f64, f64)> {
    let (py, dir, cfg, state) = watching_python(extra)?;
    let _cold = cold_lock();
    let file = |name: &str| {
        let p = match by_cwd {
            true => dir.path().join(name).join("data"),
            false => dir.path().join(name),
        };
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, vec![3u8; 4 << 20]).unwrap();
        p
    };
    let (a, b) = (file("a"), file("b"));
    let _d = Daemon::start(&cfg, &state);
    let launch = |data: &Path| {
        drop_caches();
        let read =
            "import sys, time\ntime.sleep(0.3)\nopen((sys.argv[1:] or ['data'])[0], 'rb').read()\n";
        let mut cmd = Command::new(&py);
        cmd.args(["-c", read]);
        match by_cwd {
            true => cmd.current_dir(data.parent().unwrap()),
            false => cmd.arg(data),
        };
        let mut c = cmd.spawn().unwrap();
        let pid = c.id();
        assert!(c.wait().unwrap().success());
        saved_launch(&state, pid)
    };
    let first = launch(&a);
    let second = launch(&b);
    let a_cached = resident_pct(&a);
    let third = launch(&a);
    Some(([first, second, third], a_cached, resident_pct(&b)))
}

fn requested(l: &Value) -> u64 {
    l["replay"]["pages_requested"].as_u64().unwrap()
}

/// As FAST and IORap replay an application's set (`argument_roots =
/// false`, `confirm_data_files = false`): one launch behind the set, all
/// of it, the file the launch was given included; two, only the files
/// both read (the streaks).
#[test]
fn a_file_only_the_last_launch_read_is_not_replayed() {
    let whole = "argument_roots = false\nconfirm_data_files = false\n";
    let Some(([_, second, third], _, b_cached)) = a_b_a(whole, false) else {
        return;
    };
    assert!(requested(&second) >= 1024, "{second}");
    assert!(b_cached < 10.0, "b is {b_cached}% cached: {third}");
    let (two, three) = (requested(&second), requested(&third));
    assert!(
        three > 0 && three + 512 <= two,
        "the interpreter only: {three} pages against {two}; {third}"
    );
}

/// By default a launch given another file than its set's launch, or run
/// in another directory, leaves that launch's file out already at the
/// set's first replay (`crate::roots` of the daemon), and the
/// interpreter's files are replayed; at the third, the streaks leave it
/// out before the roots look.
#[test]
fn a_file_the_last_launch_was_given_is_not_replayed_for_another() {
    for by_cwd in [false, true] {
        let Some(launches) = a_b_a("", by_cwd) else {
            return;
        };
        only_the_interpreter_replayed(launches);
    }
}

/// The second and third launches of [`a_b_a`] replayed the interpreter
/// and not the other launch's file: each asked for at least 512 pages
/// fewer than a launch before it recorded (the interpreter's pages and
/// its file's 1 024). The third's set holds what either launch before
/// it read of the interpreter, so it is held to the larger of their
/// two: in one CI run the first launch (the daemon's first, its
/// programs attached for the first time) recorded 1 958 pages, its
/// file's 1 024 among them, and the third asked for 1 769 of the
/// interpreter's alone.
fn only_the_interpreter_replayed(
    ([first, second, third], a_cached, b_cached): ([Value; 3], f64, f64),
) {
    assert_eq!(second["files_left_out"], 1, "{second}");
    let recorded = |l: &Value| l["recorded_pages"].as_u64().unwrap();
    let both = recorded(&first).max(recorded(&second));
    for (recorded, l, cached) in [
        (recorded(&first), &second, a_cached),
        (both, &third, b_cached),
    ] {
        let asked = requested(l);
        assert!(
            asked > 0 && asked + 512 <= recorded,
            "the interpreter only: {asked} of {recorded} pages; {l}"
        );
        assert!(cached < 10.0, "the other file is {cached}% cached: {l}");
    }
}
