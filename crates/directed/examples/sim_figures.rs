//! libprefetch Fig. 2 and Fig. 3 on the simulator's HDD model.
//!
//! Fig. 2: 256 MiB of random 4 KiB reads over a 256 MiB file
//! (`random:size=256MiB,count=65536`), read one reorder buffer at a time in
//! C-LOOK order, for buffer sizes from 4 KiB to the whole file: simulated
//! runtime, and the average seek distance of the planned C-LOOK sweeps next
//! to the paper's 2N(K−1)/(K(K+1)). The paper used Direct I/O (every
//! request from disk); here the cache is 2 × buffer + 1 MiB, so a round's
//! pages stay until used and pages of older rounds are gone.
//!
//! Fig. 3: the same workload with the infill limit varied, for a whole-file
//! (256 MiB) and a 16 MiB buffer, as the paper measured it — Direct I/O,
//! infill gaps read and discarded — by replaying the planned runs through
//! the HDD model's service time ([`replay_direct_io`]); beside it engine
//! runs with `charge=on` (the live library's semantics: infill pages occupy
//! the page cache and the buffer) and `charge=off` with a 600 MiB cache
//! (infill pages of one round serve later rounds: the artifact that hid
//! "beyond 2 MiB hurts" in the first version of this table).
//!
//! Prints Markdown tables. Usage: `cargo run --release -p outrider-directed
//! --example sim_figures`.

use outrider_core::build_policy;
use outrider_core::mechanism::clook::expected_seek_pages;
use outrider_core::policies::directed::plan::{plan_round, Page};
use outrider_sim::device::{hdd_positioning_ns, hdd_service_ns, HDD_MEDIA_BYTES_PER_S};
use outrider_sim::{simulate, SimConfig};
use outrider_trace::workloads::generate;

const WORKLOAD: &str = "random:size=256MiB,count=65536";
const MIB: u64 = 1 << 20;

fn sim(trace: &outrider_trace::Trace, spec: &str, cache_bytes: u64) -> f64 {
    let mut p = build_policy(spec).expect("policy");
    let cfg = SimConfig {
        cache_blocks: cache_bytes / 4096,
        device: "hdd".into(),
        ..SimConfig::default()
    };
    let r = simulate(trace, &mut p, spec, &cfg, &mut |_| {}).expect("sim");
    r.reports[0].elapsed_s
}

/// Average distance (pages) from the head (the end of the previous read) to
/// each page read by the planned C-LOOK sweeps over the whole list, with a
/// buffer of `k` unique pages and infill 0.
fn planned_seek_pages(list: &[Page], k: u64) -> f64 {
    let (mut pos, mut head) = (0usize, (0u32, list[0].phys));
    let (mut sum, mut n) = (0u64, 0u64);
    while pos < list.len() {
        let r = plan_round(list[pos..].iter().copied(), k, 0, false, head);
        // Every page read is one request; pages adjacent to the previous
        // one are seeks of distance 0.
        for run in &r.runs {
            sum += run.phys.abs_diff(head.1);
            n += run.pages;
            head = (run.dev, run.phys + run.pages);
        }
        pos += r.entries.max(1);
    }
    sum as f64 / n.max(1) as f64
}

fn main() {
    let trace = generate(WORKLOAD).expect("workload");
    let list: Vec<Page> = trace
        .records
        .iter()
        .filter(|r| !r.is_write())
        .map(|r| Page {
            file: u64::from(r.file),
            page: r.first_page(),
            dev: 0,
            phys: r.first_block(),
        })
        .collect();
    let n_pages = 65536.0;
    println!("### Fig. 2 — reorder-buffer size (HDD model, `{WORKLOAD}`, infill 0)\n");
    println!(
        "| buffer | policy | sim runtime (s) | avg seek, planned (KiB) | 2N(K−1)/(K(K+1)) (KiB) |"
    );
    println!("|---|---|---|---|---|");
    let stock = sim(&trace, "none", MIB);
    println!("| — (stock, no prefetch) | none | {stock:.2} | — | — |");
    for kib in [
        8u64,
        64,
        384,
        1024,
        4096,
        18 * 1024,
        64 * 1024,
        128 * 1024,
        256 * 1024,
    ] {
        let k = kib / 4;
        let spec = format!("directed:buffer={kib}KiB,infill=0");
        let t = sim(&trace, &spec, 2 * kib * 1024 + MIB);
        let seek = planned_seek_pages(&list, k) * 4.0;
        let expect = expected_seek_pages(n_pages, k as f64) * 4.0;
        println!(
            "| {} | `{spec}` | {t:.2} | {seek:.1} | {expect:.1} |",
            human(kib)
        );
    }
    fig3(&trace, &list);
}

/// Fig. 3 as the paper measured it: the benchmark read every request with
/// Direct I/O (§3.2), and the kernel's infill read each gap with its
/// neighbours and discarded it (§4.7) — infill pages never stay in memory,
/// so a gap is read again by every round that merges across it. The
/// simulator's cache cannot discard pages it read (every prefetched page is
/// cached), so this replays the planned C-LOOK runs through the HDD model's
/// service time (`hdd_service_ns`: positioning from the previous request's
/// end + transfer at the media rate), one request after another.
fn replay_direct_io(list: &[Page], k: u64, infill_pages: u64) -> f64 {
    let (mut pos, mut head) = (0usize, (0u32, 0u64));
    let mut ns = 0u64;
    while pos < list.len() {
        let r = plan_round(list[pos..].iter().copied(), k, infill_pages, false, head);
        for run in &r.runs {
            ns += hdd_service_ns(head.1, run.phys, run.pages as u32);
            head = (run.dev, run.phys + run.pages);
        }
        pos += r.entries.max(1);
    }
    ns as f64 / 1e9
}

