#!/usr/bin/env bash
# Installs the peer for bench/sim-vs-libcachesim.sh into $PEER (default
# /var/tmp/outrider-bench/libcachesim), once:
#
# * a virtualenv with the `libcachesim` PyPI package (version $LCS_VERSION),
#   whose Python API runs LRU with a `hashpower` argument but has no
#   prefetcher;
# * the C `cachesim` built from the same package's source distribution
#   (`pip download --no-binary`), which bundles libCacheSim's C sources and
#   its OBL prefetcher. One change: `cachesim` hard-codes a 2^24-bucket
#   hash table (`bin/cachesim/cache_init.h`); the build reads the power from
#   the environment variable LCS_HASHPOWER instead (24 when unset), so the
#   benchmark can size the table for the trace.
#
# Needs cmake, gcc, pkg-config, libglib2.0-dev, libzstd-dev (installed with
# apt-get when missing). Prints the directory holding bin/cachesim and venv/.
set -euo pipefail
LCS_VERSION=${LCS_VERSION:-0.3.5}
PEER=${PEER:-/var/tmp/outrider-bench/libcachesim-$LCS_VERSION}
if [ -x "$PEER/bin/cachesim" ] && [ -x "$PEER/venv/bin/python" ]; then
  echo "$PEER"
  exit 0
fi
need=()
for p in cmake gcc pkg-config libglib2.0-dev libzstd-dev python3-venv; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  apt-get update -q >&2 && apt-get install -y -q "${need[@]}" >&2
fi
mkdir -p "$PEER"
python3 -m venv "$PEER/venv"
"$PEER/venv/bin/pip" install -q "libcachesim==$LCS_VERSION" >&2
"$PEER/venv/bin/pip" download -q --no-deps --no-binary :all: "libcachesim==$LCS_VERSION" -d "$PEER/sdist" >&2
tar xzf "$PEER/sdist/libcachesim-$LCS_VERSION.tar.gz" -C "$PEER/sdist"
src=$PEER/sdist/libcachesim-$LCS_VERSION/src/libCacheSim
init=$src/libCacheSim/bin/cachesim/cache_init.h
grep -q '\.hashpower = 24,' "$init"
sed -i 's/\.hashpower = 24,/.hashpower = getenv("LCS_HASHPOWER") ? atoi(getenv("LCS_HASHPOWER")) : 24,/' "$init"
cmake -S "$src" -B "$PEER/build" -DCMAKE_BUILD_TYPE=Release -DENABLE_TESTS=OFF >&2
cmake --build "$PEER/build" --target cachesim -j "$(nproc)" >&2
mkdir -p "$PEER/bin"
cp "$(find "$PEER/build" -name cachesim -type f -perm -u+x | head -1)" "$PEER/bin/cachesim"
echo "$PEER"
