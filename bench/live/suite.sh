#!/usr/bin/env bash
# The broad live suite: real, unmodified programs a user would run (tree
# walkers over many small files, compiler and interpreter cold starts,
# SQLite in a memory cgroup smaller than its data, git on a packed clone,
# large-file tools reading sequentially, backwards and in strides with
# read and with mmap, programs under 100 ms), each timed stock and under
# `outrider run`. Writes bench/results/live.md. Needs root (tracefs,
# drop_caches, the v1 memory cgroup) and a Debian machine: it installs what
# it needs (apt-get, a venv of PyPI wheels) and builds its fixtures once in
# DATA_DIR (default /var/tmp/outrider-suite, ~3 GB; first run ~10 min more).
#
# Arms, per program and repetition (REPS, default 5; SHORT_REPS, default 7,
# for programs under 100 ms):
#   stock  the program alone, cold cache
#   hot    the program alone right after stock, no cache drop (the floor)
#   none   `outrider run --policy none --no-history` (tracing and the
#          controller without prefetching: outrider's own overhead), cold
#   run1   `outrider run` with an empty private history, cold
#   run2   `outrider run` with the history run 1 saved, cold
# Cold = `sync; echo 3 > /proc/sys/vm/drop_caches` (and the disk idle,
# bench/live/setup.sh's cold) before the run. The groups (stock hot),
# (none), (run1 run2) take turns first: repetition r starts with group r.
# Medians are reported, with speed-ups (stock / arm), the headroom captured
# ((stock - arm) / (stock - hot)), outrider's own CPU seconds
# (`outrider_cpu_s` of its --json-file), the program's CPU seconds (the
# shell's children times around the stock run) and the targets each row
# misses. Also the fixed cost: `outrider run -- true` against `true`
# (TRUE_REPS, default 20, hot cache; COLD_TRUE_REPS, default 7, cold),
# the MiB each run read from the data's disk (its `stat`, before and
# after) and the disk's sequential rate (a cold `dd` of the large file,
# DISK_REPS, default 3): stock's MiB at that rate is a floor no prefetcher
# that starts with the program can beat.
#
# PROGRAMS="tar gcc ..." selects (default: all, see suite-programs.sh);
# QUICK=1: REPS=1, SHORT_REPS=1, TRUE_REPS=5, six programs, results to
# /tmp/live-suite-quick.md; OUTRIDER=path uses that binary instead of
# building target/release/outrider; POLICY=NAME passes --policy to runs
# 1 and 2 (default: outrider's own default); OUT=file.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-suite}
. bench/live/setup.sh          # setup_tree (the kernel tree), cold
. bench/live/suite-programs.sh # the programs and their fixtures
if [ "${QUICK:-0}" = 1 ]; then
  REPS=${REPS:-1} SHORT_REPS=${SHORT_REPS:-1} TRUE_REPS=${TRUE_REPS:-5} COLD_TRUE_REPS=${COLD_TRUE_REPS:-3}
  PROGRAMS=${PROGRAMS:-$SUITE_QUICK} OUT=${OUT:-/tmp/live-suite-quick.md}
fi
REPS=${REPS:-5}
SHORT_REPS=${SHORT_REPS:-7}
TRUE_REPS=${TRUE_REPS:-20}
COLD_TRUE_REPS=${COLD_TRUE_REPS:-7}
DISK_REPS=${DISK_REPS:-3}
PROGRAMS=${PROGRAMS:-$SUITE_PROGRAMS}
OUT=${OUT:-bench/results/live.md}
POLICY=${POLICY:-}
[ "$(id -u)" = 0 ] || { echo "suite.sh: needs root (tracefs, drop_caches, cgroups)" >&2; exit 2; }
[ -d /sys/fs/cgroup/memory ] || echo "suite.sh: no cgroup-v1 memory controller: the SQLite rows are skipped" >&2

if [ -z "${OUTRIDER:-}" ]; then
  cargo build --release --quiet -p outrider-cli
fi
bin=${OUTRIDER:-$PWD/target/release/outrider}
mkdir -p "$DATA_DIR"
suite_base
# Not under /tmp: a shared machine's cleanups sweep /tmp/tmp.* there.
work=$(mktemp -d "$DATA_DIR/run.XXXXXX")
trap 'rm -rf "$work" /dev/shm/outrider-suite-out' EXIT
# A finished run's measurements are kept in $DATA_DIR/last-run (the
# previous one replaced), with the report's arguments in `report-args`:
# `python3 bench/live/suite_report.py DIR $(cat DIR/report-args)` writes
# the report again without measuring again.
mkdir -p "$work/json" "$work/hist"
started=$EPOCHREALTIME

