"""The compiled float64 kernel (``treedp[fast]``): the numpy kernel's counts, bin for bin.

Tests that run the kernel skip when numba is not installed; CI installs it (the ``test`` extra
includes ``fast``), so there they run. The tests of the missing-numba error and of which kernel
``"auto"`` picks for small inputs run everywhere (fresh interpreters, numba hidden or absent).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_counting import _edge_probes, reference
from treedp import make_bins
from treedp.domain import Bins
from treedp.engines import LocalEngine, count_chunk, edge_exactness
from treedp.engines import local as local_engine
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

SRC = Path(local_engine.__file__).resolve().parents[2]

_HAVE_NUMBA = bool(__import__("importlib.util").util.find_spec("numba"))
needs_numba = pytest.mark.skipif(
    not _HAVE_NUMBA,
    reason="numba is not installed (treedp[fast]); CI installs it with the test extra",
)


def _both(values: np.ndarray, bins: Bins, nan: str = "error") -> Any:
    """Counts by both kernels, one and two threads; asserts they agree and returns them."""
    numpy_counts = count_chunk(values, bins, nan, kernel="numpy")  # type: ignore[arg-type]
    numba_counts = count_chunk(values, bins, nan, kernel="numba")  # type: ignore[arg-type]
    assert numba_counts == numpy_counts
    two = LocalEngine(workers=2, kernel="numba").count(values, bins, nan=nan)  # type: ignore[arg-type]
    assert two == numpy_counts
    return numba_counts


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


BINS = [
    make_bins(bounds=(0.0, 1.0), bins=1 << 16),  # exact arithmetic: no edge reads
    make_bins(bounds=(-5.0, 5.0), bins=1 << 16),  # corrected, lo != 0
    make_bins(bounds=(0.1, 0.7), bins=1000),
    make_bins(bounds=(-3.0, 7.0), bins=7),
    make_bins(bounds=(-1e-300, 1e-300), bins=5),
    make_bins(bounds=(1e-310, 3e-310), bins=4),  # subnormal edges
    make_bins(bounds=(-5, 20), bins="integers"),
    make_bins(bounds=(-1e300, 1e300), bins=3),
    make_bins(bounds=(2.0, 3.0), bins=1),
]


@needs_numba
@pytest.mark.parametrize("bins", BINS, ids=lambda b: f"B{b.n_bins}-{b.edges[0]:g}")
def test_kernels_agree_with_the_reference_at_and_around_edges(bins: Bins) -> None:
    rng = np.random.default_rng(3)
    probes = _edge_probes(bins.edges)
    lo, hi = float(bins.edges[0]), float(bins.edges[-1])
    inside = lo + rng.random(20_000) * (hi - lo)
    values = rng.permutation(np.concatenate([probes, inside, probes]))
    got = _both(values, bins)
    assert np.array_equal(got.counts, reference(values, bins))
    assert got.dropped == 0


@needs_numba
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-5.0, 5.0), (0.1, 0.7)])
def test_fewer_values_than_bins_compare_with_the_edges(bounds: tuple[float, float]) -> None:
    """Fewer values than bins and nothing cached: no O(B) proof, every value is placed by
    comparing it with the edges (slack 1.0); once cached, the proven path."""
    bins = make_bins(bounds=bounds, bins=1 << 16)
    rng = np.random.default_rng(7)
    picked = bins.edges[rng.choice(bins.edges.size, 1500, replace=False)]
    values = rng.permutation(_edge_probes(picked))
    assert values.size < bins.n_bins
    edge_exactness._EXACT_CACHE.clear()
    edge_exactness._SLACK_CACHE.clear()
    expected = reference(values, bins)
    assert np.array_equal(count_chunk(values, bins, kernel="numba").counts, expected)
    assert not edge_exactness._SLACK_CACHE and not edge_exactness._EXACT_CACHE
    edge_exactness._edge_slack(bins.edges, bins._inv_width)
    edge_exactness._arithmetic_is_exact(bins.edges, bins._inv_width)
    assert np.array_equal(count_chunk(values, bins, kernel="numba").counts, expected)


@needs_numba
@settings(max_examples=300, deadline=None)
@given(
    lo=st.floats(-1e6, 1e6, allow_nan=False),
    width=st.floats(1e-6, 1e6),
    n_bins=st.integers(1, 5000),
    seed=st.integers(0, 2**32 - 1),
)
def test_kernels_agree_on_random_equal_width_bins(
    lo: float, width: float, n_bins: int, seed: int
) -> None:
    """Arbitrary bounds give arbitrary rounding of ``(x - lo)·inv``: the slack test and the
    edge comparisons must still give the bin rule at, and one ulp either side of, every edge."""
    hi = lo + width
    if not hi > lo:
        return
    try:
        bins = make_bins(bounds=(lo, hi), bins=n_bins)
    except InvalidParameterError as exc:  # too many bins for the bounds' float resolution
        assert "float resolution" in str(exc)
        return
    if not bins.equal_width:
        return
    rng = np.random.default_rng(seed)
    probes = _edge_probes(bins.edges)
    values = np.concatenate([probes, lo + rng.random(2 * n_bins) * width])
    edge_exactness._SLACK_CACHE.clear()
    edge_exactness._EXACT_CACHE.clear()
    got = count_chunk(values, bins, kernel="numba")
    assert np.array_equal(got.counts, reference(values, bins))
    assert got == count_chunk(values, bins, kernel="numpy")


@needs_numba
@pytest.mark.parametrize("nan", ["error", "drop"])
def test_nan_follows_the_policy_in_the_same_pass(nan: str) -> None:
    bins = make_bins(bounds=(-1.0, 3.0), bins=4)
    values = np.array([0.5, np.nan, -np.inf, np.inf, 2.999, np.nan, 3.0, -0.0, -np.nan])
    big = np.tile(values, 100_000)
    if nan == "error":
        for kernel in ("numba", "numpy"):
            with pytest.raises(DataError, match="nan='drop'") as info:
                count_chunk(values, bins, kernel=kernel)  # type: ignore[arg-type]
            assert not any(ch.isdigit() for ch in str(info.value))
        with pytest.raises(DataError):
            LocalEngine(workers=2, kernel="numba").count(big, bins)
        return
    got = _both(values, bins, "drop")
    assert got.dropped == 3 and got.counts.tolist() == [1, 2, 0, 3]
    got = _both(big, bins, "drop")
    assert got.dropped == 300_000


@needs_numba
def test_counters_flush_before_they_wrap_and_strided_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """uint32 counters are added into the int64 total every ``_PIECE`` values; strided input
    is copied in ``_COPY``-value pieces. Small pieces exercise both, with NaN in every piece."""
    from treedp.engines import _kernel_numba

    rng = np.random.default_rng(11)
    values = rng.normal(0.0, 2.0, 50_001)
    values[::997] = np.nan
    bins = make_bins(bounds=(-5.0, 5.0), bins=300)
    expected = count_chunk(values, bins, "drop", kernel="numpy")
    strided = np.repeat(values, 2)[::2]
    assert not strided.flags.c_contiguous
    for piece, copy in ((1 << 31, 1 << 16), (1000, 333), (1, 1)):
        monkeypatch.setattr(_kernel_numba, "_PIECE", piece)
        monkeypatch.setattr(_kernel_numba, "_COPY", copy)
        assert count_chunk(values, bins, "drop", kernel="numba") == expected
        assert count_chunk(strided, bins, "drop", kernel="numba") == expected
    readonly = values.copy()
    readonly.setflags(write=False)
    assert count_chunk(readonly, bins, "drop", kernel="numba") == expected


@needs_numba
def test_a_deliberately_wrong_kernel_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants: claiming the arithmetic exact for edges where it is not, or understating the
    slack, must change the counts of the edge probes (so the agreement tests above can fail)."""
    bins = make_bins(bounds=(-5.0, 5.0), bins=1 << 16)
    values = _edge_probes(bins.edges)
    expected = reference(values, bins)
    assert np.array_equal(count_chunk(values, bins, kernel="numba").counts, expected)
    monkeypatch.setattr(local_engine, "_arithmetic_is_exact", lambda *a, **k: True)
    assert not np.array_equal(count_chunk(values, bins, kernel="numba").counts, expected)
    monkeypatch.undo()
    monkeypatch.setattr(local_engine, "_edge_slack", lambda *a, **k: -0.5)
    assert not np.array_equal(count_chunk(values, bins, kernel="numba").counts, expected)


