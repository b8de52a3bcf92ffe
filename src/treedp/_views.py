"""The views of a release (plot, HTML, tables, warnings) as a hook table.

They live in :mod:`treedp.report`, which reads a release; the release layer never imports it
(the layers point one way). A method of :class:`~treedp.release.Release` asks :func:`view` for
its function by name; the report package fills the table with :func:`register_view` when it is
imported, and ``import treedp`` hands the table that import (:func:`set_loader`), so the first
view asked for loads the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from treedp.exceptions import InvalidParameterError

__all__ = ["register_view", "set_loader", "view"]

_VIEWS: dict[str, Callable[..., Any]] = {}
_LOADER: list[Callable[[], object]] = []


def register_view(name: str, function: Callable[..., Any]) -> None:
    """Set the function behind the release view ``name`` (the report package calls this)."""
    _VIEWS[name] = function


def set_loader(loader: Callable[[], object]) -> None:
    """Set what fills the table on first use (``import treedp`` sets the report's import)."""
    _LOADER[:] = [loader]


def view(name: str) -> Callable[..., Any]:
    """The function registered for ``name``, loading the views on first use."""
    if name not in _VIEWS and _LOADER:
        _LOADER[0]()
    try:
        return _VIEWS[name]
    except KeyError:
        raise InvalidParameterError(
            f"No release view {name!r} is registered: import treedp.report."
        ) from None
