#!/usr/bin/env bash
# `outrider stat|warm|evict -r` over FILES small files (default 10^6) with
# the descriptor limit lowered to 64: the walk must stream (bounded
# descriptors and memory). Reports wall time and peak RSS (GNU time).
# Writes bench/results/live-files.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${FILES:-1000000}
DIR=${DIR:-/var/tmp/outrider-bench-files}
cargo build --release --quiet -p outrider-cli
bin=$PWD/target/release/outrider
if [ ! -f "$DIR/.complete-$FILES" ]; then
  rm -rf "$DIR"; mkdir -p "$DIR"
  python3 - "$DIR" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
per = 1000
for d in range((n + per - 1) // per):
    sub = os.path.join(root, f"d{d // 100}", f"e{d % 100}")
    os.makedirs(sub, exist_ok=True)
    for i in range(min(per, n - d * per)):
        fd = os.open(os.path.join(sub, f"f{i}"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x" * 100)
        os.close(fd)
PY
  touch "$DIR/.complete-$FILES"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() { # action
  ( ulimit -n 64; /usr/bin/time -f '%e %M' -o "$work/t" "$bin" "$1" -r --json "$DIR" > "$work/out" )
  read -r secs rss < "$work/t"
  python3 - "$work/out" "$1" "$secs" "$rss" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(f"| {sys.argv[2]} | {d['files']} | {d['dirs']} | {d['resident_pages']} | {d['errors']} | {sys.argv[3]} | {int(sys.argv[4]) / 1024:.1f} |")
PY
}
out=bench/results/live-files.md
{
  echo "# stat / warm / evict over many files"
  echo
  echo "Written by \`bench/live/manyfiles.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r)); do not edit by hand."
  echo
  echo "$FILES files of 100 bytes in 1000-file directories; \`ulimit -n 64\`; \`-r --json\`."
  echo "resident = pages resident before the action (cachestat)."
  echo
  echo "| action | files | dirs | resident pages | errors | wall (s) | peak RSS (MiB) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  row stat
  row evict
  row warm
  row stat
} > "$out"
cat "$out"
