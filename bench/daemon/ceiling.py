#!/usr/bin/env python3
"""How much of a cold launch any launch-set prefetcher can save.

One timed launch of CMD in one of four arms, the launch set of KEY read
from the daemon's history store DB (the daemon recorded it before):

  stock       cold cache, nothing prefetched
  concurrent  cold cache; a process asks for the whole set (POSIX_FADV_WILLNEED,
              first-touch order, its files opened before the cache drop, so
              no metadata read of its own) from the moment the program starts:
              what a prefetcher that starts at the exec, with no cost of its
              own, could do (files past the descriptors it may hold are
              opened as they are asked for)
  ahead       cold cache; the set asked for and read in before the program
              starts: the most any launch set can give (what it does not hold,
              and the program's own metadata reads, stay cold)
  hot         the program again at once, everything cached
  daemon      as stock; the caller runs `outrider daemon` (holding the set)

Prints "ARM SECONDS PID" (PID: the program's process). Cold = sync, drop_caches, the disk idle (as
bench/live/setup.sh's cold). Usage: ceiling.py DB KEY ARM -- CMD...
"""
import os
import resource
import sqlite3
import struct
import subprocess
import sys
import time

PAGE = 4096


def load_set(db, key):
    """(files by id, [(file, page, pages)]) of launch set KEY: each file a
    descriptor opened now, or, past what this process may hold open, its
    path (see `room`)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = c.execute("SELECT accesses FROM app_runs WHERE app_key = ?", (key,)).fetchone()
    if row is None:
        sys.exit(f"ceiling.py: {db}: no launch set {key!r}")
    files = c.execute("SELECT id, path FROM app_files WHERE app_key = ?", (key,)).fetchall()
    held = room(len(files))
    fds = {}
    for fid, path in files:
        if len(fds) >= held:
            fds[fid] = path
            continue
        try:
            fds[fid] = os.open(path, os.O_RDONLY)
        except OSError:
            pass
    c.close()
    acc = row[0]
    recs = [struct.unpack_from("<IQI", acc, i * 16) for i in range(len(acc) // 16)]
    return fds, [r for r in recs if r[0] in fds]


def room(n):
    """How many of n files this process may hold open: all, the limit
    raised if need be, unless it cannot be (this machine's hard limit of
    20 000 descriptors, under `rg`'s set of 31 474 files, and no
    CAP_SYS_RESOURCE to raise it). The files past it are opened as they
    are asked for, their metadata reads the prefetcher's own."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 64
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        except (ValueError, OSError):
            pass
    return max(resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 64, 0)


def with_fd(f, use):
    """use(descriptor) of file f (a descriptor, or a path opened now)."""
    if isinstance(f, int):
        return use(f)
    try:
        fd = os.open(f, os.O_RDONLY)
    except OSError:
        return None
    try:
        return use(fd)
    finally:
        os.close(fd)


def disk_idle():
    dev = None
    for line in open("/proc/self/mountinfo"):
        parts = line.split()
        if parts[4] == "/":
            dev = os.path.basename(parts[parts.index("-") + 2])
    for _ in range(200):
        try:
            busy = sum(map(int, open(f"/sys/block/{dev}/inflight").read().split()))
        except (OSError, TypeError):
            return
        if busy == 0:
            return
        time.sleep(0.01)


def cold():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    disk_idle()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def ask(fds, recs):
    for f, p, n in recs:
        with_fd(fds[f], lambda fd: os.posix_fadvise(fd, p * PAGE, n * PAGE, os.POSIX_FADV_WILLNEED))


def read_in(fds, recs):
    for f, p, n in recs:
        with_fd(fds[f], lambda fd: os.pread(fd, n * PAGE, p * PAGE))


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit("usage: ceiling.py DB KEY stock|concurrent|ahead|hot|daemon -- CMD... (KEY '': none)")
    db, key, arm, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:]
    if arm not in ("stock", "concurrent", "ahead", "hot", "daemon"):
        sys.exit(f"ceiling.py: arm {arm!r}: expected stock, concurrent, ahead, hot or daemon")
    # Only the arms that prefetch open the set's files: an open file's
    # inode survives the cache drop, which would spare the others' reads.
    fds, recs = load_set(db, key) if arm in ("concurrent", "ahead") else ({}, [])
    if arm != "hot":
        cold()
    if arm == "ahead":
        read_in(fds, recs)
    child = None
    t0 = time.perf_counter()
    if arm == "concurrent":
        child = os.fork()
        if child == 0:
            ask(fds, recs)
            os._exit(0)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.wait()
    wall = time.perf_counter() - t0
    if child:
        os.waitpid(child, 0)
    print(arm, f"{wall:.6f}", p.pid)


if __name__ == "__main__":
    main()
