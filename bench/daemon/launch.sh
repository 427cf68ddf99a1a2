#!/usr/bin/env bash
# Cold launches of real programs with `outrider daemon` running, against
# the same launches with no daemon: no `outrider run`, no wrapper, the
# programs started as a user starts them. Writes bench/results/daemon.md.
#
# Per program (bench/live/suite-programs.sh's fixtures and commands), one
# recording launch with the daemon running, then REPS (default 5)
# repetitions of:
#   stock   the daemon stopped, cold cache
#   daemon  the daemon running (started before the cold drop, its launch
#           set of this program from the launch before), cold cache; the
#           daemon is stopped once it saved this launch's set
#   hot     the program again at once, no daemon, no cache drop (the floor)
# Cold = bench/live/setup.sh's cold (sync, drop_caches, the disk idle).
# The daemon watches every program (watch = []), as installed. Reported:
# medians, speed-up stock / daemon and headroom captured (stock - daemon)
# / (stock - hot) as medians of each repetition's own ratio, and the
# daemon's resident memory and CPU from `outrider status --json`.
# `wc` (a 256 MiB sequential read) is a program a launch set cannot help:
# it measures the daemon's cost; so do `sqlite-other`, `pread-other`,
# `mmap-other` and `wc-other`, whose sets are learnt from another query or
# file (FIRST_CMD) and are mostly the wrong pages. Needs root. PROGRAMS="gcc node" selects;
# LAUNCH_CAP=MiB, FILES_MAX=N, JUDGE_MIB=MiB and DETACH_FAULTS=false set
# launch_cap_mib, launch_files_max, judge_from_memory_mib and
# detach_idle_faults;
# OUT=file writes elsewhere; STATUS_DIR=dir keeps each launch's
# `outrider status --json` there (PROGRAM-REP.json, PROGRAM-first.json). AS_USER=name runs every program (launches
# and the day) as that user, as an unprivileged user starts it
# (`setpriv`: its uid, gid and groups; then `env`: HOME=/tmp, git told
# to trust the root-owned clone): the daemon's replays for it open each
# file by its path as that user first (`outrider_sys::access`), which a
# replay for root skips. `setpriv` and `env` are the bench's way into the
# user, not part of the program: the daemon does not watch them, so each
# program is its user's own launch, as from that user's shell (watched,
# `setpriv`'s launch, root's, holds the program's reads, and the
# program's own replay leaves them to root's). A program that fails as
# that user is skipped.
#
# Then a day in miniature: DAY_PROGRAMS (a dozen) run one after another
# as one script, DAY_REPS (default 5) repetitions of, alternating which
# goes first:
#   stock    the script once, cold, no daemon; then hot: once more at once
#   daemon   a fresh daemon (empty state): the script cold (day 1, it
#            learns), its launch sets saved, caches dropped, the script
#            again (day 2, measured)
# DAY_PROGRAMS="" skips it.
#
# Then programs the daemon cannot help (their data cached, or no I/O at
# all), the daemon running (it saw each once: rg-tree cold, so its set
# is recorded and each exec replays it, the others hot) against stopped,
# and stopped again (control: the measurement's own noise), the order
# turning, UNHELPED_REPS (default 15; with 11, cpu-python's ratio was
# 0.88x in one bench and 0.93x-1.09x in A/Bs of 5-20 alternations after
# it) each, hot: any difference is the daemon's cost. Each arm waits a second, keeps a core busy 0.3 s, then
# runs the program UNHELPED_RUNS (default 5) times in a row, its time
# the median of those: this shared VM's speed drifts by tens of percent
# from one run to the next (stopped against stopped, one run each:
# 0.64x-1.78x in 15 pairs; the medians of 5 runs each: 0.91x-1.05x in
# 8 pairs). exec-storm is the worst case for
# a daemon that acts at every exec: 300 execs of /bin/true in a loop;
# rg-unseen the same rg as rg-tree, as an executable never seen (each
# run is a new launch, followed until it is judged to read from memory);
# grep-tree, du-tree, tar-tree and git-log are what a user runs over a
# tree in memory (one thread's search, a metadata walk, an archive to a
# pipe, a history read), none of them tuned for; make-c is a build (make
# -B -j2 of 41 small C files and their link: ~90 execs of gcc, cc1, as,
# collect2 and ld).
# UNHELPED="" skips it.
#
# Then the daemon on a busy machine: two busy loops keep both cores
# busy (PSI cpu `some` well over cpu_busy_pct) from 11 s before a fresh
# daemon's day 1 to the end of its day 2 (caches dropped before each);
# the daemon's CPU over that stretch against its cap (cpu_max_pct, 5% of
# a core), and its launches left alone over the cap. BUSY=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-suite}
. bench/live/setup.sh
# The SQLite programs run with no memory cgroup, as a user runs sqlite3:
# the replay's pages are charged to the daemon's cgroup, not to the
# program's, so a limit on the program would not bound them and the arms
# would not compare.
SUITE_NO_CGROUP=1
. bench/live/suite-programs.sh
REPS=${REPS:-5}
SHORT_REPS=$REPS
PROGRAMS=${PROGRAMS:-"gcc gxx rustc java node python python-bare perl file git-status wc"}
DAY_PROGRAMS=${DAY_PROGRAMS-"file perl python-bare git-status gcc gxx node python java rustc find rg"}
DAY_REPS=${DAY_REPS:-5}
UNHELPED=${UNHELPED-"exec-storm cpu-python sha-cached rg-tree rg-unseen grep-tree du-tree tar-tree git-log make-c"}
UNHELPED_REPS=${UNHELPED_REPS:-15}
UNHELPED_RUNS=${UNHELPED_RUNS:-5}
OUT=${OUT:-bench/results/daemon.md}
[ "$(id -u)" = 0 ] || { echo "launch.sh: needs root (the daemon traces the kernel)" >&2; exit 2; }
[ -z "${AS_USER:-}" ] || id -u "$AS_USER" > /dev/null 2>&1 || { echo "launch.sh: AS_USER=$AS_USER: no such user" >&2; exit 2; }
cargo build --release --quiet -p outrider-cli
bin=$PWD/target/release/outrider
mkdir -p "$DATA_DIR"
suite_base
work=$(mktemp -d "$DATA_DIR/daemon-bench.XXXXXX")
me=launch.sh
. bench/daemon/daemon.sh
trap 'stop_daemon; rm -rf "$work" /dev/shm/outrider-suite-out' EXIT
[ -z "${AS_USER:-}" ] || echo "$AS_USER" > "$work/as-user"
# With AS_USER, suite_program's commands run as that user, writing to an
# output directory anyone may write to.
as_user() {
  [ -n "${AS_USER:-}" ] || return 0
  local u=(setpriv --reuid="$AS_USER" --regid="$(id -g "$AS_USER")" --init-groups --
    env HOME=/tmp GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*')
  CMD=("${u[@]}" "${CMD[@]}")
  [ ${#FIRST_CMD[@]} = 0 ] || FIRST_CMD=("${u[@]}" "${FIRST_CMD[@]}")
  mkdir -p /dev/shm/outrider-suite-out
  chmod 1777 /dev/shm/outrider-suite-out
}
# Launches measure the replay at each exec alone: no successor
# prediction, which would learn this script's own order (cold's sync,
# lsblk, df, ... then the program) and read the program's set before its
# exec. The day is a routine, and the programs it cannot help measure
# the daemon's cost as installed: there it is on, as by default.
cat > "$work/daemon.toml" << EOF
state_dir = "$work/state"
launch_window_s = 3
save_interval_s = 0.2
successor_prefetch = false
${LAUNCH_CAP:+launch_cap_mib = $LAUNCH_CAP}
${FILES_MAX:+launch_files_max = $FILES_MAX}
${JUDGE_MIB:+judge_from_memory_mib = $JUDGE_MIB}
${DETACH_FAULTS:+detach_idle_faults = $DETACH_FAULTS}
${AS_USER:+exclude = [\"$(readlink -f "$(command -v setpriv)")\", \"$(readlink -f "$(command -v env)")\"]}
EOF
sed '/^successor_prefetch/d' "$work/daemon.toml" > "$work/day.toml"
conf=$work/daemon.toml
# The launch's set is saved once its window (3 s) ended and the next
# save (0.2 s) ran; other programs' launches are saved too (the daemon
# watches every program), so the wait is by time.
wait_saved() { sleep 3.6; }
spin() { # keep this core busy $1 ms, no exec
  local end=$((${EPOCHREALTIME/./} + $1 * 1000))
  while ((${EPOCHREALTIME/./} < end)); do :; done
}
# One launch with the daemon running; appends its time under $1 (or
# nothing for the recording launch, FIRST_CMD when the program has one)
# and the daemon's memory and CPU. A program with a FIRST_CMD has each
# measured launch find the state its recording left, so each replays
# the set learnt from the other command.
daemon_launch() {
  local run=("${CMD[@]}")
  if [ ${#FIRST_CMD[@]} -gt 0 ]; then
    if [ -z "$1" ]; then
      run=("${FIRST_CMD[@]}")
    else
      rm -rf "$work/state"; cp -a "$work/first-state" "$work/state"
    fi
  fi
  start_daemon
  cold
  timed "${run[@]}"
  [ -n "$1" ] && echo "$p daemon $1 $WALL" >> "$work/results"
  wait_saved
  status > "$work/status.json"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[2])); print(sys.argv[1], s["rss_bytes"], s["cpu_s"], s["uptime_s"])' "$p" "$work/status.json" >> "$work/usage"
  [ -z "${STATUS_DIR:-}" ] || cp "$work/status.json" "$STATUS_DIR/$p-${1:-first}.json"
  stop_daemon
  [ -n "$1" ] || [ ${#FIRST_CMD[@]} = 0 ] || { rm -rf "$work/first-state"; cp -a "$work/state" "$work/first-state"; }
}
: > "$work/results"
: > "$work/usage"
: > "$work/programs"
started=$EPOCHREALTIME
cut -d' ' -f1-3 /proc/loadavg > "$work/load"
for p in $PROGRAMS; do
  suite_program "$p"
  as_user
  # Once before it is measured: a program that fails as AS_USER is not
  # (exit status 2 or more, or 1 with an error message: rg and grep exit
  # with 1 when nothing matched).
  if [ -z "$SKIP" ] && [ -n "${AS_USER:-}" ]; then
    rc=0; "${CMD[@]}" > /dev/null 2> "$work/as-user-err" || rc=$?
    if [ "$rc" -ge 2 ] || { [ "$rc" = 1 ] && [ -s "$work/as-user-err" ]; }; then
      SKIP="fails as $AS_USER (exit $rc): $(tail -1 "$work/as-user-err")"
    fi
  fi
  [ -n "$SKIP" ] && { echo "launch.sh: skipping $p: $SKIP" >&2; continue; }
  printf '%s\t%s\t%s\n' "$p" "$CAT" "$DESC" >> "$work/programs"
  rm -f /dev/shm/outrider-suite-out/* 2> /dev/null || true
  daemon_launch "" # records the first launch set
  for rep in $(seq 1 "$REPS"); do
    if [ $((rep % 2)) = 1 ]; then
      cold; timed "${CMD[@]}"; echo "$p stock $rep $WALL" >> "$work/results"
      timed "${CMD[@]}"; echo "$p hot $rep $WALL" >> "$work/results"
      daemon_launch "$rep"
    else
      daemon_launch "$rep"
      cold; timed "${CMD[@]}"; echo "$p stock $rep $WALL" >> "$work/results"
      timed "${CMD[@]}"; echo "$p hot $rep $WALL" >> "$work/results"
    fi
    echo "launch.sh: $p rep $rep: $(awk -v p="$p" -v r="$rep" '$1 == p && $3 == r { printf "%s %.3f  ", $2, $4 }' "$work/results")" >&2
  done
done
# The daemon's CPU so far (ms, its exited threads' included; 0 when it
# is stopped), in clock ticks of 10 ms. Read by the shell itself: an
# exec here, in the running arm only, would be a launch the daemon acts
# on right before the timed run.
daemon_cpu_ms() {
  local f
  if [ -n "$daemon_pid" ] && read -r -a f < /proc/"$daemon_pid"/stat 2> /dev/null; then
    echo $(((f[13] + f[14]) * 10))
  else
    echo 0
  fi
}
# The day: each program of DAY_PROGRAMS once, in order; appends
# "arm rep program wall daemon_cpu_ms" (the daemon's CPU during the
# program's run) to $work/day.
day() { # arm rep
  local q c0
  for q in $DAY_PROGRAMS; do
    suite_program "$q"
    as_user
    [ -n "$SKIP" ] && continue
    rm -rf /dev/shm/outrider-suite-out/* 2> /dev/null || true
    c0=$(daemon_cpu_ms)
    timed "${CMD[@]}"
    echo "$1 $2 $q $WALL $(($(daemon_cpu_ms) - c0))" >> "$work/day"
  done
}
# Stock takes the daemon arm's steps with no daemon: the script cold
# once, unmeasured, the same wait, then cold and measured, then hot.
# Measured straight after the other arm instead, stock had an unfair
# start: the same steps with no daemon at all were slower on the
# script's first programs than that (`perl` 0.65x, `file` 0.72x of it;
# medians of 7, caches dropped the same way), and the daemon was
# charged for it.
day_stock() { # rep
  cold; day stock1 "$1"
  wait_saved
  cold; day stock "$1"; day hot "$1"
}
day_daemon() { # rep
  rm -rf "$work/state"
  conf=$work/day.toml
  start_daemon
  cold; day daemon1 "$1"
  wait_saved
  cold; day daemon "$1"
  status | python3 -c 'import json,sys; s=json.load(sys.stdin); print("day", s["rss_bytes"], s["cpu_s"], s["uptime_s"], s["status"]["successors"]["predicted"], s["status"]["successors"]["hits"], s["status"]["successors"]["misses"])' >> "$work/day-usage"
  # Again once day 2's launches were saved: the daemon trims its heap
  # when no launch is recorded.
  wait_saved
  status | python3 -c 'import json,sys; print("day", json.load(sys.stdin)["rss_bytes"])' >> "$work/day-saved"
  stop_daemon
  conf=$work/daemon.toml
}
: > "$work/day"
: > "$work/day-usage"
: > "$work/day-saved"
for q in $DAY_PROGRAMS; do suite_program "$q"; done # fixtures and packages first
for rep in $(seq 1 "$DAY_REPS"); do
  [ -n "$DAY_PROGRAMS" ] || break
  if [ $((rep % 2)) = 1 ]; then
    day_stock "$rep"; day_daemon "$rep"
  else
    day_daemon "$rep"; day_stock "$rep"
  fi
  echo "launch.sh: day rep $rep: $(awk -v r="$rep" '$2 == r { t[$1] += $4 } END { for (a in t) printf "%s %.2f  ", a, t[a] }' "$work/day")" >&2
done
# Programs the daemon cannot help: "arm rep program wall daemon_cpu_ms"
# (the daemon's CPU during the run) to $work/unhelped.
unhelped_cmd() {
  case $1 in
    exec-storm) CMD=(sh -c 'for i in $(seq 300); do /bin/true; done') ;;
    cpu-python) CMD=(/usr/bin/python3 -c 'sum(i * i for i in range(3 * 10**6))') ;;
    sha-cached) CMD=(sha256sum "$DATA_DIR/unhelped-64m") ;;
    rg-tree) suite_install rg:ripgrep; suite_tree; CMD=(rg -uu -F -e outrider-suite-no-such-string "$src") ;;
    rg-unseen) unhelped_cmd rg-tree ;; # run as copies: fresh_copies, copy_cmd
    grep-tree) suite_tree; CMD=(grep -r -F -e outrider-suite-no-such-string "$src") ;;
    du-tree) suite_tree; CMD=(du -s "$src") ;;
    tar-tree) suite_tree; CMD=(sh -c 'tar -cf - "$1" | wc -c' sh "$src") ;;
    git-log) suite_install git:git; suite_git; CMD=(git -C "$repo" log --stat -n 300) ;;
    make-c) suite_install gcc:gcc; make_project; CMD=(make -s -B -j2 -C "$DATA_DIR/make-c") ;;
  esac
}
# make-c's project: 40 files of a function each and a main, built with
# -O1 and linked.
make_project() {
  local d=$DATA_DIR/make-c i
  [ -f "$d/.complete" ] && return 0
  rm -rf "$d"; mkdir -p "$d"
  for i in $(seq 40); do
    printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint f%d(int x) { char b[64]; snprintf(b, 64, "%%d", x); return strlen(b) + atoi(b); }\n' "$i" > "$d/f$i.c"
  done
  printf 'int main(void) { return 0; }\n' > "$d/main.c"
  printf 'OBJ := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJ)\n\tgcc -o $@ $^\n%%.o: %%.c\n\tgcc -O1 -c $< -o $@\n' > "$d/Makefile"
  touch "$d/.complete"
}
# rg-unseen runs rg as an executable the daemon never saw: a fresh copy
# of it per run (a launch is keyed by its executable's path), made
# before the arm starts, as copies an exec would make the daemon act on.
fresh_copies() { # program
  [ "$1" = rg-unseen ] || return 0
  rm -rf "$work/unseen"; mkdir -p "$work/unseen"
  local k
  for k in $(seq 1 "$UNHELPED_RUNS"); do cp "$(command -v rg)" "$work/unseen/rg-$k"; done
}
copy_cmd() { # program run
  [ "$1" = rg-unseen ] && CMD[0]=$work/unseen/rg-$2
  return 0
}
: > "$work/unhelped"
if [ -n "$UNHELPED" ]; then
  [ -f "$DATA_DIR/unhelped-64m" ] || head -c 64M /dev/urandom > "$DATA_DIR/unhelped-64m"
  rm -rf "$work/state"
  conf=$work/day.toml
  start_daemon
  for q in $UNHELPED; do # seen once; rg-tree cold, so it is recorded
    [ "$q" = rg-unseen ] && continue
    unhelped_cmd "$q"
    [ "$q" = rg-tree ] && cold
    timed "${CMD[@]}"
  done
  wait_saved
  stop_daemon
  for rep in $(seq 1 "$UNHELPED_REPS"); do
    for q in $UNHELPED; do
      unhelped_cmd "$q"
      timed "${CMD[@]}" # hot
      # The order of the arms turns with each repetition.
      case $((rep % 3)) in
        1) arms="stopped running control" ;;
        2) arms="running control stopped" ;;
        0) arms="control stopped running" ;;
      esac
      for arm in $arms; do
        # Started a second before: its own start-up is not what is
        # measured. Both arms wait that second, then keep a core busy
        # 0.3 s right before the run: a run after an idle second was ~5%
        # slower than one right after another run, daemon or not (a
        # python3 loop sleeping 0.1 s at a time in the background "cost"
        # cpu-python 0.95x); the running arm alone used to wait.
        fresh_copies "$q"
        [ "$arm" = running ] && start_daemon
        sleep 1; spin 300
        for k in $(seq 1 "$UNHELPED_RUNS"); do
          copy_cmd "$q" "$k"
          c0=$(daemon_cpu_ms)
          timed "${CMD[@]}"
          echo "$arm $rep $q $WALL $(($(daemon_cpu_ms) - c0))" >> "$work/unhelped"
        done
        [ "$arm" = running ] && stop_daemon
      done
    done
    echo "launch.sh: cannot help rep $rep: $(awk -v r="$rep" '$2 == r { printf "%s %s %.3f  ", $3, $1, $4 }' "$work/unhelped")" >&2
  done
fi
# Then the time the daemon's eBPF programs ran inside each of them (the
# kernel's own count, kernel.bpf_stats_enabled on for this pass only:
# it adds a clock read or two to every run of every program), one run
# each with the daemon running: "program bpf_ns runs wall lost" to
# $work/unhelped-bpf.
# Each descriptor read on its own: one the daemon closes after the glob
# (a file its replay opened) is skipped, where awk given the list exited
# 2 and, under pipefail, ended the bench. A program's three fields are
# taken from one descriptor's fdinfo only (each ends with "--").
bpf_progs() { # the daemon's programs now: "prog_id run_time_ns run_cnt" each
  local f
  for f in /proc/"$daemon_pid"/fdinfo/*; do cat "$f" 2> /dev/null || true; echo --; done |
    awk '$1 == "--" { id = ""; t = "" } $1 == "prog_id:" { id = $2 } $1 == "run_time_ns:" { t = $2 }
         $1 == "run_cnt:" && id != "" && t != "" { print id, t, $2 }' | sort -u -k1,1n
}
# Run time (ns) and runs between two bpf_progs lists ($1, $2): a program
# in both counts its difference, one attached in between all its runs.
# One detached in between (the daemon detaches its page-read programs
# while no launch is followed) took its runs after $1 with it: "lost N"
# says how many programs did, the sum then a lower bound. The kernel's
# counts only grow; one seen lower in $2 (a run of 2026-12-07 reported
# git-log at -14 768 runs) is counted lost, not negative.
bpf_time() {
  awk 'NR == FNR { t[$1] = $2; n[$1] = $3; next }
       $3 < n[$1] { next }
       { dt += $2 - t[$1]; dn += $3 - n[$1]; seen[$1] = 1 }
       END { for (i in t) if (!(i in seen)) lost++; printf "%d %d %d", dt, dn, lost }' "$1" "$2"
}
: > "$work/unhelped-bpf"
if [ -n "$UNHELPED" ] && [ -w /proc/sys/kernel/bpf_stats_enabled ]; then
  stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
  start_daemon
  for q in $UNHELPED; do
    unhelped_cmd "$q"
    timed "${CMD[@]}" # hot
    fresh_copies "$q"; copy_cmd "$q" 1
    sleep 1; echo 1 > /proc/sys/kernel/bpf_stats_enabled
    bpf_progs > "$work/bpf-before"
    timed "${CMD[@]}"
    bpf_progs > "$work/bpf-after"
    echo "$stats_before" > /proc/sys/kernel/bpf_stats_enabled
    read -r t n lost <<< "$(bpf_time "$work/bpf-before" "$work/bpf-after")"
    echo "$q $t $n $WALL $lost" >> "$work/unhelped-bpf"
  done
  stop_daemon
fi
# The daemon on a busy machine: "cpu_ms wall_ms launches_over_cpu
# launches_seen" to $work/busy.
: > "$work/busy"
if [ "${BUSY:-1}" != 0 ] && [ -n "$DAY_PROGRAMS" ]; then
  rm -rf "$work/state"
  conf=$work/day.toml
  start_daemon
  busy=()
  for k in 1 2; do sh -c 'while :; do :; done' & busy+=($!); done
  sleep 11
  c0=$(daemon_cpu_ms); t0=$EPOCHREALTIME
  cold; day busy1 1
  wait_saved
  cold; day busy 1
  c1=$(daemon_cpu_ms); t1=$EPOCHREALTIME
  kill "${busy[@]}"; wait "${busy[@]}" 2> /dev/null || true
  status | python3 -c 'import json,sys; s=json.load(sys.stdin)["status"]; print(s["launches_over_cpu"], s["launches_seen"])' |
    { read -r over seen; echo "$((c1 - c0)) $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }') $over $seen" >> "$work/busy"; }
  stop_daemon
  echo "launch.sh: busy machine: $(cat "$work/busy")" >&2
fi
cut -d' ' -f1-3 /proc/loadavg >> "$work/load"
elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
python3 bench/daemon/report.py "$work" "$REPS" "$elapsed" "$("$bin" --version)" > "$OUT.tmp" || {
  keep=$(mktemp -d /tmp/daemon-bench-data.XXXXXX); cp -r "$work"/. "$keep"/
  echo "launch.sh: the report failed; the measurements are kept in $keep" >&2; exit 1; }
mv "$OUT.tmp" "$OUT"
cat "$OUT"
