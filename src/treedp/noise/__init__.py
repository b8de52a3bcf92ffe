"""Exact discrete noise and the random sources it draws from."""

from treedp.noise.discrete_gaussian import (
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    gaussian_supported,
    sample_discrete_gaussian,
)
from treedp.noise.discrete_laplace import (
    discrete_laplace_pmf,
    discrete_laplace_variance,
    sample_discrete_laplace,
)
from treedp.noise.rational import noise_scale, rational_upper_bound
from treedp.noise.rng import (
    InsecureSeededSource,
    RandomSource,
    SystemRandomSource,
    resolve_source,
)

__all__ = [
    "InsecureSeededSource",
    "RandomSource",
    "SystemRandomSource",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "gaussian_supported",
    "noise_scale",
    "rational_upper_bound",
    "resolve_source",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
