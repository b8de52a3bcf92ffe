"""The public parameters shared by treedp's functions: their accepted values, documented
defaults and limits, and the check every function applies to them.

:data:`PARAMETERS` maps a parameter's name (as the functions spell it) to a
:class:`Parameter`. A front end (the ``treedp`` command line, a form, a config reader) reads
its choices and defaults from here and checks a value with :meth:`Parameter.check` before any
data is read, so it never restates a rule of the library. Each entry is built on first use:
reading one does not import the modules of the others.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PARAMETERS", "Parameter"]


@dataclass(frozen=True)
class Parameter:
    """One public parameter of treedp's functions.

    Attributes
    ----------
    name : str
        The parameter's name, as the functions spell it (``"epsilon"``, ``"nan"``, ...).
    choices : tuple of str
        The accepted values of a parameter that takes one of a few names, in the order the
        documentation lists them; empty for any other parameter.
    default : object
        The documented default, or None when there is none (or it depends on the data or on
        other parameters).
    low, high : float or None
        The smallest and largest value accepted (both included), for a number with a closed
        range; None otherwise.

    See Also
    --------
    PARAMETERS : every public parameter by name.
    """

    name: str
    choices: tuple[str, ...] = ()
    default: Any = None
    low: float | None = None
    high: float | None = None
    checker: Callable[[Any], Any] | None = field(default=None, repr=False, compare=False)

    def check(self, value: Any) -> Any:
        """Check ``value`` as every treedp function checks this parameter.

        Parameters
        ----------
        value : object
            The value a caller would pass.

        Returns
        -------
        object
            The value as the library uses it (a float for a budget or a level, the name for a
            choice, a :class:`pathlib.Path` for an output path).

        Raises
        ------
        InvalidParameterError
            If the value is outside the accepted range or choices (with the library's message).
        InvalidTypeError
            If the value has the wrong type.
        """
        if self.checker is not None:
            return self.checker(value)
        from treedp._validation import check_option

        return check_option(value, self.name, self.choices)


def _epsilon() -> Parameter:
    from treedp.budget import MAX_EPSILON, MIN_EPSILON, check_epsilon

    return Parameter("epsilon", low=MIN_EPSILON, high=MAX_EPSILON, checker=check_epsilon)


def _rho() -> Parameter:
    from treedp.mechanisms.tree import MAX_RHO, MIN_RHO, check_rho

    return Parameter("rho", low=MIN_RHO, high=MAX_RHO, checker=check_rho)


def _level() -> Parameter:
    from treedp.release.inference import check_level

    return Parameter("level", default=0.95, checker=check_level)


def _path() -> Parameter:
    from treedp._atomic import check_target

    return Parameter("path", checker=check_target)


def _bounds_share() -> Parameter:
    from treedp.value_methods.bounds_split import DEFAULT_SHARE, check_share

    def check(value: Any) -> float:
        check_share(value)
        return float(value)

    return Parameter("bounds_share", default=DEFAULT_SHARE, checker=check)


def _n_share() -> Parameter:
    from treedp.quantiles_api import DEFAULT_N_SHARE, check_n_share

    return Parameter(
        "n_share", default=DEFAULT_N_SHARE, checker=lambda value: check_n_share(value, None)
    )


#: The parameters that take one of a few names: the module and attribute that hold the
#: choices (imported on first use), and the default (:data:`_FIRST`: the first choice).
_FIRST = object()
_CHOICES: dict[str, tuple[str, str, Any]] = {
    "mechanism": ("spec", "ALL_MECHANISMS", "auto"),
    "estimator": ("estimation", "ESTIMATORS", None),
    "postprocess": ("estimation", "POSTPROCESS", _FIRST),
    "nan": ("engines.base", "NAN_POLICIES", "error"),
    "neighbours": ("budget", "NEIGHBOURS", "add_remove"),
    "objective": ("planning", "OBJECTIVES", _FIRST),
    "workload": ("planning", "WORKLOADS", None),
    "method": ("quantiles_api", "METHODS", "auto"),
}


def _choice(name: str) -> Parameter:
    module, attribute, default = _CHOICES[name]
    choices = getattr(importlib.import_module(f"treedp.{module}"), attribute)
    return Parameter(name, choices=choices, default=choices[0] if default is _FIRST else default)


_BUILDERS: dict[str, Callable[[], Parameter]] = {
    "epsilon": _epsilon,
    "rho": _rho,
    "level": _level,
    "path": _path,
    "bounds_share": _bounds_share,
    "n_share": _n_share,
    **{name: functools.partial(_choice, name) for name in _CHOICES},
}


class _Parameters(Mapping[str, Parameter]):
    """A read-only mapping whose entries are built (and their modules imported) on first use."""

    def __init__(self, builders: Mapping[str, Callable[[], Parameter]]) -> None:
        self._builders = dict(builders)
        self._built: dict[str, Parameter] = {}

    def __getitem__(self, name: str) -> Parameter:
        found = self._built.get(name)
        if found is None:
            found = self._built[name] = self._builders[name]()
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __repr__(self) -> str:
        return f"PARAMETERS({', '.join(self._builders)})"


#: Every public parameter shared by treedp's functions, by name: ``epsilon``, ``rho``,
#: ``level`` (coverage of intervals), ``path`` (a file a release or report is written to),
#: ``bounds_share``, ``n_share``, ``mechanism``, ``estimator``, ``postprocess``, ``nan``,
#: ``neighbours``, ``objective`` and ``workload`` (:func:`treedp.plan`) and ``method``
#: (:func:`treedp.quantiles`). For example ``PARAMETERS["nan"].choices`` is
#: ``("error", "drop")`` and ``PARAMETERS["epsilon"].check(0)`` raises the library's error.
PARAMETERS: Mapping[str, Parameter] = _Parameters(_BUILDERS)
