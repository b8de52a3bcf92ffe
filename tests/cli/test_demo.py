"""``treedp demo`` names each release's mechanism by what it noises: a release without a
tree's ``branching`` was called "a flat histogram" whatever its mechanism (capital_gain's
``strategy_tree`` among them)."""

from __future__ import annotations

import pytest

from treedp.cli import main
from treedp.mechanisms.registry import REGISTRY


def test_every_registered_mechanism_says_what_it_noises() -> None:
    for name, cls in REGISTRY.items():
        assert cls.summary, name
    assert REGISTRY["histogram"].summary.startswith("a flat histogram")
    assert not any(
        "flat histogram" in cls.summary for name, cls in REGISTRY.items() if name != "histogram"
    )


def test_demo_labels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if ": " in line]
    gain = next(line for line in lines if line.startswith("capital_gain:"))
    name = gain.split("mechanism ")[1].split(" ")[0]
    assert f"({REGISTRY[name].summary})" in gain
    assert "flat histogram" not in gain
