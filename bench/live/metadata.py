#!/usr/bin/env python3
"""Metadata prefetching experiment: helpers
for bench/live/metadata.sh.

  metadata.py record OUT.json TREE -- CMD [ARGS...]
      Run CMD (cold cache is the caller's job) with the kernel's
      block:block_rq_issue event traced in a private tracefs instance
      following CMD's process tree; classify every read it issued: a block
      inside an extent of a regular file of TREE (FIEMAP) is file data, any
      other block (inode tables, directory blocks, extent-tree blocks,
      bitmaps: blocks that belong to no file) is metadata. Writes the
      metadata ranges (device byte offset, length) and counts.

  metadata.py time [--prefetch OUT.json DEVICE | --prewarm OUT.json DEVICE
                    | --walk OUT.json THREADS | --warm-first CMD2] -- CMD [ARGS...]
      Print CMD's wall time in seconds. --prefetch: at the moment CMD
      starts, posix_fadvise(WILLNEED) the recorded metadata ranges through
      the block device itself (opened O_RDONLY|O_CLOEXEC), in physical
      order, from 2 threads, each call at most the device's readahead cap
      — what a prefetcher replaying a recorded history would do. --prewarm:
      read the ranges completely (pread) BEFORE starting the clock: the
      bound on what metadata prefetching can save. The kernel reads ext4
      metadata through the block device's page cache (buffer heads), so
      these pages are what the traversal looks up.
      --walk: the same metadata brought in through the file system instead
      of the block device: THREADS threads list the recorded directories
      (getdents: directory blocks) and stat their entries (inode tables),
      in the recorded order, started with CMD. --warm-first: run CMD2 (a
      metadata-only traversal, `find TREE -printf %s`) before the clock
      starts: metadata resident, file data cold — the bound when the block
      device cannot be opened.
"""
import fcntl
import json
import os
import struct
import subprocess
import sys
import threading

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
EXTENTS_PER_CALL = 64


def fiemap(path):
    """[(physical, length)] of a regular file's extents, bytes."""
    out = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOATIME)
    except OSError:
        return out
    try:
        start = 0
        while True:
            hdr = struct.pack("QQIIII", start, 2**64 - 1 - start, 0, 0, EXTENTS_PER_CALL, 0)
            buf = bytearray(hdr + b"\0" * (56 * EXTENTS_PER_CALL))
            fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
            n = struct.unpack_from("I", buf, 20)[0]
            last = False
            for i in range(n):
                lo, ph, ln, _, _, fl = struct.unpack_from("QQQQQI", buf, 32 + 56 * i)
                out.append((ph, ln))
                start = lo + ln
                if fl & 1:  # FIEMAP_EXTENT_LAST
                    last = True
            if n < EXTENTS_PER_CALL or last:
                break
    except OSError:
        pass
    finally:
        os.close(fd)
    return out


def file_extents(tree):
    ext = []
    for root, _dirs, files in os.walk(tree):
        for f in files:
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                ext.extend(fiemap(p))
    ext.sort()
    return ext


def covered(ext, lo, hi):
    """Bytes of [lo, hi) inside the sorted extent list."""
    import bisect
    i = bisect.bisect_right(ext, (lo, 2**64)) - 1
    i = max(i, 0)
    n = 0
    while i < len(ext) and ext[i][0] < hi:
        a, b = max(lo, ext[i][0]), min(hi, ext[i][0] + ext[i][1])
        if b > a:
            n += b - a
        i += 1
    return n


def tracefs():
    for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.isdir(os.path.join(p, "instances")):
            return p
    sys.exit("metadata.py: tracefs not mounted at /sys/kernel/tracing")


