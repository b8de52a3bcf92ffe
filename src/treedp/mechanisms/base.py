"""What every mechanism shares: the privacy contract as data, and noise per block.

A mechanism releases one or more *blocks* (integer vectors: the levels of a tree, a histogram,
a list of prefix counts). Block ``b`` has an L1 sensitivity ``Δ_b`` under the stated neighbour
relation and gets exact discrete Laplace noise of scale ``Δ_b / ε_b``; by the Laplace mechanism
(the discrete version is exact: ``P(x)/P(x + d) <= exp(|d|/t)``) block ``b`` is ``ε_b``-DP and,
by basic composition, the whole release is ``Σ ε_b``-DP. A block with ``Δ_b = 0`` (for example
the root count under ``replace``, where the size is public) is released exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from fractions import Fraction
from typing import ClassVar, Literal

import numpy as np

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.noise import (
    RandomSource,
    discrete_laplace_variance,
    noise_scale,
    sample_discrete_laplace,
)

__all__ = ["Mechanism", "check_replace_bins"]


class Mechanism(ABC):
    """Base class: a privacy contract (guarantee, neighbours, sensitivities) plus noise.

    Attributes
    ----------
    guarantee : {"pure"}
        Every mechanism here is pure ``epsilon``-DP.
    neighbours : {"add_remove", "replace"}
        The neighbour relation the guarantee is stated for.
    epsilon : float
        The total budget.
    block_epsilons : tuple of float
        The budget of each block (0 for an exact block).
    block_sensitivity : tuple of int
        The L1 sensitivity of each block under ``neighbours`` (0 for an exact block).
    scales : tuple of Fraction or None
        The exact discrete Laplace scale of each block (None for an exact block).
    """

    name: ClassVar[str]
    guarantee: ClassVar[Literal["pure"]] = "pure"
    neighbours: Neighbours
    epsilon: float
    block_epsilons: tuple[float, ...]
    block_sensitivity: tuple[int, ...]

    def _set_scales(self) -> None:
        self.scales: tuple[Fraction | None, ...] = tuple(
            noise_scale(d, e) if d > 0 else None
            for d, e in zip(self.block_sensitivity, self.block_epsilons, strict=True)
        )

    @abstractmethod
    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The exact blocks for bin ``counts``, before any noise (int64 vectors)."""

    def block_variance(self) -> tuple[float, ...]:
        """The noise variance of one entry of each block (0 for an exact block)."""
        return tuple(0.0 if s is None else discrete_laplace_variance(s) for s in self.scales)

    def measure(self, counts: np.ndarray, source: RandomSource) -> list[np.ndarray]:
        """Return the noisy blocks for bin ``counts``, drawing noise from ``source``.

        The noise comes from :meth:`noise_only` (one repeat), the same path the privacy
        auditor exercises.
        """
        blocks = self.true_blocks(counts)
        noise = self.noise_only(1, source)
        return [block + z[0] for block, z in zip(blocks, noise, strict=True)]

    def noise_only(self, repeats: int, source: RandomSource) -> list[np.ndarray]:
        """``repeats`` independent draws of the noise alone, shape ``(repeats, size)`` per block.

        The noise distribution is public, so simulating it costs no privacy: this is what
        calibrates simultaneous bands and checks coverage.
        """
        sizes = self._block_sizes()
        out = []
        for size, scale in zip(sizes, self.scales, strict=True):
            if scale is None:
                out.append(np.zeros((repeats, size), dtype=np.int64))
            else:
                draws = sample_discrete_laplace(scale, repeats * size, source)
                out.append(draws.reshape(repeats, size))
        return out

    def _block_sizes(self) -> list[int]:
        """Entries per block (computed once from the blocks of empty data)."""
        cached = getattr(self, "_sizes", None)
        if cached is None:
            shape = getattr(self, "shape", None)
            n_bins = int(shape.n_bins if shape is not None else self.n_bins)  # type: ignore[attr-defined]
            cached = [b.size for b in self.true_blocks(np.zeros(n_bins, dtype=np.int64))]
            self._sizes = cached
        return list(cached)

    def epsilon_spent(self) -> Fraction:
        """The exact privacy loss ``Σ Δ_b / t_b``, never above :attr:`epsilon`."""
        return sum(
            (
                Fraction(d) / s
                for d, s in zip(self.block_sensitivity, self.scales, strict=True)
                if s is not None
            ),
            Fraction(0),
        )

    def privacy_loss(self, d_in: int = 1) -> float:
        """The ``epsilon`` guaranteed between datasets ``d_in`` neighbour steps apart.

        Pure DP composes over a chain of neighbours (group privacy): ``d_in · epsilon``.
        """
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise InvalidParameterError(f"'d_in' must be an int >= 0. Got {d_in!r} instead.")
        return d_in * float(self.epsilon_spent())

    def check(self, d_in: int, epsilon: float) -> bool:
        """Whether datasets ``d_in`` steps apart are ``epsilon``-indistinguishable."""
        return self.privacy_loss(d_in) <= epsilon

    def describe(self) -> dict[str, object]:
        """The contract as plain data (for a release's metadata)."""
        return {
            "mechanism": self.name,
            "guarantee": self.guarantee,
            "neighbours": self.neighbours,
            "epsilon": self.epsilon,
            "block_epsilons": list(self.block_epsilons),
            "block_sensitivity": list(self.block_sensitivity),
            "noise": "discrete_laplace",
            "scales": [None if s is None else [s.numerator, s.denominator] for s in self.scales],
        }


def check_replace_bins(neighbours: str, n_bins: int) -> None:
    """Refuse ``replace`` with a single bin: its only count is the public ``n``."""
    if neighbours == "replace" and n_bins == 1:
        raise InvalidParameterError(
            "With neighbours='replace' and a single bin, the only count is the public n: there "
            "is nothing to release. Use at least 2 bins."
        )
