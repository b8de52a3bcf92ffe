"""One type per column across files: the type each file's column converts to *exactly*.

A pyarrow dataset scanner reads every file through one schema and casts each file's column to
it. The schema a dataset infers is the first file's, so a column stored as ``int32`` in one
file and ``int64`` in another was cast to ``int32``: the cast fails on a value beyond its
range, with a message holding that value, or (``float64`` into ``int64``) on a value with a
fraction. Whether a release of such files failed, and what it said, depended on the data, an
observable outcome outside the stated guarantee (the standards: an exception is output).

Here the type of each column read through a scanner is chosen from the files' *schemas*
(public metadata, read before any value): the narrowest type that every file's type converts
to exactly, whatever the values (:func:`exact_type`):

* the same type up to encoding: kept (text and binary: the first file's encoding, which the
  scanner converts the others' to; numbers dictionary-encoded in some files only: the plain
  type, as the scanner converts from dictionaries only);
* integers: the widest signed type when some are signed (an unsigned type needs a signed one
  twice as wide: ``uint32`` with ``int32`` read as ``int64``; ``uint64`` with any signed
  type has none), else the widest unsigned one;
* floating point: the widest; integers with floats when every integer type fits the float's
  significand (up to 16 bits in ``float32``, 32 bits in ``float64``): ``int64`` with
  ``float64`` has no exact type;
* decimals: the largest scale and the most integer digits (at most 76 digits);
* ``date32`` with ``date64``: ``date64``;
* a column of nulls only (the Arrow ``null`` type) takes any type.

Anything else — integers with text, timestamps of different units or time zones (a finer
unit overflows on far values) — is refused by :class:`~treedp.exceptions.InvalidTypeError`
naming the column, each type and a file holding it, before any value is read or budget
charged.
The check reads each file's footer once per call (:func:`file_schemas`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from treedp.exceptions import InvalidTypeError

__all__ = ["check_exact", "exact_dataset", "exact_type", "file_schemas", "unified_schema"]

#: Integer bits a float's significand holds exactly (with the sign apart).
_FLOAT_EXACT_BITS = {16: 11, 32: 24, 64: 53}


def _plain(t: Any) -> Any:
    """``t`` without dictionary encoding, with text and binary variants as one type."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_large_string(t) or str(t) == "string_view":
        return pa.string()
    if pa.types.is_large_binary(t) or str(t) == "binary_view":
        return pa.binary()
    return t


def _int_type(signed: bool, bits: int) -> Any:
    import pyarrow as pa

    return getattr(pa, f"{'int' if signed else 'uint'}{bits}")()


def _integers(types: Sequence[Any]) -> Any:
    """The narrowest integer type holding every value of each of ``types``; None if none."""
    import pyarrow as pa

    signed = [t.bit_width for t in types if pa.types.is_signed_integer(t)]
    unsigned = [t.bit_width for t in types if pa.types.is_unsigned_integer(t)]
    if not signed:
        return _int_type(False, max(unsigned))
    bits = max(signed)
    if unsigned and max(unsigned) >= bits:
        bits = 2 * max(unsigned)
    return _int_type(True, bits) if bits <= 64 else None


def _floats(types: Sequence[Any]) -> Any:
    """The narrowest float type holding every value of each of ``types`` (floats and
    integers); None if an integer type does not fit the widest float's significand."""
    import pyarrow as pa

    width = max(t.bit_width for t in types if pa.types.is_floating(t))
    ints = [t for t in types if pa.types.is_integer(t)]
    need = max((t.bit_width - pa.types.is_signed_integer(t) for t in ints), default=0)
    while need > _FLOAT_EXACT_BITS[width]:
        if width == 64:
            return None
        width *= 2
    return {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]


def _decimals(types: Sequence[Any]) -> Any:
    """The decimal type with the largest scale and the most integer digits; None past 76."""
    import pyarrow as pa

    scale = max(t.scale for t in types)
    digits = max(t.precision - t.scale for t in types) + scale
    if digits <= 38:
        return pa.decimal128(digits, scale)
    return pa.decimal256(digits, scale) if digits <= 76 else None


def exact_type(types: Iterable[Any]) -> Any:
    """The narrowest Arrow type every one of ``types`` converts to exactly, for any value.

    Returns the first type itself when all agree up to encoding (see the module docstring),
    the ``null`` type when every type is ``null``, and None when no such type exists."""
    import pyarrow as pa

    given = [t for t in types if not pa.types.is_null(t)]
    if not given:
        return pa.null()
    first = given[0]
    plain = [_plain(t) for t in given]
    if all(t == plain[0] for t in plain):
        text = pa.types.is_string(plain[0]) or pa.types.is_binary(plain[0])
        # the scanner converts text to and from dictionaries, numbers only from them
        return first if text or all(t == first for t in given) else plain[0]
    if all(pa.types.is_integer(t) for t in plain):
        return _integers(plain)
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in plain):
        return _floats(plain)
    if all(pa.types.is_decimal(t) for t in plain):
        return _decimals(plain)
    if all(t in (pa.date32(), pa.date64()) for t in plain):
        return pa.date64()
    return None


