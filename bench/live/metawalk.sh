#!/usr/bin/env bash
# Metadata walk (issue 7 item 2: metadata prefetch, "measure whether that
# helps on ext4 here and keep it only if it does"): `outrider run` run 2
# with the walk (the default: the history's directories listed and its
# files fstatat'd ahead of the program, crates/live/src/metawalk.rs)
# against run 2 with `--no-metadata-walk`, and stock. Writes
# bench/results/live-metawalk.md. Needs root and the data of
# bench/live/run.sh in DATA_DIR (run that first).
#
# Method: one run 1 (fresh history) per workload, untimed; then per
# repetition stock, run 2 with the walk and run 2 without it, alternating,
# with `sync; echo 3 > /proc/sys/vm/drop_caches` (and no outrider process
# left) before every run; medians of REPS (default 5).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5}
DATA_DIR=${DATA_DIR:-/var/tmp/outrider-bench}
DIFF_DIRS=${DIFF_DIRS:-arch fs net kernel include sound Documentation}
PY_MODULES=${PY_MODULES:-numpy pandas scipy.stats scipy.optimize scipy.signal sympy}
WORKLOADS=${WORKLOADS:-grep diff python}
OUT=${OUT:-bench/results/live-metawalk.md}
cargo build --release --quiet -p outrider-cli
bin=$PWD/target/release/outrider
tree=$DATA_DIR/linux
dtag=$(echo "$DIFF_DIRS" | tr ' ' '_')
diffa=$DATA_DIR/diff-$dtag/a
diffb=$DATA_DIR/diff-$dtag/b
venv=$DATA_DIR/venv
for need in "$tree/.complete" "$DATA_DIR/diff-$dtag/.complete" "$venv/.complete"; do
  if [ ! -f "$need" ]; then
    echo "metawalk.sh: $need missing: run bench/live/run.sh first (it sets up the data)" >&2
    exit 2
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. bench/live/setup.sh # cold

timed() {
  cold
  local s e
  s=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
command_of() {
  case $1 in
    grep) CMD=(grep -r -F -e outrider-bench-no-such-string "$tree") ;;
    diff) CMD=(diff -r "$diffa" "$diffb") ;;
    python) CMD=("$venv/bin/python" -c "import $(echo "$PY_MODULES" | tr ' ' ',')") ;;
    *) echo "metawalk.sh: unknown workload '$1' (expected grep, diff or python)" >&2; exit 2 ;;
  esac
}

results=$work/results
: > "$results"
for w in $WORKLOADS; do
  command_of "$w"
  db=$work/$w.db
  timed "$bin" run -q --history "$db" -- "${CMD[@]}" > /dev/null
  for rep in $(seq "$REPS"); do
    st=$(timed "${CMD[@]}")
    on=$(timed "$bin" run -q --history "$db" --json-file "$work/$w.on.json" -- "${CMD[@]}")
    off=$(timed "$bin" run -q --no-metadata-walk --history "$db" -- "${CMD[@]}")
    echo "$w rep $rep: stock $st s, run 2 with walk $on s, without $off s" >&2
    echo "$w $st $on $off" >> "$results"
  done
  python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["metadata_walk"]; print("walkstat", sys.argv[2], w["dirs"], w["stats"], w["errors"])' \
    "$work/$w.on.json" "$w" >> "$results"
done

python3 - "$results" "$OUT" "$REPS" <<'EOF'
import statistics, sys, datetime, platform, os
rows, walks = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "walkstat":
        walks[f[1]] = f[2:]
    else:
        rows.setdefault(f[0], []).append(tuple(float(x) for x in f[1:]))
out = []
out.append("# Metadata walk: run 2 with and without it\n")
out.append(f"Written by `bench/live/metawalk.sh` on {datetime.date.today()} ({os.cpu_count()} cores, Linux {platform.release()}); do not edit by hand.\n")
out.append("The walk (default for `auto` with history; `--no-metadata-walk` turns it off) lists the history's directories and `fstatat`s its files, in first-access order, on 4 threads ahead of the program: directory blocks and inode tables come in through the file system (the block device cannot be opened here). Every run cold (`drop_caches`, no outrider process left); stock, run 2 with the walk and run 2 without it alternate; medians of %s.\n" % sys.argv[3])
out.append("| workload | stock (s) | run 2 with walk (s) | run 2 without (s) | speed-up with | speed-up without | walk vs no walk | directories / files walked |")
out.append("|---|---:|---:|---:|---:|---:|---:|---|")
for w, rs in rows.items():
    st = statistics.median(r[0] for r in rs)
    on = statistics.median(r[1] for r in rs)
    off = statistics.median(r[2] for r in rs)
    d = walks.get(w, ["-", "-", "-"])
    out.append(f"| {w} | {st:.3f} | {on:.3f} | {off:.3f} | {st/on:.2f}x | {st/off:.2f}x | {100*(on/off-1):+.0f}% | {d[0]} / {d[1]} |")
out.append("\nEvery repetition (stock / with / without, s):\n")
for w, rs in rows.items():
    out.append(f"- {w}: " + ", ".join("/".join(f"{x:.3f}" for x in r) for r in rs))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
