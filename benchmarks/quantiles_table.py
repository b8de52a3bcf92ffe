"""Mean rank error of private quantiles: treedp's methods against reference methods and peers.

Run: ``PYTHONPATH=src python benchmarks/quantiles_table.py [--reps R] [--quick]`` (the whole
grid; ``--quick`` is a small subset: normal and Poisson data, n = 10**3, m in {1, 5, 99}).
``--dists``, ``--ns``, ``--eps``, ``--ms`` pick any other subset; ``--json PATH`` also writes
the raw per-cell means (with standard errors ``se:<column>`` and counts ``reps:<column>``),
updated after every cell; ``--summary PATH...`` prints the table and the goal counts of saved
runs (with the current :func:`~treedp.quantiles_api.choose_method`, so a rule can be re-scored
without re-running). Prints Markdown tables (docs/quantiles.md holds one run). The rank error
of an answer ``v`` for level ``q`` is its rank gap, the distance from ``q n`` to the ranks
``[#{x < v}, #{x <= v}]`` that ``v`` holds (``|#{x <= v} - q n|`` when no record equals
``v``; until the fourth round of issue #16 the benchmark used that expression on tied data
too, which rewards the value below a block of ties: docs/quantiles.md, "Discrete data"),
averaged over the levels
``q = j/(m+1)``, ``j = 1..m``, and over ``R`` repetitions (default 10, five times that for one
level; ``--jointexp-reps``, default 3, for JointExp at m >= 29; ``--peer-reps``, default 3,
for the peers); the data are drawn once per setting, seed 0. Neighbours: add/remove
everywhere.

``--columns`` re-runs only some columns and ``--base PATH...`` fills in the others from saved
``--json`` runs (same cells, same seeds: each column's seeds depend on the repetition only).

``--study split|bins|crossover|private-n`` runs the tuning studies behind the rules instead
(:func:`study`): the recursive method's budget split over its levels (``--powers``), the tree's
number of bins (``--bins-list``), recursive against tree, and ``n="private"`` at each
``--shares`` value against the true public ``n``.

Columns:

* ``auto``: what :func:`treedp.quantiles` with ``method="auto"`` runs
  (:func:`treedp.quantiles_api.choose_method`, public parameters only; its choice in
  brackets). It is the column of the method chosen (same seeds), not a separate run.
* ``recursive``: :func:`treedp.quantiles_recursive` (Kaplan, Schnapp, Stemmer 2022).
* ``exp/m``: Smith's exponential mechanism per level with ``ε/m`` each, implemented here
  from the paper with floating-point sampling (a reference, not a private implementation);
  for one level treedp's exact ``exponential`` method is what ``auto`` runs.
* ``jointexp``: JointExp (Gillenwater, Joseph, Kulesza, ICML 2021), implemented here from the
  paper with floating-point sampling (a REFERENCE ONLY, not a private implementation: treedp
  has no exact JointExp). Its dynamic programme is ``O(m n^2)`` here, so it runs for
  ``n <= 2000`` only (``-`` elsewhere).
* ``tree``: the tree CDF as ``treedp.quantiles(method="tree")`` runs it
  (:func:`treedp.release_cdf` with :func:`~treedp.quantiles_api.tree_bins` equal-width bins:
  1024 below ε = 0.5, else 2048; integer bins with the inverse-CDF rule for Poisson data).
* ``auto (n public)``: what ``treedp.quantiles(..., n=n)`` runs for a user who knows the true
  ``n`` (``choose_method`` given ``n``); when it picks the tree, the column ``tree (n)``: the
  tree on ``tree_bins(ε, n)`` bins, same seeds as ``tree``.
* ``auto (private n)``: what ``treedp.quantiles(..., n="private")`` runs for a user who does
  not know ``n`` (add/remove): ``--n-share`` of ε (default
  :data:`~treedp.quantiles_api.DEFAULT_N_SHARE`) on a noisy count, the method and bins
  chosen from it, the rest on the quantiles; its own run (``InsecureSeededSource(rep)``, the
  recursive column's seeds), with the methods it chose (``choice:auto (private n)``). Scored
  against the best of the reference columns and ``tree (n)``.
* peers, for ``m`` in {5, 99} when installed (``--peer-reps`` repetitions; OpenDP takes
  about 70 s for 99 levels of 10**5 values): ``diffprivlib`` 0.6.6
  (``tools.quantile``, ε split over the levels), ``opendp`` 0.16 (``make_private_quantile``,
  Smith's mechanism on a 65,537-point grid of the bounds, ε/m per level, scale calibrated by
  its own privacy map under the symmetric distance), ``pydp`` 1.1.5 (Google's
  ``QuantileTree``, height 4, branching 16, Laplace noise, δ = 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import logsumexp

import treedp
from treedp.noise import InsecureSeededSource
from treedp.quantiles_api import choose_method, tree_bins

DISTS: dict[str, tuple[Callable[[Any, int], np.ndarray], tuple[float, float], str | None]] = {
    "normal": (lambda r, n: r.normal(0, 5, n), (-50.0, 50.0), None),
    "lognormal": (lambda r, n: r.lognormal(0, 1, n), (0.0, 100.0), None),
    "uniform": (lambda r, n: r.uniform(0, 1, n), (0.0, 1.0), None),
    "poisson3": (lambda r, n: r.poisson(3, n).astype(float), (0, 20), "integers"),
}
MS = (1, 5, 9, 29, 49, 99)
PEER_MS = (5, 99)
METHODS = ("recursive", "exp/m", "jointexp", "tree")
PEERS = ("diffprivlib", "opendp", "pydp")
#: The tree with :func:`~treedp.quantiles_api.tree_bins` of ε and the public (true) ``n``.
TREE_N = "tree (n)"
#: ``treedp.quantiles(..., n="private")``: the count spent, the method chosen from it.
PRIVATE_N = "auto (private n)"
#: First seed of ``--study private-n`` (fresh: not the table's ``0..reps-1``).
PRIVATE_N_SEED = 5000
#: What :func:`cell` can run (``--columns``).
ALL_COLUMNS = (
    "recursive",
    "exp/m",
    "jointexp",
    "tree",
    TREE_N,
    "exponential",
    "peers",
    PRIVATE_N,
)
#: JointExp's reference dynamic programme is O(m n^2): only up to this n.
JOINTEXP_MAX_N = 2000
#: From this many levels on JointExp runs ``--jointexp-reps`` repetitions (it is slow).
JOINTEXP_SLOW_M = 29
#: Relative difference below which two mean rank errors count as a tie.
TIE = 1e-9


def rank_error(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> float:
    """The rank gap: the distance from ``q n`` to the ranks ``[#{x < v}, #{x <= v}]`` of ``v``."""
    target = q * xs.size
    below = np.searchsorted(xs, est, side="left") - target
    above = target - np.searchsorted(xs, est, side="right")
    return float(np.maximum(0.0, np.maximum(below, above)).mean())


def exp_per_quantile(xs, q, eps, bounds, rng) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Smith's exponential mechanism per level, ε/m each (float reference).

    Score sensitivity ``max(q, 1 - q)`` (add/remove, the relation treedp uses here).
    """
    lo, hi = bounds
    z = np.concatenate([[lo], np.clip(xs, lo, hi), [hi]])
    length = np.diff(z)
    k = np.arange(length.size)
    out = []
    with np.errstate(divide="ignore"):
        log_len = np.log(length)
    for level in q:
        sens = max(level, 1 - level)
        logw = log_len - (eps / q.size) / (2 * sens) * np.abs(k - level * xs.size)
        i = int(np.argmax(logw + rng.gumbel(size=logw.size)))
        out.append(rng.uniform(z[i], z[i + 1]))
    return np.sort(np.array(out))


def _draw(logw: np.ndarray, rng: Any) -> int:
    p = np.exp(logw - np.max(logw))
    return int(rng.choice(p.size, p=p / p.sum()))


def joint_exp(xs, q, eps, bounds, rng) -> np.ndarray:  # type: ignore[no-untyped-def]
    """JointExp (Gillenwater, Joseph, Kulesza 2021), floating-point REFERENCE.

    Sorted data clamped to ``[a, b]`` cut ``[a, b]`` into ``n + 1`` intervals ``I_i =
    [x_i, x_{i+1})`` (``x_0 = a``, ``x_{n+1} = b``). The outputs ``o_1 <= ... <= o_m`` have
    utility ``u = -sum_{j=1}^{m+1} |#{x in [o_{j-1}, o_j)} - (q_j - q_{j-1}) n|`` (``o_0 = a``,
    ``o_{m+1} = b``), which is ``-sum |i_j - i_{j-1} - g_j|`` when ``o_j`` lies in
    ``I_{i_j}``. Its sensitivity is 2 (add/remove: one gap count moves by 1 and the targets
    by ``q_j - q_{j-1}``, 1 in total; replace: two gap counts by 1), so the density on sorted
    tuples is ``∝ exp(ε u / 4)``. The volume of sorted tuples with ``k`` outputs in one
    interval of length ``L`` is ``L**k / k!``: the dynamic programme keeps the run length
    ``r`` of outputs in the current interval. Sampling is backwards through the tables, then
    uniform points inside the chosen intervals, sorted.
    """
    lo, hi = bounds
    x = np.clip(np.sort(xs), lo, hi)
    n = x.size
    z = np.concatenate([[lo], x, [hi]])
    with np.errstate(divide="ignore"):
        log_len = np.log(np.diff(z))  # -inf for ties: no mass
    m = q.size
    gaps = np.diff(np.concatenate([[0.0], np.sort(q), [1.0]])) * n
    c = eps / 4.0
    idx = np.arange(n + 1)
    diff = idx[:, None] - idx[None, :]  # i - i'
    below = diff >= 1  # i' < i
    first = np.full((n + 1, 1), -np.inf)
    first[:, 0] = log_len - c * np.abs(idx - gaps[0])
    tables = [first]  # tables[j][i, r - 1]: log weight of o_{j+1} in I_i, run length r
    for j in range(1, m):
        b = logsumexp(tables[-1], axis=1)
        kern = np.where(below, -c * np.abs(diff - gaps[j]), -np.inf)
        new = np.full((n + 1, j + 1), -np.inf)
        new[:, 0] = log_len + logsumexp(kern + b[None, :], axis=1)
        runs = np.log(np.arange(2, j + 2))
        new[:, 1:] = tables[-1] + log_len[:, None] - runs[None, :] - c * gaps[j]
        tables.append(new)
    final = tables[-1] - c * np.abs(n - idx - gaps[m])[:, None]
    flat = _draw(final.ravel(), rng)
    i, r = flat // final.shape[1], flat % final.shape[1] + 1
    intervals = np.empty(m, dtype=np.int64)
    for j in range(m - 1, -1, -1):
        intervals[j] = i
        if j == 0:
            break
        if r >= 2:
            r -= 1
            continue
        prev = tables[j - 1]
        weights = np.where(
            idx < i, logsumexp(prev, axis=1) - c * np.abs(i - idx - gaps[j]), -np.inf
        )
        i = _draw(weights, rng)
        r = _draw(prev[i], rng) + 1
    return np.sort(rng.uniform(z[intervals], z[intervals + 1]))


def tree(xs, q, eps, bounds, bins, seed, n=None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The tree CDF as ``treedp.quantiles(method="tree")`` runs it.

    Its default bins are :func:`~treedp.quantiles_api.tree_bins` of ε, and of the public
    ``n`` when given (the user's count, here the true one: a user who knows ``n``).
    """
    return np.atleast_1d(
        treedp.quantiles(
            xs,
            q,
            epsilon=eps,
            bounds=bounds,
            bins=bins,
            method="tree",
            n=n,
            rng=InsecureSeededSource(seed),
        ).values
    )


