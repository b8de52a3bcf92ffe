"""A stream's public parameters, checked before its one charge (:func:`treedp.continual`):
its budget and noise family, its privacy unit, its mechanism, its bins and its new state
file. Nothing here reads a value of the data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from treedp._validation import check_int, check_option, must
from treedp.budget import check_epsilon
from treedp.continual.mechanisms import MECHANISMS
from treedp.continual.state import check_writable
from treedp.domain import Bins, make_bins
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise.families import check_rho
from treedp.options import PrivacyUnit
from treedp.privacy.auto_bound import AutoBound
from treedp.privacy.measures import ZCDP, ApproxDP, PureDP
from treedp.spec import check_target, rho_for_approx_dp

__all__ = ["check_mechanism", "check_new_path", "stream_bins", "stream_budget", "stream_unit"]


def stream_budget(epsilon: Any, privacy: Any) -> tuple[str, float]:
    """The noise family's key and its budget (ε or ρ) from ``epsilon=`` / ``privacy=``."""
    if (epsilon is None) == (privacy is None):
        raise InvalidParameterError(must("epsilon", "be given, or 'privacy', not both."))
    if epsilon is not None:
        return "laplace", check_epsilon(epsilon)
    check_target(privacy)  # the field named ('rho', 'epsilon', 'delta'), as release_cdf does
    if isinstance(privacy, PureDP):
        return "laplace", check_epsilon(privacy.epsilon)
    if isinstance(privacy, ZCDP):
        return "gaussian", check_rho(privacy.rho)
    if isinstance(privacy, ApproxDP):  # the largest ρ whose (ε, δ) conversion fits, as
        # release_cdf converts it (one conversion: spec.rho_for_approx_dp)
        return "gaussian", check_rho(rho_for_approx_dp(privacy.epsilon, privacy.delta))
    raise AssertionError("check_target admits PureDP, ZCDP and ApproxDP only")  # pragma: no cover


def stream_unit(privacy_unit: Any, max_contributions: Any) -> dict[str, Any] | None:
    """``{"column", "max_contributions"}`` of a privacy unit (None: one record)."""
    if privacy_unit is None:
        if max_contributions is not None:
            raise InvalidParameterError(must("max_contributions", "come with a privacy_unit."))
        return None
    if isinstance(privacy_unit, PrivacyUnit):
        if privacy_unit.max_groups is not None or (
            privacy_unit.max_contributions_per_group is not None
        ):
            raise InvalidParameterError(
                must("privacy_unit", "give max_contributions (a stream has no groups).")
            )
        column, given = privacy_unit.column, privacy_unit.max_contributions
        if max_contributions is not None and given is not None and given != max_contributions:
            raise InvalidParameterError(
                must("max_contributions", "agree with the PrivacyUnit's max_contributions.")
            )
        max_contributions = given if given is not None else max_contributions
    elif isinstance(privacy_unit, str):
        column = privacy_unit
    else:
        raise InvalidTypeError(
            must(
                "privacy_unit",
                "be the person-id column's name or treedp.PrivacyUnit(name, max_contributions=k)."
                f" Got {type(privacy_unit).__name__}.",
            )
        )
    if not isinstance(column, str):
        raise InvalidTypeError(
            must("privacy_unit", "name the person-id column (ids go to step(ids=...)).")
        )
    if max_contributions is None:
        raise InvalidParameterError(
            must("max_contributions", "be given with a privacy_unit (records per person).")
        )
    if (isinstance(max_contributions, str) and max_contributions == "auto") or isinstance(
        max_contributions, AutoBound
    ):
        raise InvalidParameterError(
            "max_contributions='auto' chooses the bound from the data, but a stream's bound is "
            "fixed when it starts, before any step's records exist, and every step's noise is "
            "calibrated to it: give an int (records kept per person over the whole stream)."
        )
    k = check_int(max_contributions, "max_contributions", 1, 2**20)
    return {"column": column, "max_contributions": k}


def check_mechanism(mechanism: Any, noise: str, horizon: int, n_bins: int) -> str:
    """The mechanism's name, refused when it cannot serve these public parameters."""
    mechanism = check_option(mechanism, "mechanism", ("auto", *MECHANISMS))
    if mechanism != "auto" and noise not in MECHANISMS[mechanism].noises:
        raise InvalidParameterError(
            must("mechanism", f"suit the budget: {mechanism!r} needs zCDP.")
        )
    refusal = None if mechanism == "auto" else MECHANISMS[mechanism].refuse(horizon, n_bins)
    if refusal is not None:  # each row's limits live in its row (continual/mechanisms.py)
        raise InvalidParameterError(must("mechanism", refusal))
    return str(mechanism)


def stream_bins(bins: Any, bounds: Any, edges: Any) -> Bins | None:
    """The stream's public bins (None: one count, no bins)."""
    if bins is None and bounds is None and edges is None:
        return None
    if isinstance(bins, Bins):
        return bins
    return make_bins(bounds=bounds, bins=bins, edges=edges)


def check_new_path(path: str | os.PathLike[str] | None, stream_id: str) -> None:
    """A new stream's state file: None, or a new file that can be written (nothing written)."""
    if path is None:
        return
    if Path(path).exists():
        raise InvalidParameterError(
            must("path", "name a new file (load a saved stream with load_continual).")
        )
    check_writable(path, stream_id, 0)
