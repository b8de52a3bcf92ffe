"""One run of a validated :class:`~treedp.query.Query`: the only place a release spends budget.

The stages are the same for every query (:func:`treedp.release_cdf`,
:func:`treedp.release_counts`, :func:`treedp.release_grouped`, :func:`treedp.quantiles`,
:func:`treedp.median`), and :func:`run` hands the query to the stage module of its kind:

1. **plan**, from public parameters only: the record-level mechanism (a plan passed, cached
   or made), or the quantile method and the steps it needs; the accountant is asked whether it
   can take the whole spend (``Accountant.check``) before any value is read;
2. **read and count**: the engine that accepts the data (the engine table,
   :func:`treedp.engines.dispatch.pick_engine`) reads it: bin counts of one column, the bounded
   ``(keys × bins)`` counts of a per-person / group-by query, or the column a value-based
   quantile method needs; private bounds, private key selection and a private count are
   ordinary stages with public costs;
3. **charge**, once, for every stage together, after the data were read and before any noise
   is drawn; the charge records what was released (:mod:`treedp.subject`: the column, the
   source as given, the public bounds; the caller's note through :func:`treedp.noting`);
4. **noise**, and **wrap**: a :class:`~treedp.release.Release` for one distribution (with a
   privacy unit too), a :class:`~treedp.release.grouped.GroupedRelease` per key, a
   :class:`~treedp.quantiles_run.QuantilesResult` for quantiles.

The stage modules: :mod:`treedp.release_stage` (one distribution), :mod:`treedp.grouped_stage`
(per person, per group) and :mod:`treedp.quantiles_run` (quantiles).
"""

from __future__ import annotations

from typing import cast

from treedp.grouped_stage import run_grouped
from treedp.privacy.spend import releasing
from treedp.quantiles_run import QuantilesResult, run_quantiles
from treedp.query import Query
from treedp.release import Release
from treedp.release.grouped import GroupedRelease
from treedp.release_stage import run_release
from treedp.subject import subject_of

__all__ = ["run"]


def run(query: Query) -> Release | GroupedRelease | QuantilesResult:
    """Run a validated query: plan, read, charge once, noise, wrap.

    Parameters
    ----------
    query : Query
        What :func:`treedp.build_query` built.

    Returns
    -------
    Release, GroupedRelease or QuantilesResult
        A :class:`Release` for one distribution (with a privacy unit too), a
        :class:`GroupedRelease` for a group-by query, a :class:`QuantilesResult` for a
        quantile query.
    """
    with releasing(lambda: subject_of(query)):  # every charge records what it paid for
        if query.grouping is not None:
            return cast("Release | GroupedRelease", run_grouped(query))
        if query.quantiles is not None:
            return run_quantiles(query)
        return run_release(query)
