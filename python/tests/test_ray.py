"""The ray engine against a local Ray on 127.0.0.1: the same rows as the
local engine (host timings aside), from Python and from `outrider sweep`.

Ray comes from PyPI (.ci/run installs it and sets OUTRIDER_REQUIRE_RAY=1,
so there a missing Ray fails instead of skipping)."""

import os
import subprocess
import sys

import pandas
import pytest

import outrider

if os.environ.get("OUTRIDER_REQUIRE_RAY") != "1":
    pytest.importorskip("ray")


def same_rows(a, b):
    key = lambda df: (df.drop(columns=outrider.HOST_COLUMNS)  # noqa: E731
                      .sort_values("cell").reset_index(drop=True))
    pandas.testing.assert_frame_equal(key(a), key(b))


def test_the_ray_engine_gives_the_local_engines_rows(tmp_path, sample_trace):
    grid = dict(traces=[sample_trace], workloads=["seq:size=8MiB", "reversed:size=8MiB"],
                policies=["none", "readahead", "diskseen"], cache=["1MiB", "10%"])
    local = outrider.sweep(**grid)
    on_ray = outrider.sweep(engine="ray", out=tmp_path / "ray.parquet", **grid)
    assert len(on_ray) == 3 * 3 * 2
    same_rows(local, on_ray)
    # Resuming on Ray submits nothing: the rows come back unchanged.
    again = outrider.sweep(engine="ray", out=tmp_path / "ray.parquet", **grid)
    pandas.testing.assert_frame_equal(again, on_ray)


def test_outrider_sweep_engine_ray_writes_the_local_engines_rows(tmp_path, outrider_bin):
    args = [str(outrider_bin), "sweep", "--workload", "strided:size=8MiB;random:size=8MiB",
            "--policies", "none,obl", "--cache", "1MiB,64MiB"]
    env = dict(os.environ, OUTRIDER_PYTHON=sys.executable)
    env.pop("RAY_ADDRESS", None)
    subprocess.run(args + ["--engine", "ray", "--out", str(tmp_path / "ray.csv")], env=env,
                   check=True)
    subprocess.run(args + ["--out", str(tmp_path / "local.csv")], env=env, check=True)
    ray_rows = pandas.read_csv(tmp_path / "ray.csv")
    assert len(ray_rows) == 2 * 2 * 2
    same_rows(pandas.read_csv(tmp_path / "local.csv"), ray_rows)
