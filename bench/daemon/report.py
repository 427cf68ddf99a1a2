#!/usr/bin/env python3
"""Write bench/results/daemon.md (stdout) from bench/daemon/launch.sh's
measurements. Arguments: WORKDIR REPS ELAPSED_S VERSION.

WORKDIR holds `results` (`program arm rep wall_s`, arm stock | daemon |
hot), `usage` (`program rss_bytes cpu_s uptime_s` of the daemon after
each of its launches), `day` (`arm rep program wall_s daemon_cpu_ms`, the
day in miniature's runs), `day-usage` (`day rss_bytes cpu_s uptime_s
predicted hits misses` at day 2's end), `day-saved` (`day rss_bytes`
once day 2's launches were saved) and `programs` (name, category,
description, tab-separated)."""
import datetime
import os
import platform
import random
import statistics
import sys

SPEEDUP_MIN = 0.98   # nothing slower than 0.98x of stock
HEADROOM_MIN = 0.50  # >= 50% of the cold->hot headroom where stock/hot >= 1.5
GAIN_GATE = 1.5


def med(v):
    return statistics.median(v) if v else None


BOOTSTRAP = 4000  # resamples of the repetitions
# launch.sh's wait_saved: a launch's window (3 s) and the next save (0.2 s).
SAVED_S = 3.6


