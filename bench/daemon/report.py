#!/usr/bin/env python3
"""Write bench/results/daemon.md (stdout) from bench/daemon/launch.sh's
measurements. Arguments: WORKDIR REPS ELAPSED_S VERSION.

WORKDIR holds `results` (`program arm rep wall_s`, arm stock | daemon |
hot), `usage` (`program rss_bytes cpu_s uptime_s` of the daemon after
each of its launches) and `programs` (name, category, description,
tab-separated)."""
import datetime
import os
import platform
import statistics
import sys

SPEEDUP_MIN = 0.98   # nothing slower than 0.98x of stock
HEADROOM_MIN = 0.50  # >= 50% of the cold->hot headroom where stock/hot >= 1.5
GAIN_GATE = 1.5


def med(v):
    return statistics.median(v) if v else None


def load(work):
    runs = {}
    for line in open(os.path.join(work, "results")):
        p, arm, rep, w = line.split()
        runs.setdefault(p, {}).setdefault(arm, {})[rep] = float(w)
    usage = {}
    for line in open(os.path.join(work, "usage")):
        p, rss, cpu, up = line.split()
        usage.setdefault(p, []).append((int(rss), float(cpu), float(up)))
    programs = [line.rstrip("\n").split("\t") for line in open(os.path.join(work, "programs"))]
    return runs, usage, programs


def row(runs, name):
    r = runs.get(name, {})
    stock, daemon, hot = r.get("stock", {}), r.get("daemon", {}), r.get("hot", {})
    reps = [k for k in stock if k in daemon and k in hot]
    m = {a: med(list(r.get(a, {}).values())) for a in ("stock", "daemon", "hot")}
    gain = m["stock"] / m["hot"] if m["stock"] and m["hot"] else None
    x = med([stock[k] / daemon[k] for k in reps if daemon[k] > 0])
    head = med([(stock[k] - daemon[k]) / (stock[k] - hot[k]) for k in reps if stock[k] > hot[k]])
    return m, gain, x, head


def main():
    work, reps, elapsed, version = sys.argv[1:5]
    runs, usage, programs = load(work)
    print("# `outrider daemon`: cold launches with and without it")
    print()
    print(f"Written by `bench/daemon/launch.sh` on {datetime.date.today()} ({os.cpu_count()} cores, Linux "
          f"{platform.release()}, {version}); do not edit by hand. {int(elapsed) / 60:.1f} min.")
    print()
    print("No `outrider run`: each program is started as a user starts it. **stock**: the daemon stopped, cold cache; "
          "**daemon**: the daemon running (watching every program), holding the launch set of this program's previous "
          "launch, cold cache; **hot**: the program again at once, no daemon (the floor). Cold = `sync; echo 3 > "
          "/proc/sys/vm/drop_caches` and the disk idle. The arms alternate which goes first. "
          f"Medians of {reps} repetitions; speed-up = stock / daemon and headroom = (stock - daemon) / (stock - hot) "
          "are medians of each repetition's own ratio.")
    print()
    print("| program | category | stock (s) | daemon (s) | hot (s) | stock / hot | speed-up | headroom | misses |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    n_miss = 0
    for name, cat, _desc in programs:
        m, gain, x, head = row(runs, name)
        miss = []
        if x is not None and x < SPEEDUP_MIN:
            miss.append(f"{x:.2f}x")
        if gain and gain >= GAIN_GATE and (head or 0) < HEADROOM_MIN:
            miss.append(f"headroom {head * 100:.0f}%" if head is not None else "headroom -")
        n_miss += bool(miss)
        f = lambda v: f"{v:.3f}" if v is not None else "-"
        print(f"| {name} | {cat} | {f(m['stock'])} | {f(m['daemon'])} | {f(m['hot'])} | "
              f"{gain:.2f}x | {x:.2f}x | {head * 100:.0f}% | {'; '.join(f'**{s}**' for s in miss) or 'none'} |"
              if gain and x is not None and head is not None else
              f"| {name} | {cat} | {f(m['stock'])} | {f(m['daemon'])} | {f(m['hot'])} | - | - | - | - |")
    print()
    print(f"Targets (per row): the daemon's launch at least {SPEEDUP_MIN}x of stock; at least {HEADROOM_MIN * 100:.0f}% "
          f"of the headroom where stock / hot >= {GAIN_GATE}. {len(programs)} programs, {n_miss} miss.")
    print()
    rss = [u[0] for v in usage.values() for u in v]
    cpu = [u[1] / u[2] for v in usage.values() for u in v if u[2] > 0]
    if rss:
        print(f"The daemon after each of its launches (`outrider status --json`): resident memory {med(rss) / 2**20:.1f} MiB "
              f"median, {max(rss) / 2**20:.1f} MiB most; CPU {med(cpu) * 100:.1f}% of a core median over its life "
              f"(start, one launch, its save), {max(cpu) * 100:.1f}% most.")
        print()
    print("## Programs")
    print()
    for name, cat, desc in programs:
        print(f"- **{name}** ({cat}): {desc}")
    print()
    print("## Every repetition")
    print()
    print("Seconds, stock / daemon / hot.")
    print()
    for name, _cat, _desc in programs:
        r = runs.get(name, {})
        reps_ = sorted(r.get("stock", {}), key=int)
        line = ", ".join("/".join(f"{r.get(a, {}).get(k, float('nan')):.3f}" for a in ("stock", "daemon", "hot")) for k in reps_)
        print(f"- {name}: {line}")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
