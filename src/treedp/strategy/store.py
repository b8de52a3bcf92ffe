"""Where strategies come from: shipped files, a caller-owned cache, or optimisation.

A strategy depends only on public parameters (``B``, the workload, ``p``, the lattice), so it
is optimised once. :func:`get_strategy` looks, in order, at the strategies shipped with
treedp (``treedp/strategy/data``, written by :mod:`treedp.strategy.generate`), then at the
caller's :class:`StrategyCache`, and otherwise optimises (deterministically, from a fixed
start) and stores the result in that cache. There is no process-wide cache.
"""

from __future__ import annotations

import io
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from treedp._validation import check_int, check_option, must
from treedp.exceptions import InvalidTypeError, TreeDPError
from treedp.strategy.digests import SHIPPED_DIGESTS
from treedp.strategy.model import DEFAULT_LATTICE, Strategy, quantise
from treedp.strategy.optimize import WORKLOADS, default_aggregates, optimise_pidentity

__all__ = [
    "DENSE_SIZES",
    "GRID_SIZES",
    "MAX_STRATEGY_BINS",
    "StrategyCache",
    "get_strategy",
    "load_strategy_file",
    "make_strategy",
    "padded_strategy",
    "save_strategy_file",
    "shipped_size",
    "shipped_strategy",
]

#: Largest ``B`` a strategy is optimised for (the optimisation costs ``O(p² B)`` per step).
MAX_STRATEGY_BINS = 8192


class StrategyCache:
    """Strategies the caller keeps between releases, keyed by ``(B, workload)``.

    Pass one to :class:`treedp.mechanisms.strategy.StrategyMechanism` (or to
    :func:`get_strategy`) so that the optimisation runs once per ``B``.
    """

    def __init__(self) -> None:
        self._items: dict[tuple[int, str], Strategy] = {}

    def get(self, n_bins: int, workload: str) -> Strategy | None:
        """The cached strategy, or None."""
        return self._items.get((n_bins, workload))

    def put(self, strategy: Strategy) -> None:
        """Keep ``strategy``."""
        self._items[(strategy.n_bins, strategy.workload)] = strategy

    def __len__(self) -> int:
        return len(self._items)


def _file_name(n_bins: int, workload: str) -> str:
    return f"pidentity_{workload}_{n_bins}.npz"


def save_strategy_file(strategy: Strategy, path: str | Path) -> None:
    """Write ``strategy`` as a small compressed ``.npz`` (weights as uint16)."""
    np.savez_compressed(
        path,
        identity=strategy.identity.astype(np.uint16),
        aggregates=strategy.aggregates.astype(np.uint16),
        workload=np.array(strategy.workload),
    )