def interval(v, level=0.95):
    """The bootstrap percentile interval of the median of `v` (resampled
    with replacement, a fixed seed: the same data give the same report)."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(v, k=len(v))) for _ in range(BOOTSTRAP))
    lo = meds[int((1 - level) / 2 * BOOTSTRAP)]
    hi = meds[min(BOOTSTRAP - 1, int((1 + level) / 2 * BOOTSTRAP))]
    return lo, hi


def span(ratios):
    """The 95% interval of the median of `ratios`, as the tables show it."""
    return "{:.2f}-{:.2f}x".format(*interval(ratios)) if ratios else "-"


def slower(ratios):
    """The speed-up target's miss of `ratios` (each stock / daemon): their
    median under SPEEDUP_MIN, told beyond this machine's noise (its
    interval under 1.00x) or within it; None when it is met."""
    x = med(ratios)
    if x is None or x >= SPEEDUP_MIN:
        return None
    hi = interval(ratios)[1]
    return f"{x:.2f}x, " + ("beyond noise" if round(hi, 2) < 1.0 else "within noise")


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
    ratios = [stock[k] / daemon[k] for k in reps if daemon[k] > 0]
    head = med([(stock[k] - daemon[k]) / (stock[k] - hot[k]) for k in reps if stock[k] > hot[k]])
    return m, gain, ratios, head


def day_section(work):
    """The day in miniature: whole-script times (the sum of its programs'
    times) and per program, medians over repetitions; the programs that
    missed the headroom target."""
    path = os.path.join(work, "day")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    runs = {}  # arm -> rep -> program -> wall
    cpu = {}  # arm -> rep -> program -> the daemon's CPU ms in the run
    order = []
    for line in open(path):
        arm, rep, prog, w, *ms = line.split()
        runs.setdefault(arm, {}).setdefault(rep, {})[prog] = float(w)
        if ms:
            cpu.setdefault(arm, {}).setdefault(rep, {})[prog] = int(ms[0])
        if prog not in order:
            order.append(prog)
    reps = [r for r in runs.get("stock", {}) if r in runs.get("daemon", {}) and r in runs.get("hot", {})]
    total = lambda arm, r: sum(runs[arm][r].values())
    print("## A day in miniature")
    print()
    print(f"{len(order)} programs run one after another as one script ({', '.join(order)}). **daemon**: a daemon started "
          "with an empty store ran the script cold once (day 1, learning its launch sets and their order), then, 3.6 s later, "
          "caches were dropped and the script ran again (day 2, measured), the next launches (up to 3) predicted at each launch and their sets read right after "
          f"the launch's own (`successor_prefetch`, on by default). **stock**: the same steps with no daemon (the script cold "
          f"once, unmeasured, the same wait, then cold, measured); **hot**: the script again at once (the floor). Medians of {len(reps)} repetitions, arms alternated; ratios are medians "
          "of each repetition's own. **daemon CPU**: the daemon's own CPU during the program's day-2 run "
          "(`/proc/PID/stat`, 10 ms ticks; median), and as a share of one core over the run: on 2 cores, what it takes "
          "from a program that keeps both busy.")
    print()
    print("| | stock (s) | day 1 (s) | daemon day 2 (s) | daemon CPU (ms) | hot (s) | stock / hot | speed-up | "
          "its 95% interval | headroom | misses |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    n_miss = 0
    short_of_headroom = []
    for prog in ["the whole script"] + order:
        get = (lambda a, r: total(a, r)) if prog == "the whole script" else (lambda a, r: runs[a][r].get(prog))
        vals = {a: [get(a, r) for r in reps if get(a, r) is not None] for a in ("stock", "daemon", "hot")}
        d1 = [get("daemon1", r) for r in reps if r in runs.get("daemon1", {}) and get("daemon1", r) is not None]
        ok = [r for r in reps if all(get(a, r) for a in ("stock", "daemon", "hot"))]
        if not ok:
            continue
        m = {a: med(v) for a, v in vals.items()}
        gain = m["stock"] / m["hot"]
        ratios = [get("stock", r) / get("daemon", r) for r in ok]
        x = med(ratios)
        heads = [(get("stock", r) - get("daemon", r)) / (get("stock", r) - get("hot", r)) for r in ok if get("stock", r) > get("hot", r)]
        head = med(heads)
        miss = [s for s in [slower(ratios)] if s]
        if gain >= GAIN_GATE and (head or 0) < HEADROOM_MIN:
            miss.append(f"headroom {head * 100:.0f}%" if head is not None else "headroom -")
            if prog in order:
                short_of_headroom.append(prog)
        n_miss += bool(miss)
        name = f"**{prog}**" if prog == "the whole script" else prog
        hs = f"{head * 100:.0f}%" if head is not None else "-"
        print(f"| {name} | {m['stock']:.3f} | {med(d1):.3f} | {m['daemon']:.3f} | {day_cpu(cpu, runs, ok, prog)} | "
              f"{m['hot']:.3f} | {gain:.2f}x | "
              f"{x:.2f}x | {span(ratios)} | {hs} | {'; '.join(f'**{s}**' for s in miss) or 'none'} |")
    print()
    print(f"Same targets as above, per row. {n_miss} rows miss.")
    day_left(runs, reps, order, total)
    usage = os.path.join(work, "day-usage")
    if os.path.exists(usage):
        u = [line.split()[1:] for line in open(usage)]
        rss = [int(a[0]) for a in u]
        cpu = [float(a[1]) / float(a[2]) for a in u if float(a[2]) > 0]
        pred = [tuple(int(x) for x in a[3:6]) for a in u if len(a) >= 6]
        if rss:
            print()
            saved = os.path.join(work, "day-saved")
            later = [int(line.split()[1]) for line in open(saved)] if os.path.exists(saved) else []
            print(f"The daemon after day 2: resident memory {med(rss) / 2**20:.1f} MiB median, {max(rss) / 2**20:.1f} MiB most"
                  + (f" at its last program's exit, its launches still recorded; {med(later) / 2**20:.1f} MiB median, "
                     f"{max(later) / 2**20:.1f} MiB most once they were saved ({SAVED_S} s later)" if later else "")
                  + f"; CPU {med(cpu) * 100:.1f}% of a core median over its life (two days and the saves), {max(cpu) * 100:.1f}% most.")
        if pred:
            print()
            print("Next launches predicted over both days, per repetition (predicted / right / wrong): "
                  + ", ".join(f"{p}/{h}/{m}" for p, h, m in pred) + ".")
    print()
    return short_of_headroom


def day_cpu(cpu, runs, reps, prog):
    """The daemon's CPU during `prog`'s day-2 runs (the whole script's
    for its row): "ms (share of one core over the run)", medians over
    `reps`."""
    days = [(cpu.get("daemon", {}).get(r), runs["daemon"][r]) for r in reps]
    if not all(c for c, _ in days):
        return "-"
    pick = lambda d: sum(d.values()) if prog == "the whole script" else d.get(prog)
    pairs = [(pick(c), pick(w)) for c, w in days]
    if any(ms is None or not wall for ms, wall in pairs):
        return "-"
    share = med([ms / (wall * 1000) for ms, wall in pairs])
    return f"{med([ms for ms, _ in pairs]):.0f} ({share * 100:.0f}%)"


def day_left(runs, reps, order, total):
    """Where the script's headroom left on day 2 (daemon - hot) lies:
    each program's share of it, and the script's headroom taken without
    the program holding the most (medians of each repetition's own)."""
    ok = [r for r in reps if total("daemon", r) > total("hot", r) and total("stock", r) > total("hot", r)]
    if not ok:
        return
    left = lambda p, r: runs["daemon"][r].get(p, 0) - runs["hot"][r].get(p, 0)
    share = {p: med([left(p, r) / (total("daemon", r) - total("hot", r)) for r in ok]) for p in order}
    top = sorted(order, key=lambda p: -share[p])
    most = top[0]
    without = lambda a, r: total(a, r) - runs[a][r].get(most, 0)
    heads = [(without("stock", r) - without("daemon", r)) / (without("stock", r) - without("hot", r))
             for r in ok if without("stock", r) > without("hot", r)]
    print()
    print("The headroom left on day 2 (daemon - hot, the script's), by program: "
          + ", ".join(f"{p} {share[p] * 100:.0f}%" for p in top[:4])
          + f". The script without {most} took {med(heads) * 100:.0f}% of its headroom.")


def busy_section(work):
    """The daemon on a busy machine: its CPU against its cap."""
    path = os.path.join(work, "busy")
    rows = [line.split() for line in open(path)] if os.path.exists(path) else []
    if not rows:
        return
    cpu_ms, wall_ms, over, seen = (int(x) for x in rows[0])
    pct = cpu_ms / wall_ms * 100
    print("## On a busy machine")
    print()
    print("Two busy loops keep both cores busy from 11 s before a fresh daemon's day 1 to the end of its day 2 "
          "(the day in miniature above, caches dropped before each day): the machine is busy to the daemon "
          "(PSI cpu `some` over `cpu_busy_pct`), so its CPU cap (`cpu_max_pct`, 5% of a core over 10 s) holds.")
    print()
    print(f"The daemon's CPU over those {wall_ms / 1000:.1f} s: {cpu_ms} ms, **{pct:.1f}% of a core** "
          f"(target: under 5%: {'met' if pct < 5 else 'missed'}); {over} of its {seen} launches were left "
          "alone over the cap.")
    print()


def unhelped_section(work):
    """Programs the daemon cannot help, daemon running vs stopped."""
    path = os.path.join(work, "unhelped")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    walls = {}  # program -> rep -> arm -> the walls of its runs
    cpu = {}  # program -> the daemon's CPU (ms) during each running run
    for line in open(path):
        arm, rep, prog, w, ms = line.split()
        walls.setdefault(prog, {}).setdefault(rep, {}).setdefault(arm, []).append(float(w))
        if arm == "running":
            cpu.setdefault(prog, []).append(int(ms))
    # An arm's time in a repetition: the median of its runs in a row.
    runs = {p: {r: {a: med(w) for a, w in arms.items()} for r, arms in reps.items()}
            for p, reps in walls.items()}
    per_arm = max((len(w) for reps in walls.values() for arms in reps.values() for w in arms.values()), default=1)
    print("## Programs it cannot help: the daemon running vs stopped")
    print()
    print("Hot cache (each program run once just before), so there is nothing to prefetch: the difference is "
          "the daemon's cost. The daemon (its default settings, successor prediction on) saw each program once "
          "before: `rg-tree` with the caches dropped, so its launch set is recorded and each of its launches here "
          "looks for it in memory (its replay then stops and the launch is not recorded, unless a page it looks at is missing); the others hot, so a launch that read its first 64 MiB from memory "
          "(`sha-cached`) was not recorded and each one here stops being recorded at 64 MiB (`judge_from_memory_mib`), and the rest are "
          "recorded and replayed. "
          "**exec-storm**: `sh -c 'for i in $(seq 300); do /bin/true; done'` (300 execs: the first `sh`, `seq` and "
          "`true` are launches, recorded and replayed, the repeats are quieted in the kernel; the worst case for a "
          "daemon that acts at execs); **cpu-python**: `python3 -c 'sum(i * i for i in range(3 * 10**6))'`; "
          "**sha-cached**: `sha256sum` of a cached 64 MiB file; **rg-tree**: `rg -uu` (2 threads) of a string found "
          "nowhere over the suite's source tree (31 k files) in memory; **rg-unseen**: the same, each run a fresh copy of "
          "`rg` at a new path, an executable the daemon never saw (its launch is followed, its reads held with none "
          "of its files opened, and let go, its reads dropped, once its first 64 MiB came from memory); "
          "**grep-tree**: GNU `grep -r` of that string over the same tree (one thread); **du-tree**: `du -s` of it "
          "(metadata only); **tar-tree**: `tar -cf -` of it into `wc -c`; **git-log**: `git log --stat -n 300` of "
          "the suite's clone (its pack in memory); **make-c**: `make -s -B -j2` of 41 small C files and their link "
          "(a build: ~90 execs of `gcc`, `cc1`, `as`, `collect2` and `ld`). Three arms, their order turning with each "
          "repetition: the daemon running, stopped, and stopped again (**control**: what this shared VM's drift alone "
          "makes of two arms that do the same). Each waits a second (the daemon starting, or not), keeps a core busy "
          "0.3 s (a run after an idle second was ~5% slower than one right after another run, daemon or not), then "
          f"runs the program {per_arm} times in a row; the arm's time is the median of those. Ratio = median of each "
          "repetition's stopped / running (and stopped / control). The daemon's CPU during each of the running arm's "
          "runs: `/proc/PID/stat` in 10 ms ticks, median and most. Beside each ratio, its 95% interval: the "
          f"bootstrap percentile interval of the median over the repetitions ({BOOTSTRAP} resamples). A miss "
          "(under 0.98x) whose interval holds 1.00x is not told from this machine's noise by this many "
          "repetitions; one whose interval lies under 1.00x is a cost beyond it. The control's interval is "
          "what two arms that do the same spread to.")
    print()
    print("| program | stopped (s) | running (s) | stopped / running | its 95% interval | stopped / control | "
          "its 95% interval | repetitions | daemon CPU in the run (ms) | misses |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for prog, reps in runs.items():
        ok = [r for r in reps.values() if "stopped" in r and "running" in r]
        if not ok:
            continue
        ratios = [r["stopped"] / r["running"] for r in ok]
        ctl = [r["stopped"] / r["control"] for r in ok if "control" in r]
        miss = slower(ratios)
        ms = cpu.get(prog, [0])
        print(f"| {prog} | {med([r['stopped'] for r in ok]):.3f} | {med([r['running'] for r in ok]):.3f} | "
              f"{med(ratios):.2f}x | {span(ratios)} | {f'{med(ctl):.2f}x' if ctl else '-'} | {span(ctl)} | "
              f"{len(ok)} | {med(ms):.0f} (most {max(ms)}) | {f'**{miss}**' if miss else 'none'} |")
    print()
    bpf_section(work)


def bpf_section(work):
    """The time the daemon's eBPF programs ran inside each program."""
    path = os.path.join(work, "unhelped-bpf")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    print("The daemon's eBPF programs run inside every program, on each of its page-cache reads, faults, "
          "fault-around maps, forks, execs and exits, whether the daemon records it or not. Their own run time in "
          "one more run of each, the daemon running (the kernel's count, `kernel.bpf_stats_enabled` on for that "
          "run only, which adds a clock read or two to every program run; the tracepoint's own work to hand the "
          "program its record is not counted):")
    print()
    print("| program | program runs | in the daemon's programs (ms) | per run (ns) | of the run's wall time |")
    print("|---|---:|---:|---:|---:|")
    lost_any = False
    for line in open(path):
        prog, ns, runs, wall, *lost = line.split()
        ns, runs, wall = int(ns), int(runs), float(wall)
        lost = int(lost[0]) if lost and lost[0] else 0
        lost_any |= lost > 0
        per = ns / runs if runs else 0.0
        share = ns / 1e9 / wall * 100 if wall > 0 else 0.0
        mark = " (at least)" if lost else ""
        print(f"| {prog} | {runs}{mark} | {ns / 1e6:.2f}{mark} | {per:.0f} | {share:.1f}% |")
    print()
    if lost_any:
        print("(at least): a program the daemon detached during the run (its page-read programs go while no "
              "launch is followed) took the runs it made after the first count with it.")
        print()


# bench/daemon/ceiling.sh's runs: its default programs, and the starts of
# programs outside the suite (`daemon-starts.md`'s).
CEILINGS = ("bench/results/daemon-ceiling.md", "bench/results/daemon-ceiling-starts.md")


def ceiling():
    """bench/daemon/ceiling.sh's headrooms by program (daemon, concurrent,
    ahead, as fractions, and the file and day that measured them)."""
    heads = {}
    for path in filter(os.path.exists, CEILINGS):
        day = None
        for line in open(path):
            if line.startswith("Written by"):
                day = line.split(" on ", 1)[1].split(" ", 1)[0]
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cols) == 10 and cols[7].endswith("%") and cols[9].endswith("%"):
                heads[cols[0]] = tuple(float(c.rstrip("%")) / 100 for c in cols[7:10]) + (path, day)
    return heads


def ceiling_section(missed, day=False):
    """For each program that missed the headroom target (in the day in
    miniature if `day`): how much of it a launch-set prefetcher could take
    at all, as bench/daemon/ceiling.sh measured (another run: its file and
    date are given)."""
    heads = ceiling()
    known = [p for p in missed if p in heads]
    if not known:
        return
    whose = "The day's" if day else "The"
    print(f"## {whose} headroom misses against what a launch set can take")
    print()
    if day:
        print("Measured as for the launches above: each program's cold launch alone, with its own set. In the day, "
              "the program before it has just run, and read its successors' sets ahead while it ran.")
        print()
    print("`bench/daemon/ceiling.sh` (its own alternated runs, medians; the file and day of each row below) times each "
          "program with the same launch set read by a prefetcher that costs nothing and starts at the exec "
          "(**concurrent**), and with the set read in before the program starts (**ahead**, what the day's predicted "
          "launches get). Where even the concurrent one stays under the target, no replay started at the exec can "
          "meet it: the program's first reads race the set's arrival, and its own metadata reads stay cold.")
    print()
    print("| program | daemon there | concurrent | ahead | measured in |")
    print("|---|---:|---:|---:|---|")
    for p in known:
        d, c, a, path, day = heads[p]
        print(f"| {p} | {d * 100:.0f}% | {c * 100:.0f}% | {a * 100:.0f}% | `{path}`, {day} |")
    print()


def main():
    work, reps, elapsed, version = sys.argv[1:5]
    runs, usage, programs = load(work)
    print("# `outrider daemon`: cold launches with and without it")
    print()
    print(f"Written by `bench/daemon/launch.sh` on {datetime.date.today()} ({os.cpu_count()} cores, Linux "
          f"{platform.release()}, {version}); do not edit by hand. {int(elapsed) / 60:.1f} min.")
    loadavg = os.path.join(work, "load")
    if os.path.exists(loadavg):
        start, end = (open(loadavg).read().splitlines() + ["?", "?"])[:2]
        print(f"Load average (1, 5, 15 min) at start: {start}; at end: {end} (2 cores, shared; the arms alternate).")
    print()
    print("No `outrider run`: each program is started as a user starts it. **stock**: the daemon stopped, cold cache; "
          "**daemon**: the daemon running (watching every program), holding the launch set of this program's previous "
          "launch, cold cache; **hot**: the program again at once, no daemon (the floor). Cold = `sync; echo 3 > "
          "/proc/sys/vm/drop_caches` and the disk idle. The arms alternate which goes first. "
          f"Medians of {reps} repetitions; speed-up = stock / daemon and headroom = (stock - daemon) / (stock - hot) "
          "are medians of each repetition's own ratio; beside the speed-up, its 95% interval (the bootstrap "
          f"percentile interval of the median over the repetitions, {BOOTSTRAP} resamples): a speed-up under "
          f"{SPEEDUP_MIN}x whose interval holds 1.00x is not told from this machine's noise by this many "
          "repetitions (**within noise**); one whose interval lies under 1.00x is a cost beyond it.")
    as_user = os.path.join(work, "as-user")
    if os.path.exists(as_user):
        user = open(as_user).read().strip()
        print()
        print(f"Every program ran as the unprivileged user `{user}` (`AS_USER`: `setpriv` with its uid, gid and "
              "groups; every arm alike): the daemon's replay for it opens each file of the set by its path as that "
              "user before asking for it, and leaves out those the user may not open. The daemon did not watch "
              "`setpriv` and `env`, the bench's way into the user: each program was its user's own launch, as "
              "from that user's shell.")
    print()
    print("| program | category | stock (s) | daemon (s) | hot (s) | stock / hot | speed-up | its 95% interval | "
          "headroom | misses |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    n_miss = 0
    short_of_headroom = []
    for name, cat, _desc in programs:
        m, gain, ratios, head = row(runs, name)
        x = med(ratios)
        miss = [s for s in [slower(ratios)] if s]
        if gain and gain >= GAIN_GATE and (head or 0) < HEADROOM_MIN:
            miss.append(f"headroom {head * 100:.0f}%" if head is not None else "headroom -")
            short_of_headroom.append(name)
        n_miss += bool(miss)
        f = lambda v: f"{v:.3f}" if v is not None else "-"
        print(f"| {name} | {cat} | {f(m['stock'])} | {f(m['daemon'])} | {f(m['hot'])} | "
              f"{gain:.2f}x | {x:.2f}x | {span(ratios)} | {head * 100:.0f}% | "
              f"{'; '.join(f'**{s}**' for s in miss) or 'none'} |"
              if gain and x is not None and head is not None else
              f"| {name} | {cat} | {f(m['stock'])} | {f(m['daemon'])} | {f(m['hot'])} | - | - | - | - | - |")
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
    ceiling_section(short_of_headroom)
    ceiling_section(day_section(work), day=True)
    busy_section(work)
    unhelped_section(work)
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
