"""The exact exponential-mechanism quantile: end-to-end time by n, and selection draws per second.

End to end (`quantile_exponential`, one q, OS randomness) includes sorting the data and
counting the public grid points of every rank; the selection alone draws `size` outputs for
one fixed data set (the grouped proposal with exact acceptance, `noise/exponential.py`) through
the private simulation helper
`treedp.value_methods.quantile_exponential._quantile_exponential_draws` — each draw there is a
separate ε-release, so it measures the sampler, never something to publish.
"""

from __future__ import annotations

import numpy as np

from _common import best_of, machine
from treedp import InsecureSeededSource, SystemRandomSource, quantile_exponential
from treedp.value_methods.quantile_exponential import _quantile_exponential_draws

DRAWS = 1_000_000


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"# exact exponential-mechanism quantile ({machine()})")
    print(f"{'n':>10} {'data':>10} {'eps':>5} {'seconds':>8}")
    for n in (10**3, 10**5, 10**6, 10**7):
        for name, x in (
            ("lognormal", rng.lognormal(10.5, 0.8, n)),
            ("tied", rng.poisson(3, n).astype(float)),
        ):
            bounds = (0.0, 500_000.0) if name == "lognormal" else (0.0, 30.0)
            for eps in (0.1, 1.0):
                seconds = best_of(
                    lambda x=x, b=bounds, e=eps: quantile_exponential(x, 0.5, bounds=b, epsilon=e),
                    2,
                )
                print(f"{n:>10} {name:>10} {eps:>5} {seconds:>8.3f}")
    print(f"\n{'n':>10} {'eps':>5} {'source':>8} {'M draws/s':>10}")
    for n in (10**3, 10**6):
        x = rng.lognormal(10.5, 0.8, n)
        for eps in (0.1, 1.0, 10.0):
            for sname, source in (
                ("os", SystemRandomSource()),
                ("seeded", InsecureSeededSource(0)),
            ):
                seconds = best_of(
                    lambda x=x, e=eps, s=source: _quantile_exponential_draws(
                        x, 0.5, bounds=(0.0, 500_000.0), epsilon=e, rng=s, size=DRAWS
                    ),
                    2,
                )
                print(f"{n:>10} {eps:>5} {sname:>8} {DRAWS / seconds / 1e6:>10.2f}")


if __name__ == "__main__":
    main()
