"""A strategy over block sums with tree levels or a strategy inside the blocks: structure,
GLS, covariances.

The ``B = K b`` bins are cut into ``K`` blocks of ``b`` bins. The release has up to three
kinds of parts, each with its own discrete Laplace scale:

* ``top``: an integer p-Identity strategy ``W_T`` (:class:`treedp.strategy.model.Strategy`,
  ``K`` bins) applied to the block sums ``s = S x``;
* one *level* per node size ``c`` in ``levels`` (``1`` = the bins themselves; every size
  divides ``b``): the counts of the ``B / c`` consecutive nodes of ``c`` bins;
* optionally an ``inner`` integer strategy ``W_I = [diag(d_I); A_I]`` (``b`` bins, one
  noise scale) applied to every block's bins (:mod:`treedp.strategy.inner` optimises it
  for that role).

Estimation is the generalised least squares (BLUE) over the whole structure, done exactly in
two stages because the blocks are independent given their sums. Within a block the levels
and the inner strategy alone give the BLUE ``x̃`` with covariance ``C = J⁻¹``,
``J = Σ_c M_cᵀ M_c / σ_c² + W_IᵀW_I / σ_I²`` (``b × b``, the same for every block), its
sum ``s̃ = 1ᵀ x̃`` (variance ``v = 1ᵀ C 1``) and its partial
prefixes ``Q̃_r`` (``r = 0..b``). The top observes ``s`` through ``W_T`` (variance ``σ_T²``)
and, from the blocks, through ``s̃`` (variance ``v``): the block sums' BLUE is
``ŝ = (W_TᵀW_T/σ_T² + I/v)⁻¹ (W_Tᵀ y_T/σ_T² + s̃/v)``, a diagonal plus rank-``p`` system
solved by Woodbury (``E = (d²/σ_T² + 1/v)⁻¹``, ``Ã = A/σ_T``, ``G = E Ãᵀ``,
``K = I + Ã G = L Lᵀ``). Corrections go down as in a tree's top-down pass:
``Q̂_r = Q̃_r + β_r (ŝ_k − s̃_k)``, ``β_r = Cov(Q̃_r, s̃)/v``. So for ``m = k b + r``:

``P[m] = Ps[k] + Q̃_r + β_r (ŝ_k − s̃_k)``, ``Ps[k] = Σ_{j<k} ŝ_j``.

Its error is ``(1 − β_r) e(Ps[k]) + β_r e(Ps[k+1]) + u_r``, where ``u_r = e(Q̃_r) − β_r e(s̃)``
is uncorrelated with every block sum's error, and

``Cov(Ps[a], Ps[c]) = U[min(a, c)] − H[a]·H[c]``, ``U[k] = Σ_{j<k} E_j``,
``H[k] = (Σ_{j<k} G_j) L⁻ᵀ``; ``Cov(u_r, u_q) = Cov(Q̃_r, Q̃_q) − β_r β_q v`` in one block
(zero across blocks).

So every covariance is ``O(p)`` and all ``B + 1`` prefix variances cost ``O(B + K p)``.
Under ``replace`` the public ``n = P[B]`` is imposed as a linear constraint (the constrained
BLUE), as for :class:`treedp.strategy.model.StrategyCovariance`. Tests compare all of it with
dense least squares on small ``B``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from treedp.exceptions import DataError, InvalidParameterError
from treedp.strategy.model import Strategy
from treedp.strategy.optimize import one_blas_thread

__all__ = ["BlockedCovariance", "BlockedStrategy"]


def _flat_matmul(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``a @ m`` over ``a``'s last axis as one contiguous 2-D BLAS product: numpy's stacked
    matmul of a strided slice runs a plain loop (a band's 64 draws at 2^16 bins took 0.5 s
    for one ``(64, 256, 16) @ (16, 256)`` product, 0.01 s flat)."""
    flat = np.ascontiguousarray(a).reshape(-1, a.shape[-1])
    out: np.ndarray = (flat @ m).reshape(*a.shape[:-1], m.shape[-1])
    return out


