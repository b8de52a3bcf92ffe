"""A release's quantiles read off its CDF shrunk toward the uniform law over its bounds.

Post-processing of a release (:mod:`treedp.estimation.shrinkage`: the unbiased prefix estimate
and its exact, public covariance): no privacy cost, the release's guarantee, neighbours,
privacy unit and sensitivity unchanged. :func:`treedp.quantiles`' tree method reads its
quantiles this way; a release's own :meth:`~treedp.Release.quantile`, :meth:`~treedp.Release.cdf`
and intervals do not (its intervals are stated for the unshrunk estimates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.estimation.shrinkage import shrink_to_uniform

__all__ = ["shrinks", "shrunk_quantiles"]


def shrinks(rel: Any) -> bool:
    """Whether :func:`shrunk_quantiles` can shrink ``rel``: numeric (float) bins that are not
    one per integer, a public noise (not DAWA's) and a consistent fit (not ``"none"``)."""
    bins = rel.bins
    return bool(
        not bins.discrete
        and np.asarray(bins.edges).dtype.kind == "f"
        and rel.offers_intervals
        and rel.postprocess != "none"
    )


def shrunk_quantiles(rel: Any, qa: np.ndarray) -> tuple[Any, float | None]:
    """The ``qa``-quantiles of ``rel`` read off its shrunk CDF, and the share of the deviation
    from the uniform law kept (1: read as released; None: a release :func:`shrinks` refuses;
    both the release's own :meth:`quantile`).

    Parameters
    ----------
    rel : Release
        A one-distribution release.
    qa : numpy.ndarray
        Checked levels in ``[0, 1]``.

    Returns
    -------
    tuple
        The quantiles as :meth:`~treedp.Release.quantile` returns them, and ``f`` in ``[0, 1]``
        or None.
    """
    if not shrinks(rel):
        return rel.quantile(qa), None
    prefix, kept = shrink_to_uniform(rel.prefix_counts, rel.covariance, rel.bins.edges)
    if kept == 1.0:
        return rel.quantile(qa), 1.0
    return rel._quantile_of(qa, rel._fit(prefix, True)), kept
