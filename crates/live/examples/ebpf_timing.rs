//! How long the eBPF source takes to open and to stop, fresh and claimed
//! from a parked source: `cargo run --release --example ebpf_timing`
//! (root).
use outrider_live::ebpf::EbpfSource;
use outrider_live::tracefs::EVENTS;
use std::time::Instant;

fn main() {
    let ev: Vec<(String, String)> = (EVENTS.iter())
        .filter(|(s, _)| *s != "block")
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect();
    let tid = std::process::id();
    for _ in 0..5 {
        let t = Instant::now();
        let src = match EbpfSource::open(&ev, Some(tid), None, 2000) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ebpf_timing: {e}");
                std::process::exit(2);
            }
        };
        let opened = t.elapsed();
        let t = Instant::now();
        let reused = src.reused();
        drop(src);
        println!("open {opened:?} (reused {reused}) stop {:?}", t.elapsed());
    }
}
