"""The public results are typed: ``mypy --strict`` checks tests/typecheck/typed_results.py.

Each ``assert_type`` there states what a call returns (``float`` for a scalar query, a float64
array for a list or array, each front door's own result type); mypy fails on any line whose
inferred type differs. A deliberately wrong claim shows the check can fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TYPED = Path(__file__).with_name("typed_results.py")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` with the project's configuration (``mypy_path = src``), from the root."""
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(path)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_the_claimed_types_hold(cache: Path) -> None:
    run = _mypy(TYPED, cache)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_wrong_claim_fails(cache: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "from typing import assert_type\n"
        "import treedp\n\n\n"
        "def f(rel: treedp.Release) -> None:\n"
        "    assert_type(rel.cdf([1.0, 2.0]), float)\n"
        "    assert_type(rel.cdf(1.0), float)\n"
    )
    run = _mypy(wrong, cache)
    assert run.returncode == 1
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "wrong.py:6:" in errors[0] and "assert-type" in errors[0]


def test_a_wrong_details_claim_fails(cache: Path, tmp_path: Path) -> None:
    """The ``details`` overloads are checked too: a value is not a result, nor the reverse."""
    wrong = tmp_path / "wrong_details.py"
    wrong.write_text(
        "from typing import assert_type\n"
        "import treedp\n"
        "from treedp.query import Query\n\n\n"
        "def f(x: list[float], query: Query) -> None:\n"
        "    assert_type(treedp.median(x, epsilon=1.0, bounds=(0, 1), details=True), float)\n"
        "    assert_type(treedp.stable_median(x, epsilon=1.0, delta=0.1), treedp.Release)\n"
        "    assert_type(treedp.run_query(query), treedp.Release)\n"
        "    assert_type(treedp.median(x, epsilon=1.0, bounds=(0, 1)).value, float)\n"
    )
    run = _mypy(wrong, cache)
    assert run.returncode == 1
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})  # line 10: a value has no .value
    assert lines == [7, 8, 9, 10], run.stdout
    assert all("assert-type" in line for line in errors[:3]), run.stdout
