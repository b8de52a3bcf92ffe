"""``max_contributions="auto"`` against fixed bounds on flights-like tables (issue 29, item 2).

The table is ``per_person.make_frame``'s (4,000 planes with lognormally skewed rows, 16
carriers as keys, a delay in minutes) in two variants:

* ``independent`` — a plane's delays do not depend on the plane (dropping rows only loses
  signal);
* ``heterogeneous`` — each plane has its own mean delay, shorter for planes that fly more
  (dropping a busy plane's rows biases its carrier's distribution);
* ``uncorrelated`` — each plane has its own mean delay (the same spread), drawn independently
  of how much it flies (dropping rows loses signal and adds within-plane sampling error, but
  biases nothing on average);
* ``slower`` — each plane has its own mean delay, *longer* for planes that fly more (the
  heterogeneous table's bias with the opposite sign);
* ``zipf_slower`` — not the flights table: ``rows/15`` planes with Zipf(1.8) rows each
  (capped at 5,000; the few hundred heaviest hold most rows), carriers drawn per plane, mean
  delay ``10 + 200·min(r, 500)/500`` (heavy planes much slower). Not in the default set;
* ``pareto_faster`` — ``rows/5`` planes with ``⌊Pareto(1.2)⌋`` rows each (Lomax + 1, capped at
  5,000), carriers drawn per plane, mean delay ``70 − 60·min(r, 500)/500`` (heavy planes much
  *faster*). Not in the default set; added in session 10 as a check, not tuned on.

For each bound (fixed 1, 5, 20, 50, 200, and ``"auto"``) a grouped release at ε = 1 over
``bins="integers"`` on ``(0, 1024)``; the error is the mean over carriers of the largest
difference between the released CDF (divided by its n̂) and the true CDF of all the carrier's
rows at 0, 5, …, 295 minutes, averaged over seeds (fixed, for research: the releases are
seeded). Run::

    PYTHONPATH=src python benchmarks/auto_bound.py --rows 100000 1000000 --seeds 3
    PYTHONPATH=src python benchmarks/auto_bound.py --data uncorrelated slower  # some tables

``--cost ROWS ENTRIES`` instead times the choice's histograms alone on random codes (the
mass histogram against the count histogram of the rule before session 9, interleaved, best of
3, wall and CPU seconds)::

    PYTHONPATH=src python benchmarks/auto_bound.py --cost 10000000 4000 10000000 1000000

``--oracle`` adds two diagnostic columns: each seed's bound chosen by the same objective from
the *exact* mass histogram (no noise, nothing shrunk: ``exact``) and from the exact histogram
with the buckets whose total does not clear the noise floor set to zero (``visible``: what a
perfect denoiser of the released histogram could know), run as fixed bounds with the whole
budget like "at m", as ratios to the same best. It reads the histogram by wrapping
``treedp.grouped_auto.choose_from_histogram`` (research only: the exact histogram is not
private).

``--rho 0.5`` runs the same under zCDP (``privacy=treedp.ZCDP(0.5)``, the ρ that pure ε = 1
implies; the histogram then gets discrete Gaussian noise). ``--max-groups 2`` runs the
per-group variant on a table where every plane flies for two carriers (each flight for its
own or, with probability 1/2, its second carrier): the bounds are then
``max_contributions_per_group`` (``max_contributions`` = 2 × it) and ``"auto"`` chooses it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

import treedp

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine
from per_person import CARRIERS, make_frame

POINTS = np.arange(0, 300, 5)
BOUNDS: list[Any] = [1, 5, 20, 50, 200, "auto"]


def _per_plane(rows: int, seed: int, mean_of: Any) -> Any:
    """The flights-like table with a mean delay per plane, ``mean_of(rows per plane)``."""
    import pandas as pd

    df = make_frame(rows, seed)
    codes, _ = pd.factorize(df["tailnum"])
    per_plane = np.bincount(codes)
    mean = mean_of(per_plane / np.median(per_plane))
    delay = np.random.default_rng(seed + 1).geometric(1 / mean[codes]) - 1
    df["delay"] = np.minimum(delay, 1023)
    return df


def heterogeneous(rows: int, seed: int = 0) -> Any:
    """The flights-like table with a mean delay per plane, shorter for busier planes."""
    return _per_plane(rows, seed, lambda x: 10 + 60 / (1 + x))


def uncorrelated(rows: int, seed: int = 0) -> Any:
    """A mean delay per plane (10–70 minutes) drawn independently of its rows."""
    z = np.random.default_rng(11)  # per plane, fixed: the same planes in every table
    return _per_plane(rows, seed, lambda x: 10 + 60 / (1 + z.lognormal(0.0, 1.0, x.size)))


def slower(rows: int, seed: int = 0) -> Any:
    """A mean delay per plane, longer for busier planes."""
    return _per_plane(rows, seed, lambda x: 10 + 60 / (1 + 1 / x))


def zipf_slower(rows: int, seed: int = 0) -> Any:
    """Zipf-many rows per plane, the heavy planes much slower (a heavy tail of few persons)."""
    import pandas as pd

    rng = np.random.default_rng(seed + 3)
    per = np.minimum(rng.zipf(1.8, max(rows // 15, 1)), 5000)
    plane = np.repeat(np.arange(per.size), per)
    carrier = np.array(CARRIERS)[rng.integers(0, len(CARRIERS), per.size)][plane]
    mean = 10 + 200 * np.minimum(per, 500) / 500
    delay = np.minimum(rng.geometric(1 / mean[plane]) - 1, 1023)
    return pd.DataFrame(
        {
            "tailnum": pd.array(plane.astype(str), dtype="string"),
            "carrier": pd.array(carrier, dtype="string"),
            "delay": delay,
        }
    )


def pareto_faster(rows: int, seed: int = 0) -> Any:
    """Pareto-many rows per plane, the heavy planes much faster (a heavy tail the other way)."""
    import pandas as pd

    rng = np.random.default_rng(seed + 5)
    per = np.minimum((rng.pareto(1.2, max(rows // 5, 1)) + 1).astype(np.int64), 5000)
    plane = np.repeat(np.arange(per.size), per)
    carrier = np.array(CARRIERS)[rng.integers(0, len(CARRIERS), per.size)][plane]
    mean = 70 - 60 * np.minimum(per, 500) / 500
    delay = np.minimum(rng.geometric(1 / mean[plane]) - 1, 1023)
    return pd.DataFrame(
        {
            "tailnum": pd.array(plane.astype(str), dtype="string"),
            "carrier": pd.array(carrier, dtype="string"),
            "delay": delay,
        }
    )


TABLES = {
    "independent": make_frame,
    "heterogeneous": heterogeneous,
    "uncorrelated": uncorrelated,
    "slower": slower,
    "zipf_slower": zipf_slower,
    "pareto_faster": pareto_faster,
}


def two_carriers(df: Any, seed: int = 0) -> Any:
    """The table with each plane flying for two carriers: a fixed second carrier per plane,
    taken by each flight with probability 1/2."""
    import pandas as pd

    codes, planes = pd.factorize(df["tailnum"])
    second = np.random.default_rng(7).integers(0, len(CARRIERS), len(planes))
    other = np.array(CARRIERS, dtype=object)[second[codes]]
    flip = np.random.default_rng(seed + 2).random(len(df)) < 0.5
    out = df.copy()
    out["carrier"] = pd.array(np.where(flip, other, df["carrier"].to_numpy(object)), dtype="string")
    return out


def truth(df: Any) -> dict[str, np.ndarray]:
    """Each carrier's true CDF at the points (all its rows, nothing dropped)."""
    out = {}
    for key in CARRIERS:
        x = np.sort(df.loc[df.carrier == key, "delay"].to_numpy())
        out[key] = np.searchsorted(x, POINTS, side="right") / max(x.size, 1)
    return out


