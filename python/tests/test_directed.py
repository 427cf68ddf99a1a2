"""outrider.directed: the application-directed client, from the package's
own native library (no liboutrider.so, no $OUTRIDER_LIB)."""

import importlib.util
import os

import outrider
from conftest import REPO


def test_the_directed_client_runs_from_the_installed_package(monkeypatch):
    monkeypatch.delenv("OUTRIDER_LIB", raising=False)
    od = outrider.directed
    assert od.load()._name.endswith(os.path.basename(outrider._outrider.__file__))
    # The wrapper's own test, against the package module.
    spec = importlib.util.spec_from_file_location(
        "wrapper_test", REPO / "python" / "test_outrider_directed.py")
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    t.od = od
    t.main()
