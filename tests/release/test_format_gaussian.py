"""Release files of Gaussian trees: the family and exact variances are stored and checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.call_forms import release_kwargs
from tests.release.test_format import VALUES, _same
from treedp import InsecureSeededSource, ReleaseFormatError, load_release, release_cdf
from treedp.release.format import _checksum


@pytest.mark.parametrize("suffix", [".tdp", ".json"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"privacy": treedp.ZCDP(0.4)},
        {"privacy": treedp.ApproxDP(1.0, 1e-6), "neighbours": "replace", "n": VALUES.size},
        {"privacy": treedp.ZCDP(0.4), "branching": 4, "level_budgets": [0.1, 0.1, 0.1, 0.1]},
    ],
)
def test_gaussian_round_trip(tmp_path: Path, suffix: str, kwargs: dict[str, object]) -> None:
    rel = release_cdf(
        VALUES, bounds=(0, 100), bins=64, rng=InsecureSeededSource(4), **release_kwargs(kwargs)
    )  # type: ignore[arg-type]
    path = tmp_path / f"r{suffix}"
    rel.save(path)
    again = load_release(path)
    _same(rel, again)
    assert again.guarantee == rel.guarantee
    assert isinstance(again.guarantee, treedp.ZCDP)
    assert again.mechanism.sigma2 == rel.mechanism.sigma2  # type: ignore[attr-defined]
    meta = again.metadata()
    assert meta["noise"] == "discrete_gaussian" and meta["guarantee"] == "zcdp"


def test_tampered_variances_are_refused(tmp_path: Path) -> None:
    rel = release_cdf(
        VALUES,
        bounds=(0, 100),
        bins=64,
        privacy=treedp.ZCDP(0.4),
        mechanism="tree",
        rng=InsecureSeededSource(4),
    )
    path = tmp_path / "r.json"
    rel.save(path)
    doc = json.loads(path.read_text())
    doc["payload"]["metadata"]["sigma2"][1] = [1, 1]  # less noise than the budget needs
    doc["checksum"] = _checksum(doc["payload"])  # a consistent forgery, not corruption
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="noise variances"):
        load_release(bad)


def test_laplace_files_are_unchanged(tmp_path: Path) -> None:
    rel = release_cdf(VALUES, bounds=(0, 100), bins=64, epsilon=1.0, rng=InsecureSeededSource(4))
    meta = rel.metadata()
    assert meta["noise"] == "discrete_laplace" and meta["guarantee"] == "pure"
    assert "sigma2" not in meta and "rho" not in meta
    rel.save(tmp_path / "r.tdp")
    _same(rel, load_release(tmp_path / "r.tdp"))
    assert np.isfinite(rel.epsilon)
