"""The bias that a contribution bound causes, estimated privately (``"auto"``'s second histogram).

Dropping a person's rows beyond the bound ``m`` re-weights the released distribution: person
``i`` counts ``min(r_i, m)`` rows instead of ``r_i``. Where persons' distributions do not depend
on how many rows they have, nothing is biased (only rows are lost: a sampling error); where
they do (busy planes have shorter delays), the distribution moves. The move is estimated from a
*mass histogram*: every entry (a person, or a (person, key) pair for the per-group variant)
adds its own share of rows in each of ``k`` public value cells (``MASS_CELLS`` contiguous
groups of the release's bins), quantised to ``Q = MASS_UNITS`` integer units summing to
``Q`` exactly (largest remainder, ties to the lower cell: a function of the entry's rows only),
to the row of the coarse bucket of its row count (one bucket per factor 4 of the grid:
:func:`coarse_of`). The noisy histogram gives each bucket's summed distribution ``M_b``, and
the bias of bound ``m`` at value cell ``j`` is predicted as
``Σ_b [min(r_b, m)/N_m − r_b/N]·M_b(≤ j)`` (``r_b`` the bucket's representative rows,
``N_m = Σ_b min(r_b, m)·M_b(all)``); its magnitude is shrunk by ``BIAS_Z`` of its own noise
standard deviation (public, from the noise's variance), so that noise alone does not look like
bias. All of this after the noise is post-processing.

Sensitivity (exact; checked by brute force in ``tests/privacy/test_auto_mass.py``)
--------------------------------------------------------------------------------
One entry's vector ``v`` is non-negative with ``Σ v = Q``, in one bucket's row:
``‖v‖1 = Q`` and ``‖v‖2² <= Q²`` (all rows in one cell). Add/remove of one person with ``w``
entries (``w = 1`` per person, ``w = max_groups`` per group; the entries may share a bucket and
a cell): ``Δ1 = wQ``, ``Δ2² = w²Q²``. Replace: the change ``v' − v`` of two non-negative vectors
of sum ``wQ`` each has ``‖·‖1 <= 2wQ`` and ``‖·‖2² <= ‖v‖² + ‖v'‖² <= 2w²Q²`` (attained when
all of one person's mass sits in one cell and the other's in another).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BIAS_Z",
    "MASS_CELLS",
    "MASS_UNITS",
    "SUP_BRIDGE",
    "coarse_of",
    "mass_counts",
    "mass_sensitivity",
    "predicted_bias",
    "quantised_shares",
    "sampling_error",
    "value_cells",
]

#: ``k``: the public value cells of the mass histogram (contiguous groups of the bins).
MASS_CELLS = 16
#: ``Q``: the integer units one entry spreads over its cells.
MASS_UNITS = 64
#: The predicted bias is shrunk by this many of its noise standard deviations.
BIAS_Z = 1.0
#: ``E sup|B|`` of a Brownian bridge, ``√(π/2)·ln 2`` (the mean of Kolmogorov's distribution):
#: the sup CDF distance between ``n`` i.i.d. draws and their law is about this over ``√n``.
SUP_BRIDGE = 0.8687


def mass_sensitivity(neighbours: str, weight: int = 1) -> tuple[int, int]:
    """``(Δ1, Δ2²)`` of the mass histogram: ``(wQ, w²Q²)`` add/remove, ``(2wQ, 2w²Q²)``
    replace (module docstring)."""
    k = 2 if neighbours == "replace" else 1
    return k * weight * MASS_UNITS, k * (weight * MASS_UNITS) ** 2


def value_cells(bin_idx: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's value cell: bin ``i`` of ``n_bins`` falls in cell ``i·k // n_bins``."""
    b = np.asarray(bin_idx, dtype=np.int64)
    return (b * MASS_CELLS) // max(int(n_bins), 1)


def coarse_of(grid: np.ndarray) -> np.ndarray:
    """The coarse bucket of each fine bucket of ``grid``: ``floor(log2(grid)/2)`` (one per
    factor 4), numbered from 0."""
    out: np.ndarray = np.floor(np.log2(np.asarray(grid, dtype=np.float64)) / 2).astype(np.int64)
    return out


