#!/usr/bin/env bash
# One-pass miss-ratio curve vs one single-size simulation, side by side.
#
# Input: ../shared/traces/cloudPhysicsIO.csv split into 4 KiB pages and
# tiled 9 times (10.28 M requests, native format, memory-mapped), as in
# bench/sim-throughput.sh. Each pair runs, back to back and in alternating
# order, `outrider mrc TRACE` (100 points: 1% .. 100% of the distinct
# pages) and `outrider sim --policy none --device none --cache-model lru`
# at one size (10%, as a percentage and as the same size in bytes). Every
# process is timed whole (wall, user+sys CPU from GNU time); the reported
# ratio is the median over pairs of mrc / sim. The curve's hit ratios are
# also checked against single-size runs at 1%, 10% and 50% (exact
# equality of the printed ratios). PAIRS (default 5) sets the pairs.
# Writes bench/results/mrc.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/outrider
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/cp-pages-x9.otr
PAIRS=${PAIRS:-5}
$bin trace convert ../shared/traces/cloudPhysicsIO.csv "$trace" --split-pages --repeat 9 >/dev/null
cat "$trace" >/dev/null # into the page cache before the first timed run

timed() { # name cmd... -> appends "name wall cpu rss_kib" to $work/times
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >"$work/out"
  read -r wall user sys rss <"$work/t"
  echo "$name $wall $(echo "$user + $sys" | bc -l) $rss" >>"$work/times"
}

bytes10=$($bin mrc "$trace" --sizes 10% --json | python3 -c 'import sys,json; print(json.loads(sys.stdin.readline())["cache_bytes"])')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$work/times"
for i in $(seq "$PAIRS"); do
  runs=(mrc simpct simbytes)
  if ((i % 2 == 0)); then runs=(simbytes simpct mrc); fi
  for r in "${runs[@]}"; do
    case $r in
    mrc) timed mrc $bin mrc "$trace" ;;
    simpct) timed simpct $bin sim --policy none --device none --cache-model lru --cache 10% --trace "$trace" ;;
    simbytes) timed simbytes $bin sim --policy none --device none --cache-model lru --cache "$bytes10" --trace "$trace" ;;
    esac
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

agree=""
for size in 1% 10% 50%; do
  m=$($bin mrc "$trace" --sizes "$size" --json | python3 -c 'import sys,json; print(json.loads(sys.stdin.readline())["hit_ratio"])')
  s=$($bin sim --policy none --device none --cache-model lru --cache "$size" --trace "$trace" --json | python3 -c 'import sys,json; print(json.loads(sys.stdin.readline())["hit_ratio"])')
  verdict=$([ "$m" = "$s" ] && echo equal || echo DIFFERENT)
  agree+="| $size | $m | $s | $verdict |"$'\n'
done

out=bench/results/mrc.md
python3 - "$work/times" "$PAIRS" >"$work/table" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for name, wall, cpu, rss in rows:
    by.setdefault(name, []).append((float(wall), float(cpu), int(rss)))
n = int(sys.argv[2])
names = {"mrc": "`mrc` (100 points)", "simpct": "`sim --cache 10%`", "simbytes": "`sim --cache BYTES` (10%, no pre-pass)"}
print("| run | wall s (median) | CPU s (median) | peak RSS MiB |")
print("|---|---:|---:|---:|")
for k in ["mrc", "simpct", "simbytes"]:
    v = by[k]
    print(f"| {names[k]} | {st.median(x[0] for x in v):.2f} | {st.median(x[1] for x in v):.2f} | {max(x[2] for x in v)/1024:.0f} |")
print()
print("| ratio, median over pairs | wall | CPU |")
print("|---|---:|---:|")
for k in ["simpct", "simbytes"]:
    w = st.median(by["mrc"][i][0] / by[k][i][0] for i in range(n))
    c = st.median(by["mrc"][i][1] / by[k][i][1] for i in range(n))
    print(f"| mrc / {names[k]} | {w:.2f} | {c:.2f} |")
PY
{
  echo "# Miss-ratio curve in one pass"
  echo
  echo "Written by \`bench/mrc.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r)); do not edit by hand."
  echo
  echo "Input: cloudPhysicsIO.csv split into 4 KiB pages, tiled 9x (10.28 M requests), native"
  echo "format. $PAIRS pairs, alternating order; whole processes timed (trace mapping and"
  echo "checking included). Load average at start: $load_start; at end: $load_end."
  echo
  echo "Target: a 100-point curve in at most 1.5x the time of one single-size run."
  echo
  cat "$work/table"
  echo
  echo "Agreement with single-size LRU runs (\`--policy none --device none\`):"
  echo
  echo "| size | mrc hit ratio | sim hit ratio | |"
  echo "|---|---:|---:|---|"
  printf '%s' "$agree"
} >"$out"
cat "$out"