@needs_numba
def test_auto_picks_the_kernel_from_public_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba for float64 into equal-width bins only: when loaded, from CHUNK values; when not
    loaded yet, from AUTO_MIN values (zero-stride views: sizes without memory)."""
    local_engine._load_numba(required=True)
    equal = make_bins(bounds=(0.0, 1.0), bins=16)
    use = local_engine._use_numba
    chunk = np.broadcast_to(0.5, local_engine.CHUNK)
    assert use("auto", chunk, equal)
    assert not use("auto", chunk[:-1], equal)
    assert not use("numpy", chunk, equal)
    assert not use("auto", chunk.astype(np.float32), equal)
    assert not use("auto", np.broadcast_to(1, local_engine.CHUNK), equal)
    assert not use("numba", chunk, make_bins(edges=[0.0, 0.3, 1.0]))
    assert not use("numba", chunk, make_bins(bounds=("2024-01-01", "2024-02-01"), bins=4))
    monkeypatch.setattr(local_engine, "_NUMBA", None)
    assert not use("auto", np.broadcast_to(0.5, local_engine.AUTO_MIN - 1), equal)
    assert use("auto", np.broadcast_to(0.5, local_engine.AUTO_MIN), equal)
    monkeypatch.setattr(local_engine, "_NUMBA", False)  # numba failed to load: numpy
    assert not use("auto", np.broadcast_to(0.5, local_engine.AUTO_MIN), equal)


@needs_numba
def test_no_writable_cache_directory_still_compiles_silently(tmp_path: Path) -> None:
    """A copy of the package where numba can write no cache (its ``__pycache__`` is a file,
    ``NUMBA_CACHE_DIR`` and the user cache lie below a file): the kernel compiles in memory,
    counts right, and nothing reaches stderr (warnings are errors in that interpreter)."""
    tree = tmp_path / "src"
    shutil.copytree(SRC / "treedp", tree / "treedp", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "treedp" / "engines" / "__pycache__").write_text("not a directory")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    code = """
        import numpy as np
        from treedp import make_bins
        from treedp.engines import LocalEngine, count_chunk
        bins = make_bins(bounds=(-5.0, 5.0), bins=64)
        x = np.random.default_rng(0).normal(0, 3, 100_000)
        a = LocalEngine(kernel="numba").count(x, bins)
        assert a == count_chunk(x, bins, kernel="numpy")
        print("ok")
    """
    env = {
        "PYTHONPATH": str(tree),
        "NUMBA_CACHE_DIR": str(blocker / "numba"),
        "XDG_CACHE_HOME": str(blocker / "xdg"),
        "HOME": str(blocker),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = _run(code, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok" and done.stderr == ""
    assert not any((tree / "treedp" / "engines").glob("*.nb*"))


@needs_numba
def test_cache_is_written_where_writable(tmp_path: Path) -> None:
    """With a writable cache directory the compiled kernel is stored and found again."""
    code = """
        from treedp.engines import LocalEngine
        LocalEngine(kernel="numba")
    """
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    for _ in range(2):
        done = _run(code, env)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len(list(tmp_path.rglob("*.nbi"))) == 1
    assert len(list(tmp_path.rglob("*.nbc"))) == 1


def test_explicit_numba_without_numba_names_the_extra() -> None:
    """numba hidden from the interpreter: kernel='numba' is a clear InvalidParameterError
    naming treedp[fast]; 'auto' counts a large column with numpy, silently."""
    code = """
        import sys
        sys.modules["numba"] = None  # import numba now raises ImportError
        import numpy as np
        from treedp import make_bins
        from treedp.engines import LocalEngine, count_chunk, local
        from treedp.exceptions import InvalidParameterError
        bins = make_bins(bounds=(0.0, 1.0), bins=8)
        for make in (lambda: LocalEngine(kernel="numba"),
                     lambda: count_chunk(np.zeros(3), bins, kernel="numba"),
                     lambda: count_chunk(np.zeros(3, dtype=np.int64), bins, kernel="numba")):
            try:
                make()
            except InvalidParameterError as exc:
                assert "treedp[fast]" in str(exc), exc
            else:
                raise AssertionError("no error")
        big = np.broadcast_to(0.5, local.AUTO_MIN)
        assert not local._use_numba("auto", big, bins) and local._NUMBA is False
        print(LocalEngine().count(np.full(local.CHUNK, 0.5), bins).counts.tolist())
    """
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([0, 0, 0, 0, local_engine.CHUNK, 0, 0, 0])
    assert done.stderr == ""


def test_a_release_of_a_million_values_does_not_import_numba(tmp_path: Path) -> None:
    """The #12 path (10^6 values at 2^20 bins, API and CLI) stays below AUTO_MIN: no numba."""
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (treedp[parquet])")
    code = f"""
        import sys
        import numpy as np
        import pyarrow as pa, pyarrow.parquet as pq
        import treedp
        from treedp.cli import main
        x = np.random.default_rng(0).random(10**6)
        treedp.release_cdf(x, bounds=(0, 1), bins=2**20, epsilon=1.0)
        path = {str(tmp_path / "x.parquet")!r}
        pq.write_table(pa.table({{"x": x}}), path)
        main(["release", path, "--column", "x", "--bounds", "0", "1", "--bins", str(2**20),
              "--epsilon", "1", "--out", {str(tmp_path / "x.json")!r}, "--quiet"])
        print("numba" in sys.modules)
    """
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_kernel_option_is_validated() -> None:
    bins = make_bins(bounds=(0.0, 1.0), bins=2)
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        LocalEngine(kernel="fast")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="'kernel'"):
        LocalEngine(kernel=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        count_chunk(np.zeros(2), bins, kernel="c")  # type: ignore[arg-type]
    assert "kernel='numpy'" in repr(LocalEngine(kernel="numpy"))
