"""Shared paths for the outrider package's tests."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def sample_trace():
    """A small published trace from ../shared/traces (skipped without it)."""
    path = TRACES / "cloudPhysicsIO.csv"
    if not path.exists():
        pytest.skip("%s is absent" % path)
    return path


@pytest.fixture
def outrider_bin():
    """The `outrider` command built by cargo ($OUTRIDER_BIN, else target/release)."""
    path = pathlib.Path(os.environ.get("OUTRIDER_BIN", REPO / "target" / "release" / "outrider"))
    if not path.exists():
        pytest.skip("%s is not built" % path)
    return path
