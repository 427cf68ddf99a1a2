"""Test of the ctypes wrapper against liboutrider_directed.so (run by
crates/directed/tests/python.rs when python3 is present; OUTRIDER_LIB names
the freshly built library). Exits non-zero on the first failed check."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outrider_directed as od  # noqa: E402

PAGE = 4096


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data")
        with open(path, "wb") as f:
            for i in range(64):
                f.write(bytes([i]) * PAGE)
        fd = os.open(path, os.O_RDONLY)
        events = []

        def cb(client, reason, current, marked):
            events.append((reason, current, marked))

        # A bad setting is an error naming it.
        try:
            od.Client(settings="infil=0")
            raise AssertionError("bad setting accepted")
        except od.OutriderError:
            pass

        with od.Client(cb, settings="buffer=32KiB,infill=0,low=4") as c:
            c.register_region(fd, 0, 64 * PAGE)
            pages = list(range(20))
            n = c.request_prefetching([(fd, p * PAGE, p == 10) for p in pages], od.REPLACE)
            assert n == 20, n
            for p in pages:
                data = c.pread(fd, PAGE, p * PAGE)
                assert data == bytes([p]) * PAGE, p
            lows = [e for e in events if e[0] == od.LIST_LOW]
            assert lows, events
            assert lows[0][1] == (fd, 8 * PAGE), lows  # the second round's start
            # Reading a registered page that is not on the list: strayed.
            before = len(events)
            assert c.pread(fd, PAGE, 50 * PAGE) == bytes([50]) * PAGE
            assert events[before:] and events[before][0] == od.STRAYED, events
            assert events[before][1] == (fd, 50 * PAGE), events[before]
            # ... reporting the last marked entry passed (page 10).
            assert events[before][2] == (fd, 10 * PAGE), events[before]
            # ignore_accesses: no tracking, no callback.
            before = len(events)
            c.ignore_accesses()
            assert c.pread(fd, PAGE, 60 * PAGE) == bytes([60]) * PAGE
            c.unignore_accesses()
            assert len(events) == before, events[before:]
            s = c.stats()
            assert s["tracked_reads"] == 21, s
            assert s["rounds"] >= 2 and s["buffer_pages"] == 8, s
            assert s["infill_limit_pages"] == 0, s
            # Append mode and the done flag.
            n = c.request_prefetching([(fd, p * PAGE) for p in range(20, 30)], od.APPEND, done=True)
            assert n == 10, n
        os.close(fd)
    print("python wrapper ok")


if __name__ == "__main__":
    main()
