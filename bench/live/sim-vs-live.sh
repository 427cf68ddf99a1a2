#!/usr/bin/env bash
# Does the simulator predict the live run? For each live workload
# (bench/live/setup.sh: reverse stride seq random grep diff sqlite python)
# and each policy (auto, stride, diskseen):
#
#   1. record the workload once, hot (after one unrecorded run): `outrider
#      record --out W.otr -- CMD`. Hot, so the recorded gaps between reads
#      are the program's own time: the simulator replays them as think
#      time and adds the modelled I/O; a cold recording's gaps would
#      include the I/O waits too, charged twice (measured: the simulated
#      elapsed times came out 3-14x the live ones)
#   2. simulate the recording on this machine's fitted device model, with
#      the live runtime's do-no-harm guard (the same driver code):
#      `outrider sim --policy P --trace W.otr --device calibrated
#       --cache MEM --guard live --json` (MEM = MemAvailable, the live page
#      cache; the guard's budget is a quarter of it, as `outrider run`'s
#      default; auto with --runs 2: its run 2 replays run 1's history)
#   3. run it live, cold before each run: `outrider run --policy P
#      --history DB --json-file FILE -- CMD` (auto: twice with one fresh
#      history database, run 2 compared; the others once)
#
# and tabulates live vs simulated coverage, waste (cost and
# prefetch_accuracy) and elapsed time, flagging rows whose coverage
# differs by more than 0.05 or elapsed time by more than 25%.
#
# Why a row misses, measured: each workload also runs with `--policy none`
# both ways (live cold, with tracing: the stock program as outrider sees
# it; simulated on the same model). none's sim/live ratio is the error of
# the device model and the recording alone, before any prefetching; the
# policy's speed-up over none is compared separately. For coverage, the
# live run's own counters say where the pages went: the kernel's
# readahead (live runs keep it on; the simulated policy runs alone),
# prefetches that arrived late, were dropped or could not be translated.
#
# The device model comes from `outrider calibrate` on the data file's
# disk, measured again at each invocation (stored in the state directory;
# CALIBRATE=reuse takes the stored one). Needs root (tracefs,
# drop_caches, the memory cgroup).
#
# Settings: WORKLOADS (default all), POLICIES (default "auto stride
# diskseen"), QUICK=1 (reverse, stride and random over a 256 MiB file and
# 5000 random reads: a check that the script works, minutes not hours),
# DATA_DIR (default /var/tmp/outrider-bench), OUT (default
# bench/results/sim-vs-live.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-bench}
POLICIES=${POLICIES:-auto stride diskseen}
if [ "${QUICK:-0}" = 1 ]; then
  WORKLOADS=${WORKLOADS:-reverse stride random}
  FILE_BYTES=${FILE_BYTES:-268435456}
  RANDOM_READS=${RANDOM_READS:-5000}
fi
OUT=${OUT:-bench/results/sim-vs-live.md}

# The metric names of `sim --json` and `run --json` (DESIGN.md "Metrics"),
# in one place: column label → JSON field.
FIELDS='{"coverage": "coverage", "accuracy": "prefetch_accuracy", "cost": "cost", "elapsed": "elapsed_s"}'
# Flags: |live - sim| coverage above this, elapsed above this fraction.
COVERAGE_TOL=0.05
ELAPSED_TOL=0.25

if [ -z "${OUTRIDER:-}" ]; then
  cargo build --release --quiet -p outrider-cli
fi
bin=${OUTRIDER:-$PWD/target/release/outrider}
mkdir -p "$DATA_DIR"
. bench/live/setup.sh # LIVE_WORKLOADS, setup_workload, command_of, cold
WORKLOADS=${WORKLOADS:-$LIVE_WORKLOADS}
for w in $WORKLOADS; do setup_workload "$w"; done

# Runs compared per policy: auto learns its history in run 1.
runs_of() { [ "$1" = auto ] && echo 2 || echo 1; }

started=$(date +%s)
# The device model of the data's disk.
[ -n "${data:-}" ] || setup_file
calib=(calibrate "$data" --bytes 256MiB)
[ "${CALIBRATE:-}" = reuse ] || calib+=(--force)
"$bin" "${calib[@]}" >&2
mem_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
# The host under this virtio disk caches what was read recently: a cold
# (guest) read of the data file, twice in a row.
host_cache=""
for i in 1 2; do
  cold
  t0=$(date +%s.%N)
  cat "$data" > /dev/null
  host_cache+="$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)") "
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for w in $WORKLOADS; do
  command_of "$w"
  cold
  "${CMD[@]}" > /dev/null || [ $? -le 1 ]
  "$bin" record --out "$work/$w.otr" -- "${CMD[@]}" > /dev/null || [ $? -le 1 ]
  "$bin" sim --policy none --trace "$work/$w.otr" --device "calibrated:$data" \
    --cache "${mem_kib}KiB" --json | tail -1 > "$work/$w.none.sim.json"
  cold
  "$bin" run -q --policy none --no-history \
    --json-file "$work/$w.none.live.json" -- "${CMD[@]}" > /dev/null || [ $? -le 1 ]
  for p in $POLICIES; do
    n=$(runs_of "$p")
    "$bin" sim --policy "$p" --trace "$work/$w.otr" --device "calibrated:$data" \
      --cache "${mem_kib}KiB" --guard live --runs "$n" --json | tail -1 > "$work/$w.$p.sim.json"
    rm -f "$work/$w.$p.db"*
    for r in $(seq 1 "$n"); do
      cold
      "$bin" run -q --policy "$p" --history "$work/$w.$p.db" --wait-for-save \
        --json-file "$work/$w.$p.live.json" -- "${CMD[@]}" > /dev/null || [ $? -le 1 ]
    done
    echo "sim-vs-live: $w $p done ($(($(date +%s) - started)) s)" >&2
  done
