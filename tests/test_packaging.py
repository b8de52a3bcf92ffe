"""Packaging: one version source, the license declared and shipped, no tool pins in user extras."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import treedp

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_has_one_source() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "treedp._version.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+", treedp.__version__)


def test_the_installed_metadata_agrees_with_the_package() -> None:
    assert importlib.metadata.version("treedp") == treedp.__version__


def test_the_license_is_declared_and_shipped() -> None:
    project = PYPROJECT["project"]
    # an SPDX expression (PEP 639): the code's license and the vendored Adult data's
    assert project["license"] == "Apache-2.0 AND CC-BY-4.0"
    assert project["license-files"] == ["LICENSE", "src/treedp/data/ADULT_README.md"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    data = (ROOT / "src" / "treedp" / "data" / "ADULT_README.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in data
    assert "Typing :: Typed" in project["classifiers"]
    # the SPDX string and license-files need setuptools >= 77
    (floor,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(re.fullmatch(r"setuptools>=(\d+)", floor).group(1)) >= 77  # type: ignore[union-attr]


def test_user_extras_have_no_exact_pins_and_no_development_tools() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    for name in ("parquet", "spark", "dask", "plot", "progress", "fast", "sql", "all"):
        assert name in extras
    tools = {"pytest", "ruff", "mypy", "hypothesis", "pytest-xdist", "sphinx", "numpydoc"}
    for name, requirements in extras.items():
        for requirement in requirements:
            assert "==" not in requirement, (name, requirement)
            assert re.split(r"[<>=!\[ ;]", requirement)[0] not in tools, (name, requirement)
    members = re.fullmatch(r"treedp\[(.*)\]", extras["all"][0]).group(1).split(",")  # type: ignore[union-attr]
    assert sorted(members) == sorted(name for name in extras if name != "all")
    assert "dev" in PYPROJECT["dependency-groups"]


def test_the_changelog_names_the_current_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
