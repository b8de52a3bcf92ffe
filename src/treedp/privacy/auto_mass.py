"""The bias that a contribution bound causes, estimated privately (``"auto"``'s histogram).

Dropping a person's rows beyond the bound ``m`` re-weights the released distribution: person
``i`` counts ``min(r_i, m)`` rows instead of ``r_i``. Where persons' distributions do not depend
on how many rows they have, nothing is biased (only rows are lost: a sampling error); where
they do (busy planes have shorter delays), the distribution moves. The move is estimated from a
*mass histogram*: every entry (a person, or a (person, key) pair for the per-group variant)
adds its own share of rows in each of ``k`` public value cells (``MASS_CELLS`` contiguous
groups of the release's bins), quantised to ``Q = MASS_UNITS`` integer units summing to
``Q`` exactly (cumulative rounding, :func:`quantised_shares`: a function of the entry's rows
only),
to the row of the coarse bucket of its row count (one bucket per doubling of the grid:
:func:`coarse_of`). It is the only histogram the choice releases: a bucket's noisy row total
(over ``Q``) counts its entries, spread log-uniformly over the bucket's rows
(:func:`expected_kept`: ``N_m``, the rows kept at ``m``), and its cells give the bucket's summed
distribution ``M_b``. The bias of bound ``m`` at value cell ``j`` is predicted as
``Σ_b [E min(r, m)/N_m − E r/N]·M_b(≤ j)`` (about 0 when persons' distributions do not depend
on their rows); its magnitude is shrunk by ``BIAS_Z`` of its own noise standard deviation
(public, from the noise's variance), so that noise alone does not look like bias
(:func:`estimated_objective`). All of this after the noise is post-processing.

Measured (session 9, ``benchmarks/auto_bound.py``; docs/grouped.md): 16 value cells
underestimated the sup bias of the heterogeneous table by about half (the first cell's edge,
63 minutes, lies past most delays); 32 cells recover 80–100% of it at ``10^5`` rows and 55–75%
at ``10^6`` (a bucket averages its heavier and lighter persons); buckets per doubling, per
factor 2.8 and per factor 4 were within the seeds' spread of each other (the worst cell 1.20,
1.20, 1.23 of the best fixed bound); a separate count histogram on the fine grid at half the
share gave noisier counts than these row totals at the whole share, and a count column in the
same histogram (``Q`` more units per entry: counts 3× less noisy, cells 2× noisier) raised the
worst cell to 1.33 (the independent tables under pure ε). Known limit: under pure ε with few
heavy persons (a Zipf(1.8) table of 20,000 persons whose heaviest few hundred hold most rows
and differ), their buckets do not clear the floor and the bias is missed (1.7× the best fixed
bound; the old assumed-``h`` rule 1.6×; under zCDP 1.04×). Taking every bucket up to the
highest whose *tail* total clears the floor (instead of each bucket alone) did not help there
and raised the independent 10^6 tables under pure ε to 1.27–1.28×. Session 10
(``--oracle``): at 10^5 rows the exact histogram restricted to the buckets that clear the floor
chooses as small a bound (1.18–1.56× over the three budgets), so the limit is the noise, not the
rule; pooled windows, a step-up test above the floor, less bias shrinkage and a preference for
the larger of near-tied bounds were measured and not adopted (docs/grouped.md).

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

import math
from statistics import NormalDist

import numpy as np

__all__ = [
    "BIAS_Z",
    "MASS_BLOCK",
    "MASS_CELLS",
    "MASS_UNITS",
    "SUP_BRIDGE",
    "SUP_NOISE",
    "coarse_edges",
    "coarse_of",
    "estimated_objective",
    "expected_kept",
    "mass_counts",
    "mass_sensitivity",
    "quantised_shares",
    "sampling_error",
    "value_cells",
]

#: ``k``: the public value cells of the mass histogram (contiguous groups of the bins).
MASS_CELLS = 32
#: ``Q``: the integer units one entry spreads over its cells.
MASS_UNITS = 128
#: The predicted bias is shrunk by this many of its noise standard deviations.
BIAS_Z = 1.0
#: ``E sup|B|`` of a Brownian bridge, ``√(π/2)·ln 2`` (the mean of Kolmogorov's distribution):
#: the sup CDF distance between ``n`` i.i.d. draws and their law is about this over ``√n``.
SUP_BRIDGE = 0.8687
#: The largest error of a released CDF (divided by its ``n̂``, clipped to [0, 1]) over its
#: points against its RMSE ``R·m/n``, per guarantee kind: with little noise (one key of 5,000
#: rows, 40 seeds, ``bins="integers"`` on ``(0, 1024)``) 2.2 under pure ε and 2.9 under zCDP
#: over all bins, falling as the noise grows (the clip and ``n̂``); 1.6–1.7 and 2.0–2.3 in
#: ``benchmarks/auto_bound.py``'s independent table where noise and sampling errors are of one
#: size, which is where the choice is made. Session 9 measurements; docs/grouped.md.
SUP_NOISE = {"pure": 1.7, "zcdp": 2.2}


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
    """The coarse bucket of each fine bucket of ``grid``: ``floor(log2(grid))`` (one per
    doubling), numbered from 0."""
    out: np.ndarray = np.floor(np.log2(np.asarray(grid, dtype=np.float64))).astype(np.int64)
    return out


def quantised_shares(cells: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(n, k)`` integers: each entry's rows per cell (``cells``; ``rows`` their sums) as
    ``Q`` units by cumulative rounding, cell ``j`` getting ``⌊Q·C_j/r⌋ − ⌊Q·C_{j−1}/r⌋``
    (``C_j`` the entry's rows in cells ``<= j``): non-negative, summing to ``Q`` exactly, each
    cell and each cumulative share within one unit of the exact one. Integer arithmetic
    only."""
    r = np.asarray(rows, dtype=np.int64)[:, None]
    floors = (np.cumsum(np.asarray(cells, dtype=np.int64), axis=1) * MASS_UNITS) // r
    out: np.ndarray = np.diff(floors, axis=1, prepend=0)
    return out


