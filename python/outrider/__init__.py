"""outrider — prefetching policies (DiskSeen, PCM/EPCM, libprefetch, flashy)
simulated on traces or built-in workloads, from Python.

Everything runs in the same Rust code as the ``outrider`` command line; the
simulations release the GIL. Results use the metric names of DESIGN.md
(``hit_ratio``, ``prefetch_accuracy``, ``coverage``, ``cost``,
``io_wait_s``, ``elapsed_s``, ``lead_time``, ``mis_prefetched_windows``),
the same names ``outrider sim --json`` prints.

>>> import outrider
>>> [r["policy"] for r in outrider.compare(["none", "readahead"], workload="seq:size=4MiB")]
['none', 'readahead']
>>> df = outrider.sweep(workloads=["seq", "reversed"], policies=["none", "diskseen"],
...                     cache=["64MiB", "256MiB"])
>>> len(df)
8

Submodules: :mod:`outrider.trace` (``info``, ``convert``),
:mod:`outrider.directed` (the application-directed client, ctypes),
:mod:`outrider.sweep_ray` (the Ray engine).
"""

import json as _json

from . import _outrider
from . import directed  # noqa: F401  (loads its C library only when used)
from . import trace  # noqa: F401  (outrider.trace.info / .convert)

__all__ = ["sim", "compare", "sweep", "policies", "workloads", "trace", "directed", "__version__"]

__version__ = _outrider.__version__

#: Result columns, in order, and those that depend on the host (timings).
COLUMNS, HOST_COLUMNS = (list(c) for c in _outrider.columns())


def _list(value, name):
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError("%s: expected a value or a list of values, got %r" % (name, value)) from None


def _grid(traces=None, workloads=None, policies=("none",), params=None, cache=("256MiB",),
          devices=("hdd",), runs=(1,), format="auto", lenient=False, split_pages=False,
          cache_model="lru", timing="think"):
    """The grid as the sweep crate reads it (JSON)."""
    grid = {
        "traces": [str(t) for t in _list(traces, "traces")],
        "workloads": _list(workloads, "workloads"),
        "policies": _list(policies, "policies"),
        "params": {p: {k: _list(v, "params") for k, v in kv.items()} for p, kv in (params or {}).items()},
        "cache": [str(c) for c in _list(cache, "cache")],
        "devices": _list(devices, "devices"),
        "runs": [int(r) for r in _list(runs, "runs")],
        "settings": {"format": format, "lenient": bool(lenient), "split_pages": bool(split_pages),
                     "cache_model": cache_model, "timing": timing},
    }
    return _json.dumps(grid)


def _input(trace, workload):
    if (trace is None) == (workload is None):
        raise ValueError("give exactly one of trace= and workload=")
    return ([str(trace)], []) if trace is not None else ([], [workload])


def sim(policy, trace=None, workload=None, cache="256MiB", device="hdd", runs=1, *,
        format="auto", lenient=False, split_pages=False, cache_model="lru", timing="think"):
    """Simulate one policy over a trace file or a built-in workload.

    Returns a list of dicts, one per (input, run), with the metric names of
    ``outrider sim --json`` plus the cell's settings. A suite (e.g.
    ``workload="paper-suite"``) gives one record per member and run.

    >>> r = outrider.sim("readahead", workload="seq:size=4MiB", cache="64MiB")[0]
    >>> r["policy"], r["run"], 0.0 <= r["hit_ratio"] <= 1.0
    ('readahead', 1, True)
    >>> [r["run"] for r in outrider.sim("pcm", workload="build", runs=2)]
    [1, 2]
    """
    return compare([policy], trace, workload, cache, device, runs, format=format, lenient=lenient,
                   split_pages=split_pages, cache_model=cache_model, timing=timing)


def compare(policies, trace=None, workload=None, cache="256MiB", device="hdd", runs=1, *,
            format="auto", lenient=False, split_pages=False, cache_model="lru", timing="think"):
    """Simulate several policies over the same input, one after another.

    Returns a list of dicts, one per (input, policy, run), in that order.

    >>> rows = outrider.compare(["none", "diskseen"], workload="reversed:size=4MiB", device="ssd")
    >>> [(r["policy"], r["device"]) for r in rows]
    [('none', 'ssd'), ('diskseen', 'ssd')]
    """
    traces, workloads = _input(trace, workload)
    grid = _grid(traces, workloads, _list(policies, "policies"), None, [cache], [device], [runs],
                 format, lenient, split_pages, cache_model, timing)
    return [_json.loads(r) for r in _outrider.simulate(grid)]


def _frame(rows):
    """Rows as a pandas DataFrame in column order (a list of dicts without pandas)."""
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame.from_records(rows, columns=COLUMNS)


def sweep(traces=None, workloads=None, policies=("none",), cache=("256MiB",), devices=("hdd",),
          runs=(1,), params=None, *, out=None, engine="local", threads=0, ray_address=None,
          ship_traces=True, format="auto", lenient=False, split_pages=False, cache_model="lru",
          timing="think"):
    """Run a grid: inputs × policies (× ``params``) × cache sizes × devices × runs.

    Each cell is one simulation and gives one row (its key, every metric,
    the outrider version, ``wall_s`` and ``cpu_s``); a cell with
    ``runs=N`` reports run N. Returns a pandas DataFrame (a list of dicts if
    pandas is not installed).

    ``params`` maps a policy entry to parameter values, crossed:
    ``{"diskseen": {"k": [4, 8]}}`` runs ``diskseen:k=4`` and ``diskseen:k=8``.
    ``out`` (``NAME.parquet`` or ``NAME.csv``) makes the sweep resumable:
    rows are appended to ``NAME.csv`` as cells finish, cells already there
    are skipped, and ``NAME.parquet`` is written at the end; the DataFrame
    then holds every row of the output. ``engine="local"`` runs on
    ``threads`` threads (0: every core); ``engine="ray"`` runs cells as Ray
    tasks (see :mod:`outrider.sweep_ray`).

    >>> df = outrider.sweep(workloads=["seq", "reversed"],
    ...                     policies=["none", "readahead", "diskseen"],
    ...                     cache=["64MiB", "256MiB"])
    >>> df.shape[0], sorted(df.policy.unique())
    (12, ['diskseen', 'none', 'readahead'])
    """
    grid = _grid(traces, workloads, policies, params, cache, devices, runs, format, lenient,
                 split_pages, cache_model, timing)
    if engine == "local":
        rows = _outrider.sweep_local(grid, None if out is None else str(out), int(threads))
    elif engine == "ray":
        from . import sweep_ray

        rows = sweep_ray.run(grid, out, address=ray_address, ship_traces=ship_traces)
    else:
        raise ValueError("engine %r: expected 'local' or 'ray'" % (engine,))
    return _frame([_json.loads(r) for r in rows])


def policies():
    """The registered policies: a dict of name -> help (parameters, defaults).

    >>> "diskseen" in outrider.policies()
    True
    """
    return dict(_outrider.policies())


def workloads():
    """The built-in workloads and suites: a dict of name -> help.

    >>> "seq" in outrider.workloads()
    True
    """
    return dict(_outrider.workloads())