def load_strategy_file(data: bytes | str | Path) -> Strategy:
    """Read a strategy written by :func:`save_strategy_file`."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    with np.load(source, allow_pickle=False) as f:
        return Strategy(
            f["identity"].astype(np.int64), f["aggregates"].astype(np.int64), str(f["workload"])
        )


def shipped_strategy(n_bins: int, workload: str = "prefix") -> Strategy | None:
    """The strategy shipped with treedp for ``(B, workload)``, or None.

    Raises
    ------
    TreeDPError
        The file's weights do not match their pinned digest (:mod:`treedp.strategy.digests`).
    """
    name = _file_name(n_bins, workload)
    ref = _shipped_file(name)
    if not ref.is_file():
        return None
    strategy = load_strategy_file(ref.read_bytes())
    if strategy.digest != SHIPPED_DIGESTS.get(name):
        raise TreeDPError(
            f"The shipped strategy file {name} does not match its pinned digest: the "
            "installation is damaged; reinstall treedp."
        )
    return strategy


#: The sizes strategies ship for, smallest first: a grid of ratio at most 1.5 from 32 to
#: 4096 (both workloads, but ``range`` at 64, whose optimisation stops in a poor optimum:
#: there the prefix strategy serves ranges better), and for the prefix workload below 256 the
#: sizes :data:`DENSE_SIZES`.
GRID_SIZES = (32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
#: Prefix strategies for ``B`` below 256 wherever one optimised for ``B`` itself is more
#: accurate (exact mean prefix MSE) than the best the planner had: the next shipped size
#: padded, a tree or the histogram. Chosen greedily from 256 down over every ``B`` (a size,
#: once shipped, is padded to the sizes below it), first at a 2% margin (19 sizes), then at
#: none: 86 sizes from 11 to 255 (the optimiser's local optima leave the others to padding).
#: E.g. Adult ``age``'s 74 bins 32.5 → 30.7, 100 bins 37.5 → 35.8 (docs/strategies.md,
#: "Dense small sizes"). Above 256 the same search found at most 2–3%.
# fmt: off
DENSE_SIZES = (
    11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 35, 38, 39, 46, 49, 50,
    51, 53, 54, 56, 57, 59, 61, 62, 65, 66, 67, 68, 70, 71, 73, 74, 77, 80, 81, 83, 84, 86, 88,
    89, 91, 94, 95, 98, 99, 101, 104, 111, 116, 122, 131, 135, 139, 145, 146, 156, 161, 163,
    167, 170, 171, 174, 178, 186, 191, 197, 198, 202, 209, 210, 218, 219, 225, 230, 236, 238,
    244, 254, 255
)
# fmt: on
SHIPPED_SIZES = tuple(sorted(GRID_SIZES + DENSE_SIZES))


def padded_strategy(n_bins: int, workload: str = "prefix") -> Strategy | None:
    """The shipped strategy of the smallest shipped size ``S >= B`` on its first ``B`` bins
    (the columns of the ``S - B`` others dropped, with the aggregate rows left all zero), or
    None above the largest shipped size.

    Releasing it is releasing the ``S``-bin strategy with its last ``S - B`` bins always
    empty (:mod:`treedp.mechanisms.strategy_padded`). Of the shipped sizes above ``B`` the
    smallest is the most accurate (mean prefix MSE at ε = 1, ``B = 1000``: 92.3 from 1,024
    bins, 114.6 from 2,048, 145.8 from 4,096; :data:`SHIPPED_SIZES`).
    """
    b = check_int(n_bins, "n_bins", lo=1)
    size = shipped_size(b, workload)
    shipped = None if size is None else shipped_strategy(size, workload)
    if shipped is None or size == b:
        return shipped
    aggregates = shipped.aggregates[:, :b]
    return Strategy(shipped.identity[:b], aggregates[aggregates.any(axis=1)], shipped.workload)


def shipped_size(n_bins: int, workload: str = "prefix") -> int | None:
    """The smallest shipped size ``S >= B`` for ``workload`` (its file is there; nothing is
    read), or None above the largest."""
    sizes = (s for s in SHIPPED_SIZES if s >= n_bins)
    return next((s for s in sizes if _shipped_file(_file_name(s, workload)).is_file()), None)


def _shipped_file(name: str) -> Traversable:
    """The shipped file ``name`` (it may not exist)."""
    return resources.files("treedp.strategy").joinpath("data", name)


def make_strategy(n_bins: int, workload: str = "prefix") -> Strategy:
    """Optimise and quantise the default strategy for ``(B, workload)`` (deterministic)."""
    theta = optimise_pidentity(n_bins, default_aggregates(n_bins), workload)
    return quantise(theta, DEFAULT_LATTICE, workload)


def get_strategy(
    n_bins: int, workload: str = "prefix", cache: StrategyCache | None = None
) -> Strategy:
    """The strategy for ``B`` bins and ``workload``: shipped, cached, or optimised now.

    Parameters
    ----------
    n_bins : int
        ``B``, at most :data:`MAX_STRATEGY_BINS`.
    workload : {"prefix", "range"}
        The workload it is optimised for.
    cache : StrategyCache, optional
        Looked up before optimising; an optimised strategy is stored in it.
    """
    b = check_int(n_bins, "n_bins", lo=1, hi=MAX_STRATEGY_BINS)
    work = check_option(workload, "workload", WORKLOADS)
    if cache is not None and not isinstance(cache, StrategyCache):
        raise InvalidTypeError(
            must(
                "strategy_cache",
                f"be a treedp.strategy.StrategyCache. Got {type(cache).__name__} instead.",
            )
        )
    found = shipped_strategy(b, work)
    if found is None and cache is not None:
        found = cache.get(b, work)
    if found is None:
        found = make_strategy(b, work)
        if cache is not None:
            cache.put(found)
    return found
