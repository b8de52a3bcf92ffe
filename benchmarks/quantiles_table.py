"""Mean rank error of private quantiles: treedp's methods against reference methods and peers.

Run: ``PYTHONPATH=src python benchmarks/quantiles_table.py [--reps R] [--quick]``. Prints a
Markdown table (docs/quantiles.md holds one run). The rank error of an answer ``v`` for
level ``q`` is ``|#{x <= v} - q n|``, averaged over the levels ``q = j/(m+1)``, ``j = 1..m``,
and over ``R`` repetitions (default 2, five times that for one level; the data are drawn
once per setting, seed 0).

Columns:

* ``auto``: :func:`treedp.quantiles` with ``method="auto"`` (its choice in brackets).
* ``recursive``: :func:`treedp.quantiles_recursive` (Kaplan, Schnapp, Stemmer 2022).
* ``exp/m``: Smith's exponential mechanism per level with ``ε/m`` each, implemented here
  from the paper with floating-point sampling (a reference, not a private implementation).
* ``tree``: the tree CDF (:func:`treedp.release_cdf`, 4096 equal-width bins; integer bins
  with the nearest-CDF rule for Poisson data).
* peers when installed: ``diffprivlib`` (``tools.quantile``, which splits ε over the levels).

JointExp (Gillenwater, Joseph, Kulesza 2021) is not implemented here (see docs/quantiles.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource
from treedp.release.discrete_quantiles import discrete_quantile_from

DISTS = {
    "normal": (lambda r, n: r.normal(0, 5, n), (-50.0, 50.0), None),
    "lognormal": (lambda r, n: r.lognormal(0, 1, n), (0.0, 100.0), None),
    "uniform": (lambda r, n: r.uniform(0, 1, n), (0.0, 1.0), None),
    "poisson3": (lambda r, n: r.poisson(3, n).astype(float), (0, 20), "integers"),
}
MS = (1, 5, 9, 29, 49, 99)


def rank_error(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> float:
    return float(np.abs(np.searchsorted(xs, est, side="right") - q * xs.size).mean())


def exp_per_quantile(xs, q, eps, bounds, rng) -> np.ndarray:
    """Smith's exponential mechanism per level, ε/m each.

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


def tree(xs, q, eps, bounds, bins, seed) -> np.ndarray:
    rel = treedp.release_cdf(
        xs,
        bounds=bounds,
        bins=4096 if bins is None else bins,
        epsilon=eps,
        rng=InsecureSeededSource(seed),
    )
    if bins == "integers":
        return discrete_quantile_from(rel.bins, rel.consistent_counts, q)
    return np.atleast_1d(rel.quantile(q))


def peers(xs, q, eps, bounds, seed) -> dict[str, np.ndarray]:
    out = {}
    try:
        from diffprivlib.tools import quantile as dpl_quantile

        out["diffprivlib"] = np.sort(
            np.atleast_1d(dpl_quantile(xs, q, epsilon=eps, bounds=bounds, random_state=seed))
        )
    except ImportError:  # not installed
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="n = 10**3 only")
    args = ap.parse_args()
    ns = (10**3,) if args.quick else (10**3, 10**5)
    print("| data | n | ε | m | auto | recursive | exp/m | tree | diffprivlib | best ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    start = time.time()
    for name, (draw, bounds, bins) in DISTS.items():
        for n in ns:
            xs = np.sort(draw(np.random.default_rng(0), n))
            for eps in (0.1, 1.0):
                for m in MS:
                    q = np.arange(1, m + 1) / (m + 1)
                    err: dict[str, list[float]] = {}
                    chosen = treedp.quantiles_api.choose_method(m, epsilon=eps, bins=bins)
                    for rep in range(args.reps * (5 if m == 1 else 1)):
                        rng = np.random.default_rng(1000 + rep)
                        rows = {
                            "recursive": treedp.quantiles(
                                xs,
                                q,
                                epsilon=eps,
                                bounds=bounds,
                                bins=bins,
                                method="recursive",
                                rng=InsecureSeededSource(rep),
                            ).values,
                            "exp/m": exp_per_quantile(xs, q, eps, bounds, rng),
                            "tree": tree(xs, q, eps, bounds, bins, rep),
                            **peers(xs, q, eps, bounds, rep),
                        }
                        if chosen == "exponential":
                            rows["exponential"] = treedp.quantiles(
                                xs,
                                q,
                                epsilon=eps,
                                bounds=bounds,
                                bins=bins,
                                method="exponential",
                                rng=InsecureSeededSource(rep),
                            ).values
                        for key, est in rows.items():
                            err.setdefault(key, []).append(rank_error(xs, np.asarray(est), q))
                    mean = {k: float(np.mean(v)) for k, v in err.items()}
                    auto = mean[chosen]
                    best = min(mean[k] for k in ("recursive", "exp/m", "tree"))
                    dpl = f"{mean['diffprivlib']:.1f}" if "diffprivlib" in mean else "n/a"
                    print(
                        f"| {name} | {n:.0e} | {eps} | {m} | {auto:.1f} ({chosen}) | "
                        f"{mean['recursive']:.1f} | {mean['exp/m']:.1f} | {mean['tree']:.1f} | "
                        f"{dpl} | {auto / max(best, 1e-9):.2f} |",
                        flush=True,
                    )
    print(f"\n{args.reps} repetitions per cell; {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
