#!/usr/bin/env bash
# Flashy prefetching (issue 5) in the simulator: speedup, coverage (the
# paper's "accuracy"), cost, and the aggressiveness time series (Fig. 5),
# against Linux readahead and the static settings of Fig. 2.
#
# Devices: ssd (the paper's subject) and hdd (contrast). Cache 256 MiB, LRU.
# Policies: none; readahead; flashy; readahead+flashy (the paper's setting:
# prefetchd on top of the kernel's readahead); flashy:feedback=off,scale=1
# ("normal", static); flashy:feedback=off,scale=4 ("aggressive", static).
# The two MQSim traces last 0.14 s (tpcc) and 62 s (wsrch); flashy with a
# 20 ms polling interval is added for them.
# Writes bench/results/flashy.md (do not edit by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
python3 - <<'PY'
import json, subprocess, datetime, os

BIN = "target/release/outrider"
TRACES = "../shared/traces"
POLICIES = [
    ("none", "none"),
    ("readahead", "readahead"),
    ("flashy", "flashy"),
    ("readahead+flashy", "readahead+flashy"),
    ("normal (static 1)", "flashy:feedback=off,scale=1"),
    ("aggressive (static 4)", "flashy:feedback=off,scale=4"),
]
TRACE_EXTRA = [("flashy 20 ms", "flashy:interval_ms=20")]
INPUTS = [
    ("SlowThink 1 ms", ["--workload", "slowthink:size=1GiB,think=1ms"]),
    ("SlowThink 4 ms", ["--workload", "slowthink:size=1GiB,think=4ms"]),
    ("SlowThink 16 ms", ["--workload", "slowthink:size=1GiB,think=16ms"]),
    ("LFS", ["--workload", "lfs:size=1GiB,count=16384"]),
    ("BLAST", ["--workload", "blast:size=2GiB,phases=8,gap=16MiB"]),
    ("reverse scan", ["--workload", "reversed:size=1GiB,req=64KiB,think=100us"]),
    ("strided scan", ["--workload", "strided:size=1GiB,req=16KiB,stride=64KiB,think=50us"]),
    ("wsrch (trace)", ["--trace", f"{TRACES}/mqsim_wsrch-small.trace"]),
    ("tpcc (trace)", ["--trace", f"{TRACES}/mqsim_tpcc-small.trace"]),
]

def run(args, device, specs):
    out = subprocess.run(
        [BIN, "compare", "--policies", ";".join(specs), "--device", device, "--json"] + args,
        check=True, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]

