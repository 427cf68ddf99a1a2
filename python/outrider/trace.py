"""outrider.trace — trace statistics and conversion (``outrider trace info``
and ``outrider trace convert``).

>>> import outrider
>>> info = outrider.trace.info("../shared/traces/cloudPhysicsIO.csv")
>>> info["format"], info["requests"] > 0
('lcs-csv', True)
>>> outrider.trace.convert("../shared/traces/cloudPhysicsIO.csv", "cp.otr", zstd=True)
... # doctest: +SKIP
"""

import json as _json

from . import _outrider

__all__ = ["info", "convert"]


def info(path, format="auto", lenient=False):
    """Statistics of a trace file as a dict: ``format``, ``requests``,
    ``reads``, ``writes``, ``distinct_blocks``, ``footprint_bytes``,
    ``duration_s``, ... (``outrider trace info --json``'s names, and more).
    ``format`` is a format name or ``auto``; ``lenient`` skips malformed
    records and counts them in ``skipped``."""
    return _json.loads(_outrider.trace_info(str(path), format, bool(lenient)))


def convert(input, output, from_format="auto", to="native", zstd=False, lenient=False,
            split_pages=False):
    """Convert ``input`` to ``output`` in format ``to`` (``native``,
    ``lcs-csv``, or ``oracle-pages``: libCacheSim's oracleGeneral with obj_id
    in 4 KiB pages, which needs ``split_pages=True`` or single-page requests);
    ``zstd`` compresses a native trace's records. Returns the number of
    requests written."""
    return _outrider.trace_convert(str(input), str(output), from_format, to, bool(zstd),
                                   bool(lenient), bool(split_pages))
