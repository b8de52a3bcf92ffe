"""Each of treedp's quantile methods, forced, on the peers benchmark's data (issue #33 item 3).

Run: ``PYTHONPATH=src:benchmarks python benchmarks/quantiles_methods_study.py --dists pareto
--methods auto recursive tree`` (``--bins`` gives the tree's bins; ``--integer-ranges R ...``
adds ``int<R>``: ⌊exponential(R/20)⌋ on ``[0, R]`` with ``bins="integers"``). treedp only:
which method would win a cell where ``auto`` loses (docs/quantiles.md, "Other data"). Same
data, seeds and rank error as ``quantiles_peers.py``; ``method="auto"`` also lists the methods
its private count picked.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import treedp
from quantiles_peers import ALL_DISTS, NOISE_SEED, rank_error
from treedp.noise import InsecureSeededSource


def integer_range(r: int) -> Any:
    """``int<r>``: integers on ``[0, r]``, most of them in the lower third."""
    draw = lambda g, n: np.minimum(np.floor(g.exponential(r / 20, n)), float(r))  # noqa: E731
    return draw, (0.0, float(r)), "integers"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dists", nargs="+", default=[])
    ap.add_argument("--integer-ranges", type=int, nargs="+", default=[])
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--ms", type=int, nargs="+", default=[5, 29])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--methods", nargs="+", default=["auto", "recursive", "tree", "exponential"])
    ap.add_argument("--bins", type=int, default=None, help="the tree's bins (default: the data's)")
    args = ap.parse_args()
    dists = {d: ALL_DISTS[d] for d in args.dists}
    dists.update({f"int{r}": integer_range(r) for r in args.integer_ranges})
    for n in args.ns:
        for name, (draw, bounds, bins) in dists.items():
            bins = args.bins if args.bins is not None else bins
            for eps in args.eps:
                for m in args.ms:
                    q = np.arange(1, m + 1) / (m + 1)
                    cols = []
                    for method in args.methods:
                        errs, used = [], set()
                        for rep in range(args.reps):
                            xs = draw(np.random.default_rng(rep), n)
                            res = treedp.quantiles(
                                xs, q, epsilon=eps, bounds=bounds, bins=bins, method=method,
                                rng=InsecureSeededSource(NOISE_SEED + rep),
                            )  # fmt: skip
                            used.add(res.method)
                            errs.append(rank_error(xs, np.atleast_1d(res.values), q))
                        a = np.asarray(errs)
                        label = (
                            f"{method} ({'/'.join(sorted(used))})" if method == "auto" else method
                        )
                        se = a.std(ddof=1) / np.sqrt(a.size)
                        cols.append(f"{label} {a.mean():.1f} ± {se:.1f}")
                    print(f"| {name} | {n:.0e} | {eps:g} | {m} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