@dataclass(frozen=True, eq=False)
class BlockedStrategy:
    """A top strategy over ``K`` block sums, and tree levels and/or a strategy inside blocks.

    Attributes
    ----------
    top : Strategy
        The integer p-Identity strategy applied to the ``K`` block sums.
    block : int
        ``b``, bins per block.
    levels : tuple of int
        Node sizes inside a block, increasing, the first ``1`` (the bins), each dividing the
        next and ``b`` (a node of ``b`` bins would repeat the top's input); may be empty when
        ``inner`` is given.
    fractions : tuple of float
        Shares of the budget: the top's first, then one per level, then the inner
        strategy's (positive, summing to 1).
    inner : Strategy, optional
        An integer strategy over ``b`` bins applied to every block (one noise scale).
    """

    top: Strategy
    block: int
    levels: tuple[int, ...]
    fractions: tuple[float, ...]
    inner: Strategy | None = None
    _memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        levels = tuple(int(c) for c in self.levels)
        fractions = tuple(float(f) for f in self.fractions)
        b = int(self.block)
        chain = (*levels, b)
        inner = self.inner
        if (
            not isinstance(self.top, Strategy)
            or b < 2
            or (inner is not None and (not isinstance(inner, Strategy) or inner.n_bins != b))
            or (not levels and inner is None)
            or (levels and levels[0] != 1)
            or any(c2 <= c1 or c2 % c1 for c1, c2 in itertools.pairwise(chain))
        ):
            raise InvalidParameterError(
                "A blocked strategy needs a Strategy over the block sums, a block of at least "
                "2 bins, node sizes 1 < ... < block, each dividing the next, and/or a "
                "Strategy over the block's bins."
            )
        if (
            len(fractions) != len(levels) + 1 + (inner is not None)
            or min(fractions) <= 0
            or abs(sum(fractions) - 1) > 1e-9
        ):
            raise InvalidParameterError(
                "A blocked strategy needs one positive budget share for the top, one per "
                "level and one for the inner strategy if any, summing to 1."
            )
        object.__setattr__(self, "block", b)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "fractions", fractions)

    @property
    def n_blocks(self) -> int:
        """``K``."""
        return self.top.n_bins

    @property
    def n_bins(self) -> int:
        """``B = K b``."""
        return self.top.n_bins * self.block

    def max_total(self) -> int:
        """The largest total count :meth:`parts` computes exactly in int64 (the top's and
        the inner strategy's limits; a node count is at most the total)."""
        limit = self.top.max_total()
        return limit if self.inner is None else min(limit, self.inner.max_total())

    def parts(self, counts: np.ndarray) -> list[np.ndarray]:
        """The exact parts ``[W_T s, level counts..., inner]`` for integer bin counts (int64;
        the inner part is every block's ``W_I x_k``, block after block)."""
        x = np.asarray(counts, dtype=np.int64)
        blocks = x.reshape(self.n_blocks, self.block)
        sums = blocks.sum(axis=1)
        out = [self.top.apply(sums)]
        out.extend(x.reshape(-1, c).sum(axis=1) for c in self.levels)
        if self.inner is not None:
            if sums.size and int(sums.sum(dtype=object)) > self.inner.max_total():
                raise DataError(
                    "The counts' total is too large for the strategy's integer weights (int64)."
                )
            ident = blocks * self.inner.identity
            aggs = blocks @ self.inner.aggregates.T
            out.append(np.concatenate([ident, aggs], axis=1).ravel())
        return out

    def part_sensitivities(self, neighbours: str) -> tuple[int, ...]:
        """The exact L1 sensitivity of each part (top first, then the levels, the inner).

        ``add_remove``: a record in bin ``j`` changes one block sum by one, so the top by one
        column of ``W_T`` (the strategy's own sensitivity), one node of each level by one and
        the inner part by one column of ``W_I`` (its own sensitivity, the largest column).
        ``replace``: moving a record changes two block sums by ``±1`` or none (the top's
        ``replace`` sensitivity is the maximum over pairs of distinct blocks, and a move inside
        a block changes nothing there), and two nodes of each level by ``±1`` or none. The
        inner part changes by ``W_I (e_r' − e_r)`` inside one block (the inner strategy's own
        ``replace`` sensitivity) or by ``−W_I e_r`` and ``+W_I e_r'`` in two blocks, at most
        twice the largest column, reached with ``r = r'`` its column: the maximum of both
        when ``K >= 2``.
        """
        top = self.top.sensitivity(neighbours)[0]
        per_level = 1 if neighbours == "add_remove" else 2
        out = (top, *(per_level for _ in self.levels))
        if self.inner is None:
            return out
        inner = self.inner.sensitivity(neighbours)[0]
        if neighbours != "add_remove" and self.n_blocks >= 2:
            inner = max(inner, 2 * self.inner.sensitivity("add_remove")[0])
        return (*out, inner)

    def within(self, part_variances: Sequence[float]) -> tuple[np.ndarray, np.ndarray, float]:
        """``C`` (the within-block covariance of ``x̃``), ``β`` (``r = 0..b``) and ``v``,
        from the variances of the levels' and the inner strategy's entries."""
        b = self.block
        idx = np.arange(b)
        info = np.zeros((b, b))
        variances = [float(v) for v in part_variances]
        for c, var in zip(self.levels, variances[: len(self.levels)], strict=True):
            info += (idx[:, None] // c == idx[None, :] // c) / var
        if self.inner is not None:
            w = self.inner.matrix().astype(np.float64)
            info += (w.T @ w) / variances[len(self.levels)]
        with one_blas_thread():
            cov = np.linalg.inv(info)
        cov = (cov + cov.T) / 2
        c_sum = np.concatenate([[0.0], np.cumsum(cov.sum(axis=1))])  # Cov(Q̃_r, s̃)
        v = float(c_sum[-1])
        return cov, c_sum / v, v


class BlockedCovariance:
    """Exact ``Cov(P[m1], P[m2])`` of a blocked-strategy release (the PrefixCovariance
    protocol), and its estimator.

    Parameters
    ----------
    structure : BlockedStrategy
        The released structure.
    variances : sequence of float
        The exact noise variance of one entry of each part (top first).
    n_public : bool
        Whether ``n = P[B]`` is public (``replace``): the constrained estimator.
    n_bins : int, optional
        The released ``B <= K b`` (the bins past it are empty padding); default ``K b``.
        Prefixes ``P[0..B]`` are estimated, and ``P[B] = n`` imposed under ``replace``.
    """

    def __init__(
        self,
        structure: BlockedStrategy,
        variances: Sequence[float],
        n_public: bool,
        n_bins: int | None = None,
    ) -> None:
        self.structure, self.n_public = structure, n_public
        self.variances = tuple(float(v) for v in variances)
        b = structure.block
        self._cov_x, self._beta, self._v = structure.within(self.variances[1:])
        cq = np.zeros((b + 1, b + 1))
        cq[1:, 1:] = np.cumsum(np.cumsum(self._cov_x, axis=0), axis=1)
        self._cov_u = cq - np.outer(self._beta, self._beta) * self._v
        self._top_factors()
        n_bins = structure.n_bins if n_bins is None else int(n_bins)
        if not 1 <= n_bins <= structure.n_bins:
            raise InvalidParameterError("n_bins must be between 1 and the structure's K b.")
        self.n_bins = n_bins
        self._c = (
            self._raw_cov(np.arange(n_bins + 1), np.full(n_bins + 1, n_bins)) if n_public else None
        )

    def _top_factors(self) -> None:
        from scipy.linalg import solve_triangular  # slow to import: on first use

        top, sig2 = self.structure.top, self.variances[0]
        d2 = top.identity.astype(np.float64) ** 2 / sig2 + 1.0 / self._v
        e = 1.0 / d2
        a = top.aggregates.astype(np.float64) / np.sqrt(sig2)
        g = e[:, None] * a.T
        with one_blas_thread():
            chol = np.linalg.cholesky(np.eye(a.shape[0]) + a @ g)
            gc = np.concatenate([np.zeros((1, a.shape[0])), np.cumsum(g, axis=0)])
            h = solve_triangular(chol, gc.T, lower=True).T
        self._e, self._g, self._chol, self._h = e, g, chol, h
        self._u = np.concatenate([[0.0], np.cumsum(e)])

    def _split(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For ``m = k b + r``: ``k``, ``min(k + 1, K)``, ``r`` and ``β_r``."""
        b, k_max = self.structure.block, self.structure.n_blocks
        k, r = np.divmod(m, b)
        return k, np.minimum(k + 1, k_max), r, self._beta[r]

    def _top_cov(self, a: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The top level's covariance of block prefixes ``a``, ``c`` (broadcast). Many pairs
        over few blocks (every prefix against the last: a quantile interval's) are computed
        once per distinct pair: the rows of ``h`` for each pair held ``B × p`` floats (7 s at
        2^19 bins)."""
        a, c = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(c, np.int64))
        rows = self._h.shape[0]
        if a.size > 4 * rows:
            uniq, inverse = np.unique(a.ravel() * rows + c.ravel(), return_inverse=True)
            ua, uc = np.divmod(uniq, rows)
            once = self._u[np.minimum(ua, uc)] - np.einsum("ik,ik->i", self._h[ua], self._h[uc])
            return np.asarray(once[inverse.ravel()].reshape(a.shape))
        out: np.ndarray = self._u[np.minimum(a, c)] - np.einsum(
            "...k,...k->...", self._h[a], self._h[c]
        )
        return out

    def _raw_cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """Unit-free covariance of the unconstrained estimator (broadcast)."""
        m1, m2 = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        k1, n1, r1, b1 = self._split(m1)
        k2, n2, r2, b2 = self._split(m2)
        out = (
            (1 - b1) * (1 - b2) * self._top_cov(k1, k2)
            + (1 - b1) * b2 * self._top_cov(k1, n2)
            + b1 * (1 - b2) * self._top_cov(n1, k2)
            + b1 * b2 * self._top_cov(n1, n2)
        )
        result: np.ndarray = out + np.where(k1 == k2, self._cov_u[r1, r2], 0.0)
        return result

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        out = self._raw_cov(a, b)
        if self._c is not None:
            out = out - self._c[a] * self._c[b] / self._c[-1]
        return out

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P[m])``."""
        return self.cov(m, m)

    def prefix_variances(self) -> np.ndarray:
        """``Var(P[m])`` for ``m = 0..B``, in ``O(B + K p)``."""
        k_max, b = self.structure.n_blocks, self.structure.block
        ks = np.arange(k_max + 1)
        vp = self._top_cov(ks, ks)
        cross = self._top_cov(ks[:-1], ks[1:])
        beta = self._beta[:b]
        top = (
            np.outer(vp[:-1], (1 - beta) ** 2)
            + np.outer(cross, 2 * beta * (1 - beta))
            + np.outer(vp[1:], beta**2)
        )
        out = np.concatenate([(top + np.diag(self._cov_u)[None, :b]).ravel(), vp[-1:]])
        out = out[: self.n_bins + 1]
        if self._c is not None:
            out = out - self._c**2 / self._c[-1]
        result: np.ndarray = np.maximum(out, 0.0)
        return result

    def estimate(self, parts: Sequence[np.ndarray], n: int | None) -> np.ndarray:
        """Prefix estimates ``P[0..B]`` from the noisy parts (leading batch axes allowed;
        ``n`` imposed when public)."""
        s = self.structure
        k_max, b = s.n_blocks, s.block
        y_top = np.asarray(parts[0], dtype=np.float64)
        batch = y_top.shape[:-1]
        r = np.zeros((*batch, k_max, b))
        n_levels = len(s.levels)
        for c, var, y in zip(
            s.levels, self.variances[1 : 1 + n_levels], parts[1 : 1 + n_levels], strict=True
        ):
            part = np.asarray(y, dtype=np.float64).reshape(*batch, k_max, b // c, 1) / var
            r += np.broadcast_to(part, (*batch, k_max, b // c, c)).reshape(*batch, k_max, b)
        if s.inner is not None:  # W_Iᵀ y per block
            y_in = np.asarray(parts[1 + n_levels], dtype=np.float64).reshape(*batch, k_max, -1)
            a_in = s.inner.aggregates.astype(np.float64)
            r += (s.inner.identity * y_in[..., :b] + _flat_matmul(y_in[..., b:], a_in)) / (
                self.variances[-1]
            )
        with one_blas_thread():
            x_tilde = _flat_matmul(r, self._cov_x)
        q = np.cumsum(x_tilde, axis=-1)
        s_tilde = q[..., -1]
        from scipy.linalg import solve_triangular  # slow to import: on first use

        d = s.top.identity.astype(np.float64)
        a = s.top.aggregates.astype(np.float64)
        sig2 = self.variances[0]
        rhs = (d * y_top[..., :k_max] + _flat_matmul(y_top[..., k_max:], a)) / sig2
        rhs = rhs + s_tilde / self._v
        with one_blas_thread():
            t = _flat_matmul(rhs, self._g).reshape(-1, self._g.shape[1]).T
            half = solve_triangular(self._chol, t, lower=True)
            sol = solve_triangular(self._chol.T, half, lower=False).T
            s_hat = self._e * rhs - _flat_matmul(sol.reshape(*batch, -1), self._g.T)
        ps = np.concatenate([np.zeros((*batch, 1)), np.cumsum(s_hat, axis=-1)], axis=-1)
        q_full = np.concatenate([np.zeros((*batch, k_max, 1)), q[..., :-1]], axis=-1)
        body = ps[..., :-1, None] + q_full + self._beta[:b] * (s_hat - s_tilde)[..., None]
        out = np.concatenate([body.reshape(*batch, k_max * b), ps[..., -1:]], axis=-1)
        out = out[..., : self.n_bins + 1]
        if self._c is not None and n is not None:
            out = out - (self._c / self._c[-1]) * (out[..., -1:] - n)
        return out
