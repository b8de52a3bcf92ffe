"""The square-root factorisation of the prefix matrix on an integer lattice (ρ-zCDP).

The prefix matrix ``L`` (``B × B``, ones on and below the diagonal) is the square of the
lower-triangular Toeplitz matrix ``C`` with first column ``c_k = binom(2k, k)/4^k``, the
coefficients of ``(1 − x)^{-1/2}`` (``(1 − x)^{-1/2} · (1 − x)^{-1/2} = (1 − x)^{-1}``, whose
coefficients are all ones). Releasing ``C x`` with Gaussian noise and estimating the prefixes as
``C (C x + z)`` is the factorisation mechanism ``L = C · C`` ([HUU23], [FHU23]).

``C x`` is real. On the lattice (what is implemented): with an integer scale ``s >= 1``, round the
*coefficients*, ``ĉ_k = round(s · c_k)`` (``ĉ_0 = s``), and release the integers

    ``y = Ĉ x + Z``,   ``Z`` i.i.d. exact discrete Gaussian ``N_Z(0, σ²)``,

where ``Ĉ`` is the integer lower-triangular Toeplitz matrix of ``ĉ``. ``Ĉ x`` is an exact integer
function of the counts (:func:`treedp.estimation.toeplitz.exact_convolve`), so the only
randomness is the exact discrete Gaussian noise and no rounding of the data enters the
privacy analysis. The prefixes are estimated by ``P̂ = L Ĉ^{-1} y = L x + L Ĉ^{-1} Z``: exactly
unbiased, with covariance ``σ_Z² G Gᵀ`` for the lower-triangular Toeplitz ``G = L Ĉ^{-1}``
(first column ``g = cumsum(ĉ^{-1})``; :class:`treedp.estimation.toeplitz.ToeplitzPrefixCovariance`).
As ``s`` grows, ``Ĉ/s → C`` and the error tends to the real factorisation's; the largest scale
the exact sampler supports, capped at ``s = 2^16``, is used (:func:`choose_scale`; the rounding
then costs nothing measurable), and the planner scores the rounded factorisation's exact error
(``docs/factorization.md``).

Equalised columns (add_remove, ``B <= 8192``, the default there): column ``j`` of ``Ĉ`` has
squared norm ``S(B − j) <= S(B) = Δ₂²``; the slack carries one more measurement
``ê_j x_j + Z'_j`` with ``ê_j = isqrt(S(B) − S(B − j))``, so every column's norm stays at most
``Δ₂`` (equal at ``j = 0``: the sensitivity and the noise are unchanged) and the GLS estimate
from both parts can only be better. All columns for ``B <= 1024`` (dense GLS), the last 256 up
to 8192 (a rank-256 Woodbury update of the Toeplitz estimator with exact covariances).

Normalised columns (add_remove, ``2^8 <= B <= 2^14``, the default there, instead of equalised
ones): release ``Ĉ diag(p) x + Z`` with the integers ``p_j = isqrt(R² S(B) // S(B − j))``
(``R = 2^10``, ``p_0 = R``), so every column has squared norm ``p_j² S(B − j) <= R² S(B)``:
all columns nearly equal, the largest at ``j = 0``, ``Δ₂² = R² S(B)`` exactly (L1:
``max_j p_j T(B − j)``). ``Ĉ diag(p) x = Ĉ (p ∘ x)`` is still one exact integer convolution. The
estimate ``P̂ = L diag(1/p) Ĉ^{-1} y`` is the only unbiased one (the matrix is square and
invertible); its covariance is no longer Toeplitz, and is computed exactly in ``O(B²)``
(:class:`treedp.estimation.toeplitz.ScaledToeplitzCovariance`).

Scaled rows and columns (add_remove, ``2^8 <= B <= 2^14``, the default there since issue 33
unless the budget is tiny): release ``diag(e) Ĉ diag(p) x + Z`` with integer row multipliers
from a fixed profile and column multipliers that equalise the columns
(:mod:`treedp.mechanisms.sqrt_both`, which has the construction and the exact ``Δ₂²``).

Scaled rows (add_remove, ``B > 2^14``, the default there): release ``e ∘ (Ĉ x) + Z`` with integer
row multipliers ``e`` that make the columns nearly equal while keeping the estimator Toeplitz
(:mod:`treedp.mechanisms.sqrt_rows`, which has the construction and the exact ``Δ₂²``).

Privacy (ρ-zCDP, privacy unit: one record; every record is counted in exactly one bin).

* ``add_remove``: adding or removing a record in bin ``j`` changes ``x`` by ``±e_j`` and ``Ĉ x``
  by ``±Ĉ e_j``, whose squared L2 norm is ``Σ_{k < B − j} ĉ_k²``, largest at ``j = 0``:
  ``Δ₂² = Σ_{k < B} ĉ_k²`` (an exact integer); with normalised columns ``±p_j Ĉ e_j``, squared
  norm ``p_j² S(B − j) <= R² S(B)`` by the choice of ``p_j``, equal at ``j = 0``.
* ``replace`` (``n`` public): moving a record from bin ``i`` to bin ``j`` (``i < j`` by symmetry)
  changes ``Ĉ x`` by ``Ĉ(e_j − e_i)``, with
  ``‖Ĉ(e_j − e_i)‖² = S(B − i) + S(B − j) − 2 X(j − i, B − j)``, ``S(m) = Σ_{k<m} ĉ_k²``,
  ``X(d, m) = Σ_{t<m} ĉ_{t+d} ĉ_t``. ``ĉ`` is non-negative and non-increasing (``c_k`` is,
  and rounding is monotone), so for fixed ``m = B − j`` a larger ``d`` (smaller ``i``) raises
  ``S(m + d)`` and lowers ``X(d, m)``: ``i = 0`` is worst, and
  ``Δ₂² = max_{1 <= j < B} S(B) + S(B − j) − 2 A(j)`` with ``A(j) = Σ_t ĉ_t ĉ_{t+j}`` the
  autocorrelation of ``ĉ``, computed exactly (an exact integer convolution). The L1
  sensitivities (for the contract only) follow the same way: ``Σ ĉ`` and
  ``max_j 2T(j) + T(B − j) − T(B)`` with ``T(m) = Σ_{k<m} ĉ_k``.

The noise has rational ``σ² >= Δ₂²/(2ρ)`` (rounded up), so the release is
``ρ' = Δ₂²/(2σ²) <= ρ``-zCDP (Canonne, Kamath & Steinke 2020; the discrete Gaussian mechanism
on an integer-valued query of L2 sensitivity ``Δ₂``): :meth:`rho_spent` is exact. (ε, δ) follows
by the exact conversion of :class:`treedp.privacy.measures.ZCDP`. The estimates are
post-processing. ``tests/mechanisms/test_sqrt_factorization.py`` enumerates every single-record
change for small ``B`` and checks both sensitivities are attained and never exceeded;
``tests/privacy/test_audit_sqrt.py`` audits the release statistically.

References
----------
.. [HUU23] M. Henzinger, J. Upadhyay, S. Upadhyay. "Almost tight error bounds on differentially
   private continual counting". SODA 2023.
.. [FHU23] H. Fichtenberger, M. Henzinger, J. Upadhyay. "Constant matters: fine-grained error
   bound on differentially private continual observation". ICML 2023.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for differential
   privacy". NeurIPS 2020.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from treedp._validation import check_int
from treedp.budget import Neighbours, check_neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import sqrt_both as sb
from treedp.mechanisms import sqrt_lattice as lat
from treedp.mechanisms import sqrt_plan
from treedp.mechanisms import sqrt_rows as sr
from treedp.mechanisms.base import CalibratedMechanism, check_replace_bins, zcdp_description
from treedp.mechanisms.sqrt_lattice import (
    MAX_SCALE,
    choose_scale,
    lattice_coefficients,
    sensitivities,
    sqrt_coefficients,
)
from treedp.noise.families import DiscreteGaussian, check_rho
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "MAX_SCALE",
    "SqrtFactorizationMechanism",
    "choose_scale",
    "lattice_coefficients",
    "plan_candidate",
    "sensitivities",
    "sqrt_coefficients",
]


class SqrtFactorizationMechanism(CalibratedMechanism):
    """Release ``Ĉ x + Z`` (integer square-root factor of the prefix matrix, exact discrete
    Gaussian noise): ρ-zCDP. See the module docstring for the construction and its proof.

    Parameters
    ----------
    n_bins : int
        The number of bins ``B``.
    rho : float
        The zCDP budget (in ``[1e-6, 1250]``).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation (the privacy unit is one record).
    n : int, optional
        The public size under ``replace`` (the estimates are then conditioned on ``P[B] = n``).
    scale : int, optional
        The lattice scale ``s``; default :func:`choose_scale` (the largest the sampler allows).
    equalise : bool, optional
        Also release ``ê ∘ x + Z'`` with ``ê_j = isqrt(S(B) − S(B − j))``, the slack of column
        ``j`` below ``Δ₂²`` (so ``Δ₂`` is unchanged), and estimate by GLS from both parts.
        Default: where it applies (``add_remove``, ``2 <= B <=`` :data:`TAIL_LIMIT`) and columns
        are not normalised; it is never worse there (more measurements at the same sensitivity
        and noise).
    rows : bool, optional
        Release ``e ∘ (Ĉ x) + Z`` with integer row multipliers ``e`` (:mod:`sqrt_rows`).
        Only for ``add_remove`` with ``B > 2^14``; the default there unless the budget is so small
        that the lattice scale would fall below ``sqrt(πB)`` (:func:`sqrt_rows.rows_default`).
    both : bool, optional
        Release ``diag(e) Ĉ diag(p) x + Z``: rows scaled by a fixed profile and columns
        equalised (:mod:`sqrt_both`). Only for ``add_remove`` with ``2^8 <= B <= 2^14``; the
        default there (1.035× the SVD bound at ``2^10`` against 1.058× for normalised columns)
        unless the lattice scale would fall below ``2 sqrt(B)`` (:func:`sqrt_both.both_default`).
    normalise : bool, optional
        Release ``Ĉ diag(p) x + Z`` with integer ``p_j ≈ R·sqrt(S(B)/S(B − j))``: every column
        nearly at the largest norm (module docstring). Only for ``add_remove`` with
        ``2^8 <= B <= 2^14``; the default there (1.058× the SVD bound at ``2^10`` against 1.066×
        for equalised columns) unless the lattice scale would fall below ``sqrt(πB)``
        (:func:`sqrt_lattice.normalise_default`).

    Notes
    -----
    Contract as data: :attr:`block_sensitivity` (L1), :attr:`block_l2_squared` (exact integer
    ``Δ₂²``), :attr:`sigma2` (exact rational ``σ²``; only tests replace it, with mutants),
    :meth:`rho_spent` (exact ``Δ₂²/(2σ²)``), :meth:`describe`. Domain: datasets of at most
    :meth:`max_records` records; a larger input is refused before any noise is drawn.
    """

    name = "sqrt_factorization"
    least_squares_only = True  # one estimator: least squares, whichever name is given
    summary = "an integer square-root factor of the prefix matrix, every row noised"
    guarantee_kind: Literal["pure", "zcdp"] = "zcdp"
    noise_family = DiscreteGaussian

    def __init__(
        self,
        n_bins: int,
        *,
        rho: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        scale: int | None = None,
        equalise: bool | None = None,
        normalise: bool | None = None,
        rows: bool | None = None,
        both: bool | None = None,
    ) -> None:
        self.n_bins = check_int(n_bins, "n_bins", lo=1)
        self.rho = check_rho(rho)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        check_replace_bins(self.neighbours, self.n_bins)
        self.noise = DiscreteGaussian.key
        if both is None:  # where it applies and its lattice stays fine
            both = normalise is None and sb.both_default(
                self.n_bins, self.rho, self.neighbours, scale
            )
        self.both = bool(both)
        if self.both and not sb.both_apply(self.n_bins, self.neighbours):
            raise InvalidParameterError(
                "both=True is for neighbours='add_remove' and "
                f"{lat.NORMALISE_MIN} <= B <= {lat.NORMALISE_LIMIT}."
            )
        if normalise is None:  # where it applies and its lattice stays fine
            normalise = not self.both and lat.normalise_default(
                self.n_bins, self.rho, self.neighbours, scale
            )
        self.normalise = bool(normalise)
        if self.normalise and not lat.normalises(self.n_bins, self.neighbours):
            raise InvalidParameterError(
                "normalise=True is for neighbours='add_remove' and "
                f"{lat.NORMALISE_MIN} <= B <= {lat.NORMALISE_LIMIT}."
            )
        if rows is None:  # where it applies and its lattice stays fine (sqrt_rows.rows_default)
            rows = sr.rows_default(self.n_bins, self.rho, self.neighbours, scale)
        self.rows = bool(rows)
        if self.rows and not sr.rows_apply(self.n_bins, self.neighbours):
            raise InvalidParameterError(
                f"rows=True is for neighbours='add_remove' and B > {lat.NORMALISE_LIMIT}."
            )
        if scale is None:
            factor = lat.NORMALISE_RESOLUTION**2 if self.normalise else 1
            factor = sr.ROWS_RESOLUTION**2 if self.rows else factor
            factor = sb.factor() if self.both else factor
            scale = lat.choose_scale(self.n_bins, self.rho, self.neighbours, factor)
        self.scale = check_int(scale, "scale", lo=1, hi=MAX_SCALE)
        applies = self.neighbours == "add_remove" and lat.equalised_columns(self.n_bins) > 0
        if equalise is None:  # never worse (GLS with more data at the same Δ₂), where it applies
            equalise = applies and not self.normalise and not self.rows and not self.both
        if int(bool(equalise)) + int(self.normalise) + int(self.rows) + int(self.both) > 1:
            raise InvalidParameterError(
                "At most one of equalise, normalise, rows and both is True."
            )
        self.equalise = bool(equalise)
        if self.equalise and not applies:
            raise InvalidParameterError(
                "equalise=True is for neighbours='add_remove' and 2 <= B <= "
                f"{lat.TAIL_LIMIT} (under replace the two changed columns' slack adds up)."
            )
        #: The number of last columns equalised (0: none).
        self.equalised = lat.equalised_columns(self.n_bins) if self.equalise else 0
        if self.equalise:
            l1, l2_squared = lat.equalised_sensitivities(self.n_bins, self.scale, self.equalised)
        elif self.normalise:
            l1, l2_squared = lat.normalised_sensitivities(self.n_bins, self.scale)
        elif self.both:
            l1, l2_squared = sb.sensitivities(self.n_bins, self.scale)
        elif self.rows:
            l1, l2_squared = sr.row_sensitivities(self.n_bins, self.scale)
        else:
            l1, l2_squared = lat.sensitivities(self.n_bins, self.scale, self.neighbours)
        family = lat.fits(l2_squared, self.rho)
        if family is None:
            raise InvalidParameterError(
                "The lattice 'scale' is too large for this rho: the noise variance would exceed "
                "the exact sampler's range. Leave 'scale' unset to choose it."
            )
        #: The exact rational ``σ²`` of the one block (a tuple, as the tree's per level).
        self.sigma2: tuple[Fraction] = (family.sigma2,)
        self.epsilon = math.inf
        self.block_sensitivity = (l1,)
        self.block_l2_squared = (l2_squared,)
        self.block_l2 = (math.sqrt(l2_squared),)
        self.block_rhos = (self.rho,)
        self.block_epsilons = (math.inf,)
        self.scales: tuple[Fraction | None, ...] = (None,)

    @property
    def coefficients(self) -> np.ndarray:
        """``ĉ`` (int64), the first column of the released integer matrix."""
        return lat.coefficients(self.n_bins, self.scale)

    def max_records(self) -> int:
        """The largest total count :meth:`true_blocks` computes exactly in int64.

        Every entry of ``Ĉ x`` is at most ``ĉ_0 · Σ x`` (``ĉ`` is non-negative and
        non-increasing), and, with ``equalise``, ``ê_j x_j <= (Σ ĉ) · x_j``; the bound keeps
        both below ``2**62`` (about ``7·10^13`` records at the largest scale; a column that
        large takes hours to count on any engine).
        """
        if self.equalise:  # Σ ĉ >= ĉ_0: the equaliser's bound is the tighter one
            return lat.INT_LIMIT // int(self.coefficients.sum()) - 1
        if self.normalise:  # entries of Ĉ (p ∘ x) are at most ĉ_0 · max p · Σ x
            top = int(lat.normaliser(self.n_bins, self.scale).max())
            return lat.INT_LIMIT // (int(self.coefficients[0]) * top) - 1
        if self.both:  # every entry of A = diag(e) Ĉ diag(p) is at most its column's norm,
            # so (A x)_i <= sqrt(Δ₂²) Σ x (and p ∘ x, Ĉ (p ∘ x) are entrywise below A x)
            return lat.INT_LIMIT // (math.isqrt(self.block_l2_squared[0] - 1) + 1) - 1
        if self.rows:  # entries of e ∘ (Ĉ x) are at most max e · ĉ_0 · Σ x
            top = int(sr.row_multipliers(self.n_bins).max())
            return lat.INT_LIMIT // (int(self.coefficients[0]) * top) - 1
        return lat.INT_LIMIT // int(self.coefficients[0]) - 1

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """``[Ĉ x]`` (with ``ê ∘ x`` appended when equalised), exact int64; larger totals than
        :meth:`max_records` are refused.

        The exact convolution's number of limbs is fixed by the public
        ``max_records().bit_length()`` whatever the counts, so its time does not depend on
        the data (one limb more than the usual sizes need: about 10–15% of the convolution).
        """
        from treedp.estimation.toeplitz import exact_convolve

        x = np.asarray(counts, dtype=np.int64)
        if x.size != self.n_bins:
            raise InvalidParameterError("The counts must hold one count per bin.")
        self.check_domain(int(x.sum()))
        if self.normalise:  # Ĉ diag(p) x = Ĉ (p ∘ x); p ∘ x stays below 2**62 / ĉ_0
            p = lat.normaliser(self.n_bins, self.scale)
            bits = (self.max_records() * int(p.max())).bit_length()
            return [exact_convolve(self.coefficients, p * x, bits)]
        if self.both:  # e ∘ Ĉ (p ∘ x) stays below 2**62 (max_records)
            p = sb.column_multipliers(self.n_bins, self.scale)
            bits = (self.max_records() * int(p.max())).bit_length()
            block = exact_convolve(self.coefficients, p * x, bits)
            return [sb.row_weights(self.n_bins) * block]
        block = exact_convolve(self.coefficients, x, self.max_records().bit_length())
        if self.rows:  # e ∘ (Ĉ x) stays below 2**62 (max_records)
            return [sr.row_multipliers(self.n_bins) * block]
        if self.equalise:  # ê_j <= Σ ĉ, so ê ∘ x fits (max_records)
            tail = slice(self.n_bins - self.equalised, self.n_bins)
            block = np.concatenate([block, lat.equaliser(self.n_bins, self.scale)[tail] * x[tail]])
        return [block]

    def _block_sizes(self) -> list[int]:
        return [self.n_bins + self.equalised]

    def prefix_filter(self) -> np.ndarray:
        """``g``, the first column of ``G = L Ĉ^{-1}`` (``P̂[m] = (G y)[m − 1]``)."""
        return lat.prefix_filter(self.n_bins, self.scale)

    noises = (DiscreteGaussian.key,)

    @classmethod
    def from_description(
        cls, meta: Mapping[str, Any], n_bins: int, budget: float, gaussian: bool
    ) -> SqrtFactorizationMechanism:
        """The stored lattice scale and equalisation; the stored ``sigma2`` and
        ``block_l2_squared`` must be the rebuilt ones."""
        if not gaussian:
            raise InvalidParameterError("the square-root factorisation is stated without rho")
        scale, equalise = meta["scale"], meta.get("equalise", False)
        normalise = meta.get("normalise", False)
        rows = meta.get("rows", False)
        both = meta.get("both", False)
        if isinstance(scale, bool) or not isinstance(scale, int) or not isinstance(equalise, bool):
            raise InvalidParameterError("fields 'scale' and 'equalise' have the wrong type")
        if not all(isinstance(flag, bool) for flag in (normalise, rows, both)):
            raise InvalidParameterError("fields 'normalise', 'rows', 'both' have the wrong type")
        mechanism = cls(
            n_bins,
            rho=budget,
            neighbours=meta["neighbours"],
            n=meta.get("n_public"),
            scale=scale,
            equalise=equalise,
            normalise=normalise,
            rows=rows,
            both=both,
        )
        stated = (meta["sigma2"], meta.get("block_l2_squared"))
        if (mechanism.describe()["sigma2"], list(mechanism.block_l2_squared)) != stated:
            raise InvalidParameterError("the stored noise variances do not match the budgets")
        return mechanism

    @classmethod
    def plan_candidate(cls, *args: Any, **kwargs: Any) -> PlanCandidate | None:
        """The planner hook: :func:`plan_candidate`."""
        return sqrt_plan.plan_candidate(cls, *args, **kwargs)

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """:meth:`estimate_prefix`, the one unbiased linear estimator, whatever the name."""
        return self.estimate_prefix(levels)

    def prefix_covariance(self, estimator: str) -> Any:
        """:meth:`covariance`, whatever the name."""
        return self.covariance()

    def covariance(self) -> Any:
        """The exact covariance: Toeplitz, plus a low-rank correction for equalised tail
        columns, or dense when every column is equalised."""
        from treedp.estimation import toeplitz

        v = self.block_variance()[0]
        if self.normalise:
            h = lat.inverse_coefficients(self.n_bins, self.scale)
            q = 1.0 / lat.normaliser(self.n_bins, self.scale)
            return toeplitz.ScaledToeplitzCovariance(h, q, v)
        if self.both:
            h = lat.inverse_coefficients(self.n_bins, self.scale)
            q = 1.0 / sb.column_multipliers(self.n_bins, self.scale)
            weights = 1.0 / sb.row_weights(self.n_bins).astype(np.float64) ** 2
            return toeplitz.ScaledToeplitzCovariance(h, q, v, weights)
        if self.rows:
            weights = 1.0 / sr.row_multipliers(self.n_bins).astype(np.float64) ** 2
            return toeplitz.RowWeightedToeplitzCovariance(self.prefix_filter(), weights, v)
        if self.equalise and self.equalised == self.n_bins:
            cov = lat.equalised_system(self.n_bins, self.scale)[2]
            return toeplitz.DensePrefixCovariance(cov * v)
        base = toeplitz.ToeplitzPrefixCovariance(self.prefix_filter(), v, self.n is not None)
        if self.equalise:
            _, w, core = lat.tail_system(self.n_bins, self.scale, self.equalised)
            return toeplitz.LowRankCorrectedCovariance(base, w, core, v)
        return base

    def estimate_prefix(self, blocks: list[np.ndarray]) -> np.ndarray:
        """Unbiased prefix estimates ``P[m]``, ``m = 0..B`` (leading batch axes allowed);
        under ``replace`` conditioned on the public ``P[B] = n`` (the BLUE given it)."""
        from treedp.estimation.toeplitz import toeplitz_apply

        y = np.asarray(blocks[0], dtype=np.float64)
        if self.normalise:  # x̂ = diag(1/p) Ĉ^{-1} y, P̂ = L x̂
            h = lat.inverse_coefficients(self.n_bins, self.scale)
            xhat = toeplitz_apply(h, y) / lat.normaliser(self.n_bins, self.scale)
            est = np.cumsum(xhat, axis=-1)
        elif self.both:  # x̂ = diag(1/p) Ĉ^{-1} (y / e), P̂ = L x̂
            h = lat.inverse_coefficients(self.n_bins, self.scale)
            xhat = toeplitz_apply(h, y / sb.row_weights(self.n_bins))
            est = np.cumsum(xhat / sb.column_multipliers(self.n_bins, self.scale), axis=-1)
        elif self.rows:  # P̂ = G (y / e)
            est = toeplitz_apply(self.prefix_filter(), y / sr.row_multipliers(self.n_bins))
        elif self.equalise and self.equalised < self.n_bins:  # Woodbury (see _tail_system)
            b = self.n_bins
            z, w, core = lat.tail_system(b, self.scale, self.equalised)
            y1, y2 = y[..., :b], y[..., b:]
            est = toeplitz_apply(self.prefix_filter(), y1) + (y2 - y1 @ z) @ core.T @ w.T
        elif self.equalise:  # GLS from both parts: x̂ = M^{-1}(Ĉᵀ y₁ + ê ∘ y₂), P̂ = L x̂
            from scipy.linalg import cho_solve

            dense, chol, _ = lat.equalised_system(self.n_bins, self.scale)
            b = self.n_bins
            e = lat.equaliser(b, self.scale).astype(np.float64)
            rhs = y[..., :b] @ dense + y[..., b:] * e
            flat = rhs.reshape(-1, b).T
            xhat = cho_solve((chol, True), flat).T.reshape(rhs.shape)
            est = np.cumsum(xhat, axis=-1)
        else:
            est = toeplitz_apply(self.prefix_filter(), y)
        zeros = np.zeros((*est.shape[:-1], 1))
        prefix = np.concatenate([zeros, est], axis=-1)
        if self.n is not None:
            gain = self.covariance().gain()
            prefix = prefix - gain * (prefix[..., -1:] - self.n)
            prefix[..., -1] = self.n
        return prefix

    def _spend_parameters(self) -> dict[str, object]:
        return {
            **super()._spend_parameters(),
            "rho": self.rho,
            "block_rhos": self.block_rhos,
            "scale": self.scale,
        }

    def describe(self) -> dict[str, object]:
        """The contract as plain data (no ε fields: none is finite)."""
        return zcdp_description(
            self,
            self.rho,
            self.block_l2_squared,
            self.sigma2,
            scale=self.scale,
            equalise=self.equalise,
            normalise=self.normalise,
            rows=self.rows,
            both=self.both,
        )


def plan_candidate(*args: Any, **kwargs: Any) -> PlanCandidate | None:
    """The planner hook (:func:`treedp.mechanisms.sqrt_plan.plan_candidate` for this class):
    ``(n_bins, budget, neighbours, noise, objective, *, workload=None)``."""
    return sqrt_plan.plan_candidate(SqrtFactorizationMechanism, *args, **kwargs)