def record(out, tree, cmd):
    root = tracefs()
    inst = os.path.join(root, "instances", f"metabench-{os.getpid()}")
    os.mkdir(inst)

    def w(rel, text):
        with open(os.path.join(inst, rel), "w") as fh:
            fh.write(text)

    try:
        w("tracing_on", "0")
        w("buffer_size_kb", "32768")
        w("options/event-fork", "1")
        w("set_event_pid", str(os.getpid()))
        w("events/block/block_rq_issue/enable", "1")
        w("tracing_on", "1")
        rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
        w("tracing_on", "0")
        with open(os.path.join(inst, "trace")) as fh:
            text = fh.read()
    finally:
        os.rmdir(inst)
    reads = []  # (dev, byte offset, bytes, rwbs)
    for line in text.splitlines():
        if "block_rq_issue:" not in line:
            continue
        f = line.split("block_rq_issue:")[1].split()
        # dev rwbs bytes (cmd) sector + nsec [comm]
        try:
            dev, rwbs = f[0], f[1]
            plus = f.index("+")
            sector, nsec = int(f[plus - 1]), int(f[plus + 1])
        except (ValueError, IndexError):
            continue
        if "R" not in rwbs or nsec == 0:
            continue
        reads.append((dev, sector * 512, nsec * 512, rwbs))
    st = os.stat(tree)
    fsdev = f"{os.major(st.st_dev)},{os.minor(st.st_dev)}"
    ext = file_extents(tree)
    meta, data_bytes, meta_bytes, rm_bytes, other_dev = [], 0, 0, 0, 0
    for dev, off, ln, rwbs in reads:
        if dev != fsdev:
            other_dev += ln
            continue
        # Page by page: a request can straddle data and metadata.
        for p in range(off, off + ln, 4096):
            c = covered(ext, p, p + 4096)
            if c:
                data_bytes += 4096
            else:
                meta_bytes += 4096
                meta.append(p)
                if "M" in rwbs:
                    rm_bytes += 4096
    meta = sorted(set(meta))
    ranges = []
    for p in meta:
        if ranges and ranges[-1][0] + ranges[-1][1] == p:
            ranges[-1][1] += 4096
        else:
            ranges.append([p, 4096])
    dirs = [d for d, _s, _f in os.walk(tree)]
    json.dump({
        "dirs": dirs,
        "command": cmd, "exit_code": rc, "device": fsdev, "read_requests": len(reads),
        "data_bytes": data_bytes, "metadata_bytes": meta_bytes,
        "metadata_flagged_bytes": rm_bytes, "other_device_bytes": other_dev,
        "file_extents": len(ext), "ranges": ranges,
    }, open(out, "w"))


def open_ranges(rec, device):
    r = json.load(open(rec))
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        name = os.path.basename(os.path.realpath(device))
        with open(f"/sys/class/block/{name}/queue/read_ahead_kb") as fh:
            cap = max(int(fh.read()) * 1024, 4096)
    except OSError:
        cap = 128 * 1024
    jobs = []
    for off, ln in r["ranges"]:  # already in physical order
        while ln > 0:
            n = min(ln, cap)
            jobs.append((off, n))
            off, ln = off + n, ln - n
    return fd, jobs


def prewarm(fd, jobs):
    for off, n in jobs:
        os.pread(fd, n, off)


def prefetch(fd, jobs, threads=2):
    """Start the WILLNEED workers; returns them (join to wait)."""
    lock = threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(jobs):
                return
            os.posix_fadvise(fd, jobs[i][0], jobs[i][1], os.POSIX_FADV_WILLNEED)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts


def walk(dirs, threads):
    """Start THREADS metadata walkers over `dirs` (in order)."""
    lock = threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(dirs):
                return
            try:
                with os.scandir(dirs[i]) as it:
                    for e in it:
                        try:
                            e.stat(follow_symlinks=False)
                        except OSError:
                            pass
            except OSError:
                pass

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts


def timed(a):
    import time
    mode, fd, jobs, dirs, nthreads = None, None, [], [], 0
    if a[0] in ("--prefetch", "--prewarm"):
        mode = a[0]
        fd, jobs = open_ranges(a[1], a[2])
        a = a[3:]
    elif a[0] == "--walk":
        mode = a[0]
        dirs, nthreads = json.load(open(a[1]))["dirs"], int(a[2])
        a = a[3:]
    elif a[0] == "--warm-first":
        subprocess.call(a[1].split(), stdout=subprocess.DEVNULL)
        a = a[2:]
    if not a or a[0] != "--":
        sys.stderr.write(__doc__)
        sys.exit(2)
    cmd = a[1:]
    if mode == "--prewarm":
        prewarm(fd, jobs)
    t0 = time.monotonic()
    workers = prefetch(fd, jobs) if mode == "--prefetch" else []
    if mode == "--walk":
        workers = walk(dirs, nthreads)
    rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
    t1 = time.monotonic()
    for t in workers:
        t.join()
    if rc > 1:
        sys.exit(f"metadata.py: {cmd} exited {rc}")
    print(f"{t1 - t0:.3f}")


def main():
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == "record" and a[3] == "--":
        record(a[1], a[2], a[4:])
    elif len(a) >= 3 and a[0] == "time":
        timed(a[1:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
