#!/usr/bin/env bash
# Application-directed prefetching (libprefetch): simulator
# figures and live runs on this machine. Writes bench/results/directed.md.
#
# Simulator (HDD model): libprefetch Fig. 2 (runtime and average seek
# distance against reorder-buffer size, 256 MiB of random 4 KiB reads over a
# 256 MiB file, with 2N(K-1)/(K(K+1)) beside it) and Fig. 3 (infill limit),
# via `cargo run --example sim_figures -p outrider-directed`.
#
# Live (needs root and a cgroup-v1 memory controller at
# /sys/fs/cgroup/memory): bench/directed/scan.c against liboutrider_directed.so, every
# run from a cold cache (sync; echo 3 > /proc/sys/vm/drop_caches) inside a
# memory cgroup limited to 256 MiB, stock and directed runs alternating:
#   - probe: what the infill=auto device probe measures on the 1 GiB file
#     (the default infill limit comes from it);
#   - seq: the 1 GiB file read in order, SEQ_REPS (default 5) alternating
#     triples: stock, directed (defaults: a list in file order is left to
#     the kernel's readahead) and directed with readahead=off (the paper:
#     every round fetched); directed must not be slower than stock;
#   - random: every 4 KiB page of a 1 GiB file once, in a known random order
#     (stock pread vs directed with the defaults, and with the paper's fixed
#     infill=32KiB);
#   - index: a secondary-index scan shaped like libprefetch's SQLite
#     benchmark (§5.4): a 512 MiB table of 512-byte rows visited in random
#     index order (every page read 8 times); the program builds its list
#     from the index and feeds it from the callback;
#   - concurrent: 1, 2 and 3 index scans at once, each over its own 256 MiB
#     table, all in the same 256 MiB cgroup (§5.6), stock vs directed with
#     aimd=on and aimd=off (otherwise defaults).
# REPS (default 3) alternating repetitions of random and index; medians are
# reported. Concurrent runs get SIGTERM after LIMIT seconds (default 120),
# as the paper killed its aimd=off runs (§5.6): the scan then stops and
# prints its counters with killed=1, and the table shows "> LIMIT".
# The machine is shared (2 cores): timings are noisy, hence repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/directed.md
work=${WORK:-/var/tmp/outrider-directed-bench}
reps=${REPS:-3}
seq_reps=${SEQ_REPS:-5}
limit=${LIMIT:-120} # seconds before a concurrent run is killed (§5.6: aimd=off thrashes)
cg=/sys/fs/cgroup/memory/outrider-directed-bench
mkdir -p "$work" bench/results

cargo build --release --quiet -p outrider-directed
cargo build --release --quiet -p outrider-directed --example probe
# A private copy of the library, so rebuilding during the runs changes nothing.
cp target/release/liboutrider_directed.so target/release/examples/probe "$work/"
cc -O2 -Wall -Werror -Iinclude bench/directed/scan.c -L"$work" -loutrider_directed -o "$work/scan"
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
for r in 1 2 3; do
  cold
  echo "probe $("$work/probe" "$work/f1")" | tee -a "$log" >&2
done
for r in $(seq "$seq_reps"); do
  one "seq/stock" "" stock seq "$work/f1"
  one "seq/directed" "" directed seq "$work/f1"
  one "seq/directed,readahead=off" "readahead=off" directed seq "$work/f1"
done
for r in $(seq "$reps"); do
  one "random/stock" "" stock random "$work/f1"
  one "random/directed" "" directed random "$work/f1"
  one "random/directed,infill=32KiB" "infill=32KiB" directed random "$work/f1"
done
for r in $(seq "$reps"); do
  one "index/stock" "" stock index "$work/t1"
  one "index/directed" "" directed index "$work/t1"
