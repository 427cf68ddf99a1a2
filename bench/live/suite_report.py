#!/usr/bin/env python3
"""Write bench/results/live.md (stdout) from the measurements of
bench/live/suite.sh. Arguments: WORKDIR KEY=VALUE...

WORKDIR holds `results` (one line per run: `program arm rep wall_s cpu_s`,
arm stock | hot | none | run1 | run2; cpu_s is the CPU of the whole
process tree the shell waited for), `programs` (tab-separated: name,
category, tags, repetitions, load average before and after, description),
`skipped` (name, reason), `fixed` (the `true` runs, same columns as
results), `disk` (`rep wall_s read_mib` of a cold sequential read of the
large file) and json/PROGRAM.ARM.REP.json, each outrider run's
--json-file. A results line may end with `read_mib`, the MiB the run read
from the data's disk."""
import datetime
import json
import os
import platform
import statistics
import sys

ARMS = ("stock", "none", "run1", "run2", "hot")
# Targets of the do-no-harm work, as fractions (see the file's notes).
NONE_MAX = 1.02      # --policy none at most 2% slower than stock
RUN_MIN = 0.98       # runs 1 and 2 at least 0.98x of stock
HEADROOM_RUN2 = 0.70  # run 2 captures 70% of the headroom where stock/hot >= 2
HEADROOM_RUN1 = 0.80  # reverse and strided reads: 80% on run 1
EVENT_US = 1.0       # outrider CPU per traced event, tree walkers
CPU_SHARE = 0.05     # outrider CPU / program CPU where there is little to gain


def load(work):
    """(wall, cpu, read, programs, skipped, fixed) read from WORKDIR."""
    wall, cpu, read, fixed = {}, {}, {}, {}
    for line in open(os.path.join(work, "results")):
        p, arm, k, w, c, *mib = line.split()
        wall.setdefault((p, arm), []).append(float(w))
        wall.setdefault((p, arm, "by_rep"), {})[k] = float(w)
        cpu.setdefault((p, arm), []).append(float(c))
        if mib:
            read.setdefault((p, arm), []).append(float(mib[0]))
    programs = []
    for line in open(os.path.join(work, "programs")):
        f = line.rstrip("\n").split("\t")
        other = float(f[6]) if len(f) == 8 else None
        programs.append(dict(name=f[0], cat=f[1], tags=f[2].split(), reps=f[3], load=(f[4], f[5]), other=other, desc=f[-1]))
    skipped = [line.rstrip("\n").split("\t", 1) for line in open(os.path.join(work, "skipped"))]
    path = os.path.join(work, "fixed")
    if os.path.exists(path):
        for line in open(path):
            _t, arm, _rep, w, c = line.split()
            fixed.setdefault(arm, []).append(float(w))
    return wall, cpu, read, programs, skipped, fixed


def disk_rate(work):
    """The disk's sequential read rate, MiB/s: median over the cold reads
    of the large file (None without them)."""
    path = os.path.join(work, "disk")
    if not os.path.exists(path):
        return None
    rates = [float(m) / float(w) for _rep, w, m in (line.split() for line in open(path)) if float(m) > 0]
    return med(rates)


def summaries(work, name, arm):
    out, d = [], os.path.join(work, "json")
    for f in sorted(os.listdir(d)):
        if f.startswith(f"{name}.{arm}.") and f.endswith(".json"):
            with open(os.path.join(d, f)) as fh:
                out.append(json.load(fh))
    return out


def med(v):
    return statistics.median(v) if v else None