lines = []
w = lines.append
w("# Flashy prefetching in the simulator")
w("")
w(f"Written by `bench/flashy.sh` on {datetime.date.today()} ({os.cpu_count()} cores); do not edit by hand.")
w("")
w("Cache 256 MiB (LRU), think timing. Speedup = elapsed time of `none` / elapsed time of the policy;")
w("for the two replayed traces (fixed think gaps, like the paper's replayer) the paper measures I/O")
w("wait, so their speedup is io_wait(`none`) / io_wait(policy). `vs ra` = the same against")
w("`readahead`, the paper's baseline (Linux with its default readahead). Coverage = demand blocks")
w("served by a prefetch / demand blocks (the paper's \"accuracy\"); cost = blocks read by")
w("prefetching / blocks requested (the paper's \"cost\"; the readahead part counts in `readahead+flashy`).")
w("")
summary = {}
series_dump = {}
for device in ["ssd", "hdd"]:
    w(f"## {device}")
    w("")
    w("| input | policy | elapsed s | io wait s | speedup | vs ra | coverage | cost | final scale |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, args in INPUTS:
        pols = POLICIES + (TRACE_EXTRA if args[0] == "--trace" else [])
        rows = run(args, device, [s for _, s in pols])
        trace = args[0] == "--trace"
        metric = "io_wait_s" if trace else "elapsed_s"
        base = rows[0][metric]
        ra = rows[1][metric]
        for (label, spec), r in zip(pols, rows):
            sp = base / r[metric] if r[metric] > 0 else float("nan")
            vra = ra / r[metric] if r[metric] > 0 else float("nan")
            s = r.get("series", [])
            scale = f"{s[-1]['scale']:.2f}" if s else "-"
            w(f"| {name} | {label} | {r['elapsed_s']:.3f} | {r['io_wait_s']:.3f} | {sp:.2f} | {vra:.2f} | {r['coverage']:.3f} | {r['cost']:.3f} | {scale} |")
            summary.setdefault((device, label), []).append((name, sp, vra, r["coverage"], r["cost"]))
            if device == "ssd" and spec == "flashy" and name in ("BLAST", "SlowThink 4 ms", "LFS"):
                series_dump[name] = s
    w("")

w("## Averages over the inputs above")
w("")
w("Unweighted means; `flashy 20 ms` ran on the two traces only; tpcc (0.14 s, shorter than")
w("one polling interval) is included everywhere and pulls every mean towards 1 / 0.")
w("")
w("| device | policy | inputs | mean speedup | mean vs ra | mean coverage | mean cost |")
w("|---|---|---:|---:|---:|---:|---:|")
for (device, label), v in summary.items():
    n = len(v)
    w(f"| {device} | {label} | {n} | {sum(x[1] for x in v)/n:.2f} | {sum(x[2] for x in v)/n:.2f} | {sum(x[3] for x in v)/n:.3f} | {sum(x[4] for x in v)/n:.3f} |")
w("")

w("## Fig. 2 check: flashy against the static settings")
w("")
w("Per input where flashy prefetched anything: does static aggressive cost more than flashy,")
w("and does static normal cover less?")
w("")
w("| device | input | cost flashy | cost aggressive | more? | coverage flashy | coverage normal | less? |")
w("|---|---|---:|---:|---|---:|---:|---|")
for device in ["ssd", "hdd"]:
    fl = {x[0]: x for x in summary[(device, "flashy")]}
    ag = {x[0]: x for x in summary[(device, "aggressive (static 4)")]}
    no = {x[0]: x for x in summary[(device, "normal (static 1)")]}
    more = less = tot = 0
    for name, _ in INPUTS:
        if fl[name][4] == 0:
            continue
        tot += 1
        m = ag[name][4] > fl[name][4]
        l = no[name][3] < fl[name][3]
        more += m
        less += l
        w(f"| {device} | {name} | {fl[name][4]:.3f} | {ag[name][4]:.3f} | {'yes' if m else 'no'} | {fl[name][3]:.3f} | {no[name][3]:.3f} | {'yes' if l else 'no'} |")
    w(f"| {device} | **total** | | | {more}/{tot} | | | {less}/{tot} |")
w("")

w("## Fig. 5: aggressiveness over time (ssd, flashy)")
w("")
w("One point per polling interval, from `outrider sim --json` (`series`): application")
w("throughput (reads entering the cache, hits included), our prefetch reads reaching the")
w("device, demand misses, and the scale factor in force. CSV, plot-ready.")
for name, s in series_dump.items():
    w("")
    w(f"### {name}")
    w("")
    w("```csv")
    w("t_s,app_mb_s,prefetch_mb_s,miss_mb_s,scale")
    for p in s:
        w(f"{p['t_s']:.2f},{p['app_mb_s']:.1f},{p['prefetch_mb_s']:.1f},{p['miss_mb_s']:.1f},{p['scale']:.3f}")
    w("```")
    if s:
        import statistics
        a = [p["app_mb_s"] for p in s[1:]]
        b = [p["prefetch_mb_s"] for p in s[1:]]
        if len(a) > 2 and statistics.pstdev(a) > 0 and statistics.pstdev(b) > 0:
            w("")
            w(f"Correlation of prefetch with application throughput (after the first interval): "
              f"{statistics.correlation(a, b):.2f} over {len(a)} intervals.")
w("")
w("## How this departs from the paper")
w("")
w("- Simulated, not measured: the `ssd` model (8 channels, 500 MB/s link) and `hdd` model of")
w("  `outrider-sim` stand for the paper's four SATA II SSDs and Samsung HDD; workloads are")
w("  synthetic stand-ins (`slowthink`, `lfs`, `blast`, `reversed`, `strided`) and the two MQSim")
w("  sample traces, not the paper's LFS/BLAST/DBT3/WebSearch runs.")
w("- The paper's cost is 1.6-1.9x on average: our costs are mostly below 1 because cost counts")
w("  only blocks newly read (blocks already cached are screened, as readahead(2) skips them) and")
w("  our scans read each block once; the wasted part shows as cost above coverage.")
w("- Prefetch chunks are paced (at most 4 x 1 MiB outstanding, `depth`), because a tick's whole")
w("  plan submitted at once queues every demand read behind it in the FIFO device model;")
w("  `flashy:depth=0` is the paper's all-at-the-tick behaviour.")
w("- The feedback's raise threshold (10%) and steps (x1.25 / x0.8, bounds 0.25-8) are ours: the")
w("  paper gives none. The device-wide throughput cap (`share_cap`) is ours; with one stream it")
w("  equals the paper's per-application cap.")
w("- The 0.5 s polling interval makes flashy miss the first interval of every phase; kernel-style")
w("  readahead reacts per request and wins on purely sequential phases (LFS, BLAST). On traces")
w("  shorter than an interval (tpcc) flashy never acts.")
w("")
open("bench/results/flashy.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
