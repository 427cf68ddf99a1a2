"""outrider.sweep_ray — the ``ray`` engine of ``outrider sweep``: each cell
is one Ray task calling the same Rust function as the local engine, so
the rows are the same (host timings aside).

Cluster: ``address`` (``--ray-address``), else ``$RAY_ADDRESS``, else a
local Ray started on 127.0.0.1 for the sweep and stopped after it.

Traces: by default the driver reads each trace file once, puts its bytes
in Ray's object store, and a worker writes them to
``$TMPDIR/outrider-ray/<sha256>/<name>`` before its first cell on that
trace (``ship_traces``). With ``ship_traces=False``
(``--ray-shared-traces``) workers read every trace at the path the grid
gives, which must then be the same file on every node (a shared file
system). Built-in workloads are generated on the worker.

Output: rows reach the driver as tasks finish and are appended (and
flushed) to ``NAME.csv`` one at a time; ``NAME.parquet`` is written at
the end. Cells already in the output are not submitted.

Run by ``outrider sweep --engine ray`` as
``python3 -m outrider.sweep_ray --grid-json FILE --out OUT [--address A]``.
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile

from . import _outrider

__all__ = ["run"]


def _materialize(name, data):
    """Write shipped trace bytes to a per-content path once; the path."""
    digest = hashlib.sha256(data).hexdigest()
    d = os.path.join(tempfile.gettempdir(), "outrider-ray", digest)
    path = os.path.join(d, os.path.basename(name))
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path


def _run_cell(cell_json, trace_name, trace_data):
    """A Ray task: one cell; its row as JSON."""
    local = _materialize(trace_name, trace_data) if trace_data is not None else None
    return _outrider.run_cell(cell_json, local)


def _connect(ray, address):
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)


def run(grid_json, out=None, address=None, ship_traces=True):
    """Run the grid (JSON, as ``outrider._grid`` builds it) on Ray; every
    row as JSON (the output's rows when ``out`` is given)."""
    import ray

    output = _outrider.SweepOutput(str(out)) if out is not None else None
    cells = output.pending(grid_json) if output else _outrider.cells(grid_json)
    if not cells:
        return output.finish() if output else []
    started_here = not ray.is_initialized()
    if started_here:
        _connect(ray, address)
    try:
        task = ray.remote(num_cpus=1)(_run_cell)
        shipped = {}
        refs = []
        for cell_json in cells:
            source = json.loads(cell_json)["source"]
            name, data = source.get("trace"), None
            if name is not None and ship_traces:
                if name not in shipped:
                    with open(name, "rb") as f:
                        shipped[name] = ray.put(f.read())
                data = shipped[name]
            refs.append(task.remote(cell_json, name, data))
        rows = []
        while refs:
            done, refs = ray.wait(refs, num_returns=1)
            row = ray.get(done[0])
            if output:
                output.append(row)
            rows.append(row)
    finally:
        if started_here:
            ray.shutdown()
    return output.finish() if output else rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m outrider.sweep_ray", description=__doc__.split("\n")[0])
    p.add_argument("--grid-json", required=True, help="the grid, as JSON (written by outrider sweep)")
    p.add_argument("--out", required=True, help="NAME.parquet or NAME.csv")
    p.add_argument("--address", help="Ray cluster address (else $RAY_ADDRESS, else a local Ray)")
    p.add_argument("--shared-traces", action="store_true",
                   help="workers read traces at their grid paths instead of receiving them")
    a = p.parse_args(argv)
    with open(a.grid_json) as f:
        grid = f.read()
    try:
        import ray  # noqa: F401
    except ImportError:
        print("outrider: the ray engine needs Ray: pip install 'ray' (or outrider[ray])", file=sys.stderr)
        return 2
    try:
        rows = run(grid, a.out, a.address, ship_traces=not a.shared_traces)
    except ValueError as e:
        print("outrider: %s" % e, file=sys.stderr)
        return 2
    print("%d rows in %s" % (len(rows), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
