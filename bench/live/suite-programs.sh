# Sourced by bench/live/suite.sh: the broad live suite's programs and
# their fixtures. Every program is a real, unmodified tool run as a user
# would run it; fixtures are built once from offline data into $DATA_DIR
# (the Linux source tree of Debian's linux-source-6.1, files generated
# here, a SQLite database, a git repository made from the tree, a venv of
# PyPI wheels) and reused by later invocations.
#
# suite_program NAME sets CAT (category), DESC, CMD=( ... ), TAGS (words:
# backwards / stride for item-6's run-1 target, cgroup when the program runs
# in the memory cgroup) and REPS_OF (repetitions; short programs get more).
# SKIP is set (to the reason) when the program cannot run here. A program
# whose launch set is to be learnt from another command sets FIRST_CMD
# (the daemon's launch bench records with it). SUITE_NO_CGROUP=1 runs the
# SQLite programs with no memory limit, as a user runs sqlite3.

SUITE_PROGRAMS="tar cp sha256 rg du find diff
git-log git-grep git-status
gcc gxx rustc java node python
sqlite-index sqlite-point
wc rg-mmap tac mmap-back pread-stride mmap-stride
ls python-bare perl file"
SUITE_QUICK="tar du gcc sqlite-point tac ls"
# Program starts beyond the suite (Debian packages a user runs), for the
# daemon's launch bench: PROGRAMS="$SUITE_STARTS" bench/daemon/launch.sh.
SUITE_STARTS="gdb cmake convert vim npm man pip go sqlite-cli curl gpg make xz lua php ruby emacs gs"
# Programs over the machine's own files (its documentation, headers,
# libraries, package database), as a user runs them on any Debian system,
# and two over files of the suite's (64 and 6 MiB): the daemon's launch bench,
# PROGRAMS="$SUITE_SYSTEM" bench/daemon/launch.sh.
SUITE_SYSTEM="find-usr grep-doc dpkg-search py-stdlib md5-libs du-lib ls-include tar-man awk-file sort-file"

# Subdirectories of the kernel tree copied to the tree walkers' tree (185 MB,
# 31 k files) and to the git repository's history (90 MB, 5 k files).
SUITE_TREE_DIRS=${SUITE_TREE_DIRS:-arch include Documentation}
SUITE_GIT_DIRS=${SUITE_GIT_DIRS:-fs net kernel mm}
SUITE_FILE_MIB=${SUITE_FILE_MIB:-256}
SUITE_SQL_ROWS=${SUITE_SQL_ROWS:-1200000}
SUITE_SQL_LIMIT=${SUITE_SQL_LIMIT:-128M}
SUITE_SQL_CUSTOMERS=100000
SUITE_SQL_CUST_BELOW=${SUITE_SQL_CUST_BELOW:-2000}
SUITE_SQL_POINTS=${SUITE_SQL_POINTS:-4000}
SUITE_CGROUP=${SUITE_CGROUP:-/sys/fs/cgroup/memory/outrider-suite}
SUITE_PY_IMPORT=${SUITE_PY_IMPORT:-import pandas, matplotlib.pyplot, sklearn.ensemble}

