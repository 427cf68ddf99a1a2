#!/usr/bin/env bash
# Application-directed prefetching (libprefetch, issue 6): simulator
# figures and live runs on this machine. Writes bench/results/directed.md.
#
# Simulator (HDD model): libprefetch Fig. 2 (runtime and average seek
# distance against reorder-buffer size, 256 MiB of random 4 KiB reads over a
# 256 MiB file, with 2N(K-1)/(K(K+1)) beside it) and Fig. 3 (infill limit),
# via `cargo run --example sim_figures -p outrider-directed`.
#
# Live (needs root and a cgroup-v1 memory controller at
# /sys/fs/cgroup/memory): bench/directed/scan.c against liboutrider.so, every
# run from a cold cache (sync; echo 3 > /proc/sys/vm/drop_caches) inside a
# memory cgroup limited to 256 MiB:
#   - random: every 4 KiB page of a 1 GiB file once, in a known random order
#     (stock pread vs directed, infill 32 KiB = paper default, and infill 0);
#   - seq: the same file read in order (directed must not be > 5% slower);
#   - index: a secondary-index scan shaped like libprefetch's SQLite
#     benchmark (§5.4): a 512 MiB table of 512-byte rows visited in random
#     index order (every page read 8 times); the program builds its list
#     from the index and feeds it from the callback;
#   - concurrent: 1, 2 and 3 index scans at once, each over its own 256 MiB
#     table, all in the same 256 MiB cgroup (§5.6), stock vs directed with
#     aimd=on and aimd=off.
# REPS (default 3) repetitions of the short runs; medians are reported.
# Concurrent runs are killed after LIMIT seconds (default 120), as the paper
# killed its aimd=off runs (§5.6); the table then shows "> LIMIT".
# The machine is shared (2 cores): timings are noisy, hence repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/directed.md
work=${WORK:-/var/tmp/outrider-directed-bench}
reps=${REPS:-3}
limit=${LIMIT:-120} # seconds before a concurrent run is killed (§5.6: aimd=off thrashes)
cg=/sys/fs/cgroup/memory/outrider-directed-bench
mkdir -p "$work" bench/results

cargo build --release --quiet -p outrider-directed
# A private copy of the library, so rebuilding during the runs changes nothing.
cp target/release/liboutrider.so "$work/"
cc -O2 -Wall -Werror -Iinclude bench/directed/scan.c -L"$work" -loutrider -o "$work/scan"
export LD_LIBRARY_PATH=$work

{
  echo "# Application-directed prefetching (libprefetch) — results"
  echo
  echo "Written by \`bench/directed.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) cores."
  echo
  echo "## Simulator"
  echo
  cargo run --release --quiet -p outrider-directed --example sim_figures
  echo
} > "$out.tmp"

if [ "$(id -u)" != 0 ] || [ ! -d /sys/fs/cgroup/memory ]; then
  echo "Live runs skipped: need root and /sys/fs/cgroup/memory." >> "$out.tmp"
  mv "$out.tmp" "$out"; exit 0
fi

mkfile() { [ -f "$1" ] && [ "$(stat -c %s "$1")" = $(($2 << 20)) ] || dd if=/dev/urandom of="$1" bs=1M count="$2" status=none; }
mkfile "$work/f1" 1024
mkfile "$work/t1" 512
for i in 1 2 3; do mkfile "$work/c$i" 256; done
sync

mkdir -p "$cg"
echo $((256 << 20)) > "$cg/memory.limit_in_bytes"
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# run SETTINGS MODE PATTERN FILE: one scan in the cgroup, prints its line.
run() {
  sh -c "echo \$\$ > $cg/cgroup.procs; exec env OUTRIDER_DIRECTED='$1' '$work/scan' $2 $3 '$4'"
}
log=$work/runs.log
: > "$log"
one() { # label settings mode pattern file
  cold
  local line; line=$(run "$2" "$3" "$4" "$5")
  echo "$1 $line" | tee -a "$log" >&2
}
for r in $(seq "$reps"); do
  one "seq/stock" "" stock seq "$work/f1"
  one "seq/directed" "" directed seq "$work/f1"
done
for r in $(seq $(( reps > 2 ? 2 : reps ))); do
  one "random/stock" "" stock random "$work/f1"
  one "random/directed" "" directed random "$work/f1"
  one "random/directed,infill=0" "infill=0" directed random "$work/f1"
