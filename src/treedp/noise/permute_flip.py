"""Exact permute-and-flip over a finite set of candidates (McKenna & Sheldon 2020).

Permute-and-flip visits the candidates in a uniformly random order and stops at the first
whose coin comes up heads, candidate ``k``'s coin being ``Bernoulli(exp(-γ_k))`` with
``γ_k = rate · (u* - u_k) >= 0`` (``u*`` the best score, so some coin is certain).

Sampling its law exactly
------------------------
The coins are independent of the order, and a coin after the stopping point is never read, so
flipping every coin first gives the same law. Given the set ``H`` of heads, the first element
of ``H`` in a uniformly random order is uniform on ``H``. So :func:`permute_and_flip` flips
every candidate's coin, then returns a uniformly chosen head: the same distribution as the
sequential procedure, with no order drawn.

Each coin compares a uniform ``U`` in ``[0, 1)`` with ``exp(-γ_k)`` (``U < exp(-γ_k)`` is
heads), starting from its first 64 bits ``w``. The caller gives an integer lower bound
``g_k <= γ_k`` (at most 64) for every candidate: when ``w > floor(2**64 · exp(-g_k))``, which is
at least ``floor(2**64 · exp(-γ_k))``, then ``U > exp(-γ_k)`` and the coin is tails without
``γ_k`` being computed. Only the other candidates (those near the best score, and a fraction
of about ``exp(-g_k)`` of the rest) get their exact exponent and threshold ``floor(2**64 ·
exp(-γ_k))`` (:mod:`treedp.noise.exp_thresholds`); a word equal to it reveals more bits
(probability ``2**-64``). The chosen head is an exactly uniform integer below ``|H|``. No
floating-point number enters any decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise.discrete_laplace import uniform_below
from treedp.noise.exp_thresholds import floor_exp_neg, floor_scaled_exp_neg, resolve_tie
from treedp.noise.rng import RandomSource, words

__all__ = ["MAX_FLOOR", "permute_and_flip"]

_WORD = 64
#: The largest lower bound used: ``floor(2**64 · exp(-64)) = 0``, so a coin whose bound is 64
#: is heads only if its first 64 bits are all 0.
MAX_FLOOR = 64


@lru_cache(maxsize=1)
def _bounds() -> np.ndarray:
    """``floor(2**64 · exp(-g))`` for ``g = 0..64`` (``g = 0``: every word, ``2**64 - 1``)."""
    tail = [floor_exp_neg(g, _WORD) for g in range(1, MAX_FLOOR + 1)]
    return np.array([2**_WORD - 1, *tail], dtype=np.uint64)


def permute_and_flip(
    floors: np.ndarray,
    keys: np.ndarray,
    exponents: Callable[[np.ndarray], Sequence[Fraction]],
    source: RandomSource,
) -> int:
    """Draw one candidate by permute-and-flip, exactly; return its index.

    Parameters
    ----------
    floors : ndarray of int64
        One per candidate: an integer ``0 <= g_k <= min(γ_k, 64)``, a lower bound on its
        exponent. The candidates of exponent 0 (the best score; there must be one) have 0.
    keys : ndarray of int64
        One per candidate: which of ``K`` distinct exponents it has (``0 <= key < K``; ``K``
        is ``keys.max() + 1``). Candidates of one key share an exponent (an empty run).
    exponents : callable
        ``exponents(needed)`` returns the exact exponents ``γ >= 0`` of the keys ``needed``
        (ascending), those of the candidates whose coin the bounds do not decide; called once.
    source : RandomSource

    Returns
    -------
    int
        The chosen candidate: ``P(k) = E[1{heads_k} / |H|]``, the law of permute-and-flip.

    Notes
    -----
    The work on the candidates is vectorised over all of them whatever the data (one word,
    one bound and one comparison each); only the exact thresholds, one per key needed
    (about 20–50 µs each), depend on how many distinct exponents lie near the best score.
    """
    floors = np.asarray(floors, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.int64)
    if floors.size == 0 or int(floors.min()) < 0 or int(floors.max()) > MAX_FLOOR:
        raise InvalidParameterError("permute_and_flip needs one floor in 0..64 per candidate.")
    if keys.shape != floors.shape or int(keys.min()) < 0:
        raise InvalidParameterError("permute_and_flip needs one key >= 0 per candidate.")
    w = words(source, _WORD, floors.size)
    undecided = w <= _bounds()[floors]
    count = int(keys.max()) + 1
    needed = np.flatnonzero(np.bincount(keys, weights=undecided, minlength=count) > 0)
    gammas = [Fraction(g) for g in exponents(needed)]
    _check(keys, undecided, floors, needed, gammas)
    certain = np.zeros(count, dtype=bool)
    threshold = np.zeros(count, dtype=np.uint64)
    for key, g in zip(needed.tolist(), gammas, strict=True):
        certain[key] = g == 0
        threshold[key] = 0 if g == 0 else floor_scaled_exp_neg(g, _WORD)
    bound = threshold[keys]
    heads = undecided & (certain[keys] | (w < bound))
    gamma_of = dict(zip(needed.tolist(), gammas, strict=True))
    for i in np.flatnonzero(undecided & (w == bound) & ~certain[keys]):  # 2**-64 each
        heads[i] = resolve_tie(int(w[i]), gamma_of[int(keys[i])], Fraction(1), source)
    chosen = np.flatnonzero(heads)
    return int(chosen[int(uniform_below(chosen.size, 1, source)[0])])


def _check(
    keys: np.ndarray,
    undecided: np.ndarray,
    floors: np.ndarray,
    needed: np.ndarray,
    gammas: list[Fraction],
) -> None:
    """Each exponent needed is at least 0 and at least its undecided candidates' floors, and
    one is 0 (a floor of 0 is never decided by its bound: every candidate of exponent 0 is
    undecided, so its key is needed)."""
    if len(gammas) != needed.size:
        raise InvalidParameterError("permute_and_flip needs one exponent per key asked for.")
    top = np.full(int(keys.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(top, keys[undecided], floors[undecided])
    if any(g < 0 or g < int(top[k]) for k, g in zip(needed.tolist(), gammas, strict=True)):
        raise InvalidParameterError("permute_and_flip needs exponents >= 0 and >= their floors.")
    if not any(g == 0 for g in gammas):
        raise InvalidParameterError("permute_and_flip needs a candidate of exponent 0.")