# Install the Debian packages whose commands are missing (command:package).
suite_install() {
  local want=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" > /dev/null 2>&1 || want+=("${pair#*:}")
  done
  [ ${#want[@]} = 0 ] || suite_apt "${want[@]}"
}

# apt-get install PACKAGES (apt-get update once first); a failure is
# reported, not fatal: the programs needing them are skipped.
suite_apt() {
  if [ -z "${SUITE_APT_UPDATED:-}" ]; then
    apt-get update -qq || true
    SUITE_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" > /dev/null ||
    echo "suite: apt-get install $* failed; programs needing them are skipped" >&2
}

# What the suite itself and its fixtures need on a fresh Debian machine.
suite_base() {
  suite_install pgrep:procps lsblk:util-linux xz:xz-utils python3:python3 diff:diffutils
}

# The tree walkers' tree: a copy (written after the kernel tree, so its
# blocks lie elsewhere; diff -r compares the two).
suite_tree() {
  setup_tree # bench/live/setup.sh: $tree = $DATA_DIR/linux
  src=$DATA_DIR/src
  if [ ! -f "$src/.complete" ]; then
    rm -rf "$src"; mkdir -p "$src"
    local d
    for d in $SUITE_TREE_DIRS; do cp -a "$tree/$d" "$src/"; done
    sync; touch "$src/.complete"
  fi
}

# A packed repository with history: one commit per second-level directory
# of SUITE_GIT_DIRS, then ten commits each editing 50 files; fully repacked,
# then cloned (the clone's single pack and checked-out tree are what the
# programs read).
suite_git() {
  suite_tree
  repo=$DATA_DIR/repo
  [ -f "$repo/.complete" ] && return 0
  local g=$DATA_DIR/git-build d sub i
  rm -rf "$g" "$repo"; mkdir -p "$g"
  git -C "$g" init -q
  git -C "$g" config user.email suite@outrider.invalid
  git -C "$g" config user.name suite
  for d in $SUITE_GIT_DIRS; do
    mkdir -p "$g/$d"
    for sub in "$tree/$d"/*/; do
      cp -a "$sub" "$g/$d/"
      git -C "$g" add -A && git -C "$g" commit -q -m "add $d/$(basename "$sub")"
    done
    find "$tree/$d" -maxdepth 1 -type f -exec cp -a {} "$g/$d/" \;
    git -C "$g" add -A && git -C "$g" commit -q -m "add $d"
  done
  for i in $(seq 10); do
    git -C "$g" ls-files | awk -v i="$i" 'NR % 97 == i' | head -50 |
      while read -r f; do echo "/* edit $i */" >> "$g/$f"; done
    git -C "$g" commit -q -a -m "edit $i"
  done
  git -C "$g" repack -a -d -q
  git clone -q --no-local "$g" "$repo"
  rm -rf "$g"; sync; touch "$repo/.complete"
}

# A text file of SUITE_FILE_MIB MiB (base64 lines of 100 characters).
suite_file() {
  big=$DATA_DIR/big-$SUITE_FILE_MIB.txt
  if [ ! -f "$big" ]; then
    head -c $((SUITE_FILE_MIB * 1024 * 1024 * 100 / 101 / 4 * 3)) /dev/urandom | base64 -w 100 > "$big.tmp"
    mv "$big.tmp" "$big"; sync
  fi
  # A quarter of its size, another file: pread-other's.
  other=$DATA_DIR/other-$((SUITE_FILE_MIB / 4)).txt
  if [ ! -f "$other" ]; then
    head -c $((SUITE_FILE_MIB / 4 * 1024 * 1024 * 100 / 101 / 4 * 3)) /dev/urandom | base64 -w 100 > "$other.tmp"
    mv "$other.tmp" "$other"; sync
  fi
  # Two files of 6 MiB (less than the disk's readahead window, 8 MiB):
  # wc-stdin's and wc-other's.
  small=$DATA_DIR/small-6.txt small_other=$DATA_DIR/small-other-6.txt
  local f
  for f in "$small" "$small_other"; do
    [ -f "$f" ] && continue
    head -c $((6 * 1024 * 1024 * 100 / 101 / 4 * 3)) /dev/urandom | base64 -w 100 > "$f.tmp"
    mv "$f.tmp" "$f"; sync
  done
}

# orders(id, cust, day, amount, note): rows in id order, an index on cust,
# so a range of customers visits the table's pages in random order.
suite_sqlite() {
  db=$DATA_DIR/orders-$SUITE_SQL_ROWS.db
  if [ ! -f "$db" ]; then
    rm -f "$db.tmp"
    /usr/bin/python3 - "$db.tmp" "$SUITE_SQL_ROWS" "$SUITE_SQL_CUSTOMERS" <<'PY'
import random, sqlite3, string, sys
path, rows, customers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(7)
con = sqlite3.connect(path)
con.execute("PRAGMA journal_mode=OFF")
con.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, day INTEGER, amount REAL, note TEXT)")
letters = string.ascii_letters
chunk = "".join(r.choices(letters, k=1 << 16))
def rows_of(lo, hi):
    for i in range(lo, hi):
        k = r.randrange(0, (1 << 16) - 300)
        yield (i, r.randrange(customers), r.randrange(3650), r.random() * 1000, chunk[k:k + r.randint(150, 300)])
for lo in range(0, rows, 100000):
    con.executemany("INSERT INTO orders VALUES (?,?,?,?,?)", rows_of(lo, min(rows, lo + 100000)))
con.execute("CREATE INDEX orders_cust ON orders(cust)")
con.commit()
PY
    mv "$db.tmp" "$db"; sync
  fi
  points=$DATA_DIR/points-$SUITE_SQL_ROWS-$SUITE_SQL_POINTS.sql
  if [ ! -f "$points" ]; then
    /usr/bin/python3 -c 'import random, sys
r = random.Random(11)
for _ in range(int(sys.argv[2])):
    print(f"SELECT id, cust, length(note) FROM orders WHERE id = {r.randrange(int(sys.argv[1]))};")' \
      "$SUITE_SQL_ROWS" "$SUITE_SQL_POINTS" > "$points"
  fi
  db_bytes=$(stat -c %s "$db")
  sql_wrap=() sql_where="with no memory limit"
  [ -n "${SUITE_NO_CGROUP:-}" ] && return 0
  mkdir -p "$SUITE_CGROUP"
  echo "$SUITE_SQL_LIMIT" > "$SUITE_CGROUP/memory.limit_in_bytes"
  sql_limit=$(cat "$SUITE_CGROUP/memory.limit_in_bytes")
  sql_wrap=("$PWD/bench/live/incgroup.sh" "$SUITE_CGROUP") sql_where="in a $SUITE_SQL_LIMIT memory cgroup" TAGS=cgroup
}

# The index scan's statement over the customers in $1.
sql_customers() {
  echo "SELECT cust, count(*), sum(amount), max(length(note)) FROM orders WHERE $1 GROUP BY cust;"
}

suite_venv() {
  venv=$DATA_DIR/venv
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" 2> /dev/null || { suite_apt python3-venv; /usr/bin/python3 -m venv "$venv"; } || return 1
    "$venv/bin/pip" install -q pandas matplotlib scikit-learn || return 1
    # matplotlib builds its font cache on the first import: not measured.
    "$venv/bin/python" -c "$SUITE_PY_IMPORT" || return 1
    touch "$venv/.complete"
  fi
}

suite_sources() {
  mkdir -p "$DATA_DIR/hello"
  printf 'int main(void) { return 0; }\n' > "$DATA_DIR/hello/hello.c"
  printf '#include <iostream>\n#include <map>\n#include <string>\n#include <vector>\nint main() { std::map<std::string, std::vector<int>> m; m["a"].push_back(1); std::cout << m.size() << "\\n"; }\n' > "$DATA_DIR/hello/hello.cpp"
  printf 'fn main() { println!("{}", (1..10).sum::<i32>()); }\n' > "$DATA_DIR/hello/hello.rs"
  printf 'public class Hello { public static void main(String[] a) { System.out.println("hello"); } }\n' > "$DATA_DIR/hello/Hello.java"
}

# The Python one-liners of the large-file rows: the user's script, run by
# the unmodified interpreter. Each prints a checksum so no read is elided.
PY_MMAP_BACK='import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); n = os.fstat(fd).st_size
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
print(sum(m[i] for i in range((n - 1) // 4096 * 4096, -1, -4096)))'
PY_MMAP_STRIDE='import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); n = os.fstat(fd).st_size
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
print(sum(m[i] for i in range(0, n, 8192)))'
PY_PREAD_STRIDE='import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); n = os.fstat(fd).st_size
print(sum(os.pread(fd, 4096, o)[0] for o in range(0, n, 8192)))'

# Set CAT, DESC, CMD, TAGS, REPS_OF of program $1 (fixtures built on
# demand; a fixture that fails to build stops the suite); SKIP says why
# when the program cannot run here.
suite_program() {
  TAGS="" REPS_OF=$REPS SKIP="" CMD=() FIRST_CMD=()
  local out=/dev/shm/outrider-suite-out
  case $1 in
    tar | cp | sha256 | rg | du | find | diff) suite_tree ;;
    git-*) suite_install git:git; if command -v git > /dev/null; then suite_git; fi ;;
    wc | wc-* | rg-mmap | tac | mmap-* | pread-* | awk-file | sort-file) suite_file ;;
    sqlite-*) suite_install sqlite3:sqlite3; suite_sqlite ;;
    gcc | gxx | rustc | java) suite_sources ;;
  esac
  case $1 in
    tar) CAT=tree DESC="GNU tar of the tree to a pipe (\`tar -cf - | wc -c\`)"
      CMD=(sh -c 'tar -cf - -C "$1" . | wc -c' tar "$src") ;;
    cp) CAT=tree DESC="\`cp -a\` of the tree to tmpfs (removed between runs)"
      CMD=(cp -a "$src" "$out/cp") ;;
    sha256) CAT=tree DESC="\`find -type f -exec sha256sum {} +\` over the tree"
      CMD=(find "$src" -type f -exec sha256sum {} +) ;;
    rg) suite_install rg:ripgrep; CAT=tree DESC="ripgrep (2 threads) of a string found nowhere over the tree, hidden and ignored files included"
      CMD=(rg -uu -F -e outrider-suite-no-such-string "$src") ;;
    du) CAT=tree DESC="\`du -s\` of the whole kernel tree (metadata only: 79 k inodes)"
      CMD=(du -s "$tree") ;;
    find) CAT=tree DESC="\`find -name '*.h'\` over the whole kernel tree (directories only: d_type)"
      CMD=(find "$tree" -name '*.h') ;;
    diff) CAT=tree DESC="\`diff -r\` of the kernel tree's include/ against the tree's copy of it"
      CMD=(diff -r "$tree/include" "$src/include") ;;
    git-log) CAT=vcs DESC="\`git log -p\` of a packed clone (every commit's patch: all blobs from the pack)"
      CMD=(git -C "$repo" log -p --no-color) ;;
    git-grep) CAT=vcs DESC="\`git grep\` of a string found nowhere in HEAD (blobs from the pack)"
      CMD=(git -C "$repo" grep -F -e outrider-suite-no-such-string HEAD) ;;
    git-status) CAT=vcs DESC="\`git status --porcelain\` of the clone's checked-out tree (index + lstat of 5 k files)"
      CMD=(git -C "$repo" status --porcelain) ;;
    gcc) suite_install gcc:gcc; CAT=start DESC="\`gcc -O2\` of a one-line C program"
      CMD=(gcc -O2 -o "$out/hello-c" "$DATA_DIR/hello/hello.c") ;;
    gxx) suite_install g++:g++; CAT=start DESC="\`g++ -O2\` of a 3-line program including iostream, map, string, vector"
      CMD=(g++ -O2 -o "$out/hello-cpp" "$DATA_DIR/hello/hello.cpp") ;;
    rustc) suite_install rustc:rustc; CAT=start DESC="\`rustc -O\` of a one-line Rust program ($(rustc --version 2> /dev/null))"
      CMD=(rustc -O -o "$out/hello-rs" "$DATA_DIR/hello/hello.rs") ;;
    java) suite_install java:default-jdk-headless; CAT=start DESC="\`java Hello.java\` (source launcher: compiles in memory, then runs)"
      CMD=(java "$DATA_DIR/hello/Hello.java") ;;
    node) suite_install node:nodejs; CAT=start DESC="\`node -e\` requiring http, crypto, zlib"
      CMD=(node -e 'require("http"); require("crypto"); require("zlib")') ;;
    python) suite_venv || { SKIP="venv or pip install failed"; return 0; }
      CAT=start DESC="Python \`$SUITE_PY_IMPORT\` from a venv of PyPI wheels"
      CMD=("$venv/bin/python" -c "$SUITE_PY_IMPORT") ;;
    sqlite-index) CAT=db DESC="\`sqlite3\`: customers below $SUITE_SQL_CUST_BELOW of $SUITE_SQL_CUSTOMERS through the index on cust, $SUITE_SQL_ROWS-row table, $sql_where"
      CMD=("${sql_wrap[@]}" sqlite3 "$db" "$(sql_customers "cust < $SUITE_SQL_CUST_BELOW")") ;;
    sqlite-point) CAT=db DESC="\`sqlite3 .read\`: $SUITE_SQL_POINTS random primary-key lookups, one statement each, same table, $sql_where"
      CMD=("${sql_wrap[@]}" sqlite3 "$db" ".read $points") ;;
    sqlite-other) CAT=db DESC="\`sqlite3\`: customers 50 000-52 000 through the same index, its launch set learnt from sqlite-index's query (the same launch key, other table pages), $sql_where"
      CMD=("${sql_wrap[@]}" sqlite3 "$db" "$(sql_customers "cust >= 50000 AND cust < 52000")")
      FIRST_CMD=("${sql_wrap[@]}" sqlite3 "$db" "$(sql_customers "cust < $SUITE_SQL_CUST_BELOW")") ;;
    wc) CAT=file DESC="\`wc -l\` of a $SUITE_FILE_MIB MiB text file (sequential read)"
      CMD=(wc -l "$big") ;;
    rg-mmap) suite_install rg:ripgrep; CAT=file DESC="\`rg --mmap\` of a string found nowhere in the file (sequential mmap)"
      CMD=(rg --mmap -c -F -e outrider-suite-no-such-string "$big") ;;
    tac) CAT=file TAGS=backwards DESC="\`tac\` of the file (read backwards)"
      CMD=(tac "$big") ;;
    mmap-back) CAT=file TAGS=backwards DESC="Python: one byte of every 4 KiB page through mmap, last page first"
      CMD=(/usr/bin/python3 -c "$PY_MMAP_BACK" "$big") ;;
    mmap-stride) CAT=file TAGS=stride DESC="Python: one byte of every other 4 KiB page through mmap"
      CMD=(/usr/bin/python3 -c "$PY_MMAP_STRIDE" "$big") ;;
    pread-stride) CAT=file TAGS=stride DESC="Python: \`os.pread\` of every other 4 KiB block"
      CMD=(/usr/bin/python3 -c "$PY_PREAD_STRIDE" "$big") ;;
    pread-other) CAT=file DESC="Python: \`os.pread\` of every other 4 KiB block of a $((SUITE_FILE_MIB / 4)) MiB file given on its standard input, its launch set learnt from the same command over the $SUITE_FILE_MIB MiB file (the data named nowhere on the command line)"
      CMD=(sh -c 'exec /usr/bin/python3 -c "$1" /dev/stdin < "$2"' sh "$PY_PREAD_STRIDE" "$other")
      FIRST_CMD=(sh -c 'exec /usr/bin/python3 -c "$1" /dev/stdin < "$2"' sh "$PY_PREAD_STRIDE" "$big") ;;
    wc-stdin) CAT=file DESC="\`wc -l\` of a 6 MiB file given on its standard input"
      CMD=(sh -c 'exec wc -l < "$1"' sh "$small") ;;
    wc-other) CAT=file DESC="\`wc -l\` of a 6 MiB file given on its standard input, its launch set learnt from the same command over another 6 MiB file"
      CMD=(sh -c 'exec wc -l < "$1"' sh "$small")
      FIRST_CMD=(sh -c 'exec wc -l < "$1"' sh "$small_other") ;;
    mmap-other) CAT=file DESC="Python: one byte of every other 4 KiB page through mmap of a $((SUITE_FILE_MIB / 4)) MiB file given on its standard input, its launch set learnt from the same command over the $SUITE_FILE_MIB MiB file"
      CMD=(sh -c 'exec /usr/bin/python3 -c "$1" /dev/stdin < "$2"' sh "$PY_MMAP_STRIDE" "$other")
      FIRST_CMD=(sh -c 'exec /usr/bin/python3 -c "$1" /dev/stdin < "$2"' sh "$PY_MMAP_STRIDE" "$big") ;;
    ls) CAT=short DESC="\`ls -l /usr/bin\`" CMD=(ls -l /usr/bin) ;;
    python-bare) CAT=short DESC="\`python3 -c pass\` (Debian's Python)" CMD=(/usr/bin/python3 -c pass) ;;
    perl) CAT=short DESC="\`perl -MPOSIX -e 1\`" CMD=(perl -MPOSIX -e 1) ;;
    file) suite_install file:file; CAT=short DESC="\`file /bin/ls\` (loads the magic database)" CMD=(file /bin/ls) ;;
    find-usr) CAT=system DESC="\`find /usr/share -name '*.nomatch'\`"
      CMD=(find /usr/share -name '*.nomatch') ;;
    grep-doc) CAT=system DESC="GNU \`grep -r\` of a string found nowhere over /usr/share/doc"
      CMD=(grep -r -F -e outrider-suite-no-such-string /usr/share/doc) ;;
    dpkg-search) CAT=system DESC="\`dpkg -S /usr/bin/perl\` (every package's file list)"
      CMD=(dpkg -S /usr/bin/perl) ;;
    py-stdlib) CAT=start DESC="Debian's python3 importing asyncio, email, http.server, xml.dom, sqlite3, decimal, unittest, argparse"
      CMD=(/usr/bin/python3 -c "import asyncio, email.mime.multipart, http.server, xml.dom.minidom, sqlite3, decimal, unittest, argparse") ;;
    md5-libs) CAT=system DESC="\`md5sum\` of every shared library over 1 MiB in /usr/lib/x86_64-linux-gnu (mostly CPU: little to prefetch)"
      CMD=(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -name '*.so.*' -type f -size +1M -exec md5sum {} +) ;;
    du-lib) CAT=system DESC="\`du -s /usr/lib\`" CMD=(du -s /usr/lib) ;;
    ls-include) CAT=system DESC="\`ls -lR /usr/include\`" CMD=(ls -lR /usr/include) ;;
    tar-man) CAT=system DESC="\`tar -cf - /usr/share/man | wc -c\`"
      CMD=(sh -c 'tar -cf - /usr/share/man 2> /dev/null | wc -c') ;;
    awk-file) CAT=file DESC="\`awk 'END { print NR }'\` of a $((SUITE_FILE_MIB / 4)) MiB file"
      CMD=(awk 'END { print NR }' "$other") ;;
    sort-file) CAT=file DESC="\`sort\` of a 6 MiB file to /dev/null"
      CMD=(sort -o /dev/null "$small") ;;
    gdb) suite_install gdb:gdb; CAT=start DESC="\`gdb --version\`" CMD=(gdb --version) ;;
    cmake) suite_install cmake:cmake; CAT=start DESC="\`cmake --version\`" CMD=(cmake --version) ;;
    convert) suite_install /usr/bin/convert:imagemagick; CAT=start DESC="\`convert -version\` (ImageMagick)" CMD=(/usr/bin/convert -version) ;;
    vim) suite_install vim:vim; CAT=start DESC="\`vim -es\` with the system vimrc, quitting at once"
      CMD=(vim -es -u /usr/share/vim/vimrc -c q) ;;
    npm) suite_install npm:npm; CAT=start DESC="\`npm --version\` (node loading npm's modules)" CMD=(npm --version) ;;
    man) suite_install man:man-db; CAT=start DESC="\`man ls\` to a pipe (man, groff, its macros and fonts)" CMD=(man ls) ;;
    pip) suite_install pip3:python3-pip; CAT=start DESC="\`pip3 --version\` (Python importing pip)" CMD=(pip3 --version) ;;
    go) suite_install go:golang-go; CAT=start DESC="\`go version\` (a statically linked binary)" CMD=(go version) ;;
    sqlite-cli) suite_install sqlite3:sqlite3; CAT=start DESC="\`sqlite3 :memory: 'select 1'\`" CMD=(sqlite3 :memory: "select 1") ;;
    curl) suite_install curl:curl; CAT=start DESC="\`curl --version\` (libcurl and its TLS, HTTP/2, SSH, LDAP libraries)" CMD=(curl --version) ;;
    gpg) suite_install gpg:gpg; CAT=start DESC="\`gpg --version\`" CMD=(gpg --version) ;;
    make) suite_install make:make; CAT=start DESC="\`make --version\` (3 ms cold)" CMD=(make --version) ;;
    xz) suite_install xz:xz-utils; CAT=start DESC="\`xz --version\` (3 ms cold)" CMD=(xz --version) ;;
    lua) suite_install lua5.4:lua5.4; CAT=start DESC="\`lua5.4 -e\`" CMD=(lua5.4 -e "x = 1") ;;
    php) suite_install php:php-cli; CAT=start DESC="\`php -r\` printing JSON" CMD=(php -r "echo json_encode([1]);") ;;
    ruby) suite_install ruby:ruby; CAT=start DESC="\`ruby -e\` requiring json and set" CMD=(ruby -e 'require "json"; require "set"') ;;
    emacs) suite_install emacs:emacs-nox; CAT=start DESC="\`emacs --batch\` quitting at once" CMD=(emacs --batch --eval "(kill-emacs)") ;;
    gs) suite_install gs:ghostscript; CAT=start DESC="\`gs -dNODISPLAY\` quitting at once (Ghostscript)" CMD=(gs -q -dNODISPLAY -dBATCH -c quit) ;;
    *) echo "suite: unknown program '$1' (expected one of: $(echo $SUITE_PROGRAMS $SUITE_STARTS $SUITE_SYSTEM))" >&2; exit 2 ;;
  esac
  [ "$CAT" = short ] && [ "$REPS_OF" -lt "$SHORT_REPS" ] && REPS_OF=$SHORT_REPS
  if ! command -v "${CMD[0]}" > /dev/null 2>&1; then
    SKIP="${CMD[0]} is not installed and could not be installed"
    return 0
  fi
  mkdir -p "$out"
}
