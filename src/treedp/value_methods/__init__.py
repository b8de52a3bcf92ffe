"""Value-based methods: one-shot releases that select or test values, not noisy counts.

One module per method (:mod:`.quantile_exponential`, :mod:`.quantiles_recursive`,
:mod:`.stable_median`, :mod:`.subsample_aggregate`, :mod:`.private_bounds`,
:mod:`.private_count`); the exponential-mechanism selection on the public grid that the
quantile methods share is :mod:`.exponential_core`, and their common input rules are
:mod:`._column`. Each method module states its guarantee, neighbour relation, privacy unit and
sensitivity. This package imports nothing on its own.
"""
