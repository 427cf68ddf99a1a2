"""outrider.directed — application-directed prefetching (after libprefetch,
VanDeBogart, Frost & Kohler, USENIX ATC 2009) from Python.

A ctypes wrapper over the C ABI in include/outrider.h. The library is found
through $OUTRIDER_LIB (a path to liboutrider_directed.so), else the installed
`outrider` package's own native module (which links the C ABI in), else
the dynamic loader's search path (LD_LIBRARY_PATH, ldconfig). The same file
is loaded standalone as `outrider_directed` (python/outrider_directed.py)
without the package installed.

    import os, outrider.directed as od          # or: import outrider_directed as od
    fd = os.open("table.db", os.O_RDONLY)
    c = od.Client(settings="aimd=on")           # or OUTRIDER_DIRECTED
    c.register_region(fd, 0, os.fstat(fd).st_size)
    c.request_prefetching([(fd, off) for off in offsets], od.REPLACE, done=True)
    for off in offsets:
        data = c.pread(fd, 512, off)            # tracked read
    print(c.stats())

The callback, if given, is called as callback(client, reason, (fd, offset),
last_marked) from inside a tracked read, with reason LIST_LOW or STRAYED and
last_marked a (fd, offset) pair or None; it may call request_prefetching and
ignore_accesses/unignore_accesses. A client is not thread-safe.
"""

import ctypes
import ctypes.util
import os

__all__ = [
    "Client", "OutriderError", "REPLACE", "APPEND", "AFTER_MARK",
    "LIST_LOW", "STRAYED", "load",
]

#: request_prefetching modes (libprefetch §4.2).
REPLACE, APPEND, AFTER_MARK = 0, 1, 2
_DONE = 0x100
#: Callback reasons.
LIST_LOW, STRAYED = 1, 2


class OutriderError(OSError):
    """A liboutrider_directed call failed (errno set by the library)."""


class _Entry(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("offset", ctypes.c_uint64), ("marked", ctypes.c_int)]


_STATS_FIELDS = [
    "tracked_reads", "rounds", "premature_rounds", "low_callbacks",
    "stray_callbacks", "round_pages", "infill_pages", "dropped_pages",
    "buffer_pages", "infill_limit_pages", "readahead_rounds",
]


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in _STATS_FIELDS]


_CALLBACK = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
    ctypes.c_uint64, ctypes.c_int, ctypes.c_uint64,
)

_lib = None


def _default_path():
    """$OUTRIDER_LIB, else the package's native module, else liboutrider_directed.so."""
    if os.environ.get("OUTRIDER_LIB"):
        return os.environ["OUTRIDER_LIB"]
    try:
        from . import _outrider  # the C ABI is linked into it
        return _outrider.__file__
    except ImportError:  # loaded standalone, or the package is not built
        return ctypes.util.find_library("outrider_directed") or "liboutrider_directed.so"


def load(path=None):
    """Load liboutrider_directed.so (once) and declare its functions."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    path = path or _default_path()
    lib = ctypes.CDLL(path, use_errno=True)
    c, vp, sz = ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t
    sig = {
        "outrider_register_client": (vp, [_CALLBACK, vp]),
        "outrider_configure": (c, [vp, ctypes.c_char_p]),
        "outrider_register_region": (c, [vp, c, ctypes.c_uint64, ctypes.c_uint64]),
        "outrider_request_prefetching": (ctypes.c_ssize_t, [vp, ctypes.POINTER(_Entry), sz, c]),
        "outrider_ignore_accesses": (None, [vp]),
        "outrider_unignore_accesses": (None, [vp]),
        "outrider_pread": (ctypes.c_ssize_t, [vp, c, vp, sz, ctypes.c_int64]),
        "outrider_read": (ctypes.c_ssize_t, [vp, c, vp, sz]),
        "outrider_get_stats": (c, [vp, ctypes.POINTER(_Stats)]),
        "outrider_free_client": (None, [vp]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


def _fail(what):
    e = ctypes.get_errno()
    raise OutriderError(e, "%s: %s" % (what, os.strerror(e)))


class Client:
    """A directed-prefetching client (libprefetch register_client)."""

    def __init__(self, callback=None, settings=None, lib=None):
        self._lib = load(lib)
        self._user_cb = callback
        # Kept referenced for the client's lifetime: the library calls it.
        self._cb = _CALLBACK(self._trampoline) if callback else _CALLBACK()
        self._c = self._lib.outrider_register_client(self._cb, None)
        if not self._c:
            _fail("outrider_register_client (OUTRIDER_DIRECTED)")
        if settings is not None and self._lib.outrider_configure(self._c, settings.encode()) != 0:
            self.close()
            _fail("outrider_configure(%r)" % settings)

    def _trampoline(self, _c, _user, reason, fd, offset, mfd, moff):
        marked = None if mfd < 0 else (mfd, moff)
        try:
            self._user_cb(self, reason, (fd, offset), marked)
        except Exception as e:  # never unwind through the C library
            import sys
            print("outrider_directed: callback raised %r" % (e,), file=sys.stderr)

    def register_region(self, fd, offset, length):
        """Track reads of [offset, offset + length) of fd."""
        if self._lib.outrider_register_region(self._c, fd, offset, length) != 0:
            _fail("outrider_register_region")

    def request_prefetching(self, entries, mode=REPLACE, done=False):
        """Hand over access-list entries: (fd, offset) or (fd, offset, marked).
        Returns how many were accepted (the list buffer is bounded)."""
        entries = list(entries)
        arr = (_Entry * len(entries))()
        for i, e in enumerate(entries):
            arr[i].fd, arr[i].offset = e[0], e[1]
            arr[i].marked = 1 if len(e) > 2 and e[2] else 0
        n = self._lib.outrider_request_prefetching(self._c, arr, len(entries), mode | (_DONE if done else 0))
        if n < 0:
            _fail("outrider_request_prefetching")
        return n

    def ignore_accesses(self):
        self._lib.outrider_ignore_accesses(self._c)

    def unignore_accesses(self):
        self._lib.outrider_unignore_accesses(self._c)

    def pread(self, fd, n, offset):
        """Tracked pread: returns the bytes read."""
        buf = ctypes.create_string_buffer(n)
        r = self._lib.outrider_pread(self._c, fd, buf, n, offset)
        if r < 0:
            _fail("outrider_pread")
        return buf.raw[:r]

    def read(self, fd, n):
        """Tracked read at fd's file position."""
        buf = ctypes.create_string_buffer(n)
        r = self._lib.outrider_read(self._c, fd, buf, n)
        if r < 0:
            _fail("outrider_read")
        return buf.raw[:r]

    def stats(self):
        """The client's counters as a dict."""
        s = _Stats()
        if self._lib.outrider_get_stats(self._c, ctypes.byref(s)) != 0:
            _fail("outrider_get_stats")
        return {name: getattr(s, name) for name in _STATS_FIELDS}

    def close(self):
        if self._c:
            self._lib.outrider_free_client(self._c)
            self._c = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