def row_stats(work, wall, cpu, read, rate, fixed_cpu, name):
    """Medians and derived numbers of one program."""
    m = {a: med(wall.get((name, a))) for a in ARMS}
    r = dict(m=m, prog_cpu=med(cpu.get((name, "stock"))), stock_reps=wall.get((name, "stock"), []))
    # What stock read from the disk, and how long the disk alone takes
    # to deliver it at its sequential rate: with the program starting cold,
    # no prefetcher that starts with it gets below this.
    r["read_stock"] = med(read.get((name, "stock")))
    need = r["read_stock"]
    s, h = m["stock"], m["hot"]
    r["gain"] = s / h if s and h else None
    stock, hot = wall.get((name, "stock", "by_rep"), {}), wall.get((name, "hot", "by_rep"), {})
    for a in ("none", "run1", "run2"):
        # Each repetition's arm against the stock run of the same
        # repetition (minutes apart at most): the disk's drift over the
        # suite cancels, as it does not between medians of each arm.
        arm = wall.get((name, a, "by_rep"), {})
        pairs = [(stock[k], arm[k], hot.get(k)) for k in arm if k in stock]
        r[f"x_{a}"] = med([st / t for st, t, _ in pairs if t > 0])
        heads = [(st - t) / (st - ho) for st, t, ho in pairs if ho is not None and st > ho]
        r[f"head_{a}"] = med(heads) if r["gain"] and r["gain"] >= 1.1 else None
        js = summaries(work, name, a)
        r[f"js_{a}"] = js
        cpus = [j["outrider_cpu_s"] for j in js if "outrider_cpu_s" in j]
        r[f"ocpu_{a}"] = med(cpus)
        per = [j["outrider_cpu_s"] / j["events"] * 1e6 for j in js if j.get("events") and "outrider_cpu_s" in j]
        r[f"us_{a}"] = med(per)
        # The same less the CPU of a run that traces nothing (`run --
        # true`): set-up and tear-down are paid once per run, not per event.
        net = [max(0.0, j["outrider_cpu_s"] - fixed_cpu) / j["events"] * 1e6
               for j in js if j.get("events") and "outrider_cpu_s" in j and fixed_cpu is not None]
        r[f"net_us_{a}"] = med(net)
        r[f"events_{a}"] = med([j["events"] for j in js if "events" in j])
    r["disk_need"] = need
    r["disk_floor"] = need / rate if rate and need is not None else None
    return r


def misses(prog, r):
    """The targets this row misses, each with its number."""
    out = []
    if r["x_none"] is not None and r["x_none"] < 1 / NONE_MAX:
        out.append(f"none +{(1 / r['x_none'] - 1) * 100:.0f}%")
    for a in ("run1", "run2"):
        if r[f"x_{a}"] is not None and r[f"x_{a}"] < RUN_MIN:
            out.append(f"{a[:3]} {a[3]} {r[f'x_{a}']:.2f}x")
    if r["gain"] and r["gain"] >= 2 and (r["head_run2"] or 0) < HEADROOM_RUN2:
        out.append(f"run 2 headroom {pct(r['head_run2'], 1)}")
    if {"backwards", "stride"} & set(prog["tags"]) and (r["head_run1"] or 0) < HEADROOM_RUN1:
        out.append(f"run 1 headroom {pct(r['head_run1'], 1)}")
    per_event = r["net_us_none"] if r["net_us_none"] is not None else r["us_none"]
    if prog["cat"] == "tree" and per_event is not None and per_event > EVENT_US:
        out.append(f"{per_event:.1f} us/event")
    share = cpu_share(r)
    if r["gain"] and r["gain"] < 1.25 and share is not None and share > CPU_SHARE:
        out.append(f"outrider CPU {share * 100:.0f}% of the program's")
    return out


def jmed(js, key, sub=None):
    """Median of a field of the runs' --json summaries (sub: of `stats`)."""
    v = [(j.get("stats") or {}).get(key) if sub else j.get(key) for j in js]
    return med([x for x in v if isinstance(x, (int, float))])


def mib(pages):
    return f"{pages * 4096 / 2**20:.1f} MiB" if pages is not None else "-"


