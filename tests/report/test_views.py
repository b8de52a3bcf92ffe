"""The release layer never imports the views; its methods reach them through the hook table."""

from __future__ import annotations

import pytest

import treedp
import treedp.report  # registers the views
from tests.test_structure import SRC, import_graph
from treedp import _views
from treedp.exceptions import InvalidParameterError


def test_the_release_layer_imports_no_view() -> None:
    """Not even inside a function: the views read a release, never the other way."""
    graph = import_graph(SRC / "treedp")
    release = {m for m in graph if m == "treedp.release" or m.startswith("treedp.release.")}
    views = {"treedp.report", "treedp.plot"}
    reached = {
        (m, t) for m in release for t in graph[m] if t in views or t.startswith("treedp.report.")
    }
    assert reached == set()


def test_every_method_finds_its_view() -> None:
    for name in (
        "plot",
        "_repr_html_",
        "to_arrays",
        "to_frame",
        "bounds_warning",
        "grouped.plot",
        "grouped._repr_html_",
        "grouped.to_frame",
    ):
        assert callable(_views.view(name))
    rel = treedp.release_counts([3, 5, 2], epsilon=1.0, rng=treedp.InsecureSeededSource(1))
    assert sorted(rel.to_arrays()) == sorted(treedp.report.tables.release_arrays(rel))


def test_an_unknown_view_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="No release view"):
        _views.view("no_such_view")