done
one "index/stock" "" stock index "$work/t1"
one "index/directed" "" directed index "$work/t1"
one "index/directed,infill=0" "infill=0" directed index "$work/t1"
for n in 1 2 3; do
  for cfg in "stock|" "directed|aimd=on,infill=0" "directed|aimd=off,infill=0"; do
    mode=${cfg%%|*}; set=${cfg#*|}
    cold
    start=$(date +%s.%N)
    pids=()
    for i in $(seq "$n"); do
      timeout "$limit" sh -c "echo \$\$ > $cg/cgroup.procs; exec env OUTRIDER_DIRECTED='$set' '$work/scan' $mode index '$work/c$i'" > "$work/conc.$i" &
      pids+=($!)
    done
    killed=0
    for p in "${pids[@]}"; do wait "$p" || killed=1; done
    end=$(date +%s.%N)
    label="concurrent$n/$mode${set:+,$set}"
    for i in $(seq "$n"); do
      line=$(cat "$work/conc.$i")
      echo "$label ${line:-killed=1 seconds=$limit}" | tee -a "$log" >&2
    done
    echo "$label wall=$(python3 -c "print(f'{$end-$start:.3f}')") killed=$killed" | tee -a "$log" >&2
  done
done

python3 - "$log" >> "$out.tmp" <<'PY'
import sys, statistics as st, collections
rows = collections.OrderedDict()
walls = {}
for line in open(sys.argv[1]):
    label, *kv = line.split()
    d = dict(x.split("=", 1) for x in kv)
    if "wall" in d:
        walls[label] = (float(d["wall"]), d.get("killed") == "1"); continue
    rows.setdefault(label, []).append(d)
def med(label, key="seconds"):
    return st.median(float(d[key]) for d in rows[label])
print("## Live, this machine (cold cache, 256 MiB cgroup-v1 memory limit)\n")
print("Median of the runs listed; every run's numbers are in the raw table below.\n")
print("| workload | stock (s) | directed (s) | speedup | directed settings |")
print("|---|---|---|---|---|")
for w, what in [("random", "1 GiB file, every 4 KiB page once in random order"),
                ("index", "512 MiB table, 512-byte rows in index order (8 reads per page)"),
                ("seq", "1 GiB file read in order, 4 KiB reads")]:
    s = med(f"{w}/stock")
    for lab in [l for l in rows if l.startswith(w + "/directed")]:
        d = med(lab)
        setting = lab.split("/", 1)[1].replace("directed", "defaults (infill=32KiB)") if lab.endswith("directed") else lab.split(",", 1)[1]
        extra = f" — directed is {100*(d/s-1):+.1f}% vs stock" if w == "seq" else ""
        print(f"| {w}: {what} | {s:.2f} | {d:.2f} | {s/d:.2f}×{extra} | {setting} |")
print("\n### Concurrent index scans (each its own 256 MiB table, one shared 256 MiB cgroup, §5.6)\n")
print("| instances | stock wall (s) | directed aimd=on wall (s) | directed aimd=off wall (s) | speedup aimd=on | speedup aimd=off |")
print("|---|---|---|---|---|---|")
def show(w):
    return f"> {w[0]:.0f} (killed)" if w[1] else f"{w[0]:.2f}"
def speed(s, w):
    return f"< {s[0]/w[0]:.2f}×" if w[1] else f"{s[0]/w[0]:.2f}×"
for n in (1, 2, 3):
    s = walls[f"concurrent{n}/stock"]
    on = walls[f"concurrent{n}/directed,aimd=on,infill=0"]
    off = walls[f"concurrent{n}/directed,aimd=off,infill=0"]
    print(f"| {n} | {show(s)} | {show(on)} | {show(off)} | {speed(s, on)} | {speed(s, off)} |")
print("\n### Every run\n")
print("| run | seconds | rounds | premature | round pages | infill pages | dropped | final buffer (pages) |")
print("|---|---|---|---|---|---|---|---|")
for lab, ds in rows.items():
    for d in ds:
        print(f"| {lab} | {d['seconds']}{' (killed)' if d.get('killed') else ''} | {d.get('rounds','')} | {d.get('premature','')} | {d.get('round_pages','')} | {d.get('infill_pages','')} | {d.get('dropped','')} | {d.get('buffer_pages','')} |")
PY
mv "$out.tmp" "$out"
echo "wrote $out" >&2
