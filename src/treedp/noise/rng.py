"""Sources of random bits for the exact samplers.

Every sampler in :mod:`treedp.noise` consumes uniformly random machine words from a
:class:`RandomSource`. Two sources exist:

* :class:`SystemRandomSource` (the default) reads the operating system's cryptographically
  secure generator through :func:`os.urandom` (``getrandom(2)`` on Linux).
* :class:`InsecureSeededSource` expands a seed with numpy's PCG64. It is reproducible, which is
  what tests and research need, and **not** suitable for publishing a release: anyone who learns
  the seed can subtract the noise. Releases made with it record ``seeded=True``.

There is no module-level generator: a source is always passed explicitly.
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "InsecureSeededSource",
    "RandomSource",
    "SystemRandomSource",
    "check_source",
    "resolve_source",
    "words",
]


@runtime_checkable
class RandomSource(Protocol):
    """Anything that returns uniformly random bytes."""

    seeded: bool

    def random_bytes(self, n: int) -> bytes:
        """Return ``n`` independent uniformly random bytes."""
        ...

    def describe(self) -> dict[str, object]:
        """Describe the source for a release's provenance record."""
        ...


class SystemRandomSource:
    """Uniform words from the operating system's cryptographic generator (``os.urandom``)."""

    seeded = False

    def random_bytes(self, n: int) -> bytes:
        return os.urandom(n)

    def describe(self) -> dict[str, object]:
        return {"source": "os.urandom", "seeded": False}

    def __repr__(self) -> str:
        return "SystemRandomSource()"


class InsecureSeededSource:
    """Reproducible words from numpy's PCG64: for tests and research only.

    Parameters
    ----------
    seed : int
        A non-negative integer seed. It is recorded in every release made with this source.

    Notes
    -----
    PCG64 is not a cryptographic generator and the seed determines the noise exactly, so a
    release made with this source gives no privacy to anyone who knows or can guess the seed.
    """

    seeded = True

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise InvalidParameterError(
                f"The 'seed' parameter of InsecureSeededSource must be a non-negative int. "
                f"Got {seed!r} instead."
            )
        self.seed = int(seed)
        self._bits = np.random.PCG64(self.seed)

    def random_bytes(self, n: int) -> bytes:
        words = self._bits.random_raw((n + 7) // 8).astype("<u8", copy=False)
        return words.tobytes()[:n]

    def describe(self) -> dict[str, object]:
        return {"source": "numpy.PCG64", "seeded": True, "seed": self.seed}

    def __repr__(self) -> str:
        return f"InsecureSeededSource(seed={self.seed})"


def resolve_source(rng: RandomSource | None) -> RandomSource:
    """Return ``rng`` or, when it is ``None``, a fresh :class:`SystemRandomSource`.

    Raises
    ------
    InvalidParameterError
        If ``rng`` is an int (a bare seed must be wrapped in :class:`InsecureSeededSource`, so
        that seeding is always explicit) or not a random source at all.
    """
    return _resolve(rng, InvalidParameterError)


def check_source(rng: object) -> RandomSource:
    """:func:`resolve_source` at a public entry point: anything but None or a random source is
    an :class:`~treedp.exceptions.InvalidTypeError` (the message says what to pass instead)."""
    return _resolve(rng, InvalidTypeError)


def _resolve(rng: object, error: type[InvalidParameterError | InvalidTypeError]) -> RandomSource:
    if rng is None:
        return SystemRandomSource()
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        raise error(
            must(
                "rng",
                "be None (operating-system randomness) or a RandomSource. "
                f"Got the int {rng!r}: to seed for tests or research, pass "
                "treedp.InsecureSeededSource(seed) explicitly (not for published releases).",
            )
        )
    if not isinstance(rng, RandomSource):
        raise error(
            must(
                "rng",
                "be None or a RandomSource "
                f"(SystemRandomSource, InsecureSeededSource). Got {type(rng).__name__} instead.",
            )
        )
    return rng


def words(source: RandomSource, bits: int, n: int) -> np.ndarray:
    """Return ``n`` uniform unsigned words of ``bits`` in {8, 16, 32, 64} bits from ``source``."""
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return np.frombuffer(source.random_bytes(n * (bits // 8)), dtype=dtype)
