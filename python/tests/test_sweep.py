"""outrider.sweep on the local engine: the grid, the DataFrame, resuming."""

import pandas

import outrider


def test_the_issue_example_gives_one_row_per_cell():
    df = outrider.sweep(workloads=["seq", "reversed"], policies=["none", "readahead", "diskseen"],
                        cache=["64MiB", "256MiB"])
    assert isinstance(df, pandas.DataFrame)
    assert list(df.columns) == outrider.COLUMNS
    assert len(df) == 2 * 3 * 2 and df.cell.is_unique
    assert set(df.policy) == {"none", "readahead", "diskseen"}
    assert (df.version == outrider.__version__).all()
    assert (df.wall_s > 0).all()


def test_params_cross_into_policy_specifications():
    df = outrider.sweep(workloads="strided:size=8MiB", policies=["none", "diskseen"],
                        params={"diskseen": {"k": [4, 8]}}, cache="64MiB", devices=["hdd", "ssd"])
    assert sorted(set(df.policy)) == ["diskseen:k=4", "diskseen:k=8", "none"]
    assert len(df) == 3 * 2


def test_one_thread_and_two_give_the_same_metrics():
    kw = dict(workloads=["seq:size=8MiB", "random:size=8MiB"], policies=["none", "obl"],
              cache=["1MiB", "64MiB"])
    one = outrider.sweep(threads=1, **kw).drop(columns=outrider.HOST_COLUMNS)
    two = outrider.sweep(threads=2, **kw).drop(columns=outrider.HOST_COLUMNS)
    key = lambda df: df.sort_values("cell").reset_index(drop=True)  # noqa: E731
    pandas.testing.assert_frame_equal(key(one), key(two))


def test_a_sweep_with_an_output_resumes(tmp_path):
    out = tmp_path / "s.parquet"
    first = outrider.sweep(workloads="seq:size=8MiB", policies=["none", "readahead"], out=out)
    assert len(first) == 2 and out.exists() and (tmp_path / "s.csv").exists()
    more = outrider.sweep(workloads="seq:size=8MiB", policies=["none", "readahead", "obl"],
                          out=out)
    assert len(more) == 3
    # The two old rows are the same rows, timings included: they did not run again.
    old = more[more.policy != "obl"].sort_values("cell").reset_index(drop=True)
    pandas.testing.assert_frame_equal(old, first.sort_values("cell").reset_index(drop=True))
    csv = pandas.read_csv(tmp_path / "s.csv")
    assert len(csv) == 3