def why(prog, r, fixed_added):
    """For a row that misses: the measured quantities behind each arm's
    gap to stock or to the floor (medians over the repetitions)."""
    m, out = r["m"], []
    cores = r["prog_cpu"] / m["stock"] if r["prog_cpu"] and m["stock"] else None
    for a, label in (("none", "none"), ("run1", "run 1"), ("run2", "run 2")):
        x = r[f"x_{a}"]
        if x is None or m["stock"] is None or x >= 1 / NONE_MAX:
            continue
        js = r[f"js_{a}"]
        extra = m["stock"] * (1 / x - 1)
        parts = [f"{label} +{extra * 1e3:.0f} ms{spread(r, extra)}"]
        if fixed_added is not None:
            parts.append(f"fixed cost {fixed_added * 1e3:.1f} ms ({fixed_added / extra * 100:.0f}% of it)")
        if r[f"ocpu_{a}"] is not None:
            files = jmed(js, "files", True)
            per_file = f", {r[f'ocpu_{a}'] / files * 1e6:.0f} us per file of {files:.0f}" if files else ""
            parts.append(f"outrider CPU {r[f'ocpu_{a}'] * 1e3:.0f} ms ({r[f'events_{a}']:.0f} events{per_file})"
                         + (f" beside a program using {cores:.2f} of 2 cores" if cores else ""))
        if a != "none":
            pre, used, wasted = (jmed(js, k, True) for k in ("prefetched_pages", "used_pages", "wasted_pages"))
            if pre:
                parts.append(f"prefetched {mib(pre)}, used {mib(used)}, wasted {mib(wasted)}")
        out.append("; ".join(parts))
    if r["gain"] and r["gain"] >= 2 and (r["head_run2"] or 0) < HEADROOM_RUN2 and m["run2"] and m["hot"]:
        js = r["js_run2"]
        cov, miss, late, demand = jmed(js, "coverage"), jmed(js, "miss_pages", True), jmed(js, "late_pages", True), jmed(js, "demand_pages", True)
        kra = jmed(js, "kernel_readahead_pages", True)
        # Pages the kernel read ahead for the program itself: each of its
        # misses (a fault on a mapped page not yet prefetched reads a window
        # around it) is a wait on the disk, however few the pages it missed.
        ra = f", the kernel still read {mib(kra)} ahead for the program's own misses" if kra else ""
        out.append(f"run 2 is {(m['run2'] - m['hot']) * 1e3:.0f} ms above the floor: coverage {cov:.2f}, "
                   f"{mib(miss)} of {mib(demand)} still missed{ra}, {mib(late)} prefetched too late; history loaded {loaded(js)}"
                   if cov is not None else f"run 2 is {(m['run2'] - m['hot']) * 1e3:.0f} ms above the floor")
        if r["ocpu_run2"] is not None and r["prog_cpu"]:
            out.append(f"outrider's CPU in run 2 {r['ocpu_run2']:.3f} s beside the program's {r['prog_cpu']:.3f} s (stock), "
                       f"{(r['ocpu_run2'] + r['prog_cpu']) / 2:.3f} s of this 2-core machine's time when both run at once")
        if r["disk_floor"] is not None:
            out.append(disk_bound(r))
    return out


def spread(r, extra):
    """Stock's own repetitions beside an arm's gap: a gap inside their
    spread is not resolved by this many repetitions."""
    v = r["stock_reps"]
    if len(v) < 2:
        return ""
    lo, hi = min(v), max(v)
    inside = " (inside it)" if extra < hi - lo else ""
    return f" (stock's own repetitions span {lo:.3f}-{hi:.3f} s{inside})"


def disk_bound(r):
    """A run 2 short of the hot floor, against the disk's: stock's MiB read
    at the disk's sequential rate."""
    m, floor = r["m"], r["disk_floor"]
    reach = max(floor, m["hot"])
    head = (m["stock"] - m["run2"]) / (m["stock"] - reach) if m["stock"] > reach else None
    text = (f"stock read {r['read_stock']:.0f} MiB from the disk, {floor:.3f} s at its sequential rate: a run starting cold "
            f"that reads as much goes no lower than {reach:.3f} s")
    if m["run2"] < reach:
        return text + "; run 2 read less (the kernel's readahead windows read more than a program touches) and went below it"
    if head is None or m["stock"] <= 1.05 * reach:
        return text + ": stock is already there (the headroom is the disk's, left only to data in memory before the program starts)"
    return text + f"; run 2 took {pct(head)} of the headroom down to it"


