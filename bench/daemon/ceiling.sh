#!/usr/bin/env bash
# How much of a cold launch a launch-set prefetcher can save at all, in
# one sitting with the daemon's own result: writes
# bench/results/daemon-ceiling.md.
#
# Per program (bench/live/suite-programs.sh's commands), the daemon
# records one launch set, then REPS (default 5) repetitions of five arms,
# in an order that turns each repetition (bench/daemon/ceiling.py times
# each launch the same way, from a Python parent):
#   stock       cold, no daemon
#   daemon      cold, `outrider daemon` running with the program's set
#   concurrent  cold, the set asked for (WILLNEED, first-touch order) by
#               another process from the program's start, its files opened
#               before the drop: a prefetcher starting at the exec at no
#               cost of its own
#   ahead       cold, the set read in before the program starts: all a
#               launch set can give
#   hot         again at once (the floor)
# Headroom = (stock - arm) / (stock - hot), the median of each
# repetition's own. Needs root. PROGRAMS="gcc node" selects; OUT=file.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-suite}
. bench/live/setup.sh
. bench/live/suite-programs.sh
REPS=${REPS:-5}
SHORT_REPS=$REPS
PROGRAMS=${PROGRAMS:-"gcc gxx rustc node python-bare perl git-status rg wc"}
OUT=${OUT:-bench/results/daemon-ceiling.md}
[ "$(id -u)" = 0 ] || { echo "ceiling.sh: needs root" >&2; exit 2; }
cargo build --release --quiet -p outrider-cli
bin=$PWD/target/release/outrider
mkdir -p "$DATA_DIR"
suite_base
work=$(mktemp -d "$DATA_DIR/ceiling-bench.XXXXXX")
me=ceiling.sh
. bench/daemon/daemon.sh
trap 'stop_daemon; rm -rf "$work" /dev/shm/outrider-suite-out' EXIT
# The replay at the exec alone, as in launch.sh's launches: no successor
# prediction (it would learn this script's own order).
conf=$work/daemon.toml
printf 'state_dir = "%s/state"\nlaunch_window_s = 3\nsave_interval_s = 0.2\nsocket = ""\nsuccessor_prefetch = false\n' "$work" > "$conf"
store_db=$work/state/history.db # not `db`: suite-programs.sh sets that for its SQLite programs
# One launch in arm $1 of $CMD with set $key; appends "program arm rep s".
arm() {
  local out
  rm -rf /dev/shm/outrider-suite-out/* 2> /dev/null || true
  [ "$1" = daemon ] && { start_daemon; sleep 0.5; }
  out=$(python3 bench/daemon/ceiling.py "$store_db" "$key" "$1" -- "${CMD[@]}")
  if [ "$1" = daemon ]; then sleep 3.6; stop_daemon; fi
  echo "$p $1 $rep ${out#* }" | cut -d' ' -f1-4 >> "$work/results"
}
: > "$work/results"
: > "$work/programs"
started=$EPOCHREALTIME
cut -d' ' -f1-3 /proc/loadavg > "$work/load"
for p in $PROGRAMS; do
  suite_program "$p"
  [ -n "$SKIP" ] && { echo "ceiling.sh: skipping $p: $SKIP" >&2; continue; }
  # The recording launch: its process's launch names the set. A program
  # gone before the daemon read its exec is no launch (`make --version`,
  # 9 ms cold, once in two runs): tried three times.
  key=""
  for try in 1 2 3; do
    start_daemon; sleep 0.5
    pid=$(python3 bench/daemon/ceiling.py "$store_db" "" stock -- "${CMD[@]}" | cut -d' ' -f3)
    sleep 3.6
    stop_daemon
    key=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(next(("exe:" + l["exe"] for l in s["launches"] if l["pid"] == int(sys.argv[2]) and l["saved"]), ""))' \
      "$work/state/status.json" "$pid")
    [ -n "$key" ] && break
  done
  [ -n "$key" ] || { echo "ceiling.sh: skipping $p: no launch of it recorded in 3 tries" >&2; continue; }
  printf '%s\t%s\n' "$p" "$DESC" >> "$work/programs"
  arms=(stock daemon concurrent ahead hot)
  for rep in $(seq 1 "$REPS"); do
    for i in 0 1 2 3; do arm "${arms[$(((i + rep) % 4))]}"; done
    arm hot
    echo "ceiling.sh: $p rep $rep: $(awk -v p="$p" -v r="$rep" '$1 == p && $3 == r { printf "%s %.3f  ", $2, $4 }' "$work/results")" >&2
  done
done
cut -d' ' -f1-3 /proc/loadavg >> "$work/load"
elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
python3 - "$work" "$REPS" "$elapsed" "$("$bin" --version)" > "$OUT.tmp" << 'PY'
import collections, statistics as st, sys, time, os
work, reps, elapsed, version = sys.argv[1:5]
runs = collections.defaultdict(dict)
for line in open(f"{work}/results"):
    p, arm, rep, s = line.split()
    runs[(p, int(rep))][arm] = float(s)
desc = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{work}/programs"))
load = [l.strip() for l in open(f"{work}/load")]
arms = ["stock", "daemon", "concurrent", "ahead", "hot"]
print("# How much of a cold launch a launch set can save\n")
print(f"Written by `bench/daemon/ceiling.sh` on {time.strftime('%Y-%m-%d')} ({os.cpu_count()} cores, "
      f"Linux {os.uname().release}, {version}); do not edit by hand. {int(elapsed) / 60:.1f} min.")
print(f"Load average (1, 5, 15 min) at start: {load[0]}; at end: {load[-1]}.\n")
print("Each launch timed the same way, from a Python parent (`bench/daemon/ceiling.py`): **stock** cold, no daemon; "
      "**daemon** cold, `outrider daemon` running with the program's launch set (recorded by one launch before); "
      "**concurrent** cold, another process asks for the same set (`WILLNEED`, first-touch order) from the program's "
      "start, its files opened before the drop (a prefetcher that starts at the exec and costs nothing; past the "
      "descriptors this process may hold, 20 000 here, the files are opened as they are asked for: `rg`'s 31 474); "
      "**ahead** cold, the set read in before the program starts (all a launch set can give: what it does not hold "
      "and the program's own metadata reads stay cold); **hot** again at once (the floor). "
      f"Medians of {reps} repetitions, arms in a turning order; headroom = (stock - arm) / (stock - hot), the median "
      "of each repetition's own.\n")
print("| program | stock (s) | daemon (s) | concurrent (s) | ahead (s) | hot (s) | stock / hot | daemon headroom | concurrent headroom | ahead headroom |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for p in desc:
    rs = [runs[(p, r)] for r in range(1, int(reps) + 1) if len(runs[(p, r)]) == len(arms)]
    if not rs:
        continue
    med = {a: st.median(r[a] for r in rs) for a in arms}
    head = {a: st.median((r["stock"] - r[a]) / (r["stock"] - r["hot"]) if r["stock"] > r["hot"] else 0.0 for r in rs)
            for a in ("daemon", "concurrent", "ahead")}
    print(f"| {p} | " + " | ".join(f"{med[a]:.3f}" for a in arms) + f" | {med['stock'] / med['hot']:.2f}x | "
          + " | ".join(f"{100 * head[a]:.0f}%" for a in ("daemon", "concurrent", "ahead")) + " |")
print("\n## Programs\n")
for p, d in desc.items():
    print(f"- **{p}**: {d}")
print("\n## Every repetition\n\nSeconds, " + " / ".join(arms) + ".\n")
for p in desc:
    reps_ = [runs[(p, r)] for r in range(1, int(reps) + 1)]
    print(f"- {p}: " + ", ".join("/".join(f"{r.get(a, float('nan')):.3f}" for a in arms) for r in reps_))
PY
mv "$OUT.tmp" "$OUT"
cat "$OUT"