def quantised_shares(cells: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(n, k)`` integers: each entry's rows per cell (``cells``) scaled to ``Q`` units,
    floors first, then one more unit to the cells of the largest remainders (ties to the lower
    cell) until the entry sums to ``Q`` exactly. Integer arithmetic only."""
    r = np.asarray(rows, dtype=np.int64)[:, None]
    scaled = np.asarray(cells, dtype=np.int64) * MASS_UNITS
    q, rem = scaled // r, scaled % r
    short = MASS_UNITS - q.sum(axis=1)
    order = np.argsort(-rem, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(MASS_CELLS)[None, :], axis=1)
    out: np.ndarray = q + (rank < short[:, None])
    return out


def mass_counts(entry: np.ndarray, cell: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The mass histogram, ``(coarse buckets, k)`` integers: ``entry`` each row's entry code in
    ``[0, n)`` (every code present), ``cell`` its value cell (:func:`value_cells`)."""
    e = np.asarray(entry, dtype=np.int64)
    n_coarse = int(coarse_of(grid).max()) + 1
    out = np.zeros((n_coarse, MASS_CELLS), dtype=np.int64)
    if e.size == 0:
        return out
    n = int(e.max()) + 1
    per = np.bincount(e * MASS_CELLS + cell, minlength=n * MASS_CELLS).reshape(n, MASS_CELLS)
    rows = per.sum(axis=1)
    fine = np.maximum(np.searchsorted(grid, rows, side="right") - 1, 0)
    bucket = coarse_of(grid)[fine]
    shares = quantised_shares(per, rows)
    for j in range(MASS_CELLS):
        out[:, j] = np.bincount(bucket, weights=shares[:, j], minlength=n_coarse).astype(np.int64)
    return out


def _coarse_rows(grid: np.ndarray) -> np.ndarray:
    """Each coarse bucket's representative rows: the geometric middle of its fine buckets'."""
    upper = np.append(grid[1:], grid[-1]).astype(np.float64)
    rep = np.sqrt(grid * upper)
    coarse = coarse_of(grid)
    return np.array(
        [np.sqrt(rep[coarse == c].min() * rep[coarse == c].max()) for c in range(coarse.max() + 1)]
    )


def predicted_bias(noisy: np.ndarray, sd: float, grid: np.ndarray) -> np.ndarray:
    """The shrunk largest bias over the value cells for every candidate ``m = grid[t]``.

    ``noisy``: the noisy mass histogram (:func:`mass_counts` plus noise) in units; ``sd``: one
    cell's noise standard deviation in units (public). A coarse bucket whose noisy row total
    does not exceed ``sd·√k·ln(40·buckets)/√2`` is taken as empty (as the count histogram's
    floor); the bias at cell ``j`` is shrunk by ``BIAS_Z`` times its noise standard deviation,
    ``sd·√(Σ_b w_b²·min(j+1, k−j−1))`` (the cumulative mass of ``j + 1`` cells, or equally of
    the complement's ``k − j − 1``)."""
    mass = np.asarray(noisy, dtype=np.float64) / MASS_UNITS
    unit_sd = sd / MASS_UNITS
    floor = unit_sd * np.sqrt(MASS_CELLS) * np.log(40 * mass.shape[0]) / np.sqrt(2)
    live = mass.sum(axis=1) > floor
    cum = np.where(live[:, None], np.cumsum(mass, axis=1), 0.0)
    per_bucket = cum[:, -1]
    rep = _coarse_rows(grid)
    cells = np.arange(1, MASS_CELLS)
    spread = np.sqrt(np.minimum(cells, MASS_CELLS - cells))
    total = max(float(per_bucket @ rep), 1.0)
    out = np.zeros(grid.size)
    for t, m in enumerate(grid):
        kept = np.minimum(rep, float(m))
        w = kept / max(float(per_bucket @ kept), 1.0) - rep / total
        est = np.abs(w @ cum[:, :-1])
        noise = unit_sd * np.sqrt(float((w * w) @ live)) * spread
        out[t] = float(np.max(np.maximum(est - BIAS_Z * noise, 0.0)))
    return out


def sampling_error(kept: np.ndarray, total: float, keys: int) -> np.ndarray:
    """``SUP_BRIDGE·√(G·(1/N_m − 1/N))``: the sup CDF error of keeping ``N_m`` of ``N`` rows
    spread over ``G`` keys (a without-replacement subsample's finite-population factor)."""
    k = np.maximum(np.asarray(kept, dtype=np.float64), 1.0)
    out: np.ndarray = SUP_BRIDGE * np.sqrt(keys * np.maximum(1.0 / k - 1.0 / max(total, 1.0), 0))
    return out