def why_section(rows, fixed):
    added = None
    if fixed.get("coldplain") and fixed.get("coldnohist"):
        added = med(fixed["coldnohist"]) - med(fixed["coldplain"])
    lines = [(p, why(p, r, added)) for p, r in rows if misses(p, r)]
    if not lines:
        return
    print("## Why rows miss (measured)")
    print()
    print("Per missing row, medians of the same runs: each slow arm's time above stock with outrider's fixed cost "
          "(the cold `/bin/true` measurement below: every arm here is cold, outrider's executable included) and its own CPU beside it, on this 2-core machine where the program's "
          "CPU (cores = program CPU / stock wall) competes with outrider's, and the span of stock's own repetitions "
          "(a gap inside it is not resolved by this many repetitions on this disk); for a run 2 short of the floor, what "
          "the run-2 summaries say was still missed, and the disk floor: stock's MiB read at the disk's sequential rate.")
    print()
    for p, w in lines:
        if w:
            print(f"- **{p['name']}**: " + " | ".join(w))
    print()


def loaded(js):
    """How many of the run-2 summaries say a history was loaded."""
    n = sum(1 for j in js if j.get("history_policy_loaded") or (j.get("history") or {}).get("runs_before"))
    return f"{n} of {len(js)}"


def cpu_share(r):
    o, p = r["ocpu_run2"], r["prog_cpu"]
    return o / p if o is not None and p else None


def pct(x, digits=0):
    return f"{x * 100:.{digits}f}%" if x is not None else "-"


def f3(x):
    return f"{x:.3f}" if x is not None else "-"


def fx(x):
    return f"{x:.2f}x" if x is not None else "-"


def header(conf, programs):
    quick = " **QUICK=1 check: one repetition, a few programs; not a measurement.**" if conf.get("quick") == "1" else ""
    print("# Live suite: real programs, stock Linux vs `outrider run`")
    print()
    print(f"Written by `bench/live/suite.sh` on {datetime.date.today()} ({os.cpu_count()} cores, Linux {platform.release()}, "
          f"{conf.get('outrider')}); do not edit by hand.{quick}")
    print()
    loads = [float(x) for p in programs for x in p["load"]]
    other = [p["other"] for p in programs if p["other"] is not None]
    noise = (f" Other work on the machine (busy CPU less the suite's own, over each program's measurement): "
             f"{min(other):.2f} to {max(other):.2f} cores, median {med(other):.2f}, of {os.cpu_count()}." if other else "")
    print(f"Suite wall time {int(conf['elapsed_s']) / 60:.1f} min. Load average (1 min) at the programs' starts and ends: "
          f"{min(loads, default=0):.2f} to {max(loads, default=0):.2f}; at the end {conf.get('load_end')} "
          f"(it counts the suite's own programs too).{noise}")
    print()
    print("Arms: **stock** the program alone, cold cache; **hot** the program again right after stock, no cache drop (the floor; "
          "SQLite's file is first read in outside the cgroup); **none** `outrider run --policy none --no-history` (tracing and "
          "controller without prefetching: outrider's overhead); **run 1** `outrider run` with an empty private `--history` "
          f"(policy: `{conf.get('policy') or 'the default'}`); **run 2** the same with the history run 1 saved. Cold = "
          "`sync; echo 3 > /proc/sys/vm/drop_caches` and the disk idle, before every arm but hot. Within each repetition the "
          "groups (stock, hot), (none), (run 1, run 2) take turns going first. "
          f"Medians of {conf.get('reps')} repetitions ({conf.get('short_reps')} for programs under 100 ms).")
    print()


def rate_text(rate):
    return f"{rate:.0f} MiB/s, a cold `dd` of the large file, median" if rate else "not measured"


