"""outrider.trace.info / convert."""

import pytest

import outrider


def test_info_reads_a_published_trace(sample_trace):
    info = outrider.trace.info(sample_trace)
    assert info["format"] == "lcs-csv"
    assert info["requests"] > 0 and info["distinct_blocks"] > 0
    assert info["footprint_bytes"] == info["distinct_blocks"] * 4096


def test_convert_to_native_keeps_every_request(sample_trace, tmp_path):
    out = tmp_path / "cp.otr"
    n = outrider.trace.convert(sample_trace, out, zstd=True)
    a, b = outrider.trace.info(sample_trace), outrider.trace.info(out)
    assert b["format"] == "native" and n == a["requests"] == b["requests"]
    assert a["distinct_blocks"] == b["distinct_blocks"]
    sims = [outrider.sim("obl", trace=p, cache="1MiB")[0] for p in (sample_trace, out)]
    assert sims[0]["hit_ratio"] == sims[1]["hit_ratio"]


def test_a_bad_file_is_a_value_error_naming_it(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("this is not a trace\n")
    with pytest.raises(ValueError, match="bad.csv"):
        outrider.trace.info(bad)
