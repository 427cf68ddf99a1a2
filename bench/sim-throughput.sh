#!/usr/bin/env bash
# Simulator throughput: requests simulated per second of host time, single
# threaded, on a >= 10 M-request trace built from a real one.
#
# Input: ../shared/traces/cloudPhysicsIO.csv split into 4 KiB pages (1.14 M
# page requests, the libCacheSim agreement stream) and tiled 9 times back to
# back (10.28 M requests) in outrider's native format (memory-mapped).
# Each (policy, device) runs once with --cache-model lru --cache 10% of the
# distinct pages; events_per_s is outrider's own measurement of the
# simulation loop (trace loading excluded). Peak RSS comes from GNU time.
# Writes bench/results/sim-throughput.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/outrider
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/cp-pages-x9.otr
$bin trace convert ../shared/traces/cloudPhysicsIO.csv "$trace" --split-pages --repeat 9 >/dev/null
requests=$($bin trace info --json "$trace" | python3 -c 'import sys,json; print(json.load(sys.stdin)["requests"])')
distinct=$($bin trace info --json "$trace" | python3 -c 'import sys,json; print(json.load(sys.stdin)["distinct_blocks"])')

run() { # policy device cache -> "events_per_s hit_ratio maxrss_kib"
  /usr/bin/time -f '%M' -o "$work/rss" $bin sim --policy "$1" --device "$2" --cache "$3" \
      --cache-model lru --trace "$trace" --json > "$work/out"
  python3 - "$work/out" "$work/rss" <<'PY'
import sys, json
d = json.loads(open(sys.argv[1]).read())
rss = open(sys.argv[2]).read().split()[-1]
print(f'{d["events_per_s"]:.0f} {d["hit_ratio"]:.4f} {rss} {d["peak_cache_blocks"]} {d["cache_model_bytes_per_block"]:.0f}')
PY
}

out=bench/results/sim-throughput.md
{
  echo "# Simulator throughput"
  echo
  echo "Written by \`bench/sim-throughput.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r)); do not edit by hand."
  echo
  echo "Input: cloudPhysicsIO.csv split into 4 KiB pages and tiled 9x = $requests requests,"
  echo "$distinct distinct pages; native format, memory-mapped. \`--cache-model lru --cache 10%\`."
  echo "One run each, single-threaded; the machine is shared, so compare rows within this file."
  echo
  echo "Targets (issue 2): obl >= 10 M requests/s, readahead >= 5 M requests/s."
  echo
  echo "| policy | device | M requests/s | hit ratio | peak RSS (MiB) |"
  echo "|---|---|---:|---:|---:|"
  for dev in none ssd hdd; do
    for pol in none obl readahead; do
      read -r eps hit rss blocks _ < <(run "$pol" "$dev" 10%)
      printf '| %s | %s | %.2f | %s | %.0f |\n' "$pol" "$dev" "$(echo "$eps/1000000" | bc -l)" "$hit" "$(echo "$rss/1024" | bc -l)"
    done
  done
  echo
  echo "## Memory per cached block"
  echo
  echo "Peak RSS of \`obl\` on device \`none\` at cache sizes 4 MiB and 1 GiB; the difference over the"
  echo "difference in cached blocks is the measured cost of one cached block (cache node,"
  echo "hash slot, allocator slack), independent of the mapped trace."
  echo
  read -r _ _ rss_small blocks_small _ < <(run obl none 4MiB)
  read -r _ _ rss_big blocks_big model_bpb < <(run obl none 1GiB)
  echo "| peak cached blocks | peak RSS (KiB) |"
  echo "|---:|---:|"
  echo "| $blocks_small | $rss_small |"
  echo "| $blocks_big | $rss_big |"
  echo
  printf 'Measured: **%.1f bytes per cached block** (the model accounts %s bytes: its\nslab node plus two 12-byte hash slots at load 1/2).\n' "$(echo "($rss_big-$rss_small)*1024/($blocks_big-$blocks_small)" | bc -l)" "$model_bpb"
} > "$out"
cat "$out"
