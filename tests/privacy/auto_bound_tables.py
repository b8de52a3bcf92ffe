"""Shared by the ``"auto"`` contribution-bound tests: a table of persons with Zipf-many rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["zipf_persons"]


def zipf_persons(n_persons: int, *, cap: int, keys: str, seed: int = 0) -> pd.DataFrame:
    """``x`` (integers 0..31), ``pid`` (text ids; person ``i`` has ``min(Zipf(1.8), cap)``
    rows) and ``k`` (a key drawn from ``keys`` per row)."""
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.zipf(1.8, n_persons), cap)
    pid = np.repeat(np.arange(n_persons), per).astype(str)
    n = pid.size
    return pd.DataFrame(
        {"x": rng.integers(0, 32, n), "pid": pid, "k": rng.choice(np.array(list(keys)), n)}
    )