done
model=$("$bin" sim --policy none --workload seq:size=4KiB --device "calibrated:$data" --json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
took=$(($(date +%s) - started))

python3 - "$work" "$FIELDS" "$COVERAGE_TOL" "$ELAPSED_TOL" "$model" "$took" \
  "$WORKLOADS" "$POLICIES" "$(uname -r)" "$(nproc)" "$mem_kib" "$host_cache" > "$OUT" <<'PY'
import datetime, json, os, sys
work, fields, cov_tol, el_tol, model, took, workloads, policies, kernel, cores, mem, host_cache = sys.argv[1:]
host_cache = host_cache.split()
fields = json.loads(fields)
cov_tol, el_tol = float(cov_tol), float(el_tol)
def load(path):
    with open(path) as f:
        v = json.load(f)
    out = {k: float(v[name]) for k, name in fields.items()}
    out["stats"] = v.get("stats") or {}
    return out
def why(w, p, live, sim, ratio):
    """The measured causes of a flagged row, from the none runs and the
    live run's counters."""
    causes = []
    ln = load(os.path.join(work, f"{w}.none.live.json"))
    sn = load(os.path.join(work, f"{w}.none.sim.json"))
    if abs(ratio - 1) > el_tol:
        model = sn["elapsed"] / ln["elapsed"]
        sp_live = ln["elapsed"] / live["elapsed"]
        sp_sim = sn["elapsed"] / sim["elapsed"]
        causes.append(f"elapsed: with no prefetching the model is already {model:.2f}x the live time "
                      f"(none: sim {sn['elapsed']:.2f} s, live {ln['elapsed']:.2f} s); "
                      f"speed-up over none: live {sp_live:.2f}x, sim {sp_sim:.2f}x")
    if abs(live["coverage"] - sim["coverage"]) > cov_tol:
        st = live["stats"]
        demand = max(st.get("demand_pages", 0), 1)
        parts = [f"{k} {st.get(k, 0) / demand:.2f}" for k in
                 ("kernel_readahead_pages", "late_pages", "dropped_budget_pages", "dropped_queue_pages")]
        causes.append(f"coverage: live pages per demand page: {', '.join(parts)}; "
                      f"untranslated requests {st.get('untranslated_requests', 0)}")
    return "; ".join(causes)
print("# Simulator vs live run")
print()
print(f"Written by `bench/live/sim-vs-live.sh` on {datetime.date.today()} (kernel {kernel}, "
      f"{cores} cores, MemAvailable {int(mem) // 1024} MiB, {took} s); do not edit by hand.")
print()
print("Each workload is recorded once, hot (`outrider record`; its gaps are the program's own time),")
print("replayed in the simulator with think timing on the")
print("device model `outrider calibrate` fitted to this disk and the live guard (`--guard live`),")
print("and run live cold (`outrider run`).")
print("`auto` compares run 2 (its history from run 1); the others run 1.")
print(f"Device model: `{model}`.")
print()
print(f"A row is flagged (**x**) when coverage differs by more than {cov_tol} or elapsed time by")
print(f"more than {el_tol:.0%} (sim / live - 1).")
print()
print("| workload | policy | run | coverage live | sim | accuracy live | sim | cost live | sim | elapsed live s | sim s | sim/live | flag |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
flagged = 0
reasons = []
for w in workloads.split():
    for p in policies.split():
        live = load(os.path.join(work, f"{w}.{p}.live.json"))
        sim = load(os.path.join(work, f"{w}.{p}.sim.json"))
        ratio = sim["elapsed"] / live["elapsed"] if live["elapsed"] > 0 else float("inf")
        off = abs(live["coverage"] - sim["coverage"]) > cov_tol or abs(ratio - 1) > el_tol
        flagged += off
        if off:
            reasons.append(f"- **{w} / {p}**: {why(w, p, live, sim, ratio)}.")
        run = 2 if p == "auto" else 1
        print(f"| {w} | {p} | {run} | {live['coverage']:.3f} | {sim['coverage']:.3f} "
              f"| {live['accuracy']:.3f} | {sim['accuracy']:.3f} | {live['cost']:.3f} | {sim['cost']:.3f} "
              f"| {live['elapsed']:.2f} | {sim['elapsed']:.2f} | {ratio:.2f} | {'**x**' if off else ''} |")
print()
print(f"{flagged} of {len(workloads.split()) * len(policies.split())} rows flagged.")
print()
print("## Why the flagged rows miss")
print()
print("Measured in the same run: `none` live (cold, traced) and simulated on the same model and")
print("recording; the live run's counters per demand page (kernel readahead: pages the kernel's")
print("own readahead brought in, which live runs keep and the simulated policy does not have;")
print("late: prefetched pages the program reached before they arrived; dropped: over the memory")
print("budget or the queue bound). The live disk is a virtio disk whose host caches what was")
print(f"read recently (a guest-cold `cat` of the data file, twice in a row at the start of this run:")
print(f"{host_cache[0]} s, then {host_cache[1]} s): the model is fitted once, the live runs re-read the same data.")
print()
for r in reasons:
    print(r)
PY
echo "sim-vs-live: wrote $OUT in $took s" >&2
