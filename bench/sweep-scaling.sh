#!/usr/bin/env bash
# Sweep scaling: the local engine of `outrider sweep` on 1 thread and on
# every core, over the same grid (8 cells: 4 policies x 2 workloads, HDD
# model, 256 MiB cache), each run into a fresh output. REPS repetitions
# (default 3) alternate 1 and N threads; medians of wall seconds. Also the
# sum of the cells' CPU seconds (from the rows), which does not depend on
# the thread count if the cells do not slow each other down. The machine's
# load average is recorded; other processes taking a core lower the speed-up,
# which the 1-thread runs show as wall time above their CPU time.
# Writes bench/results/sweep-scaling.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p outrider-cli
bin=target/release/outrider
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
REPS=${REPS:-3}
cores=$(nproc)
grid=(--workload "random:size=4GiB,count=1500000;strided:size=8GiB"
      --policies none,obl,readahead,diskseen --cache 256MiB --device hdd)

run() { # threads rep -> "wall_s cpu_s_sum cells"
  local out=$work/t$1-r$2.csv start end
  start=$(date +%s.%N)
  $bin sweep "${grid[@]}" --threads "$1" --out "$out" >/dev/null
  end=$(date +%s.%N)
  python3 - "$out" "$start" "$end" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.3f} {sum(float(r['cpu_s']) for r in rows):.3f} {len(rows)}")
PY
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
one=() many=()
for rep in $(seq "$REPS"); do
  one+=("$(run 1 "$rep")")
  many+=("$(run "$cores" "$rep")")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

out=bench/results/sweep-scaling.md
python3 - "$out" "$cores" "$load_before" "$load_after" "${one[@]}" -- "${many[@]}" <<'PY'
import statistics, sys, datetime, platform
out, cores, lb, la = sys.argv[1:5]
rest = sys.argv[5:]
sep = rest.index("--")
one = [list(map(float, r.split())) for r in rest[:sep]]
many = [list(map(float, r.split())) for r in rest[sep + 1:]]
m1 = statistics.median(r[0] for r in one)
mn = statistics.median(r[0] for r in many)
with open(out, "w") as f:
    f.write("# Sweep scaling (local engine)\n\n")
    f.write("Written by `bench/sweep-scaling.sh` on %s (%s cores, %s); do not edit by hand.\n\n"
            % (datetime.date.today(), cores, platform.release()))
    f.write("Grid: workloads `random:size=4GiB,count=1500000` and `strided:size=8GiB` x policies "
            "none, obl, readahead, diskseen; cache 256MiB, HDD model: %d cells. Load average "
            "before / after: %s / %s.\n\n" % (int(one[0][2]), lb, la))
    f.write("| threads | wall s (each repetition) | median wall s | sum of cell CPU s (median) |\n|---|---|---|---|\n")
    for n, rows, m in (("1", one, m1), (cores, many, mn)):
        f.write("| %s | %s | %.2f | %.2f |\n" % (n, ", ".join("%.2f" % r[0] for r in rows), m,
                                                statistics.median(r[1] for r in rows)))
    f.write("\nSpeed-up (median wall, 1 thread / %s threads): **%.2fx**.\n" % (cores, m1 / mn))
    # The load average counts this benchmark's own threads, so judge
    # interference by the 1-thread runs instead: with the machine to
    # itself, their wall time is about their cells' CPU time.
    cpu1 = statistics.median(r[1] for r in one)
    if m1 > 1.15 * cpu1:
        f.write("\nOther processes held the CPU: the 1-thread runs took %.2f s of wall time for "
                "%.2f s of cell CPU time, so the threads competed with them, not only with each "
                "other. Re-run on an idle machine.\n" % (m1, cpu1))
    else:
        f.write("\nThe 1-thread runs took %.2f s of wall time for %.2f s of cell CPU time: no "
                "other process held a core. With %s threads the cells' CPU time grew to %.2f s "
                "(they slow each other down: shared caches and memory bandwidth).\n"
                % (m1, cpu1, cores, statistics.median(r[1] for r in many)))
PY
cat "$out"