def error(
    df: Any,
    true: dict[str, np.ndarray],
    bound: Any,
    seed: int,
    rho: float | None = None,
    max_groups: int | None = None,
) -> tuple[float, int]:
    """Mean over carriers of the sup CDF error, and the bound used (per group: ``c``)."""
    limits: dict[str, Any] = {"max_contributions": bound}
    if max_groups is not None:
        limits = {"max_groups": max_groups, "max_contributions_per_group": bound}
    budget: dict[str, Any] = {"epsilon": 1.0} if rho is None else {"privacy": treedp.ZCDP(rho)}
    gr = treedp.release_grouped(
        df,
        column="delay",
        by="carrier",
        keys=CARRIERS,
        privacy_unit="tailnum",
        bounds=(0, 1024),
        bins="integers",
        rng=treedp.InsecureSeededSource(seed),
        **limits,
        **budget,
    )
    errs = []
    for key in CARRIERS:
        rel = gr[key]
        est = np.clip(np.asarray(rel.cdf(POINTS)) / max(rel.n, 1.0), 0.0, 1.0)
        errs.append(float(np.abs(est - true[key]).max()))
    chosen = gr.bounds.max_contributions_per_group if max_groups else gr.bounds.max_contributions
    return float(np.mean(errs)), int(chosen)


