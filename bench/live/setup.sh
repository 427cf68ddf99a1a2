# Sourced by bench/live/run.sh, metadata.sh and metawalk.sh: cached setup
# of the Linux source tree in $DATA_DIR/linux (Debian linux-source-6.1,
# 1.5 GB, 79k files), unpacked once, which sets $tree; and cold(), run
# before every timed run.
setup_tree() {
  tree=$DATA_DIR/linux
  if [ ! -f "$tree/.complete" ]; then
    local tarball
    tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | head -1 || true)
    if [ -z "$tarball" ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-source-6.1 > /dev/null
      tarball=$(ls /usr/src/linux-source-*.tar.xz | head -1)
    fi
    rm -rf "$tree" "$tree.tmp"; mkdir -p "$tree.tmp"
    tar xJf "$tarball" -C "$tree.tmp" --strip-components=1
    mv "$tree.tmp" "$tree"; touch "$tree/.complete"; sync
  fi
}

# Cold cache, and the disk idle: reads a previous run left queued (a
# prefetch still in flight when its program exited) must not slow the next.
cold() {
  # The previous outrider run may still be saving its history in the
  # background (and removing its tracing instance): let it finish, as the
  # disk's in-flight I/O below, so it neither competes with nor delays the
  # next timed run (a run started meanwhile would wait for the save).
  local k
  for k in $(seq 500); do
    pgrep -x outrider > /dev/null || break
    sleep 0.01
  done
  sync; echo 3 > /proc/sys/vm/drop_caches
  local dev i
  dev=$(lsblk -no PKNAME "$(df --output=source "$DATA_DIR" | tail -1)" 2>/dev/null | head -1)
  [ -n "$dev" ] || dev=$(basename "$(df --output=source "$DATA_DIR" | tail -1)")
  for i in $(seq 200); do
    [ "$(awk '{print $1 + $2}' "/sys/block/$dev/inflight" 2>/dev/null || echo 0)" = 0 ] && break
    sleep 0.01
  done
  echo 3 > /proc/sys/vm/drop_caches
}
