"""The examples in the package's docstrings run and print what they say."""

import doctest

import outrider


def test_the_docstring_examples_hold():
    r = doctest.testmod(outrider, extraglobs={"outrider": outrider}, optionflags=doctest.ELLIPSIS)
    assert r.attempted >= 10
    assert r.failed == 0