_SEEN: list[dict[str, Any]] = []


def _spy() -> None:
    """Record the arguments of every choice (``--oracle``): the exact mass histogram, grid,
    noise unit, budget, family and weight."""
    import treedp.grouped_auto as ga
    from treedp.privacy.auto_bound import choose_from_histogram as real

    def spy(*a: Any, **kw: Any) -> Any:
        grid, unit, eps, neighbours = a[1], a[3], a[4], a[5]
        _SEEN.append(dict(grid=grid, unit=unit, eps=eps, neighbours=neighbours, **kw))
        return real(*a, **kw)

    vars(ga)["choose_from_histogram"] = spy  # the name grouped_auto calls


def oracle_bounds(seen: dict[str, Any]) -> tuple[int, int]:
    """The bound the objective chooses from the exact mass histogram, and from its buckets
    that clear the noise floor only (the others zero), neither noised nor shrunk."""
    from treedp.privacy.auto_bound import choice_noises
    from treedp.privacy.auto_mass import MASS_CELLS, estimated_objective, floor_sds

    family, mass, grid = seen["family"], np.asarray(seen["mass"], dtype=float), seen["grid"]
    noise, _, _ = choice_noises(family, seen["neighbours"], seen["weight"], seen["eps"], True)
    floor = np.sqrt(noise.variance() * MASS_CELLS) * floor_sds(mass.shape[0])
    visible = np.where(mass.sum(axis=1)[:, None] > floor, mass, 0.0)
    out = []
    for hist in (mass, visible):
        score = estimated_objective(
            hist, 1e-9, grid, seen["unit"], seen["keys"], family.guarantee_kind
        )
        out.append(int(grid[int(np.argmin(score))]))
    return out[0], out[1]