#: diffprivlib 0.6.6 needs scikit-learn < 1.8 (it imports ``sklearn.tree._tree.DOUBLE``): it
#: runs in its own venv, ``DIFFPRIVLIB_PYTHON`` (default ``/tmp/q16/venv-dpl/bin/python``;
#: ``python -m venv V && V/bin/pip install diffprivlib==0.6.6 "scikit-learn<1.8"``).
DIFFPRIVLIB_PYTHON = os.environ.get("DIFFPRIVLIB_PYTHON", "/tmp/q16/venv-dpl/bin/python")
_DPL_SCRIPT = (
    "import sys, numpy as np; from diffprivlib.tools import quantile; "
    "xs = np.load(sys.argv[1]); q = np.load(sys.argv[2]); "
    "v = quantile(xs, q, epsilon=float(sys.argv[3]), "
    "bounds=(float(sys.argv[4]), float(sys.argv[5])), random_state=int(sys.argv[6])); "
    "np.save(sys.argv[7], np.sort(np.atleast_1d(v)))"
)


def _diffprivlib(xs, q, eps, bounds, seed) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    """diffprivlib's ``tools.quantile`` in its own interpreter; None when absent or failing."""
    if not os.path.exists(DIFFPRIVLIB_PYTHON):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f) for f in ("x.npy", "q.npy", "out.npy")]
        np.save(paths[0], xs)
        np.save(paths[1], q)
        args = [str(eps), str(float(bounds[0])), str(float(bounds[1])), str(seed), paths[2]]
        done = subprocess.run(
            [DIFFPRIVLIB_PYTHON, "-c", _DPL_SCRIPT, *paths[:2], *args],
            capture_output=True,
            text=True,
        )
        if done.returncode:  # e.g. all-tied data: its selection underflows to NaN and raises
            print(f"diffprivlib failed: {done.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            return None
        return np.asarray(np.load(paths[2]))


def peers(xs, q, eps, bounds, seed) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    out: dict[str, np.ndarray] = {}
    dpl = _diffprivlib(xs, q, eps, bounds, seed)
    if dpl is not None:
        out["diffprivlib"] = dpl
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        cand = np.linspace(bounds[0], bounds[1], 65537).tolist()
        dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        met = dp.symmetric_distance()
        data = np.clip(xs, *bounds).astype(float).tolist()
        res = []
        for level in q:
            one = dp.m.make_private_quantile(dom, met, dp.max_divergence(), cand, float(level), 1.0)
            scale = one.map(1) / (eps / q.size)  # the loss is proportional to 1/scale
            meas = dp.m.make_private_quantile(
                dom, met, dp.max_divergence(), cand, float(level), scale
            )
            assert meas.map(1) <= eps / q.size * (1 + 1e-9)
            res.append(meas(data))
        out["opendp"] = np.sort(np.array(res))
    except ImportError:
        pass
    try:
        from pydp.algorithms.quantile_tree import QuantileTree

        qt = QuantileTree(float(bounds[0]), float(bounds[1]), 4, 16)
        for v in xs:
            qt.add_entry(float(v))
        out["pydp"] = np.sort(qt.compute_quantiles(eps, 0.0, 1, 1, [float(v) for v in q]))
    except ImportError:
        pass
    return out


def cell(  # type: ignore[no-untyped-def]
    name: str,
    n: int,
    eps: float,
    m: int,
    xs: np.ndarray,
    reps: int,
    peer_reps: int,
    jointexp_reps: int,
    columns: tuple[str, ...] = ALL_COLUMNS,
    n_share: float | None = None,
):
    """The per-method mean rank errors of one cell (and their standard errors, ``se:<key>``).

    ``columns`` picks what runs (``--columns``; default all): ``recursive``, ``exp/m``,
    ``jointexp``, ``tree``, ``tree (n)``, ``exponential`` (m = 1 only), ``peers`` and
    ``auto (private n)`` (with ``n_share``; the methods it chose in ``choice:<column>``). Each
    column's seeds depend on the repetition only, so a column re-run alone gives what a full
    run gives.
    """
    _draw_fn, bounds, bins = DISTS[name]
    q = np.arange(1, m + 1) / (m + 1)
    err: dict[str, list[float]] = {}
    chose: dict[str, int] = {}
    for rep in range(reps * (5 if m == 1 else 1)):
        rows: dict[str, Any] = {}
        if "recursive" in columns:
            rows["recursive"] = treedp.quantiles(
                xs,
                q,
                epsilon=eps,
                bounds=bounds,
                bins=bins,
                method="recursive",
                rng=InsecureSeededSource(rep),
            ).values
        if "exp/m" in columns:
            rng = np.random.default_rng(1000 + rep)
            rows["exp/m"] = exp_per_quantile(xs, q, eps, bounds, rng)
        if "tree" in columns:
            rows["tree"] = tree(xs, q, eps, bounds, bins, rep)
        if TREE_N in columns:  # the tree's bins given the public (true) n
            rows[TREE_N] = tree(xs, q, eps, bounds, bins, rep, n=n)
        if (
            "jointexp" in columns
            and n <= JOINTEXP_MAX_N
            and (m < JOINTEXP_SLOW_M or rep < jointexp_reps)
        ):
            rows["jointexp"] = joint_exp(xs, q, eps, bounds, np.random.default_rng(2000 + rep))
        if m == 1 and "exponential" in columns:
            rows["exponential"] = treedp.quantiles(
                xs,
                q,
                epsilon=eps,
                bounds=bounds,
                bins=bins,
                method="exponential",
                rng=InsecureSeededSource(rep),
            ).values
        if m in PEER_MS and rep < peer_reps and "peers" in columns:
            rows.update(peers(xs, q, eps, bounds, rep))
        if PRIVATE_N in columns:  # the count spent, the method and bins chosen from it
            res = treedp.quantiles(
                xs,
                q,
                epsilon=eps,
                bounds=bounds,
                bins=bins,
                n="private",
                n_share=n_share,
                rng=InsecureSeededSource(rep),
            )
            rows[PRIVATE_N] = res.values
            chose[res.method] = chose.get(res.method, 0) + 1
        for key, est in rows.items():
            if bins == "integers" and key in ("exp/m", "jointexp", *PEERS):
                est = np.floor(np.asarray(est, dtype=np.float64))  # integer data: round down
            err.setdefault(key, []).append(rank_error(xs, np.asarray(est), q))
    out = {k: float(np.mean(v)) for k, v in err.items()}
    out.update({f"se:{k}": float(np.std(v) / np.sqrt(len(v))) for k, v in err.items()})
    out.update({f"reps:{k}": len(v) for k, v in err.items()})
    if chose:
        out[f"choice:{PRIVATE_N}"] = ", ".join(f"{k} {v}" for k, v in sorted(chose.items()))
        out[f"share:{PRIVATE_N}"] = n_share  # None: the library's default
    return out


def planned(bins: int, eps: float, bounds: tuple[float, float]) -> str:
    """What the planner picks for ``bins`` equal-width bins at ``eps`` (public inputs only).

    ``"tree k1xk2..."`` (fan-out per level, top first) or ``"strategy <kind>/<aggregates>"``.
    The plan depends on the bins, ε and the neighbour relation, not on the data: it is read
    off a release of two public points.
    """
    rel = treedp.release_cdf(
        np.asarray(bounds, dtype=np.float64),
        bounds=bounds,
        bins=bins,
        epsilon=eps,
        rng=InsecureSeededSource(0),
    )
    mech: Any = rel.mechanism
    if mech.name == "tree":
        return "tree " + "x".join(str(k) for k in mech.shape.branching)
    d = mech.describe()
    strategy = str(d.get("strategy", ""))
    kind = strategy.split("'kind': '")[1].split("'")[0] if "'kind': '" in strategy else ""
    agg = strategy.split("'aggregates': ")[1].split(",")[0] if "'aggregates': " in strategy else ""
    return f"{mech.name} {kind}/{agg}".rstrip("/ ")


def study(args: argparse.Namespace) -> None:
    """Tuning studies behind the public-parameter rules (``--study``), mean ± standard error.

    ``split``: the recursive method with level budgets ``∝ (nodes at the level) **
    power`` for each ``--powers`` value (``SPLIT_POWER``); ``bins``: the tree with each
    ``--bins-list`` number of equal-width bins; ``crossover``: the recursive method against
    the tree with its default bins (:func:`treedp.quantiles_api.tree_bins` of ε, and of ε and
    the public ``n`` when that differs: ``tree[n public: bins]``); ``private-n``:
    ``treedp.quantiles`` (``method="auto"``) given the true ``n`` against ``n="private"``
    with each ``--shares`` value, all on the sources ``PRIVATE_N_SEED + r`` (fresh seeds,
    the same for every column). Same data as the
    table (seed 0); ``--reps`` repetitions with seeded sources (``100 + r`` for the tree).
    With ``--json PATH`` every study cell is also written there (mean, standard error,
    repetitions and, for the tree on equal-width bins, the planner's choice: :func:`planned`).
    """
    from treedp.value_methods import quantiles_recursive as qr

    def stat(errs: list[float] | np.ndarray) -> str:
        e = np.asarray(errs)
        return f"{e.mean():.1f}±{e.std() / np.sqrt(e.size):.1f}"

    found: list[dict[str, Any]] = []

    def record(name, n, eps, m, key, errs, bounds, b) -> None:  # type: ignore[no-untyped-def]
        """Keep a study cell for ``--json`` (with the planner's choice for those bins)."""
        e = np.asarray(errs)
        c = {"data": name, "n": n, "eps": eps, "m": m, "column": key, "mean": float(e.mean())}
        c.update({"se": float(e.std() / np.sqrt(e.size)), "reps": int(e.size)})
        if b is not None and b != "integers":
            c["plan"] = planned(b, eps, bounds)
        found.append(c)
        if args.json:  # as we go
            with open(args.json, "w") as f:
                json.dump(found, f, indent=1)

    for name in args.dists:
        draw, bounds, bins = DISTS[name]
        for n in args.ns:
            xs = np.sort(draw(np.random.default_rng(0), n))
            for eps in args.eps:
                for m in args.ms:
                    q = np.arange(1, m + 1) / (m + 1)
                    out = []
                    if args.study in ("split", "crossover"):
                        powers = args.powers if args.study == "split" else [qr.SPLIT_POWER]
                        default = qr.SPLIT_POWER
                        for power in powers:
                            qr.SPLIT_POWER = power
                            try:
                                d = qr._quantiles_recursive_draws(
                                    xs,
                                    q,
                                    bounds=bounds,
                                    epsilon=eps,
                                    size=args.reps,
                                    rng=InsecureSeededSource(7),
                                )
                            finally:
                                qr.SPLIT_POWER = default
                            errs = [rank_error(xs, row, q) for row in d]
                            out.append(f"recursive[power {power}] {stat(errs)}")
                            record(name, n, eps, m, f"recursive[power {power}]", errs, bounds, None)
                    if args.study in ("bins", "crossover"):
                        for b in args.bins_list if args.study == "bins" else [bins]:
                            errs = [
                                rank_error(xs, tree(xs, q, eps, bounds, b, 100 + r), q)
                                for r in range(args.reps)
                            ]
                            out.append(f"tree[{b or 'default'}] {stat(errs)}")
                            record(name, n, eps, m, f"tree[{b or 'default'}]", errs, bounds, b)
                    if args.study == "private-n":
                        run = {
                            "n public": {"n": n},
                            **{
                                f"private n[{sh}]": {"n": "private", "n_share": sh}
                                for sh in args.shares
                            },
                        }
                        means = {}
                        for key, kw in run.items():
                            errs, chose = [], {}
                            for r in range(args.reps):
                                res = treedp.quantiles(
                                    xs,
                                    q,
                                    epsilon=eps,
                                    bounds=bounds,
                                    bins=bins,
                                    rng=InsecureSeededSource(PRIVATE_N_SEED + r),
                                    **kw,
                                )
                                errs.append(rank_error(xs, np.asarray(res.values), q))
                                chose[res.method] = chose.get(res.method, 0) + 1
                            means[key] = float(np.mean(errs))
                            ratio = means[key] / max(means["n public"], 1e-9)
                            picked = ", ".join(f"{k} {v}" for k, v in sorted(chose.items()))
                            out.append(f"{key} {stat(errs)} ({ratio:.2f}x; {picked})")
                            record(name, n, eps, m, key, errs, bounds, None)
                    if args.study == "crossover" and bins is None:  # the bins given n, if other
                        b = tree_bins(eps, n=n)
                        if b != tree_bins(eps):
                            errs = [
                                rank_error(xs, tree(xs, q, eps, bounds, None, 100 + r, n=n), q)
                                for r in range(args.reps)
                            ]
                            out.append(f"tree[n public: {b}] {stat(errs)}")
                            record(name, n, eps, m, f"tree[n public: {b}]", errs, bounds, b)
                    print(f"{name} n={n} ε={eps} m={m}: " + " | ".join(out), flush=True)


def _fmt(mean: dict[str, float], key: str) -> str:
    return f"{mean[key]:.1f}" if key in mean else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--peer-reps", type=int, default=3)
    ap.add_argument(
        "--jointexp-reps", type=int, default=3, help=f"for m >= {JOINTEXP_SLOW_M} (slow)"
    )
    ap.add_argument("--quick", action="store_true", help="a small subset of the grid")
    ap.add_argument("--dists", nargs="+", choices=tuple(DISTS), default=list(DISTS))
    ap.add_argument("--ns", nargs="+", type=int, default=[10**3, 10**5])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.1, 1.0])
    ap.add_argument("--ms", nargs="+", type=int, default=list(MS))
    ap.add_argument("--json", help="also write the per-cell means here")
    ap.add_argument("--summary", nargs="+", metavar="JSON", help="only summarise saved --json runs")
    ap.add_argument(
        "--study", choices=("split", "bins", "crossover", "private-n"), help="a tuning study"
    )
    ap.add_argument(
        "--shares", nargs="+", type=float, default=[0.02, 0.05, 0.1], help="for private-n"
    )
    ap.add_argument("--powers", nargs="+", type=float, default=[0.0, 0.5, -0.5])
    ap.add_argument("--bins-list", nargs="+", type=int, default=[1024, 2048, 4096])
    ap.add_argument(
        "--columns",
        nargs="+",
        choices=ALL_COLUMNS,
        default=list(ALL_COLUMNS),
        help="run only these (the others from --base)",
    )
    ap.add_argument(
        "--n-share",
        type=float,
        default=None,
        help=f"n_share of the {PRIVATE_N!r} column (default: the library's DEFAULT_N_SHARE)",
    )
    ap.add_argument(
        "--base",
        nargs="+",
        metavar="JSON",
        help="saved --json runs whose columns fill in those not re-run (same cells, same seeds)",
    )
    args = ap.parse_args()
    if args.study:
        study(args)
        return
    if args.summary:
        cells = []
        for path in args.summary:
            with open(path) as f:
                cells += json.load(f)
        summarise(cells, table=True)
        return
    if args.quick:
        args.dists, args.ns, args.ms = ["normal", "poisson3"], [10**3], [1, 5, 99]
    base: dict[tuple[str, int, float, int], dict[str, Any]] = {}
    for path in args.base or []:
        with open(path) as f:
            for c in json.load(f):
                base[(c["data"], c["n"], c["eps"], c["m"])] = c
    print(HEADER)
    start = time.time()
    cells = []
    for name in args.dists:
        draw = DISTS[name][0]
        for n in args.ns:
            xs = np.sort(draw(np.random.default_rng(0), n))
            for eps in args.eps:
                for m in args.ms:
                    mean = cell(
                        name,
                        n,
                        eps,
                        m,
                        xs,
                        args.reps,
                        args.peer_reps,
                        args.jointexp_reps,
                        tuple(args.columns),
                        args.n_share,
                    )
                    key = {"data": name, "n": n, "eps": eps, "m": m}
                    done = {**base.get((name, n, eps, m), {}), **key, **mean}
                    print(row(done), flush=True)
                    cells.append(done)
                    if args.json:  # as we go: a long run killed midway keeps its cells
                        with open(args.json, "w") as f:
                            json.dump(cells, f, indent=1)
    print(
        f"\n{args.reps} repetitions per cell ({args.peer_reps} for peers, "
        f"{args.jointexp_reps} for JointExp at m >= {JOINTEXP_SLOW_M}); "
        f"{time.time() - start:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(cells, f, indent=1)
    summarise(cells)


HEADER = (
    "| data | n | ε | m | auto | auto (n public) | auto (private n) | recursive | exp/m | "
    "jointexp | tree | tree (n) | best ratio | best ratio (n) | best ratio (private n) | "
    "diffprivlib | opendp | pydp |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)
#: The three ``auto`` columns: no ``n``, the true public ``n``, ``n="private"``.
MODES: tuple[bool | str, ...] = (False, True, "private")


def auto_key(c: dict[str, Any], public_n: bool | str) -> tuple[str, str]:
    """The method ``auto`` picks for a cell and the column holding its result.

    Without ``public_n`` the rule sees no ``n`` (add/remove, count unknown); with it, the
    true ``n``, and the tree then runs on :func:`~treedp.quantiles_api.tree_bins` of ε and
    ``n`` (column ``tree (n)``). With ``public_n="private"``: the column ``auto (private
    n)`` and the methods its run chose (they depend on the noisy count).
    """
    if public_n == "private":
        return str(c.get(f"choice:{PRIVATE_N}", "-")), PRIVATE_N
    chosen = choose_method(
        c["m"], epsilon=c["eps"], bins=DISTS[c["data"]][2], n=c["n"] if public_n else None
    )
    return chosen, TREE_N if public_n and chosen == "tree" else chosen


def best_key(c: dict[str, Any], public_n: bool | str) -> str:
    """The best reference column: of :data:`METHODS`, and ``tree (n)`` too with ``public_n``
    (``True`` or ``"private"``)."""
    keys = (*METHODS, TREE_N) if public_n else METHODS
    return min((k for k in keys if k in c), key=lambda k: c[k])


def row(c: dict[str, Any]) -> str:
    """One Markdown row of a cell's means (``auto`` is the chosen method's column)."""
    parts = []
    ratios = []
    for public_n in MODES:
        chosen, key = auto_key(c, public_n)
        refs = (*METHODS, TREE_N) if public_n else METHODS
        if key in c and any(k in c for k in refs):
            parts.append(f"{c[key]:.1f} ({chosen})")
            ratios.append(f"{c[key] / max(c[best_key(c, public_n)], 1e-9):.2f}")
        else:
            parts.append("-")
            ratios.append("-")
    return (
        f"| {c['data']} | {c['n']:.0e} | {c['eps']} | {c['m']} | "
        + " | ".join(parts)
        + " | "
        + " | ".join(_fmt(c, k) for k in (*METHODS, TREE_N))
        + " | "
        + " | ".join(ratios)
        + " | "
        + " | ".join(_fmt(c, k) for k in PEERS)
        + " |"
    )


def summarise(cells: list[dict[str, Any]], table: bool = False) -> None:
    """The goal counts, for ``auto``, ``auto (n public)`` and ``auto (private n)``: within
    1.2x of the best method; below every peer."""
    if table:
        print(HEADER)
        for c in cells:
            print(row(c))
    for public_n in MODES:
        label = {False: "auto", True: "auto (n public)", "private": PRIVATE_N}[public_n]
        refs = (*METHODS, TREE_N) if public_n else METHODS
        scored = [c for c in cells if auto_key(c, public_n)[1] in c and any(k in c for k in refs)]
        within, misses, peer_rows, tied = 0, [], [], []
        for c in scored:
            chosen, key = auto_key(c, public_n)
            best = best_key(c, public_n)
            ratio = c[key] / max(c[best], 1e-9)
            if ratio <= 1.2:
                within += 1
            else:
                misses.append(
                    f"{c['data']} n={c['n']:.0e} ε={c['eps']} m={c['m']}: "
                    f"{chosen} {c[key]:.1f} vs {best} {c[best]:.1f} ({ratio:.2f}x)"
                )
            got = [k for k in PEERS if k in c]
            if got:  # a peer is better only beyond rounding (means of equal answers may differ)
                worse = [k for k in got if c[k] < c[key] * (1 - TIE)]
                ties = [k for k in got if k not in worse and c[k] <= c[key] * (1 + TIE)]
                peer_rows.append((c, chosen, key, worse))
                if ties:
                    tied.append(
                        f"{c['data']} n={c['n']:.0e} ε={c['eps']} m={c['m']}: " + ", ".join(ties)
                    )
        keys = (*METHODS, TREE_N) if public_n else METHODS
        print(f"\n{label} within 1.2x of the best of {keys}: {within} of {len(scored)} cells")
        for line in misses:
            print(f"* {line}")
        beaten = [p for p in peer_rows if p[3]]
        print(
            f"\n{label} below (or tied with) every peer in {len(peer_rows) - len(beaten)} of "
            f"{len(peer_rows)} peer cells" + ("; where a peer is better:" if beaten else ".")
        )
        for c, ch, key, worse in beaten:
            peers_txt = ", ".join(f"{k} {c[k]:.1f}" for k in worse)
            print(
                f"* {c['data']} n={c['n']:.0e} ε={c['eps']} m={c['m']}: "
                f"{ch} {c[key]:.1f} vs {peers_txt}"
            )
        if tied:
            print(f"\n{label}: ties with a peer (the same answers, e.g. all at the tie floor):")
            for line in tied:
                print(f"* {line}")


if __name__ == "__main__":
    main()
