"""outrider.sim / compare / policies / workloads, and the GIL."""

import threading

import pytest

import outrider

# DESIGN.md's metric names, as `outrider sim --json` prints them.
METRICS = {"hit_ratio", "prefetch_accuracy", "coverage", "cost", "io_wait_s", "elapsed_s",
           "lead_time", "mis_prefetched_windows", "policy", "run", "requests",
           "demand_blocks", "prefetched_blocks", "events_per_s"}


def test_sim_returns_a_record_per_run_with_the_design_metric_names():
    rows = outrider.sim("readahead", workload="seq:size=8MiB", cache="64MiB", runs=2)
    assert [r["run"] for r in rows] == [1, 2]
    for r in rows:
        assert METRICS <= set(r), METRICS - set(r)
        assert r["policy"] == "readahead" and r["cache_bytes"] == 64 << 20
    # A sequential read with readahead: most blocks come from prefetches.
    assert rows[0]["coverage"] > 0.5


def test_compare_keeps_policy_order_and_prefetching_pays_on_a_sequential_read():
    rows = outrider.compare(["none", "readahead"], workload="seq:size=8MiB", device="ssd")
    assert [r["policy"] for r in rows] == ["none", "readahead"]
    none, ra = rows
    assert none["prefetched_blocks"] == 0 and ra["prefetched_blocks"] > 0
    assert ra["elapsed_s"] < none["elapsed_s"]


def test_a_trace_file_gives_the_cli_results(sample_trace):
    rows = outrider.sim("obl", trace=sample_trace, cache="10%", device="none", split_pages=True)
    assert rows[0]["input"] == str(sample_trace) and rows[0]["requests"] > 0


def test_bad_input_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="no-such-policy"):
        outrider.sim("no-such-policy", workload="seq")
    with pytest.raises(ValueError, match="floppy"):
        outrider.sim("none", workload="seq", device="floppy")
    with pytest.raises(ValueError, match="exactly one"):
        outrider.sim("none")
    with pytest.raises(ValueError, match="missing.csv"):
        outrider.sim("none", trace="missing.csv")


def test_policies_and_workloads_list_what_is_built_in():
    p = outrider.policies()
    assert {"none", "readahead", "diskseen", "pcm", "epcm", "flashy"} <= set(p)
    assert "k" in p["diskseen"]  # the help lists its parameters
    w = outrider.workloads()
    assert {"seq", "reversed", "paper-suite"} <= set(w)


def test_the_simulation_releases_the_gil():
    # A Python thread keeps counting while the simulation runs in this
    # one: it could not if the simulation held the GIL.
    counts = []
    stop = threading.Event()

    def count():
        n = 0
        while not stop.is_set():
            n += 1
            counts.append(n)

    t = threading.Thread(target=count)
    t.start()
    try:
        while not counts:
            pass
        before = len(counts)
        outrider.sim("diskseen", workload="random:size=256MiB,count=200000", device="none")
        during = len(counts) - before
    finally:
        stop.set()
        t.join()
    assert during > 0
