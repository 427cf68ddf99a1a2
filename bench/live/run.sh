#!/usr/bin/env bash
# Live benchmark suite (issue 7 "Benchmark suite"): unmodified programs,
# stock Linux vs `outrider run`, on the real kernel and disk of this
# machine. Writes bench/results/live-workloads.md. Needs root (tracefs, drop_caches,
# the memory cgroup).
#
# Workloads (WORKLOADS, default all, e.g. WORKLOADS="grep diff"):
#   reverse  4 KiB preads of a 1 GiB file, last block to first (reader.c)
#   stride   every other 4 KiB block of the 1 GiB file
#   seq      sequential 256 KiB reads of the file (must not regress)
#   random   RANDOM_READS uniformly random 4 KiB preads (must not regress > 5%)
#   grep     `grep -r` over the Linux kernel source tree (Debian linux-source)
#   diff     `diff -r` over two copies of DIFF_DIRS of that tree, written at
#            different times (different places on disk)
#   sqlite   SQLite ORDER BY c_zip (secondary index) on a TPC-C-like customer
#            table SQLITE_ROWS rows (~1 GiB), program and outrider's
#            prefetching inside a v1 memory cgroup limited to SQLITE_LIMIT
#   python   cold start of Python importing numpy, pandas, scipy, sympy
#            (a venv of PyPI packages)
#
# Method, per workload and repetition (REPS, default 3; NOREG_REPS for seq
# and random): `sync; echo 3 > /proc/sys/vm/drop_caches` before EVERY run,
# then in turn stock, outrider run 1 (fresh history database), outrider
# run 2 (the history run 1 left) — so stock and outrider alternate and
# share the machine's noise. Medians are reported; the hot-cache time
# (stock, everything resident) is the floor. seq and random also get a
# `--policy none` arm: tracing and the controller without prefetching,
# i.e. outrider's own overhead.
#
# Policy and history come from variables so the suite needs no edit when
# `auto` and `--history` land: POLICY (default: empty = what `outrider run`
# defaults to), HISTORY (default `auto`: pass `--history DB` when `outrider
# run --help` offers it; `none`: never). Without --history, run 2 is simply
# a second outrider run (no history to learn from) and the file says so.
#
# Setup is cached in DATA_DIR (default /var/tmp/outrider-bench) between
# invocations: the 1 GiB file, the unpacked kernel tree, the diff copies,
# the SQLite database, the venv. First invocation: ~5 min of setup
# (apt-get install linux-source-6.1, pip install) on top of the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-3}
NOREG_REPS=${NOREG_REPS:-5}
POLICY=${POLICY:-}
HISTORY=${HISTORY:-auto}
WORKLOADS=${WORKLOADS:-reverse stride seq random grep diff sqlite python}
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-bench}
OUT=${OUT:-bench/results/live-workloads.md}

# OUTRIDER=path: use that binary instead of building target/release/outrider.
if [ -z "${OUTRIDER:-}" ]; then
  cargo build --release --quiet -p outrider-cli
fi
bin=${OUTRIDER:-$PWD/target/release/outrider}
mkdir -p "$DATA_DIR"

# --- setup (cached) -------------------------------------------------------
. bench/live/setup.sh # the workloads (setup_*, command_of, setup_workload), cold
for w in $WORKLOADS; do setup_workload "$w"; done

# --- measurement ----------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Seconds of wall time of "$@"; exit status 0 or 1 (grep: no match, diff:
# differences) is fine, anything else fails the suite.
timed() {
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  "$@" > /dev/null || rc=$?
  t1=$(date +%s.%N)
  if [ "$rc" -gt 1 ]; then
    echo "run.sh: '$*' exited $rc" >&2
    exit 1
  fi
  echo "$t1 - $t0" | bc -l
}

policy_args=()
[ -n "$POLICY" ] && policy_args=(--policy "$POLICY")
has_history=0
if [ "$HISTORY" != none ] && "$bin" run --help | grep -q -- '--history'; then
  has_history=1
fi

# outrider run 1|2 of workload $w, rep $rep: history database per rep.
ours() {
  local run=$1 hist=()
  if [ "$has_history" = 1 ]; then
    [ "$run" = 1 ] && rm -f "$work/$w.db" "$work/$w.db-wal" "$work/$w.db-shm"
    hist=(--history "$work/$w.db")
  fi
  timed "$bin" run -q "${policy_args[@]}" "${hist[@]}" --json-file "$work/$w.r$run.$rep.json" -- "${CMD[@]}"
}

# Pages of the SQLite database resident after a run (cachestat): with the
# program and outrider's prefetching both charged to the cgroup, at most
# its limit.
resident_mib() {
  "$bin" stat --json "$db" | python3 -c 'import json,sys; print(json.load(sys.stdin)["resident_pages"]*4096/2**20)'
}

results=$work/results
: > "$results"
for w in $WORKLOADS; do
  command_of "$w"
  reps=$REPS
  case $w in seq | random) reps=$NOREG_REPS ;; esac
  for rep in $(seq 1 "$reps"); do
    cold; s=$(timed "${CMD[@]}")
    extra=""
    [ "$w" = sqlite ] && extra=" $(resident_mib)"
    echo "$w stock $rep $s$extra" >> "$results"
    for run in 1 2; do
      cold; o=$(ours $run)
      extra=""
      [ "$w" = sqlite ] && extra=" $(resident_mib)"
      echo "$w run$run $rep $o$extra" >> "$results"
    done
    line="$w rep $rep: stock $s s, outrider run 1 $(grep "^$w run1 $rep " "$results" | cut -d' ' -f4) s, run 2 $o s"
    case $w in seq | random)
      cold; n=$(timed "$bin" run -q --policy none -- "${CMD[@]}")
      echo "$w none $rep $n" >> "$results"
      line="$line, none $n s" ;;
    esac
    echo "$line" >&2
  done
  # Hot floor: everything resident (the SQLite file is read in from outside
  # the cgroup, so the limit does not evict it).
  cold
  case $w in
    sqlite) cat "$db" > /dev/null ;;
    *) timed "${CMD[@]}" > /dev/null ;;
  esac
  h=$(timed "${CMD[@]}")
  echo "$w hot 1 $h" >> "$results"
  echo "$w hot: $h s" >&2
done
[ -d "$CGROUP" ] && rmdir "$CGROUP" 2> /dev/null || true

python3 bench/live/report.py "$results" "$work" "$has_history" "$REPS/$NOREG_REPS" \
  "RANDOM_READS=$RANDOM_READS" "DIFF_DIRS=$DIFF_DIRS" "SQLITE_ROWS=$SQLITE_ROWS" \
  "SQLITE_LIMIT=${limit_bytes:-0}" "SQLITE_DB_BYTES=${db_bytes:-0}" "SQLITE_ZIP_BELOW=$SQLITE_ZIP_BELOW" \
  "PY_MODULES=$PY_MODULES" "POLICY=$POLICY" > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
