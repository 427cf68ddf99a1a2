#!/usr/bin/env python3
"""Write bench/results/daemon-switch.md from bench/daemon/switch.sh's
measurements. Arguments: WORKDIR OUT DATE ELAPSED_S LOAD_START LOAD_END
KERNEL PROGRAMS.

WORKDIR holds `results` (`program arm rep wall_s`, arm stock | roots |
whole | hot) and `status-PROGRAM-{true,false}-REP.json` (`outrider status
--json` after each daemon arm)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import med, slower, span  # noqa: E402

ARMS = ("first", "roots", "whole")

DESCRIPTIONS = {
    "grep": "`grep -r -F` of a string found nowhere",
    "du": "`du -s`",
    "tar": "`tar -cf -` to `wc -c`",
    "rg": "`rg -uu -F` of a string found nowhere (2 threads)",
    "rg-cwd": "the same `rg` given no path, run in the directory (`env -C DIR rg ...`)",
    "du-cwd": "`du -s` given no path, run in the directory (`env -C DIR du -s`)",
}


def load(work):
    runs = {}
    for line in open(os.path.join(work, "results")):
        p, arm, rep, wall = line.split()
        runs.setdefault(p, {}).setdefault(arm, {})[rep] = float(wall)
    return runs


def second_launch(work, p, arm, rep):
    """The status of the timed launch (the last of the program's two)."""
    path = os.path.join(work, f"status-{p}-{arm}-{rep}.json")
    try:
        s = json.load(open(path))
    except (OSError, ValueError):
        return None
    launches = (s.get("status") or {}).get("launches", [])
    name = p.removesuffix("-cwd")
    exe = lambda l: l.get("exe", "")
    known = [l for l in launches if l.get("known") and (f"/{name} [" in exe(l) or exe(l).endswith(f"/{name}"))]
    return known[-1] if known else None


def replayed(work, p, arm, reps):
    """Medians over the repetitions of the timed launch's files left out,
    files kept and pages asked for."""
    ls = [second_launch(work, p, arm, r) for r in reps]
    ls = [l for l in ls if l and l.get("replay")]
    if not ls:
        return "-"
    out = med([l.get("files_left_out", 0) for l in ls])
    kept = med([l["replay"]["files_kept"] for l in ls])
    mib = med([l["replay"]["pages_requested"] * 4096 / 2**20 for l in ls])
    return f"{out:.0f} / {kept:.0f} / {mib:.1f}"


def main():
    work, out, date, elapsed, load0, load1, kernel, programs = sys.argv[1:9]
    runs = load(work)
    rows, misses = [], []
    for p in programs.split():
        r = runs.get(p, {})
        reps = sorted(set.intersection(*(set(r.get(a, {})) for a in ("stock",) + ARMS)))
        if not reps:
            continue
        ratio = {a: [r["stock"][k] / r[a][k] for k in reps] for a in ARMS}
        cells = [f"{med([r[a][k] for k in reps]):.3f}" for a in ("stock",) + ARMS]
        hot = med(list(r.get("hot", {}).values()))
        for a in ("first", "roots"):
            miss = slower(ratio[a])
            if miss:
                misses.append(f"{p} {a} {miss}")
        speedups = [f"{med(ratio[a]):.2f}x ({span(ratio[a])})" for a in ARMS]
        rows.append(
            f"| {p} | " + " | ".join(cells) + f" | {hot:.3f} | " + " | ".join(speedups)
            + f" | {replayed(work, p, 'true', reps)} | {replayed(work, p, 'false', reps)} |"
        )
    n = len(next(iter(runs.values()), {}).get("stock", {}))
    lines = [
        "# `outrider daemon`: a program given another directory than its set's launch",
        "",
        f"Written by `bench/daemon/switch.sh` on {date} (2 cores, Linux {kernel}); "
        f"do not edit by hand. {int(elapsed) / 60:.1f} min.",
        f"Load average (1, 5, 15 min) at start: {load0}; at end: {load1} (2 cores, shared; the arms alternate).",
        "",
        "One application key (`grep -r <file>`: the paths a program is given are named by their role), "
        "so the set the program left over **A** (`arch/arm64` of the suite's kernel tree: 1 970 files, "
        "20 MiB) is the set its next launch, over **B** (`arch/powerpc`: 2 054 files, 19 MiB), finds. "
        "**stock**: no daemon, B cold; **first**: a fresh daemon, B cold, the program never seen "
        "(what recording a launch costs it); **roots**: a fresh daemon (defaults: `argument_roots = true`; "
        "a program given no path has its working directory for a root) "
        "saw the program over A cold, then B cold, timed; **whole**: the same with "
        "`argument_roots = false`, the set replayed whole (as FAST and IORap replay an application's "
        "set); **hot**: B again at once (the floor). Cold = `sync; echo 3 > /proc/sys/vm/drop_caches` "
        f"and the disk idle. Medians of {n} repetitions, the arms' order turning; speed-up = stock / "
        "arm, the median of each repetition's own ratio, with its bootstrap 95% interval in brackets. "
        "Replayed: the timed launch's files left out by the roots / files asked for / MiB asked for "
        "(medians).",
        "",
        "| program | stock (s) | first (s) | roots (s) | whole (s) | hot (s) | first speed-up "
        "| roots speed-up | whole speed-up | replayed, roots | replayed, whole |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
        *rows,
        "",
        "Target: the first and roots arms at least 0.98x of stock (a miss within noise when its "
        "interval holds 1.00x). " + (f"Misses: {'; '.join(misses)}." if misses else "No miss."),
        "",
        "## Programs",
        "",
        *[f"- **{p}**: {DESCRIPTIONS.get(p, p)}, over A then B" for p in programs.split()],
        "",
    ]
    with open(out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