#: Entries quantised at a time by :func:`mass_counts` (memory: about ``40·k`` bytes each).
MASS_BLOCK = 2**15


def mass_counts(
    entry: np.ndarray, cell: np.ndarray, grid: np.ndarray, block: int = MASS_BLOCK
) -> np.ndarray:
    """The mass histogram, ``(coarse buckets, k)`` integers: ``entry`` each row's entry code in
    ``[0, n)`` (every code present), ``cell`` its value cell (:func:`value_cells`).

    Entries are taken ``block`` codes at a time (the rows put in block order by one stable
    radix sort of their block number), so memory stays ``O(rows + block·k)`` however many
    entries there are; the sum does not depend on ``block``."""
    e = np.asarray(entry, dtype=np.int64)
    c = np.asarray(cell, dtype=np.int64)
    coarse = coarse_of(grid)
    out = np.zeros((int(coarse.max()) + 1, MASS_CELLS), dtype=np.int64)
    if e.size == 0:
        return out
    rows = np.bincount(e)
    fine = np.maximum(np.searchsorted(grid, rows, side="right") - 1, 0)
    bucket = coarse[fine]
    n_blocks = -(-rows.size // block)
    if n_blocks == 1:
        starts, order = np.array([0, e.size]), None
    else:
        number = e // block
        order = np.argsort(number.astype(np.min_scalar_type(n_blocks)), kind="stable")
        starts = np.searchsorted(number[order], np.arange(n_blocks + 1))
    for b in range(n_blocks):
        idx = slice(starts[b], starts[b + 1]) if order is None else order[starts[b] : starts[b + 1]]
        first, last = b * block, min((b + 1) * block, rows.size)
        local = (e[idx] - first) * MASS_CELLS + c[idx]
        per = np.bincount(local, minlength=(last - first) * MASS_CELLS)
        pair = np.flatnonzero(per)  # the (entry, cell) pairs with rows, in that order
        who, j = pair // MASS_CELLS + first, pair % MASS_CELLS
        shares = _sparse_shares(who, per[pair], rows[who])
        where = bucket[who] * MASS_CELLS + j
        out += (
            np.bincount(where, weights=shares, minlength=out.size)
            .reshape(out.shape)
            .astype(np.int64)
        )
    return out


def _sparse_shares(who: np.ndarray, count: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`quantised_shares` of the non-zero cells only, in (entry, cell) order (``who`` the
    entry, non-decreasing; ``count`` the cell's rows; ``rows`` the entry's rows): an empty cell
    gets ``⌊Q·C_j/r⌋ − ⌊Q·C_{j−1}/r⌋ = 0``, so leaving it out changes nothing."""
    total = np.cumsum(count)
    first = np.r_[True, who[1:] != who[:-1]]
    before = (total - count)[first][np.cumsum(first) - 1]  # rows of the entry's earlier cells
    floors = ((total - before) * MASS_UNITS) // rows
    previous = np.r_[0, floors[:-1]]
    out: np.ndarray = floors - np.where(first, 0, previous)
    return out


def coarse_edges(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each coarse bucket's rows ``[lo, hi)``: from its first candidate to the next bucket's
    first (the last bucket, open above, ends a quarter doubling past the last candidate)."""
    g = np.asarray(grid, dtype=np.float64)
    coarse = coarse_of(grid)
    lo = np.array([g[coarse == c][0] for c in range(int(coarse.max()) + 1)])
    hi = np.append(lo[1:], max(g[-1], lo[-1]) * 2**0.25)
    return lo, hi


def expected_kept(lo: np.ndarray, hi: np.ndarray, m: float) -> np.ndarray:
    """``E min(r, m)`` for ``r`` log-uniform on each ``[lo, hi)`` (a bucket's persons spread
    evenly over its doublings; ``m = inf``: ``E r``). Smooth in ``m``, so that the choice
    does not snap to the buckets' edges."""
    width = np.log(hi / lo)
    mean = (hi - lo) / width
    if not np.isfinite(m):
        out: np.ndarray = mean
        return out
    inside = (m - lo) / width + m * np.log(np.maximum(hi / m, 1.0)) / width
    out = np.where(m <= lo, m, np.where(m >= hi, mean, inside))
    return out


def estimated_objective(
    noisy: np.ndarray,
    sd: float,
    grid: np.ndarray,
    noise_unit: float,
    keys: int,
    kind: str = "pure",
) -> np.ndarray:
    """``√((a·G·m·R/N_m)² + sampling²) + bias`` for every candidate ``m = grid[t]``, from the
    noisy mass histogram alone (``noisy``, in units; ``sd`` one cell's noise standard
    deviation in units, public; ``a = SUP_NOISE[kind]``, ``kind`` the guarantee kind).

    A coarse bucket whose noisy total does not exceed ``sd·√k·ln(40·buckets)/√2`` is taken as
    empty (noise alone in the many empty high buckets must not look like heavy persons); the
    others' totals count their entries, spread log-uniformly over the bucket
    (:func:`expected_kept`), giving ``N_m``, the rows kept at ``m``. The noise term is the
    trees' RMSE at ``m`` over the rows kept (``noise_unit = G·R``) times ``a`` (the largest
    error over a CDF's points against its RMSE); the sampling term is
    :func:`sampling_error`; the bias at cell ``j`` is
    ``Σ_b [E min(r, m)/N_m − E r/N]·M_b(≤ j)``, its magnitude shrunk by ``BIAS_Z`` times its
    noise standard deviation ``sd·√(Σ_b w_b²·min(j+1, k−j−1))`` (the cumulative mass of
    ``j + 1`` cells, or equally of the complement's ``k − j − 1``), the largest over ``j``."""
    mass = np.asarray(noisy, dtype=np.float64) / MASS_UNITS
    unit_sd = sd / MASS_UNITS
    floor = unit_sd * np.sqrt(MASS_CELLS) * floor_sds(mass.shape[0])
    live = mass.sum(axis=1) > floor
    cum = np.where(live[:, None], np.cumsum(mass, axis=1), 0.0)
    entries = np.maximum(cum[:, -1], 0.0)
    lo, hi = coarse_edges(grid)
    rows = expected_kept(lo, hi, np.inf)
    total = max(float(entries @ rows), 1.0)
    cells = np.arange(1, MASS_CELLS)
    spread = np.sqrt(np.minimum(cells, MASS_CELLS - cells))
    out = np.zeros(grid.size)
    for t, m in enumerate(grid):
        each = expected_kept(lo, hi, float(m))
        kept = max(float(entries @ each), 1.0)
        w = each / kept - rows / total
        est = np.abs(w @ cum[:, :-1])
        noise_sd = unit_sd * np.sqrt(float((w * w) @ live)) * spread
        bias = float(np.max(np.maximum(est - BIAS_Z * noise_sd, 0.0), initial=0.0))
        noise = SUP_NOISE[kind] * noise_unit * float(m) / kept
        sampling = float(sampling_error(np.array([kept]), total, keys)[0])
        out[t] = math.hypot(noise, sampling) + bias
    return out


def floor_sds(buckets: int) -> float:
    """How many standard deviations of a bucket's noisy total (the sum of ``k`` cells' noise,
    about normal for ``k = 32`` under either family) a bucket must exceed to count: the
    normal quantile at ``1 − 1/(100·buckets)``, so that noise alone makes a bucket count in
    about one release in a hundred."""
    return float(NormalDist().inv_cdf(1.0 - 1.0 / (100.0 * buckets)))


def sampling_error(kept: np.ndarray, total: float, keys: int) -> np.ndarray:
    """``SUP_BRIDGE·√(G·(1/N_m − 1/N))``: the sup CDF error of keeping ``N_m`` of ``N`` rows
    spread over ``G`` keys (a without-replacement subsample's finite-population factor)."""
    k = np.maximum(np.asarray(kept, dtype=np.float64), 1.0)
    out: np.ndarray = SUP_BRIDGE * np.sqrt(keys * np.maximum(1.0 / k - 1.0 / max(total, 1.0), 0))
    return out
