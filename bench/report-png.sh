#!/usr/bin/env bash
# The paper-suite comparison report as a browser shows it: writes the HTML
# report of `outrider compare --workload paper-suite` and renders it with
# headless Chromium (Debian package `chromium`) to
# bench/results/paper-suite-report.png (and keeps the HTML beside it).
# WIDTH and HEIGHT set the window (default 1400 wide and tall enough for
# the whole page: about 930 px per section heading).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || {
  echo "report-png.sh: chromium is missing (apt-get install chromium)" >&2
  exit 1
}
cargo build --release --quiet
out=bench/results
html=$out/paper-suite-report.html
png=$out/paper-suite-report.png
target/release/outrider compare --workload paper-suite --html "$html" >/dev/null
height=${HEIGHT:-$((1000 + 930 * $(grep -o '<h2>' "$html" | wc -l)))}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${WIDTH:-1400},$height" --screenshot="$PWD/$png" \
  "file://$PWD/$html" 2>/dev/null
echo "wrote $html and $png"