done
one "index/directed,infill=32KiB" "infill=32KiB" directed index "$work/t1"
for n in 1 2 3; do
  for cfg in "stock|" "directed|aimd=on" "directed|aimd=off"; do
    mode=${cfg%%|*}; set=${cfg#*|}
    cold
    start=$(date +%s.%N)
    pids=()
    for i in $(seq "$n"); do
      timeout -k 15 "$limit" sh -c "echo \$\$ > $cg/cgroup.procs; exec env OUTRIDER_DIRECTED='$set' '$work/scan' $mode index '$work/c$i'" > "$work/conc.$i" &
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

python3 - "$log" "$limit" >> "$out.tmp" <<'PY'
import sys, statistics as st, collections
rows = collections.OrderedDict()
walls = {}
probes = []
limit = float(sys.argv[2])
for line in open(sys.argv[1]):
    label, *kv = line.split()
    d = dict(x.split("=", 1) for x in kv if "=" in x)
    if label == "probe":
        probes.append(d); continue
    if "wall" in d:
        walls[label] = (float(d["wall"]), d.get("killed") == "1"); continue
    rows.setdefault(label, []).append(d)
def med(label, key="seconds"):
    return st.median(float(d[key]) for d in rows[label])
print("## Live, this machine (cold cache, 256 MiB cgroup-v1 memory limit)\n")
print("### The infill default, measured (`infill=auto`)\n")
print("The library probes the device at the first round that has gaps to fill (a list read in file order never probes) (`crates/directed/src/probe.rs`): WILLNEED on 256 lone uncached pages then a read of each (cost of one more request at depth), and on a 2 MiB uncached run (cost of one more page read through), median of 3. Live infill pages occupy the page cache and the reorder buffer, so a gap is merged only if reading it through costs at most half the request it saves: `(g + 1) · page ≤ request / 2`, capped at the paper's 32 KiB (`infill_from_costs`). Three cold probes of the 1 GiB file:\n")
print("| request (µs) | page (µs) | request / page | infill limit, charged (pages) | uncharged rule (pages) |")
print("|---|---|---|---|---|")
for d in probes:
    print(f"| {d.get('request_us','?')} | {d.get('page_us','?')} | {d.get('ratio','?')} | {d.get('infill_pages','?')} | {d.get('infill_pages_uncharged','?')} |")
print("\nOn this virtual disk a random 4 KiB read issued with many others costs only 2–4 sequential pages, so the paper's 32 KiB infill (gaps up to 8 pages) reads far more than it saves: in the random workload about 1.7 infill pages per listed page, and the infill pages also take buffer slots, so rounds cover fewer listed pages (see `infill pages` and `rounds` below). The paper found the same device dependence: infill helped Disk 2 and was neutral on Disk 1 (§3.3, §5.5).\n")
print("### Single runs\n")
seq_s = med("seq/stock")
print(f"Median of the runs listed; every run's numbers are in the raw table below. This sitting's disk read the 1 GiB file in order in {seq_s:.2f} s ({1024/seq_s:.0f} MiB/s) with stock readahead; the virtual disk's speed (and the host's cache behind it) varies from day to day, so compare the ratios within this file, not absolute times with an earlier version of it. A list read in file order is left to the kernel's readahead by default (`readahead=on`: the library only tracks the reads, as the seq rows' `left to readahead` column shows); `readahead=off` is the paper's behaviour, every round fetched with WILLNEED by the I/O workers.\n")
print("| workload | stock (s) | directed (s) | speedup | directed settings | runs |")
print("|---|---|---|---|---|---|")
for w, what in [("random", "1 GiB file, every 4 KiB page once in random order"),
                ("index", "512 MiB table, 512-byte rows in index order (8 reads per page)"),
                ("seq", "1 GiB file read in order, 4 KiB reads")]:
    s = med(f"{w}/stock")
    for lab in [l for l in rows if l.startswith(w + "/directed")]:
        d = med(lab)
        notes = {"infill=32KiB": "the paper's fixed infill",
                 "readahead=off": "the paper: the round fetched, not left to kernel readahead"}
        extra_setting = lab.split(",", 1)[1] if "," in lab else ""
        setting = f"{extra_setting} ({notes[extra_setting]})" if extra_setting else "**defaults** (infill=auto, readahead=on)"
        extra = f" — directed is {100*(d/s-1):+.1f}% vs stock" if w == "seq" else ""
        print(f"| {w}: {what} | {s:.2f} | {d:.2f} | {s/d:.2f}×{extra} | {setting} | {len(rows[w + '/stock'])} + {len(rows[lab])} |")
print("\n### Concurrent index scans (each its own 256 MiB table, one shared 256 MiB cgroup, §5.6)\n")
print(f"Wall time of the whole group; instances still running after {limit:.0f} s get SIGTERM (as the paper killed its aimd=off runs) and print their counters. Premature = rounds started because a page of the round was evicted before its first use (§4.5, summed over the instances).\n")
print("| instances | setting | wall (s) | vs stock | per-instance (s) | rounds | premature evictions | final buffers (pages) |")
print("|---|---|---|---|---|---|---|---|")
for n in (1, 2, 3):
    s = walls[f"concurrent{n}/stock"]
    for cfg in ("stock", "directed,aimd=on", "directed,aimd=off"):
        lab = f"concurrent{n}/{cfg}"
        w = walls[lab]
        wall = f"> {limit:.0f} (killed)" if w[1] else f"{w[0]:.2f}"
        if cfg == "stock":
            vs = "1×"
        else:
            vs = f"{'< ' if w[1] else ''}{s[0]/w[0]:.2f}×"
        ds = rows.get(lab, [])
        per = ", ".join(d.get("seconds", "?") + (" (killed)" if d.get("killed") else "") for d in ds)
        def tot(k):
            v = [int(d[k]) for d in ds if k in d]
            return str(sum(v)) if v else "—"
        bufs = ", ".join(d["buffer_pages"] for d in ds if "buffer_pages" in d) or "—"
        print(f"| {n} | {cfg} | {wall} | {vs} | {per} | {tot('rounds')} | {tot('premature')} | {bufs} |")
print("\n### Every run\n")
print("| run | seconds | rounds | left to readahead | premature | round pages | infill pages | dropped | final buffer (pages) | infill limit (pages) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for lab, ds in rows.items():
    for d in ds:
        print(f"| {lab} | {d['seconds']}{' (killed)' if d.get('killed') else ''} | {d.get('rounds','')} | {d.get('readahead_rounds','')} | {d.get('premature','')} | {d.get('round_pages','')} | {d.get('infill_pages','')} | {d.get('dropped','')} | {d.get('buffer_pages','')} | {d.get('infill_limit_pages','')} |")
PY
mv "$out.tmp" "$out"
echo "wrote $out" >&2
