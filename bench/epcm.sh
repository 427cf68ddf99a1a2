#!/usr/bin/env bash
# EPCM evidence (issue 4): file-level prediction on the paper's four
# benchmark shapes, next-access accuracy on the LIRS traces, model speed.
#
# Method (EPCM section 4): HDD model, 256 MiB cache emptied before every run,
# 3 training runs then 20 measured runs (mean reported); patch-build trains on
# version 0 and is measured on versions 1..13 without retraining. Policies:
# none, readahead, last-successor, pcm, epcm, epcm with partition jumping
# (jump=4), epcm+readahead (stacked). The numbers come from
# crates/sim/examples/epcm_bench.rs (see its header for every definition).
# Writes bench/results/epcm.md. Usage: bench/epcm.sh [--runs N] [--train N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p outrider-sim --example epcm_bench
out=bench/results/epcm.md
traces=(../shared/traces/lirs_cs.trc ../shared/traces/lirs_multi2.trc)
{
  echo "# EPCM: file-level predictive prefetching"
  echo
  echo "Written by \`bench/epcm.sh $*\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD) ($(nproc) cores, $(uname -r)); do not edit by hand."
  echo "Command: \`target/release/examples/epcm_bench ${*:-} ${traces[*]}\`."
  echo
  echo "- io_wait_s / elapsed_s: mean per measured run (simulated time). io_wait vs none: relative to the none row of the same workload."
  echo "- lead_ms: mean time from a prefetch's issue to the demand access it served, over every prefetch-served block of the measured runs."
  echo "- next_acc: over the measured file events, fraction whose file was the model's single most likely next file at the previous event (events = measured file events). File event = a read of a file other than the process's previous one."
  echo "- Policy defaults: pcm partition=64 order=2 threshold=0.1; epcm partition=64 order=45 threshold=0.6; prefetch extent=whole cap=1MiB."
  echo
  target/release/examples/epcm_bench "$@" "${traces[@]}"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