def file_schemas(dataset: Any) -> list[tuple[str, Any]]:
    """``(where, physical schema)`` of each file of a pyarrow dataset, from its footer; a
    fragment without a schema of its own (in memory) is left out. A local file's schema is
    read once per version of the file (:func:`_physical_schema`)."""
    out = []
    for fragment in dataset.get_fragments():
        try:
            schema = _physical_schema(fragment)
        except (AttributeError, NotImplementedError):  # pragma: no cover - in-memory fragments
            continue
        out.append((str(getattr(fragment, "path", "a fragment")), schema))
    return out


#: Footers read, by a local file's identity (its path, modification time in ns and size): a
#: release asks a file's schema several times (kinds, key types, the column checks), and a
#: footer costs about half a millisecond; bounded by :data:`_MAX_SCHEMAS` entries.
_SCHEMAS: dict[tuple[str, int, int], Any] = {}
_MAX_SCHEMAS = 1 << 16


def _physical_schema(fragment: Any) -> Any:
    """``fragment.physical_schema``, remembered for a local file while it is unchanged."""
    import pyarrow.fs as pafs

    path = getattr(fragment, "path", None)
    key = None
    if path is not None and isinstance(getattr(fragment, "filesystem", None), pafs.LocalFileSystem):
        try:
            st = os.stat(path)
        except OSError:  # the reader reports it
            st = None
        if st is not None:
            key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    if key is not None and key in _SCHEMAS:
        return _SCHEMAS[key]
    schema = fragment.physical_schema
    if key is not None:
        if len(_SCHEMAS) >= _MAX_SCHEMAS:
            _SCHEMAS.clear()
        _SCHEMAS[key] = schema
    return schema


def unified_schema(dataset: Any, columns: Iterable[str] | None = None) -> Any:
    """``dataset.schema`` with each of ``columns`` (None: every column, those without an
    exact type left as they are, for a caller that reads types only) in its exact type.

    Raises
    ------
    InvalidTypeError
        A named column whose files' types have no exact type (module docstring)."""
    import pyarrow as pa

    schema = dataset.schema
    strict = columns is not None
    names = [c for c in (schema.names if columns is None else columns) if c in schema.names]
    files = file_schemas(dataset) if names else []
    for name in names:
        seen = [(w, s.field(name).type) for w, s in files if name in s.names]
        if not seen:
            continue  # a partition key, typed by the partitioning
        want = exact_type(t for _, t in seen)
        if want is None:
            if strict:
                raise _no_exact_type(name, seen)
            continue
        if pa.types.is_null(want) or want == schema.field(name).type:
            continue
        schema = schema.set(schema.get_field_index(name), schema.field(name).with_type(want))
    return schema


def exact_dataset(files: list[str], fmt: Any, columns: Iterable[str] | None, **options: Any) -> Any:
    """``pyarrow.dataset.dataset(files, format=fmt, **options)`` with each of ``columns`` read
    in its exact type (:func:`unified_schema`; None: every column that has one)."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(files, format=fmt, **options)
    schema = unified_schema(dataset, None if columns is None else list(columns))
    if schema.equals(dataset.schema):
        return dataset
    return ds.dataset(files, format=fmt, schema=schema, **options)


def check_exact(dataset: Any, columns: Iterable[str]) -> None:
    """Refuse a user's pyarrow Dataset whose scanner would cast a file's ``columns`` to a
    type that does not hold every value of it (the Dataset's schema is the user's choice;
    its files' types must each convert to it exactly)."""
    schema = dataset.schema
    for name in columns:
        if name not in schema.names:
            continue
        want = schema.field(name).type
        for where, file_schema in file_schemas(dataset):
            if name not in file_schema.names:
                continue
            got = file_schema.field(name).type
            if not _converts(got, want):
                raise InvalidTypeError(
                    f"The column '{name}' is {got} in '{where}' but {want} in the dataset's "
                    "schema, which does not hold every value of it exactly: a value-dependent "
                    "failure or rounding. Give the dataset a schema whose type holds each "
                    f"file's (e.g. {exact_type([got, want]) or 'one type in every file'})."
                )


def _converts(got: Any, want: Any) -> bool:
    """Whether a scanner converts every value of type ``got`` to ``want`` exactly."""
    import pyarrow as pa

    common = exact_type([got, want])
    if common is None or _plain(common) != _plain(want):
        return False
    text = pa.types.is_string(_plain(want)) or pa.types.is_binary(_plain(want))
    return text or not pa.types.is_dictionary(want) or pa.types.is_dictionary(got)


def _no_exact_type(name: str, seen: list[tuple[str, Any]]) -> InvalidTypeError:
    """The refusal of a column whose files' types have no exact common type: each type with
    the first file holding it (schemas and paths, no value)."""
    import pyarrow as pa

    first: dict[Any, str] = {}
    for where, t in seen:
        if not pa.types.is_null(t):
            first.setdefault(_plain(t), where)
    shown = [f"{t} in '{w}'" for t, w in list(first.items())[:4]]
    more = " and other types" if len(first) > 4 else ""
    return InvalidTypeError(
        f"The column '{name}' is {', '.join(shown[:-1])} and {shown[-1]}{more}: no one type "
        "holds every value of each exactly, so these files cannot be read as one column. "
        f"Give every file one type for '{name}', or types one widens to exactly (int32 and "
        "int64; float32 and float64; integers of at most 32 bits with float64)."
    )
