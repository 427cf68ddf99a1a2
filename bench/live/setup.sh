# Sourced by bench/live/run.sh and bench/live/metadata.sh: cached setup of
# the Linux source tree in $DATA_DIR/linux (Debian linux-source-6.1,
# 1.5 GB, 79k files), unpacked once; sets $tree.
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
