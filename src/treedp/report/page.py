"""The report of any release: one page for a :class:`~treedp.release.Release`, for a whole
:class:`~treedp.release.grouped.GroupedRelease`, or for one key of it (``key=``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from treedp._validation import each_warning_once, must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.report import html
from treedp.report.grouped import render_grouped_report, render_key_report

if TYPE_CHECKING:
    from treedp.release import Release
    from treedp.release.grouped import GroupedRelease

__all__ = ["render_report", "write_report"]

_NO_KEY = object()


def render_report(release: Release | GroupedRelease, *, key: Any = _NO_KEY, **options: Any) -> str:
    """The report page of ``release`` (a string); see :func:`write_report`. Each distinct
    warning its reading raises is emitted once."""
    with each_warning_once():
        return _render(release, key, **options)


def _render(release: Release | GroupedRelease, key: Any, **options: Any) -> str:
    from treedp.release import Release
    from treedp.release.grouped import GroupedRelease

    if isinstance(release, GroupedRelease):
        if key is not _NO_KEY:
            return render_key_report(release, key, **options)
        return render_grouped_report(release, **options)
    if not isinstance(release, Release):
        got = type(release).__name__
        raise InvalidTypeError(
            must("release", f"be a Release or a GroupedRelease. Got {got} instead.")
        )
    if key is not _NO_KEY:
        raise InvalidParameterError(
            must("key", "be given for a GroupedRelease only (a Release has one distribution).")
        )
    return html.render_report(release, **options)


def write_report(
    release: Release | GroupedRelease,
    path: str | os.PathLike[str],
    *,
    key: Any = _NO_KEY,
    **options: Any,
) -> None:
    """Write the report page of a release to ``path``: self-contained HTML, written atomically
    (the whole page or no file), mode 0644. Needs matplotlib (``treedp[plot]``).

    Parameters
    ----------
    release : Release or GroupedRelease
        A release: its page (:func:`treedp.report.html.render_report`). A grouped release:
        one page for every key (:func:`treedp.report.grouped.render_grouped_report`: the
        guarantee once, the CDFs of all keys, quartiles and expected error per key, keys with
        too little signal flagged), or with ``key=`` the page of that key.
    path : str or path-like
        The HTML file to write.
    key : optional
        For a grouped release: one key's page.
    **options
        Passed to the page: ``title``, ``level``, ``rng``, ``column`` (the released column's
        name, on the axes: a release does not record it), and ``quantiles`` (one release) or
        ``flag_share`` (a grouped release).

    Raises
    ------
    OSError
        If ``path`` cannot be written (naming ``path``); nothing is left behind.

    Examples
    --------
    >>> import numpy as np, treedp
    >>> rng = np.random.default_rng(0)
    >>> table = {"g": rng.choice(["a", "b"], 2000), "x": rng.integers(0, 50, 2000)}
    >>> gr = treedp.release_grouped(table, column="x", by="g", keys=["a", "b"], epsilon=1.0,
    ...                             bounds=(0, 49), bins="integers",
    ...                             rng=treedp.InsecureSeededSource(1))
    >>> page = treedp.report.render_report(gr, column="x", rng=treedp.InsecureSeededSource(2))
    >>> "Quartiles per key" in page
    True
    """
    html.write_page(render_report(release, key=key, **options), path)
