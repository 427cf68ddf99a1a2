#!/usr/bin/env bash
# outrider's simulator against libCacheSim, side by side in one sitting.
#
# Peer: the `libcachesim` PyPI package (version in bench/libcachesim/build-peer.sh),
# installed into a virtualenv, and the C `cachesim` built from that package's
# source distribution (the wheel's Python API has LRU with a `hashpower`
# argument but no prefetcher; `cachesim` has OBL). `cachesim` hard-codes a
# 2^24-bucket hash table; build-peer.sh makes it read LCS_HASHPOWER instead,
# and this script sizes the table for each cache (ceil(log2(cache blocks)),
# libCacheSim's chained table grows by itself if that is short) and also
# runs the stock 2^24 for reference. OBL runs with
# `--prefetch-params block-size=4096,sequential-confidence-k=4` (a prefetched
# object is one 4 KiB page; k = outrider obl's k).
#
# Trace: ../shared/traces/cloudPhysicsIO.csv split into 4 KiB pages and tiled
# 9x (10.28 M requests), written by outrider as `oracle-pages`: libCacheSim's
# oracleGeneral binary with obj_id = page number, which both tools read
# (outrider: `--format oracle-pages`, records left packed in the mapped file
# and decoded as simulated; cachesim: `oracleGeneral`). The same trace
# converted to outrider's native format (mapped, no copy) is timed too.
#
# Sizes: 1% and 10% of the distinct pages, floor(distinct * f) pages, given to
# both tools in bytes (no whole-trace pre-pass in either). outrider runs
# `sim --device none --cache-model lru` (instantaneous device: a prefetch is
# resident before the next access, as in libCacheSim), `--policy none` (LRU)
# and `--policy obl` (LRU+OBL). Miss ratios of both tools are printed and
# must agree.
#
# Timing: every run is a whole process (trace loading included) timed by GNU
# time; REPS rounds (default 5), the tools' order alternating per round;
# medians. Requests/s = requests / wall seconds (and / user+sys CPU seconds).
# `outrider-pct` is outrider with `--cache N%` (LRU rows): the percentage
# needs the trace's distinct pages first, a whole-trace pass.
# Memory per cached block: peak RSS at 100% minus at 1% of the distinct
# pages, over the difference in pages, LRU, per tool.
# Writes bench/results/sim-vs-libcachesim.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p outrider-cli
# The same code with symbols, for the profile at the end.
cargo build --profile profiling --quiet -p outrider-cli
bin=$PWD/target/release/outrider
prof_bin=$PWD/target/profiling/outrider
peer=$(bench/libcachesim/build-peer.sh)
cachesim=$peer/bin/cachesim
py=$peer/venv/bin/python
lcs_version=$("$py" -c 'import importlib.metadata as m; print(m.version("libcachesim"))')
REPS=${REPS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/cp-pages-x9.oracle-pages.bin
native=$work/cp-pages-x9.otr
$bin trace convert ../shared/traces/cloudPhysicsIO.csv "$trace" --split-pages --repeat 9 --to oracle-pages >/dev/null
$bin trace convert "$trace" "$native" --from oracle-pages >/dev/null
cat "$trace" "$native" >/dev/null # both in the page cache before the first timed run
read -r requests distinct < <($bin trace info --json --format oracle-pages "$trace" |
  python3 -c 'import sys,json; d=json.load(sys.stdin); print(d["requests"], d["distinct_blocks"])')

blocks_of() { python3 -c "print(max(1, int($distinct * $1 / 100)))"; }
hashpower_of() { python3 -c "import math; print(max(4, math.ceil(math.log2($1))))"; }

# One timed run: tool policy pct rep -> a line in $work/runs:
# tool policy pct rep wall cpu rss_kib miss_ratio own_rate
run() {
  local tool=$1 pol=$2 pct=$3 rep=$4 blocks bytes hp miss own
  blocks=$(blocks_of "$pct")
  bytes=$((blocks * 4096))
  case $tool in
  outrider | outrider-native | outrider-pct)
    local input=(--format oracle-pages --trace "$trace") size=$bytes
    [ "$tool" = outrider-native ] && input=(--trace "$native")
    [ "$tool" = outrider-pct ] && size=$pct%
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$bin" sim --policy "$pol" --device none \
      --cache-model lru --cache "$size" "${input[@]}" --json >"$work/out"
    read -r miss own < <(python3 -c 'import sys,json; d=json.loads(open(sys.argv[1]).readline()); print(1-d["hit_ratio"], d["events_per_s"])' "$work/out")
    ;;
  cachesim | cachesim-2^24)
    hp=$(hashpower_of "$blocks")
    [ "$tool" = cachesim-2^24 ] && hp=24
    local pf=()
    [ "$pol" = obl ] && pf=(-p OBL --prefetch-params "block-size=4096,sequential-confidence-k=4")
    # (in $work: cachesim writes its results under ./result/)
    (cd "$work" && LCS_HASHPOWER=$hp /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$cachesim" "$trace" \
      oracleGeneral LRU "$bytes" "${pf[@]}" --num-thread 1 >"$work/out" 2>&1)
    read -r miss own < <(python3 -c '
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"miss ratio ([0-9.]+),.*throughput ([0-9.]+) MQPS", t)
print(m.group(1), float(m.group(2)) * 1e6)' "$work/out")
    ;;
  lcs-python)
    hp=$(hashpower_of "$blocks")
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$py" - "$trace" "$bytes" "$hp" >"$work/out" <<'PY'
import sys, time
import libcachesim as lcs
path, size, hp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
cache = lcs.LRU(size, hashpower=hp)
t = time.perf_counter()
miss, _ = cache.process_trace(reader)
print(miss, reader.get_num_of_req() / (time.perf_counter() - t))
PY
    read -r miss own <"$work/out"
    ;;
  esac
  read -r wall user sys rss <"$work/t"
  echo "$tool $pol $pct $rep $wall $(python3 -c "print($user + $sys)") $rss $miss $own" >>"$work/runs"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$work/runs"
