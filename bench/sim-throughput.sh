#!/usr/bin/env bash
# Simulator throughput: requests simulated per second of host time, single
# threaded, on a >= 10 M-request trace built from a real one.
#
# Input: ../shared/traces/cloudPhysicsIO.csv split into 4 KiB pages (1.14 M
# page requests, the libCacheSim agreement stream) and tiled 9 times back to
# back (10.28 M requests) in outrider's native format (memory-mapped).
# Each (policy, device) runs REPS times (default 3, best kept) with --cache-model lru --cache 10% of the
# distinct pages; events_per_s is outrider's own measurement of the
# simulation loop (trace loading excluded). Peak RSS comes from GNU time.
# OLD=PATH also runs an older outrider binary, alternating with this one
# run by run, and adds its rates and the new/old ratio (the comparison is
# in one sitting, so the machine's state is the same for both).
# Writes bench/results/sim-throughput.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/outrider
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/cp-pages-x9.otr
REPS=${REPS:-3}
$bin trace convert ../shared/traces/cloudPhysicsIO.csv "$trace" --split-pages --repeat 9 >/dev/null
# The old binary reads its own conversion (the native format may differ).
[ -z "${OLD:-}" ] || "$OLD" trace convert ../shared/traces/cloudPhysicsIO.csv "$trace.old" --split-pages --repeat 9 >/dev/null
requests=$($bin trace info --json "$trace" | python3 -c 'import sys,json; print(json.load(sys.stdin)["requests"])')
distinct=$($bin trace info --json "$trace" | python3 -c 'import sys,json; print(json.load(sys.stdin)["distinct_blocks"])')

run() { # policy device cache [binary] -> "events_per_s hit_ratio maxrss_kib"
  /usr/bin/time -f '%M' -o "$work/rss" "${4:-$bin}" sim --policy "$1" --device "$2" --cache "$3" \
      --cache-model lru --trace "$trace${4:+.old}" --json > "$work/out"
  python3 - "$work/out" "$work/rss" <<'PY'
import sys, json
d = json.loads(open(sys.argv[1]).read())
rss = open(sys.argv[2]).read().split()[-1]
print(f'{d["events_per_s"]:.0f} {d["hit_ratio"]:.4f} {rss} {d["peak_cache_blocks"]} {d["cache_model_bytes_per_block"]:.0f} {d["events_per_cpu_s"]:.0f}')
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
  echo "Single-threaded. Each row is the best of $REPS runs (the machine is shared: other"
  echo "processes only ever slow a run down). Two rates: requests per second of wall-clock"
  echo "time, and per second of the simulating thread's CPU time (\`events_per_cpu_s\`,"
  echo "which excludes time the thread waited for a CPU). Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "Targets (issue 2): obl >= 10 M requests/s, readahead >= 5 M requests/s."
  echo
  if [ -n "${OLD:-}" ]; then
    echo "Old binary: \`$OLD\` ($("$OLD" --version 2>/dev/null || echo unknown version)); runs alternate old and new."
    echo
    echo "| policy | device | M requests/s (wall) | M requests/s (CPU) | old (CPU) | new/old (CPU) | hit ratio | old hit ratio | peak RSS (MiB) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| policy | device | M requests/s (wall) | M requests/s (CPU) | hit ratio | peak RSS (MiB) |"
    echo "|---|---|---:|---:|---:|---:|"
  fi
  for dev in none ssd hdd; do
    for pol in none obl readahead; do
      best=0; bestcpu=0; oldcpu=0; oldhit=-
      for _ in $(seq "$REPS"); do
        read -r eps hit rss blocks _ cpu < <(run "$pol" "$dev" 10%)
        best=$(python3 -c "print(max($best, $eps))"); bestcpu=$(python3 -c "print(max($bestcpu, $cpu))")
        if [ -n "${OLD:-}" ]; then
          read -r _ oldhit _ _ _ ocpu < <(run "$pol" "$dev" 10% "$OLD")
          oldcpu=$(python3 -c "print(max($oldcpu, $ocpu))")
        fi
      done
      if [ -n "${OLD:-}" ]; then
        printf '| %s | %s | %.2f | %.2f | %.2f | %.3f | %s | %s | %.0f |\n' "$pol" "$dev" "$(echo "$best/1000000" | bc -l)" "$(echo "$bestcpu/1000000" | bc -l)" "$(echo "$oldcpu/1000000" | bc -l)" "$(echo "$bestcpu/$oldcpu" | bc -l)" "$hit" "$oldhit" "$(echo "$rss/1024" | bc -l)"
      else
        printf '| %s | %s | %.2f | %.2f | %s | %.0f |\n' "$pol" "$dev" "$(echo "$best/1000000" | bc -l)" "$(echo "$bestcpu/1000000" | bc -l)" "$hit" "$(echo "$rss/1024" | bc -l)"
      fi
    done
  done
  echo
  echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "## Memory per cached block"
  echo
  echo "Peak RSS of \`obl\` on device \`none\` at cache sizes 4 MiB and 1 GiB; the difference over the"
  echo "difference in cached blocks is the measured cost of one cached block (cache node,"
  echo "hash slot, allocator slack), independent of the mapped trace."
  echo
  read -r _ _ rss_small blocks_small _ < <(run obl none 4MiB)
  read -r _ _ rss_big blocks_big model_bpb _ < <(run obl none 1GiB)
  echo "| peak cached blocks | peak RSS (KiB) |"
  echo "|---:|---:|"
  echo "| $blocks_small | $rss_small |"
  echo "| $blocks_big | $rss_big |"
  echo
  printf 'Measured: **%.1f bytes per cached block** (the model accounts %s bytes: its\nslab node plus two 12-byte hash slots at load 1/2).\n' "$(echo "($rss_big-$rss_small)*1024/($blocks_big-$blocks_small)" | bc -l)" "$model_bpb"
} > "$out"
cat "$out"
