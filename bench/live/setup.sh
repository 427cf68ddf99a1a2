# Sourced by bench/live/run.sh, sim-vs-live.sh, metadata.sh, metawalk.sh
# and suite.sh (which uses setup_tree and cold): the live workloads
# (cached setup in $DATA_DIR; CMD=( ... ) of each by command_of), among
# them the Linux source tree in $DATA_DIR/linux (Debian linux-source-6.1,
# 1.5 GB, 79k files), unpacked once, which sets $tree; and cold(), run
# before every timed run.
#
# Workloads (see run.sh for what each measures):
#   reverse stride seq random   bench/live/reader.c over a 1 GiB file
#   grep diff                   the kernel tree (diff: two copies of DIFF_DIRS)
#   sqlite                      ORDER BY on a TPC-C-like table in a memory cgroup
#   python                      cold start of numpy, pandas, scipy, sympy
LIVE_WORKLOADS="reverse stride seq random grep diff sqlite python"

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

# Whether a process pgrep "$@" finds is still working: any but a parked
# tracing source (comm outrider-bpf-pa[rk] or outrider-park).
outrider_busy() {
  local p
  for p in $(pgrep "$@"); do
    case $(cat "/proc/$p/comm" 2> /dev/null) in
      outrider-bpf-pa | outrider-park | "") ;;
      *) return 0 ;;
    esac
  done
  return 1
}

# Cold cache, and the disk idle: reads a previous run left queued (a
# prefetch still in flight when its program exited) must not slow the next.
cold() {
  # The previous outrider run may still be saving its history in the
  # background (and removing its tracing instance): let it finish, as the
  # disk's in-flight I/O below, so it neither competes with nor delays the
  # next timed run (a run started meanwhile would wait for the save).
  # Only this script's binary ($bin, when set): other people's outrider
  # runs on a shared machine are not ours to wait for. Not the process
  # keeping a parked tracing source for the next run (it lingers 10 s,
  # idle; waiting for it added 5 s to every cold after an outrider run).
  local k mine=(-x outrider)
  [ -n "${bin:-}" ] && mine=(-f -- "^$bin ")
  for k in $(seq 500); do
    outrider_busy "${mine[@]}" || break
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

# Defaults of the workloads' settings (the caller may set any first).
# size of the reader workloads' file (1 GiB; other sizes are cached apart)
FILE_BYTES=${FILE_BYTES:-1073741824}
RANDOM_READS=${RANDOM_READS:-20000}
DIFF_DIRS=${DIFF_DIRS:-arch fs net kernel include sound Documentation}
SQLITE_ROWS=${SQLITE_ROWS:-1500000}
SQLITE_LIMIT=${SQLITE_LIMIT:-128M}
# zips are 0000..9999 + "11111": the query reads those below SQLITE_ZIP_BELOW
SQLITE_ZIP_BELOW=${SQLITE_ZIP_BELOW:-0400}
PY_MODULES=${PY_MODULES:-numpy pandas scipy.stats scipy.optimize scipy.signal sympy}
CGROUP=${CGROUP:-/sys/fs/cgroup/memory/outrider-bench}

setup_file() {
  cc -O2 -o "$DATA_DIR/reader" bench/live/reader.c
  data=$DATA_DIR/data-1g
  [ "$FILE_BYTES" = 1073741824 ] || data=$DATA_DIR/data-$FILE_BYTES
  if [ ! -f "$data" ] || [ "$(stat -c %s "$data")" != "$FILE_BYTES" ]; then
    head -c "$FILE_BYTES" /dev/urandom > "$data.tmp" && mv "$data.tmp" "$data"
    sync
  fi
}
setup_diff() {
  setup_tree
  dtag=$(echo "$DIFF_DIRS" | tr ' ' '_')
  diffa=$DATA_DIR/diff-$dtag/a
  diffb=$DATA_DIR/diff-$dtag/b
  if [ ! -f "$DATA_DIR/diff-$dtag/.complete" ]; then
    rm -rf "$DATA_DIR/diff-$dtag"; mkdir -p "$diffa" "$diffb"
    for d in $DIFF_DIRS; do cp -a "$tree/$d" "$diffa/"; done
    sync
    # The second copy is written after the first: its blocks lie elsewhere.
    for d in $DIFF_DIRS; do cp -a "$diffa/$d" "$diffb/"; done
    sync; touch "$DATA_DIR/diff-$dtag/.complete"
  fi
}
setup_sqlite() {
  db=$DATA_DIR/tpcc-$SQLITE_ROWS.db
  if [ ! -f "$db" ]; then
    rm -f "$db.tmp"
    python3 bench/live/tpcc_customer.py "$db.tmp" "$SQLITE_ROWS"
    mv "$db.tmp" "$db"; sync
  fi
  mkdir -p "$CGROUP"
  echo "$SQLITE_LIMIT" > "$CGROUP/memory.limit_in_bytes"
  limit_bytes=$(cat "$CGROUP/memory.limit_in_bytes")
  db_bytes=$(stat -c %s "$db")
  query="SELECT c_id, c_last, c_zip, c_balance, length(c_data) FROM customer WHERE c_zip < '$SQLITE_ZIP_BELOW' ORDER BY c_zip;"
}
setup_python() {
  venv=$DATA_DIR/venv
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q numpy pandas scipy sympy
    touch "$venv/.complete"
  fi
  pyimport="import $(echo "$PY_MODULES" | tr ' ' ',')"
}

# CMD=( ... ) for workload $1
command_of() {
  case $1 in
    reverse | stride | seq) CMD=("$DATA_DIR/reader" "$1" "$data") ;;
    random) CMD=("$DATA_DIR/reader" random "$data" "$RANDOM_READS") ;;
    # A string that occurs nowhere: grep reads every file to its end.
    grep) CMD=(grep -r -F -e outrider-bench-no-such-string "$tree") ;;
    diff) CMD=(diff -r "$diffa" "$diffb") ;;
    sqlite) CMD=("$PWD/bench/live/incgroup.sh" "$CGROUP" sqlite3 "$db" "$query") ;;
    python) CMD=("$venv/bin/python" -c "$pyimport") ;;
    *) echo "unknown workload '$1' (expected one of: reverse stride seq random grep diff sqlite python)" >&2; exit 2 ;;
  esac
}

# Set up workload $1 (cached) and check its name.
setup_workload() {
  case $1 in
    reverse | stride | seq | random) setup_file ;;
    grep) setup_tree ;;
    diff) setup_diff ;;
    sqlite) setup_sqlite ;;
    python) setup_python ;;
    *) command_of "$1" ;;
  esac
}