def main_table(rows, rate):
    print("| program | category | stock (s) | none (s) | run 1 (s) | run 2 (s) | hot (s) | stock / hot | "
          "disk floor (s) | speed-up none / run 1 / run 2 | headroom run 1 / run 2 | misses |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for p, r in rows:
        m = r["m"]
        miss = "; ".join(f"**{x}**" for x in misses(p, r)) or "none"
        print(f"| {p['name']} | {p['cat']} | {f3(m['stock'])} | {f3(m['none'])} | {f3(m['run1'])} | {f3(m['run2'])} | "
              f"{f3(m['hot'])} | {fx(r['gain'])} | {f3(r['disk_floor'])} | {fx(r['x_none'])} / {fx(r['x_run1'])} / {fx(r['x_run2'])} | "
              f"{pct(r['head_run1'])} / {pct(r['head_run2'])} | {miss} |")
    print()
    print(f"Times are medians over the repetitions; speed-up = stock / arm and headroom captured = (stock - arm) / (stock - hot) "
          f"are medians of each repetition's own ratio (its stock, hot and arm runs are minutes apart at most), headroom shown where "
          f"stock / hot >= 1.1; "
          f"disk floor = the MiB stock read from the disk (its `stat`) at the disk's sequential rate ({rate_text(rate)}); "
          f"a run that reads less (a prefetcher reading only the pages used) can go below it. "
          f"Targets checked per row (a miss names the number): none within {(NONE_MAX - 1) * 100:.0f}% of stock; "
          f"run 1 and run 2 >= {RUN_MIN}x; run 2 >= {HEADROOM_RUN2 * 100:.0f}% of the headroom where stock / hot >= 2; "
          f"reverse and strided reads (tac, mmap-back, mmap-stride, pread-stride) >= {HEADROOM_RUN1 * 100:.0f}% on run 1; "
          f"tree walkers at most {EVENT_US:g} us of outrider CPU per traced event (none arm); outrider's CPU at most "
          f"{CPU_SHARE * 100:.0f}% of the program's (run 2) where there is little to gain (stock / hot < 1.25).")
    print()


def cpu_table(rows):
    print("## Outrider's CPU")
    print()
    print("| program | program CPU (s, stock) | outrider CPU none / run 1 / run 2 (s) | outrider / program (run 2) | "
          "events none / run 2 | us per event none / run 1 / run 2 | us per event, less the fixed CPU, none | lost events | "
          "policy run 2 | history loaded run 2 | event source |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    for p, r in rows:
        js = r["js_none"] + r["js_run1"] + r["js_run2"]
        lost = sum(j.get("lost_events", 0) for j in js)
        pol = ", ".join(sorted({j.get("policy", "?") for j in r["js_run2"]})) or "-"
        src = ", ".join(sorted({str(j["event_source"]) for j in js if "event_source" in j})) or "not reported"
        ev = f"{r['events_none']:.0f} / {r['events_run2']:.0f}" if r["events_none"] is not None and r["events_run2"] is not None else "-"
        us = " / ".join(f"{r[k]:.2f}" if r[k] is not None else "-" for k in ("us_none", "us_run1", "us_run2"))
        print(f"| {p['name']} | {f3(r['prog_cpu'])} | {f3(r['ocpu_none'])} / {f3(r['ocpu_run1'])} / {f3(r['ocpu_run2'])} | "
              f"{pct(cpu_share(r))} | {ev} | {us} | {f3(r['net_us_none'])} | {lost} | {pol} | {loaded(r['js_run2'])} | {src} |")
    print()
    print("Outrider CPU = `outrider_cpu_s` of its `--json-file` (the outrider process's own user + system time, its threads "
          "included; the background history save after it exits is not in it). Program CPU = the user + system time of the "
          "stock run's process tree (bash `times` around it). us per event = outrider CPU / `events` of the same run; "
          "less the fixed CPU: (outrider CPU - the median outrider CPU of `outrider run --no-history -- /bin/true`, "
          "the fixed-cost section) / events, the number the tree walkers' per-event target is checked on.")
    print()


def fixed_cost(work, fixed, conf):
    if not fixed:
        return
    print("## Fixed cost: a program that does no I/O")
    print()
    plain = med(fixed.get("plain"))
    print(f"`/bin/true` alone against `outrider run -- /bin/true`, hot cache, alternated, median of {conf.get('true_reps')}:")
    print()
    print("| command | wall (ms) | added (ms) | outrider CPU (ms) | events |")
    print("|---|---:|---:|---:|---:|")
    print(f"| `/bin/true` | {plain * 1e3:.1f} | - | - | - |")
    for arm, label in (("nohist", "`outrider run -q --no-history -- /bin/true`"), ("hist", "`outrider run -q --history DB -- /bin/true` (history present)")):
        w = med(fixed.get(arm))
        if w is None:
            continue
        js = summaries(work, "true", arm)
        c = med([j["outrider_cpu_s"] for j in js if "outrider_cpu_s" in j])
        e = med([j["events"] for j in js if "events" in j])
        cs = f"{c * 1e3:.1f}" if c is not None else "-"
        print(f"| {label} | {w * 1e3:.1f} | {(w - plain) * 1e3:.1f} | {cs} | {f'{e:.0f}' if e is not None else '-'} |")
    again = med(fixed.get("again"))
    if again is not None:
        print(f"| the same, again at once (no pause after the last run) | {again * 1e3:.1f} | {(again - plain) * 1e3:.1f} | - | - |")
    cplain = med(fixed.get("coldplain"))
    if cplain is not None:
        print(f"| `/bin/true`, cold | {cplain * 1e3:.1f} | - | - | - |")
        for arm, label in (("coldload", "`outrider run --help`, cold (loading outrider alone)"),
                           ("coldnohist", "`outrider run -q --no-history -- /bin/true`, cold")):
            w = med(fixed.get(arm))
            if w is not None:
                print(f"| {label} | {w * 1e3:.1f} | {(w - cplain) * 1e3:.1f} | - | - |")
    print()
    print(f"Cold rows: `sync; echo 3 > /proc/sys/vm/drop_caches` before each, median of {conf.get('cold_true_reps')}. "
          "Target: at most 5 ms added (hot).")
    print()


def details(rows, skipped, wall, conf):
    print("## Programs")
    print()
    for p, _r in rows:
        print(f"- **{p['name']}** ({p['cat']}): {p['desc']}")
    if int(conf.get("sql_limit", "0")):
        print()
        print(f"SQLite: the database is {int(conf['db_bytes']) / 2**20:.0f} MiB, the memory cgroup (v1) "
              f"{int(conf['sql_limit']) / 2**20:.0f} MiB; the large file is {conf.get('file_mib')} MiB.")
    if skipped:
        print()
        print("Skipped: " + "; ".join(f"{n} ({why})" for n, why in skipped) + ".")
    print()
    print("## Every repetition")
    print()
    print("Seconds per repetition, stock / none / run 1 / run 2 / hot; load average (1 min) before and after the program; "
          "other work: cores other processes kept busy meanwhile.")
    print()
    for p, _r in rows:
        cols = [wall.get((p["name"], a), []) for a in ARMS]
        reps = ", ".join("/".join(f"{x:.3f}" for x in t) for t in zip(*cols))
        other = f", other work {p['other']:.2f} cores" if p["other"] is not None else ""
        print(f"- {p['name']}: {reps} (load {p['load'][0]} -> {p['load'][1]}{other})")


def main():
    work = sys.argv[1]
    conf = dict(a.split("=", 1) for a in sys.argv[2:])
    # Spaces travel as underscores (the arguments are kept one per line
    # and read back by word splitting).
    for k in ("outrider", "load_end"):
        if k in conf:
            conf[k] = conf[k].replace("_", " ")
    wall, cpu, read, programs, skipped, fixed = load(work)
    rate = disk_rate(work)
    fixed_cpu = med([j["outrider_cpu_s"] for j in summaries(work, "true", "nohist") if "outrider_cpu_s" in j])
    rows = [(p, row_stats(work, wall, cpu, read, rate, fixed_cpu, p["name"])) for p in programs]
    header(conf, programs)
    main_table(rows, rate)
    n_miss = sum(1 for p, r in rows if misses(p, r))
    print(f"{len(rows)} programs measured, {len(skipped)} skipped; {n_miss} miss at least one target.")
    print()
    why_section(rows, fixed)
    cpu_table(rows)
    fixed_cost(work, fixed, conf)
    details(rows, skipped, wall, conf)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
