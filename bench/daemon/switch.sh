#!/usr/bin/env bash
# A program given another directory than the launch its set was recorded
# from: one application key (`grep -r <file>`), so the set holds the other
# directory's files. Writes bench/results/daemon-switch.md.
#
# Per program, REPS (default 8) repetitions of four arms, the order
# turning:
#   stock   no daemon; B cold
#   first   a fresh daemon; B cold, the program never seen (what
#           recording a launch costs it)
#   roots   a fresh daemon (argument_roots = true, the default) sees the
#           program over A cold (its set recorded and saved), then B cold
#   whole   the same with argument_roots = false (the set replayed whole,
#           as FAST and IORap replay an application's set)
# and then B hot (the floor). A = $SRC/arch/arm64 (1 970 files, 20 MiB),
# B = $SRC/arch/powerpc (2 054 files, 19 MiB) of the suite's tree.
# Reported: medians, and stock / arm as the median of each repetition's
# own ratio with its bootstrap 95% interval (bench/daemon/report.py's).
# rg-cwd and du-cwd are rg and du given no path, run in the directory
# (the working directory a root: `crate::roots` of the daemon).
# Needs root. PROGRAMS="grep du" selects; OUT=file writes elsewhere;
# KEEP_WORK=1 keeps the measurements and statuses (in $DATA_DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-suite}
. bench/live/setup.sh
. bench/live/suite-programs.sh
REPS=${REPS:-8}
PROGRAMS=${PROGRAMS:-"grep du tar rg"}
OUT=${OUT:-bench/results/daemon-switch.md}
[ "$(id -u)" = 0 ] || { echo "switch.sh: needs root (the daemon traces the kernel)" >&2; exit 2; }
cargo build --release --quiet -p outrider-cli
bin=$PWD/target/release/outrider
mkdir -p "$DATA_DIR"
suite_base
suite_tree
A=$src/arch/arm64 B=$src/arch/powerpc
work=$(mktemp -d "$DATA_DIR/switch-bench.XXXXXX")
me=switch.sh
. bench/daemon/daemon.sh
trap 'stop_daemon; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
for roots in true false; do
  printf 'state_dir = "%s"\nlaunch_window_s = 3\nsave_interval_s = 0.2\nargument_roots = %s\n' \
    "$work/state" "$roots" > "$work/$roots.toml"
done
cmd_of() { # CMD over directory $2 for program $1
  case $1 in
    grep) CMD=(grep -r -F -e outrider-suite-no-such-string "$2") ;;
    du) CMD=(du -s "$2") ;;
    tar) CMD=(sh -c 'tar -cf - "$1" | wc -c' sh "$2") ;;
    rg) suite_install rg:ripgrep; CMD=(rg -uu -F -e outrider-suite-no-such-string "$2") ;;
    # The same given no path: run in the directory (env -C, then exec).
    rg-cwd) cmd_of rg "$2"; CMD=(env -C "$2" rg -uu -F -e outrider-suite-no-such-string) ;;
    du-cwd) CMD=(env -C "$2" du -s) ;;
    *) echo "$me: unknown program $1 (grep du tar rg rg-cwd du-cwd)" >&2; exit 2 ;;
  esac
}
# A fresh daemon with configuration $1: the program over A cold, its set
# saved (3 s window, 0.2 s save), unless $2 is "first"; then over B cold,
# timed.
daemon_arm() {
  rm -rf "$work/state"
  conf=$work/$1.toml
  start_daemon
  if [ "${2:-}" != first ]; then
    cold; cmd_of "$p" "$A"; timed "${CMD[@]}"
  fi
  sleep 3.6
  cold; cmd_of "$p" "$B"; timed "${CMD[@]}"
  sleep 3.6
  status > "$work/status-$p-$1${2:-}-$rep.json"
  stop_daemon
}
: > "$work/results"
started=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for p in $PROGRAMS; do
  cmd_of "$p" "$B"
  for rep in $(seq "$REPS"); do
    case $((rep % 4)) in
      1) arms="stock first true false" ;;
      2) arms="first true false stock" ;;
      3) arms="true false stock first" ;;
      0) arms="false stock first true" ;;
    esac
    line="$me: $p rep $rep:"
    for arm in $arms; do
      if [ "$arm" = stock ]; then
        cold; cmd_of "$p" "$B"; timed "${CMD[@]}"
      elif [ "$arm" = first ]; then
        daemon_arm true first
      else
        daemon_arm "$arm"
      fi
      name=$arm; [ "$arm" = true ] && name=roots; [ "$arm" = false ] && name=whole
      echo "$p $name $rep $WALL" >> "$work/results"
      line+=" $name $WALL"
    done
    cold; cmd_of "$p" "$B"; timed "${CMD[@]}"; timed "${CMD[@]}"
    echo "$p hot $rep $WALL" >> "$work/results"
    echo "$line hot $WALL" >&2
  done
done
python3 bench/daemon/switch_report.py "$work" "$OUT" \
  "$(date -u +%F)" "$(($(date +%s) - started))" "$load_start" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(uname -r)" "$PROGRAMS"
echo "$me: wrote $OUT" >&2