fn fig3(trace: &outrider_trace::Trace, list: &[Page]) {
    println!("\n### Fig. 3 — infill limit (HDD model, `{WORKLOAD}`)\n");
    println!("Direct I/O replay (the paper's method, §3.2–3.3: every request from disk, gaps read and discarded): the planned C-LOOK runs of each round timed with the HDD model's service time, one request after another. Engine runs beside it: `charge=on` is the live library's semantics (infill pages enter the page cache and count against the buffer); `charge=off` with a 600 MiB cache lets infill pages of one round serve later rounds (the whole file fits), which neither the paper nor the live library does.\n");
    println!("| infill | Direct I/O replay, 256 MiB buffer (s) | Direct I/O replay, 16 MiB buffer (s) | Direct I/O replay, 1 MiB buffer (s) | engine, 16 MiB buffer, charge=on, cache 33 MiB (s) | engine, 16 MiB buffer, charge=off, cache 600 MiB (s) |");
    println!("|---|---|---|---|---|---|");
    // (infill KiB, 256 MiB replay, 1 MiB replay) for the summary below.
    let mut seen: Vec<(u64, f64, f64)> = Vec::new();
    for kib in [
        0u64, 4, 8, 16, 32, 64, 128, 256, 1024, 2048, 4096, 8192, 16384,
    ] {
        let a = replay_direct_io(list, 65536, kib / 4);
        let b = replay_direct_io(list, 4096, kib / 4);
        let m = replay_direct_io(list, 256, kib / 4);
        let c = sim(
            trace,
            &format!("directed:buffer=16MiB,infill={kib}KiB,charge=on"),
            33 * MIB,
        );
        let d = sim(
            trace,
            &format!("directed:buffer=16MiB,infill={kib}KiB,charge=off"),
            600 * MIB,
        );
        println!(
            "| {} | {a:.2} | {b:.2} | {m:.2} | {c:.2} | {d:.2} |",
            human(kib)
        );
        seen.push((kib, a, m));
    }
    println!("\nWhy the curve bends where it does — the HDD model's cost of a forward gap (positioning, Fig. 1) against reading the same gap through at the media rate (100 MB/s):\n");
    println!("| gap | skip it: forward positioning (ms) | read it through (ms) | cheaper |");
    println!("|---|---|---|---|");
    for kib in [4u64, 8, 32, 112, 256, 512, 1024, 2048, 4096] {
        let skip = hdd_positioning_ns(kib * 1024, true) as f64 / 1e6;
        let read = (kib * 1024) as f64 / HDD_MEDIA_BYTES_PER_S as f64 * 1e3;
        let cheaper = if (read - skip).abs() < 0.005 {
            "equal"
        } else if read < skip {
            "read through (infill helps)"
        } else {
            "skip (infill hurts)"
        };
        println!("| {} | {skip:.2} | {read:.2} | {cheaper} |", human(kib));
    }
    let at = |k: u64| {
        seen.iter()
            .find(|r| r.0 == k)
            .copied()
            .unwrap_or((k, 0.0, 0.0))
    };
    let pct = |x: f64, base: f64| 100.0 * (x / base - 1.0);
    let (z, eight, mib, four_mib) = (at(0), at(8), at(1024), at(4096));
    println!("\nReading the tables: with a whole-file (256 MiB) buffer the gaps are a page or two, so 4–8 KiB of infill helps ({:+.0} % at 8 KiB: short gaps cost the 0.1 ms command overhead to skip but 41 µs per page to read) and larger limits change nothing — there are no larger gaps. With a 16 MiB buffer the mean gap is 64 KiB and almost none exceeds 1 MiB: infill is neutral to 128 KiB (the model charges a forward gap ≤ 112 KiB exactly its read-through time), hurts from 256 KiB, and saturates at 1 MiB (every round then reads the whole file through). \"More than 2 MiB hurts\" needs gaps of several MiB, which the 1 MiB buffer has (mean gap 1 MiB): there infill of 1 MiB costs {:+.0} % and 4 MiB {:+.0} %. The model puts the crossover at ≈ 150 KiB, not the paper's 2 MiB, because it follows Fig. 1's seek curve (≤ 5 ms at 1–2 MiB) and the 100 MB/s media rate, at which reading 2 MiB through takes 21 ms; the paper's \"32 KB–2 MB: seek time equals read time\" cannot hold for both of those numbers, so we keep Fig. 1's and report the difference. The engine's charge=on column is the live library's case: infill pages take cache the buffer needs, which costs more than it saves from 8 KiB on at this cache size.", pct(eight.1, z.1), pct(mib.2, z.2), pct(four_mib.2, z.2));
}

fn human(kib: u64) -> String {
    if kib >= 1024 && kib.is_multiple_of(1024) {
        format!("{} MiB", kib / 1024)
    } else {
        format!("{kib} KiB")
    }
}
