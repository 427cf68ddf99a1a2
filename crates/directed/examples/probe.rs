//! Print what the `infill=auto` device probe measures on a file:
//! `cargo run --release -p outrider-directed --example probe -- FILE`.
//! One line: `request_us=… page_us=… ratio=… infill_pages=… infill_pages_uncharged=…`.

use std::os::fd::AsFd;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: probe FILE");
        std::process::exit(2);
    };
    let f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("probe: {path}: {e}");
            std::process::exit(2);
        }
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    match outrider_directed::probe::probe(f.as_fd(), 0, len) {
        Some(c) => println!(
            "request_us={:.1} page_us={:.2} ratio={:.2} infill_pages={} infill_pages_uncharged={}",
            c.request_ns / 1e3,
            c.page_ns / 1e3,
            c.request_ns / c.page_ns,
            c.infill_pages,
            c.infill_pages_uncharged
        ),
        None => {
            eprintln!("probe: {path}: too small (< 16 MiB) or too much of it cached to probe");
            std::process::exit(1);
        }
    }
}
