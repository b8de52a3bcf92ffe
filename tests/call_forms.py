"""The release keywords of a test table in the form ``release_cdf`` takes them.

Tables of bad (or good) arguments list one parameter per entry (``branching``, ``edges`` ...);
:func:`release_kwargs` folds the tree's options into ``mechanism=MechanismOptions(...)`` and
explicit edges into ``bins``, so every entry still reaches the one check of its parameter.
"""

from __future__ import annotations

from typing import Any

import treedp

STRATEGY = ("branching", "level_budgets", "estimator")


def release_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``branching`` / ``level_budgets`` / ``estimator`` in
    ``mechanism=treedp.MechanismOptions(...)``, ``edges`` as ``bins`` and ``plan_cache`` as
    ``plan``."""
    out = dict(kwargs)
    strategy = {k: out.pop(k) for k in STRATEGY if k in out}
    if strategy:
        out["mechanism"] = treedp.MechanismOptions(out.get("mechanism", "auto"), **strategy)
    if "edges" in out:
        edges = out.pop("edges")
        if edges is not None:
            if out.get("bins") is not None:  # both given: the edges and a number of bins
                out["bounds"] = out.get("bounds") or (0, 1)
            out["bins"] = edges
    if "plan_cache" in out:
        out["plan"] = out.pop("plan_cache")
    return out
