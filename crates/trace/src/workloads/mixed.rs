//! `mixed`: several workloads at once, as separate processes in distinct
//! disk regions, interleaved in time.
//!
//! DiskSeen §4.5 runs *grep* and *diff* concurrently and notes that "access
//! sequences cannot be exactly repeated" under process scheduling; flashy
//! prefetching's evaluation runs several applications whose streams its
//! per-process state machines must separate. This workload builds each
//! member of `parts` (`+`-separated workload names) with its defaults, the
//! shared `size` where the member has one, the shared `think`, and its own
//! seed derived from `seed`; places member i's region at the first
//! `spacing` multiple (from `start`) past member i−1's last byte; gives
//! every member process its own pid; and interleaves all processes with a
//! seeded scheduler that picks the next request's process at random,
//! weighted by how many requests each has left (so all finish together, as
//! concurrently started programs of proportional length would). Each
//! process keeps its own request order and its own gaps between requests.
//!
//! Default: `seq+reversed+strided+random+tree-scan` with 16 MiB files,
//! regions 4 GiB apart → 20536 records.

use super::rng::SplitMix64;
use super::{
    align_up, bad_value, check_blocks, entry, Entry, Nanos, WorkloadError, WORKLOAD_NAMES,
};
use crate::{Record, Trace, TraceMeta};
use outrider_core::size::ByteSize;
use outrider_core::Params;

outrider_core::params! {
    /// Parameters of `mixed`.
    pub struct MixedParams {
        /// Member workloads, '+'-separated (any workload but mixed; repeats allowed).
        parts: String = "seq+reversed+strided+random+tree-scan".to_string(),
        /// The size parameter passed to every member that has one.
        size: ByteSize = ByteSize(16 << 20),
        /// Members' regions start at multiples of this from start.
        spacing: ByteSize = ByteSize(4 << 30),
        /// Physical byte offset of the first member's region.
        start: ByteSize = ByteSize(0),
        /// Think time passed to every member.
        think: Nanos = Nanos(0),
        /// Seed (members' seeds and the scheduler).
        seed: u64 = 1,
    }
}

pub(super) const ENTRY: Entry = Entry {
    name: "mixed",
    summary: "several workloads at once, one process each in distinct regions, randomly \
              interleaved (DiskSeen section 4.5 concurrent grep/diff)",
    specs: MixedParams::specs,
    generate,
};

/// One process's requests, in its own order.
struct Stream {
    records: Vec<Record>,
    next: usize,
}

fn generate(text: &str) -> Result<Trace, WorkloadError> {
    const NAME: &str = "mixed";
    let p = MixedParams::parse(NAME, text)?;
    check_blocks(NAME, "spacing", p.spacing.0)?;
    let parts: Vec<&str> = p.parts.split('+').map(str::trim).collect();
    for part in &parts {
        if *part == NAME || !WORKLOAD_NAMES.contains(part) {
            let valid: Vec<&str> = WORKLOAD_NAMES
                .iter()
                .copied()
                .filter(|n| *n != NAME)
                .collect();
            let expected = format!("'+'-separated workload names from: {}", valid.join(", "));
            return Err(bad_value(NAME, "parts", &p.parts, &expected));
        }
    }

    let mut meta = TraceMeta::default();
    let mut streams: Vec<Stream> = Vec::new();
    let mut region = p.start.0;
    for (i, part) in parts.iter().enumerate() {
        let e = entry(part).expect("checked above");
        let mut args = format!(
            "start={},think={},seed={}",
            region,
            p.think.0,
            SplitMix64::derive(p.seed, i as u64)
        );
        if (e.specs)().iter().any(|s| s.key == "size") {
            args.push_str(&format!(",size={}", p.size.0));
        }
        let t = (e.generate)(&args)?;
        let file_base = meta.files.len() as u32;
        let mut end = region;
        for f in &t.meta.files {
            for x in &f.extents {
                end = end.max(x.phys_offset + x.len);
            }
        }
        let first_pid = streams.len() as u32 + 1;
        for (pid, name) in &t.meta.processes {
            let new_pid = first_pid + (pid - 1);
            meta.processes.push((new_pid, name.clone()));
            streams.push(Stream {
                records: Vec::new(),
                next: 0,
            });
        }
        for r in t.records.iter() {
            end = end.max(r.offset + u64::from(r.size));
            let new_pid = first_pid + (r.pid - 1);
            streams[new_pid as usize - 1].records.push(Record {
                pid: new_pid,
                file: if r.file == 0 { 0 } else { r.file + file_base },
                ..*r
            });
        }
        meta.files.extend(t.meta.files);
        region = p.start.0 + align_up(end - p.start.0, p.spacing.0);
    }

    // Weighted random interleaving, keeping each process's own gaps.
    let mut rng = SplitMix64::new(p.seed);
    let total: usize = streams.iter().map(|s| s.records.len()).sum();
    let mut out = Vec::with_capacity(total);
    let mut last_ns: Vec<Option<u64>> = vec![None; streams.len()];
    let mut now_ns = 0u64;
    let mut left = total as u64;
    while left > 0 {
        let mut pick = rng.below(left);
        let s = streams
            .iter()
            .position(|s| {
                let n = (s.records.len() - s.next) as u64;
                if pick < n {
                    true
                } else {
                    pick -= n;
                    false
                }
            })
            .expect("pick < remaining requests");
        let st = &mut streams[s];
        let mut r = st.records[st.next];
        let gap = match st.next {
            0 => 0,
            n => r.time_ns - st.records[n - 1].time_ns,
        };
        now_ns = match last_ns[s] {
            Some(last) => now_ns.max(last + gap),
            None => now_ns,
        };
        last_ns[s] = Some(now_ns);
        r.time_ns = now_ns;
        out.push(r);
        st.next += 1;
        left -= 1;
    }
    Ok(Trace::new(meta, out))
}
