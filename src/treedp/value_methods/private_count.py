"""A private count of records: ``max(0, n + Z)`` with exact discrete Laplace noise ``Z``.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``) under ``add_remove``
neighbours, privacy unit one record. Under ``replace`` the number of records is public (a
neighbour has as many records), so there is nothing to protect and nothing to spend: the
mechanism refuses that relation (a caller uses the count itself). :func:`treedp.quantiles`
with ``n="private"`` spends a share of its budget here when the user does not know ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from treedp.budget import check_epsilon
from treedp.mechanisms.results import Contract, MechanismResult
from treedp.noise import RandomSource, resolve_source
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.noise.rational import noise_scale
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.value_methods._column import Call, float_up, open_call, read_column

__all__ = ["CONTRACT", "NEIGHBOURS", "SENSITIVITY", "CountResult", "count_scale", "private_count"]

NEIGHBOURS: tuple[str, ...] = ("add_remove",)
#: The L1 sensitivity of the number of records under ``add_remove``.
SENSITIVITY = 1
CONTRACT = Contract(
    name="private_count",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "adding or removing one record changes the number of records by exactly 1 (L1 "
        "sensitivity 1); discrete Laplace noise of scale t >= 1/eps gives "
        "P(n + Z = k) / P(n' + Z = k) <= exp(|n - n'|/t) <= exp(eps); clipping at 0 is "
        "post-processing"
    ),
)


@dataclass(frozen=True, repr=False, kw_only=True)
class CountResult(MechanismResult):
    """The result of :func:`private_count`: ``value`` is the released count (an int >= 0).

    Attributes
    ----------
    scale : Fraction
        The exact discrete Laplace scale ``t`` (``>= 1/ε``); the loss is ``1/t``.
    """

    scale: Fraction


def count_scale(epsilon: float) -> tuple[Fraction, float]:
    """The exact noise scale of a count at ``epsilon``, :func:`treedp.noise.noise_scale`
    ``(1, ε) >= 1/ε``, and the loss it spends, ``1/scale`` rounded up (at most ``epsilon``)."""
    eps = check_epsilon(epsilon)
    scale = noise_scale(SENSITIVITY, eps)
    return scale, float_up(SENSITIVITY / scale)


def release_count(size: int, scale: Fraction, source: RandomSource) -> int:
    """``max(0, size + Z)``, ``Z ~ DLap(scale)`` exactly, for a caller that has validated
    everything and charged any accountant (``size``: the private number of records)."""
    noise = int(sample_discrete_laplace(scale, 1, source)[0])
    return max(0, int(size) + noise)


def private_count(
    values: Any,
    *,
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
) -> CountResult:
    """The number of records of a column under pure ε-DP (add/remove neighbours).

    Releases ``max(0, n + Z)`` with ``Z`` exact discrete Laplace noise
    (:func:`treedp.noise.sample_discrete_laplace`, ``P(Z = z) ∝ exp(-|z|/t)``) of scale
    ``t = noise_scale(1, ε) >= 1/ε``.

    Privacy contract (:data:`CONTRACT`): guarantee ``PureDP(1/t)``, at most ``ε``;
    neighbour relation ``add_remove`` (one record added or removed); privacy unit one record
    (one row of the column); sensitivity: neighbours' counts ``n`` and ``n'`` differ by
    exactly 1, so for every output ``k`` the ratio ``P(n + Z = k) / P(n' + Z = k) =
    exp((|k - n'| - |k - n|)/t) <= exp(1/t) <= exp(ε)``. Clipping at 0 is post-processing (a
    negative count is impossible; it changes no guarantee). Under ``replace`` the count is
    public (every neighbour has as many records): refused, as there is nothing to protect.

    Parameters
    ----------
    values : array-like
        The column (numbers or datetimes); only its length is read (after ``nan="drop"``).
    epsilon : float
        The budget of the count.
    neighbours : {"add_remove"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
        Missing values: refused, or dropped (not counted).
    rng : RandomSource, optional
        Where the randomness comes from (default: the operating system's).
    accountant : Accountant, optional
        Charged ``PureDP(ε_spent)`` after the checks and the data read, before any noise is
        drawn; refused with nothing drawn when it would overspend.

    Returns
    -------
    CountResult
        ``value`` (the released count, an int >= 0), ``scale``, ``guarantee``, ``spend``.
    """
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    data, _unit = read_column(values, policy, relation)
    scale, spent = count_scale(eps)
    source = resolve_source(rng)
    parameters = {"epsilon": eps, "nan": policy, "sensitivity": SENSITIVITY}
    call = Call(CONTRACT.name, relation, eps, parameters, source)
    call.charge(accountant, PureDP(spent))
    value = release_count(int(data.size), scale, source)
    return call.result(CountResult, value, PureDP(spent), (SENSITIVITY,), scale=scale)
