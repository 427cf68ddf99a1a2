"""Tables for bench/sim-vs-libcachesim.sh from its run log.

Each log line: tool policy pct rep wall_s cpu_s rss_kib miss_ratio own_rate.
Rows with rep == "mem" are the memory runs (LRU at 1% and 100%).
"""

import statistics as st
import sys

TARGET = 3.0
PEER = "cachesim"  # the peer the target is judged against (hash table sized)
TOOLS = ["outrider", "outrider-native", "outrider-pct", "cachesim", "cachesim-2^24", "lcs-python"]
POLICY = {"none": "LRU", "obl": "LRU+OBL"}


def load(path):
    runs, mem = {}, {}
    for line in open(path):
        tool, pol, pct, rep, wall, cpu, rss, miss, own = line.split()
        row = (float(wall), float(cpu), int(rss), float(miss), float(own))
        if rep == "mem":
            mem[(tool, int(pct))] = row
        else:
            runs.setdefault((int(pct), pol, tool), []).append(row)
    return runs, mem


def speed_table(runs, requests):
    print("| cache | policy | tool | wall s | M req/s (wall) | M req/s (CPU) | M req/s (own loop) | miss ratio | peak RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for pct in (1, 10):
        for pol in ("none", "obl"):
            for tool in TOOLS:
                v = runs.get((pct, pol, tool))
                if not v:
                    continue
                wall = st.median(x[0] for x in v)
                cpu = st.median(x[1] for x in v)
                own = st.median(x[4] for x in v)
                misses = {f"{x[3]:.4f}" for x in v}
                rss = max(x[2] for x in v) / 1024
                print(
                    f"| {pct}% | {POLICY[pol]} | {tool} | {wall:.2f} | {requests / wall / 1e6:.2f} | "
                    f"{requests / cpu / 1e6:.2f} | {own / 1e6:.2f} | {', '.join(sorted(misses))} | {rss:.0f} |"
                )


def ratio(runs, pct, pol, tool, peer, i):
    """Median over rounds of peer wall (i=0) or CPU (i=1) / tool's."""
    a, b = runs[(pct, pol, tool)], runs[(pct, pol, peer)]
    return st.median(p[i] / t[i] for t, p in zip(a, b))


def verdict_table(runs):
    print(f"Speed-up = requests/s of outrider over the peer's, median over rounds of the")
    print(f"per-round ratio; target >= {TARGET:.0f}x against `{PEER}` (hash table sized). Wall")
    print("time counts waiting for a CPU on this shared machine; user+sys CPU time does not.")
    print()
    print("| cache | policy | outrider / cachesim (wall) | (CPU) | native / cachesim (wall) | (CPU) | outrider / cachesim-2^24 (wall) | target met (wall / CPU) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for pct in (1, 10):
        for pol in ("none", "obl"):
            w = ratio(runs, pct, pol, "outrider", PEER, 0)
            c = ratio(runs, pct, pol, "outrider", PEER, 1)
            n = ratio(runs, pct, pol, "outrider-native", PEER, 0)
            nc = ratio(runs, pct, pol, "outrider-native", PEER, 1)
            s = ratio(runs, pct, pol, "outrider", "cachesim-2^24", 0)
            met = " / ".join("yes" if x >= TARGET else "no" for x in (w, c))
            print(f"| {pct}% | {POLICY[pol]} | {w:.2f}x | {c:.2f}x | {n:.2f}x | {nc:.2f}x | {s:.2f}x | {met} |")


def why(budget, wall, loop, requests):
    if wall <= budget:
        return "met"
    if loop > budget:
        ns = lambda s: s / requests * 1e9
        return (f"the simulation loop alone takes {loop / budget:.1f}x the budget: "
                f"{ns(loop):.0f} ns a request against {ns(budget):.0f} allowed")
    return f"the loop fits; loading the trace ({wall - loop:.2f} s) does not"


def budget_table(runs, requests):
    print(f"Where outrider's wall time goes, against the time a {TARGET:.0f}x speed-up allows")
    print("(medians; the simulation loop's time is requests / outrider's own `events_per_s`,")
    print("the rest is reading the trace, checking it and building the run):")
    print()
    print(f"| cache | policy | cachesim wall s | {TARGET:.0f}x budget s | outrider wall s | sim loop s | load + setup s | native wall s | native loop s | cachesim CPU s | outrider CPU s | why the target is missed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for pct in (1, 10):
        for pol in ("none", "obl"):
            peer = st.median(x[0] for x in runs[(pct, pol, PEER)])
            ours = runs[(pct, pol, "outrider")]
            nat = runs[(pct, pol, "outrider-native")]
            wall = st.median(x[0] for x in ours)
            loop = st.median(requests / x[4] for x in ours)
            nwall = st.median(x[0] for x in nat)
            nloop = st.median(requests / x[4] for x in nat)
            pcpu = st.median(x[1] for x in runs[(pct, pol, PEER)])
            ocpu = st.median(x[1] for x in ours)
            print(
                f"| {pct}% | {POLICY[pol]} | {peer:.2f} | {peer / TARGET:.2f} | {wall:.2f} | {loop:.2f} | "
                f"{wall - loop:.2f} | {nwall:.2f} | {nloop:.2f} | {pcpu:.2f} | {ocpu:.2f} | {why(peer / TARGET, wall, loop, requests)} |"
            )


def prepass_table(runs):
    print("The `--cache N%` pre-pass (distinct pages of the whole trace), LRU, medians:")
    print()
    print("| cache | `--cache BYTES` wall s | CPU s | `--cache N%` wall s | CPU s | pre-pass CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for pct in (1, 10):
        b, p = runs.get((pct, "none", "outrider")), runs.get((pct, "none", "outrider-pct"))
        if not b or not p:
            continue
        bw, bc = st.median(x[0] for x in b), st.median(x[1] for x in b)
        pw, pc = st.median(x[0] for x in p), st.median(x[1] for x in p)
        print(f"| {pct}% | {bw:.2f} | {bc:.2f} | {pw:.2f} | {pc:.2f} | {pc - bc:.2f} |")


def agreement(runs):
    bad = []
    for pct in (1, 10):
        for pol in ("none", "obl"):
            ours = {round(x[3], 4) for x in runs[(pct, pol, "outrider")]}
            peer = {round(x[3], 4) for x in runs[(pct, pol, PEER)]}
            if ours != peer:
                bad.append(f"{pct}% {POLICY[pol]}: outrider {sorted(ours)} vs cachesim {sorted(peer)}")
    if bad:
        print("Miss ratios DIFFER: " + "; ".join(bad))
    else:
        print("Miss ratios agree to 4 decimals in every row (outrider vs cachesim).")


def memory_table(mem, distinct):
    blocks = {p: max(1, distinct * p // 100) for p in (1, 100)}
    print("| tool | peak RSS at 1% (MiB) | peak RSS at 100% (MiB) | bytes per cached block |")
    print("|---|---:|---:|---:|")
    for tool in ("outrider", "outrider-native", "cachesim", "lcs-python"):
        if (tool, 1) not in mem or (tool, 100) not in mem:
            continue
        lo, hi = mem[(tool, 1)][2], mem[(tool, 100)][2]
        per = (hi - lo) * 1024 / (blocks[100] - blocks[1])
        print(f"| {tool} | {lo / 1024:.0f} | {hi / 1024:.0f} | {per:.1f} |")
    print()
    print(f"Bytes per cached block = (RSS at 100% - RSS at 1%) / ({blocks[100]} - {blocks[1]}) pages:")
    print("the trace's own memory (the mapped oracle-pages file, whose 24-byte records outrider")
    print("decodes as it simulates; the mapped native file; libCacheSim's mapped trace) is the same")
    print("at both sizes and cancels.")


# Symbol prefixes -> where the time is spent (first match wins).
GROUPS = [
    ("driver: simulation loop, accounting, record decoding (crates/sim/src/engine/, windows.rs)",
     ("outrider_sim::engine", "outrider_sim::windows", "outrider_driver", "alloc::collections::binary_heap")),
    ("cache model: LRU list, slab, hash slots (crates/sim/src/cache.rs, blockmap.rs)",
     ("outrider_sim::cache", "outrider_sim::blockmap")),
    ("policy (crates/core)", ("<outrider_core::policies", "outrider_core::")),
    ("trace mapping and checking (crates/trace)", ("outrider_trace::", "<std::io")),
    ("kernel: reading the file, faulting in memory", ("[k]",)),
]


def profile(paths):
    """Group `perf report` lines ('12.3% [.] symbol') into GROUPS."""
    print("`perf record` of one `sim` process per policy at 10% on the oracle-pages trace")
    print("(the `profiling` build: the release build with its symbols);")
    print("self time per symbol, grouped (the driver's functions are inlined into")
    print("`engine::simulate_on`, so its share is the per-request driver work: decoding the")
    print("packed record, building the access, the ready queue, window and lead-time")
    print("accounting, policy calls).")
    for path, name in zip(paths, ("LRU", "LRU+OBL")):
        share = {g: 0.0 for g, _ in GROUPS}
        other = 0.0
        top = []
        for line in open(path):
            parts = line.split(None, 2)
            if len(parts) < 3 or not parts[0].endswith("%"):
                continue
            pct = float(parts[0].rstrip("%"))
            sym = parts[2].strip() if parts[1] == "[.]" else "[k] " + parts[2].strip()
            top.append((pct, sym))
            for g, prefixes in GROUPS:
                if any(p in sym for p in prefixes):
                    share[g] += pct
                    break
            else:
                other += pct
        print()
        print(f"{name}:")
        print()
        print("| where | share of samples |")
        print("|---|---:|")
        for g, _ in GROUPS:
            print(f"| {g} | {share[g]:.1f}% |")
        print(f"| other (libc, allocator, startup) | {other:.1f}% |")
        print()
        print("Top symbols: " + "; ".join(f"{s} {p:.1f}%" for p, s in sorted(top, reverse=True)[:8]) + ".")


def main():
    if sys.argv[1] == "--profile":
        profile(sys.argv[2:])
        return
    runs, mem = load(sys.argv[1])
    requests = int(sys.argv[2])
    distinct = int(sys.argv[3])
    print("## Requests per second")
    print()
    speed_table(runs, requests)
    print()
    agreement(runs)
    print()
    verdict_table(runs)
    print()
    budget_table(runs, requests)
    print()
    prepass_table(runs)
    print()
    print("## Memory")
    print()
    memory_table(mem, distinct)


if __name__ == "__main__":
    main()