def cost(pairs: list[int]) -> None:
    """Time ``mass_counts`` against ``bucket_counts`` at (rows, entries) pairs."""
    import time

    from treedp.privacy.auto_bound import bucket_counts, candidates
    from treedp.privacy.auto_mass import mass_counts

    grid, rng = candidates(2**16), np.random.default_rng(0)
    for rows, entries in zip(pairs[::2], pairs[1::2], strict=True):
        code = np.unique(rng.integers(0, entries, rows), return_inverse=True)[1].ravel()
        cell = rng.integers(0, 32, rows)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(3):
            for name in ("counts", "mass"):
                wall, cpu = time.perf_counter(), time.process_time()
                if name == "counts":
                    bucket_counts(np.bincount(code), grid)
                else:
                    mass_counts(code, cell, grid)
                took = (time.perf_counter() - wall, time.process_time() - cpu)
                best[name] = min(best.get(name, took), took)
        line = "  ".join(f"{k} {w:.3f} s wall {c:.3f} s CPU" for k, (w, c) in best.items())
        print(f"rows {rows:,} entries {entries:,}: {line}  load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rho", type=float, default=None, help="zCDP instead of epsilon=1")
    parser.add_argument("--max-groups", type=int, default=None, help="per-group variant")
    parser.add_argument("--data", nargs="+", choices=list(TABLES), default=list(TABLES)[:4])
    parser.add_argument(
        "--heterogeneity", type=float, default=None, help="auto with an assumed h (old rule)"
    )
    parser.add_argument(
        "--compare-old",
        action="store_true",
        help="also run AutoBound(heterogeneity=0.1), the rule before session 9, in this run",
    )
    parser.add_argument("--cost", type=int, nargs="+", help="ROWS ENTRIES ...: time histograms")
    parser.add_argument(
        "--oracle", action="store_true", help="also the choice from the exact histogram"
    )
    args = parser.parse_args()
    if args.oracle:
        _spy()
    print(machine())
    if args.cost:
        cost(args.cost)
        return
    budget = "epsilon=1" if args.rho is None else f"ZCDP({args.rho})"
    per = "" if args.max_groups is None else f", per group (max_groups={args.max_groups})"
    print(f"{budget}{per}")
    print("mean over carriers of the sup CDF error (share of n), mean over seeds [SEEDED];")
    print("'at m': each seed's chosen bound as a fixed bound (the whole budget on the trees);")
    print("'ratio': auto over the best of the fixed columns and 'at m' (the goal: <= 1.2)")
    head = "  ".join(f"{b!s:>7}" for b in BOUNDS)
    old = "  old rule: auto (ratio) m" if args.compare_old else ""
    old += "  exact: ratio m  visible: ratio m" if args.oracle else ""
    print(f"{'data':<14}{'rows':>10}  {head}  {'at m':>7}  ratio  auto m{old}")
    auto: Any = "auto"
    if args.heterogeneity is not None:
        auto = treedp.AutoBound(heterogeneity=args.heterogeneity)
    for name in args.data:
        for rows in args.rows:
            df = TABLES[name](rows)
            df = df if args.max_groups is None else two_carriers(df)
            print(f"{name:<14}{rows:>10}  {_cells(df, auto, args)}", flush=True)


def _cells(df: Any, auto: Any, args: argparse.Namespace) -> str:
    """One table's row: the fixed bounds, "auto", "auto"'s picks as fixed bounds, the ratio."""
    true = truth(df)
    cells, chosen = [], []
    _SEEN.clear()
    for bound in [auto if b == "auto" else b for b in BOUNDS]:
        runs = [error(df, true, bound, s, args.rho, args.max_groups) for s in range(args.seeds)]
        cells.append(float(np.mean([r[0] for r in runs])))
        if not isinstance(bound, int):
            chosen = [r[1] for r in runs]
    at = [error(df, true, m, s, args.rho, args.max_groups)[0] for s, m in enumerate(chosen)]
    best = min([*cells[:-1], float(np.mean(at))])
    row = "  ".join(f"{c:7.3f}" for c in [*cells, float(np.mean(at))])
    out = f"{row}  {cells[-1] / best:5.2f}  {chosen}"
    if args.compare_old:
        old = treedp.AutoBound(heterogeneity=0.1)
        runs = [error(df, true, old, s, args.rho, args.max_groups) for s in range(args.seeds)]
        at = [error(df, true, r[1], s, args.rho, args.max_groups)[0] for s, r in enumerate(runs)]
        err = float(np.mean([r[0] for r in runs]))
        best = min(best, float(np.mean(at)))
        out += f"  {err:.3f} ({err / best:.2f}) {[r[1] for r in runs]}"
    if args.oracle:
        picks = [oracle_bounds(seen) for seen in _SEEN[: args.seeds]]
        for col in (0, 1):
            ms = [p[col] for p in picks]
            at = [error(df, true, m, s, args.rho, args.max_groups)[0] for s, m in enumerate(ms)]
            out += f"  {float(np.mean(at)) / best:.2f} {ms}"
    return out


if __name__ == "__main__":
    main()