tools=(outrider cachesim outrider-native cachesim-2^24)
for rep in $(seq "$REPS"); do
  for pct in 1 10; do
    for pol in none obl; do
      order=("${tools[@]}")
      [ $((rep % 2)) = 0 ] && order=(cachesim-2^24 outrider-native cachesim outrider)
      for tool in "${order[@]}"; do run "$tool" "$pol" "$pct" "$rep"; done
      if [ "$pol" = none ]; then
        run lcs-python none "$pct" "$rep"
        run outrider-pct none "$pct" "$rep"
      fi
    done
  done
done
# Memory: LRU at 1% and 100% of the distinct pages, one run each.
for tool in outrider outrider-native cachesim lcs-python; do
  for pct in 1 100; do
    run "$tool" none "$pct" mem
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
# Where outrider's time goes: perf samples of one process at 10% on the
# oracle-pages trace, self time per symbol (all symbols, for grouping).
profile() {
  local pol=$1
  perf record -q -o "$work/perf.data" "$prof_bin" sim --policy "$pol" --device none --cache-model lru \
    --cache $(($(blocks_of 10) * 4096)) --format oracle-pages --trace "$trace" >/dev/null 2>&1
  perf report -q -i "$work/perf.data" --no-children --sort symbol --percent-limit 0 --stdio 2>/dev/null |
    sed -e 's/^ *//' -e 's/  */ /g' -e 's/ - -.*$//' >"$work/profile-$pol"
}
have_perf=0
if command -v perf >/dev/null; then
  have_perf=1
  for pol in none obl; do profile "$pol"; done
fi

out=bench/results/sim-vs-libcachesim.md
{
  echo "# outrider sim vs libCacheSim"
  echo
  echo "Written by \`bench/sim-vs-libcachesim.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r)); do not edit by hand."
  echo
  echo "Peer: libCacheSim $lcs_version from PyPI (\`libcachesim\`): its C \`cachesim\` built from the"
  echo "package's source distribution (LRU, OBL), and its Python API (\`LRU(size, hashpower=H).process_trace\`,"
  echo "LRU only: the Python API has no prefetcher). \`cachesim\` hash table sized for the cache"
  echo "(2^ceil(log2(cache pages)) buckets) unless the tool is \`cachesim-2^24\` (its stock table);"
  echo "OBL with \`block-size=4096,sequential-confidence-k=4\`; \`--num-thread 1\`."
  echo
  echo "Trace: cloudPhysicsIO.csv split into 4 KiB pages, tiled 9x: $requests requests, $distinct"
  echo "distinct pages, as \`oracle-pages\` (oracleGeneral, obj_id = page), read by both; \`outrider-native\`"
  echo "replays the same requests converted to outrider's native format (memory-mapped)."
  echo "outrider: \`sim --device none --cache-model lru --cache BYTES\`, \`--policy none\` (LRU) and \`obl\` (LRU+OBL)."
  echo
  echo "Each cell: median of $REPS whole-process runs (trace loading included), tools alternating"
  echo "order per round. Load average at start: $load_start; at end: $load_end (2 cores, shared)."
  echo
  python3 bench/libcachesim/report.py "$work/runs" "$requests" "$distinct"
  echo
  echo "## Profile of outrider"
  echo
  if [ "$have_perf" = 1 ]; then
    python3 bench/libcachesim/report.py --profile "$work/profile-none" "$work/profile-obl"
  else
    echo "(perf not installed: no profile)"
  fi
} >"$out"
cat "$out"
