"""Read one column of a file, a directory or a glob into memory: :func:`read_column`.

Counting never needs this: :func:`treedp.release_cdf` streams files in bounded memory (the
files engine, :mod:`treedp.engines.files`). :func:`read_column` materialises the whole
column, for the methods that hold the values.
"""

from __future__ import annotations

from treedp.engines.files.count import read_column

__all__ = ["read_column"]
