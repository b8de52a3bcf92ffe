"""Exact wide-integer arithmetic of the ``blt`` release, vectorised over bins in int64 digits.

A release is ``y = floor((m·N + 2**(P−1))/2**P) + z`` per bin, ``N = Σ_i A_i·V_i`` with
``V_i = hi_i·2**36 + lo_i`` (``hi < 2**63``, ``lo < 2**36``), ``A_i < 2**42``, ``m <= 2**16``,
``d < 64`` buffers and ``z`` any int64: up to about 2**170, beyond int64. Numbers are held
as :data:`DIGITS` base-``2**20`` digits (axis 0), all in ``[0, 2**20)`` but the top one, which
carries the sign: that form is unique for every integer in range, so whatever is computed from
the digits (the float of ``y``) is a function of ``y`` alone (post-processing).

Bounds: every digit product below is ``< 2**20·2**20`` and a float64 matrix product sums
``d < 64`` of them (``< 2**46``, exact); at most three are added per digit (``< 2**48``);
after a carry pass digits are ``< 2**20`` and ``m·digit < 2**36``; ``z``'s digits add
``< 2**20``. Nothing reaches ``2**53`` (float) or ``2**63`` (int64).
"""

from __future__ import annotations

import numpy as np

from treedp.continual.blt_design import FRACTION_BITS

__all__ = ["BASE_BITS", "DIGITS", "release_digits", "to_floats", "to_ints"]

#: Bits per digit.
BASE_BITS = 20
#: Digits per number (240 bits: ``m·N`` is below ``2**170``).
DIGITS = 12
_MASK = 2**BASE_BITS - 1
if FRACTION_BITS != 36:  # pragma: no cover - the digit split below is written for 36
    raise ImportError("blt_digits assumes 36 fraction bits")


def _carry(d: np.ndarray) -> np.ndarray:
    """Digits ``< 2**20`` but the top one (floor carries: correct for negative digits too)."""
    for n in range(d.shape[0] - 1):
        c = d[n] >> BASE_BITS
        d[n] &= _MASK
        d[n + 1] += c
    return d


def _buffer_digits(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``V = hi·2**36 + lo`` as five base-``2**20`` digits, shape ``(5, d, B)``."""
    return np.stack(
        [
            lo & _MASK,
            (lo >> BASE_BITS) | ((hi & 0xF) << (FRACTION_BITS - BASE_BITS)),
            (hi >> 4) & _MASK,
            (hi >> 24) & _MASK,
            hi >> 44,
        ]
    )


def release_digits(
    weights: np.ndarray, hi: np.ndarray, lo: np.ndarray, m: int, shift: int, z: np.ndarray
) -> np.ndarray:
    """``floor((m·Σ_i A_i V_i + 2**(shift−1))/2**shift) + z`` per bin, as digits ``(D, B)``.

    ``weights`` int64 ``(d,)`` below ``2**42``; ``hi``, ``lo`` int64 ``(d, B)``; ``z`` int64
    ``(B,)``; ``1 <= m <= 2**16``; ``shift >= 1``.
    """
    d, n_bins = hi.shape
    v = _buffer_digits(hi, lo).transpose(1, 0, 2).reshape(d, 5 * n_bins).astype(np.float64)
    a = np.stack([weights & _MASK, (weights >> BASE_BITS) & _MASK, weights >> 40])
    prod = (a.astype(np.float64) @ v).astype(np.int64).reshape(3, 5, n_bins)
    acc = np.zeros((DIGITS, n_bins), dtype=np.int64)
    for r in range(3):
        acc[r : r + 5] += prod[r]
    acc = _carry(acc) * m
    acc[(shift - 1) // BASE_BITS] += 1 << ((shift - 1) % BASE_BITS)
    acc = _carry(acc)
    q, r = divmod(shift, BASE_BITS)
    upper = np.concatenate([acc[q + 1 :], np.zeros((1, n_bins), dtype=np.int64)])
    out = (acc[q:] >> r) | ((upper << (BASE_BITS - r)) & _MASK)
    zi = np.asarray(z, dtype=np.int64)
    for n in range(3):
        out[n] += (zi >> (BASE_BITS * n)) & _MASK
    out[3] += zi >> (3 * BASE_BITS)
    return _carry(out)


def to_floats(digits: np.ndarray) -> np.ndarray:
    """The digits' values as floats (from the top digit down; a function of the value)."""
    acc = digits[-1].astype(np.float64)
    for n in range(digits.shape[0] - 2, -1, -1):
        acc = acc * float(2**BASE_BITS) + digits[n]
    return np.asarray(acc, dtype=np.float64)


def to_ints(digits: np.ndarray) -> list[int]:
    """The digits' values as Python ints (exact)."""
    return [
        sum(int(digits[n, b]) << (BASE_BITS * n) for n in range(digits.shape[0]))
        for b in range(digits.shape[1])
    ]