# Where `outrider run` keeps a private history: --history FILE when
# offered, else the state directory variable.
hist_args() { # program
  if "$bin" run --help | grep -q -- '--history <'; then
    HIST=(--history "$work/hist/$1.db")
  else
    HIST=()
    export OUTRIDER_STATE_DIR=$work/hist/$1
  fi
}
policy_args=()
[ -n "$POLICY" ] && policy_args=(--policy "$POLICY")
# CPU seconds the machine has spent busy since boot (user, nice, system,
# irq, softirq); less this shell's and its children's `times` over a
# program's measurement, it is the CPU other work on the machine took.
machine_busy() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat
}

# The block device holding DATA_DIR (the whole disk) and the 512-byte
# sectors read from it since boot.
disk=$(lsblk -no PKNAME "$(df --output=source "$DATA_DIR" | tail -1)" 2> /dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$(df --output=source "$DATA_DIR" | tail -1)")
sectors_read() { awk '{ print $3 }' "/sys/block/$disk/stat" 2> /dev/null || echo 0; }

# Run "$@" in this shell (no subshell, so `times` sees its CPU), output
# discarded; sets WALL and CPU (seconds), READ_MIB (read from the disk
# meanwhile, by anything) and RC.
timed() {
  local t0 t1 s0
  times > "$work/times0"
  s0=$(sectors_read)
  t0=$EPOCHREALTIME
  RC=0
  "$@" > /dev/null 2> "$work/stderr" || RC=$?
  t1=$EPOCHREALTIME
  READ_MIB=$(awk -v a="$s0" -v b="$(sectors_read)" 'BEGIN { printf "%.1f", (b - a) * 512 / 1048576 }')
  times > "$work/times1"
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
  CPU=$(awk 'function s(t) { sub(/s$/, "", t); split(t, p, "m"); return p[1] * 60 + p[2] }
             FNR == 2 { c[FILENAME] = s($1) + s($2) }
             END { printf "%.3f", c[ARGV[2]] - c[ARGV[1]] }' "$work/times0" "$work/times1")
}

# One arm of program $p, repetition $rep: appends "p arm rep wall cpu
# read_mib" to
# the results, or returns 1 (with FAILED set) when the command failed
# (exit status above 1: grep and diff use 1 for "no match"/"differences").
arm() {
  local a=$1 json=$work/json/$p.$1.$rep.json
  rm -rf /dev/shm/outrider-suite-out/*
  case $a in
    stock) cold; timed "${CMD[@]}" ;;
    hot)
      [ "$TAGS" = cgroup ] && cat "$db" > /dev/null # read outside the cgroup: stays resident
      timed "${CMD[@]}" ;;
    none) cold; timed "$bin" run -q --policy none --no-history --json-file "$json" -- "${CMD[@]}" ;;
    run1 | run2)
      if [ "$a" = run1 ]; then
        rm -rf "$work/hist/$p".db* "$work/hist/$p"
        mkdir -p "$work/hist/$p"
      fi
      cold; timed "$bin" run -q "${policy_args[@]}" "${HIST[@]}" --json-file "$json" -- "${CMD[@]}" ;;
  esac
  if [ "$RC" -gt 1 ]; then
    FAILED="$a exited $RC: $(tail -c 300 "$work/stderr" | tr '\n' ' ')"
    return 1
  fi
  echo "$p $a $rep $WALL $CPU $READ_MIB" >> "$work/results"
}

# Every arm of program $p, REPS_OF repetitions, the groups in turn.
measure() {
  local groups=("stock hot" "none" "run1 run2") rep g k
  for rep in $(seq 1 "$REPS_OF"); do
    for k in 0 1 2; do
      g=${groups[$(((rep - 1 + k) % 3))]}
      for a in $g; do arm "$a" || return 1; done
    done
    echo "suite: $p rep $rep: $(awk -v p="$p" -v r="$rep" '$1 == p && $3 == r { printf "%s %.3f  ", $2, $4 }' "$work/results")" >&2
  done
}

: > "$work/results"
: > "$work/programs"
: > "$work/skipped"
for p in $PROGRAMS; do
  suite_program "$p"
  if [ -n "$SKIP" ]; then
    echo "suite: skipping $p: $SKIP" >&2
    echo "$p	$SKIP" >> "$work/skipped"
    continue
  fi
  hist_args "$p"
  load0=$(cut -d' ' -f1 /proc/loadavg)
  busy0=$(machine_busy) t0=$EPOCHREALTIME
  times > "$work/own0"
  FAILED=""
  if ! measure; then
    echo "suite: $p failed: $FAILED" >&2
    echo "$p	failed: $FAILED" >> "$work/skipped"
    sed -i "/^$p /d" "$work/results"
    continue
  fi
  times > "$work/own1"
  other=$(awk -v b0="$busy0" -v b1="$(machine_busy)" -v t0="$t0" -v t1="$EPOCHREALTIME" \
    'function s(t) { sub(/s$/, "", t); split(t, p, "m"); return p[1] * 60 + p[2] }
     { c[FILENAME] += s($1) + s($2) }
     END { printf "%.2f", (b1 - b0 - (c[ARGV[2]] - c[ARGV[1]])) / (t1 - t0) }' "$work/own0" "$work/own1")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$CAT" "$TAGS" "$REPS_OF" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$other" "$DESC" >> "$work/programs"
done
[ -d "$SUITE_CGROUP" ] && rmdir "$SUITE_CGROUP" 2> /dev/null || true

# Fixed cost: a program that does no I/O (/bin/true, exec'd either way),
# hot cache, the arms alternated; each outrider run's background history
# save is awaited (at most 5 s) before the next run.
# (The history saver is a fork named outrider; the detached process
# keeping a parked tracing instance, 10 s, calls itself outrider-park.)
saved() { local k; for k in $(seq 500); do pgrep -x outrider > /dev/null || break; sleep 0.01; done; }
hist_args true
"$bin" run -q "${HIST[@]}" -- /bin/true # a history to load on the timed runs
saved
: > "$work/fixed"
for rep in $(seq 1 "$TRUE_REPS"); do
  timed /bin/true
  echo "true plain $rep $WALL $CPU" >> "$work/fixed"
  timed "$bin" run -q --no-history --json-file "$work/json/true.nohist.$rep.json" -- /bin/true
  echo "true nohist $rep $WALL $CPU" >> "$work/fixed"
  # Again at once: a run right after another.
  timed "$bin" run -q --no-history -- /bin/true
  echo "true again $rep $WALL $CPU" >> "$work/fixed"
  sleep 0.3
  timed "$bin" run -q "${HIST[@]}" --json-file "$work/json/true.hist.$rep.json" -- /bin/true
  echo "true hist $rep $WALL $CPU" >> "$work/fixed"
  saved
done

# The same cold, as every arm of the programs above is: outrider's own
# executable (3 MB; `run` only, src/front.rs) is read from disk too.
# `outrider run --help` alone is the cost of loading it.
for rep in $(seq 1 "$COLD_TRUE_REPS"); do
  cold; timed /bin/true
  echo "true coldplain $rep $WALL $CPU" >> "$work/fixed"
  cold; timed "$bin" run --help
  echo "true coldload $rep $WALL $CPU" >> "$work/fixed"
  cold; timed "$bin" run -q --no-history -- /bin/true
  echo "true coldnohist $rep $WALL $CPU" >> "$work/fixed"
done

# The disk's sequential rate: the large file read cold in 8 MiB requests.
: > "$work/disk"
suite_file
for rep in $(seq 1 "$DISK_REPS"); do
  cold; timed dd if="$big" of=/dev/null bs=8M
  echo "$rep $WALL $READ_MIB" >> "$work/disk"
done

elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
report_args=("reps=$REPS" "short_reps=$SHORT_REPS" "true_reps=$TRUE_REPS" "cold_true_reps=$COLD_TRUE_REPS"
  "policy=$POLICY" "elapsed_s=$elapsed" "quick=${QUICK:-0}" "outrider=$("$bin" --version | tr ' ' '_')"
  "sql_limit=${sql_limit:-0}" "db_bytes=${db_bytes:-0}" "file_mib=$SUITE_FILE_MIB"
  "load_end=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '_')")
python3 bench/live/suite_report.py "$work" "${report_args[@]}" > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
rm -rf "$work/hist" "$DATA_DIR/last-run"
printf '%s\n' "${report_args[@]}" > "$work/report-args"
mv "$work" "$DATA_DIR/last-run"
cat "$OUT"
