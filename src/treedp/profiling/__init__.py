"""Profiling a whole table: :func:`treedp.profile` (:mod:`treedp.profiling.front`), its column
types (:mod:`~treedp.profiling.schema`) and its result (:mod:`~treedp.profiling.result`)."""
