"""Per-person bounding on Dask: each partition compacted to 16-byte rows plus the person ids,
sent to buckets by a keyed hash of the id, each bucket's persons identified exactly, bounded
and counted; no Dask shuffle of the rows.

The task graph (:func:`bounded_tasks`), for ``N`` input partitions and ``P`` buckets
(``P = N`` clamped to [:data:`BUCKETS_MIN`, :data:`BUCKETS_MAX`]):

1. **compact** (one task per partition, on the worker that holds it): the partition is read
   :data:`SLICE` rows at a time into rows of 16 bytes, :data:`ROW` — the keyed 64-bit hash of
   the person id (:func:`treedp.engines.id_hash.hash_ids`: Arrow or numpy, no Python object
   per row) and the row's cell ``k·B + b`` (``k`` the position of its key in the public keys,
   matched by Arrow's ``index_in`` for text; ``b`` its bin by the bin rule of
   :func:`treedp.engines.grouped.bin_index`) — and each slice's rows are split into ``P``
   buckets by ``hash mod P``, each bucket's rows with their person ids themselves
   (:func:`id_values`: numpy for numpy columns, Arrow for pandas' extension columns).
   Records with a missing value, key or id are refused under
   ``nan="error"`` (checked over the whole partition first, in the in-memory order: values,
   ids, keys; the message holds no count) or dropped under ``"drop"``; unlisted keys drop.
   Memory: the partition (as Dask made it) plus 16 bytes and the id a kept row, and one
   slice's arrays.
   With a distributed client and fewer partitions than twice its workers (one large file
   read as one partition), each partition is first cut into row ranges compacted by
   separate tasks (``pieces``), which an idle worker can take over.
2. **bound** (one task per bucket): bucket ``j`` of every partition — all rows of its
   persons, since one id has one hash everywhere — has its persons encoded exactly from the
   ids (:func:`person_codes`: pandas' factorize, Python equality as in memory) and is
   bounded by
   :func:`treedp.privacy.contribution.bound_contributions` (uniform sampling per person, with
   the bucket's own randomness) and counted into ``G·B`` counts plus the rows left out.

The bound tasks' vectors are added on the workers by the engine; only ``G × B`` counts and the
number of rows left out reach the client.

Privacy: the id hash only routes rows to buckets; it never decides who is one person. Equal
ids (Python equality) get equal hashes across the column types of the partitions (the rule of
:mod:`treedp.engines.id_hash`), so each person's rows all reach one bucket; there the persons
are the distinct ids themselves, encoded with the in-memory path's rule (5, 5.0, True and
``Decimal(5)`` one person, ``"5"`` another). Two persons whose hashes collide, or ids of a
type the hash does not read (all routed alike), share a bucket and stay two persons, each
bounded on its own: the sensitivity is that of the in-memory path, with no δ for
collisions. The hash key is drawn from the release's random source (the operating system's by
default), and so are the buckets' sampling seeds with :class:`~treedp.InsecureSeededSource`
(tests only); with the operating system's source each bucket task draws its own randomness
from the worker's ``os.urandom``. The client receives the counts and the number of rows left
out (never released), nothing else computed from the data.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from treedp._codes import encoded_column
from treedp._inputs import as_1d_array
from treedp.engines.entry import missing_values_error
from treedp.engines.grouped import (
    GroupedJob,
    bin_index,
    column_array,
    encode_keys,
    missing_key_error,
    person_missing_error,
)
from treedp.engines.id_hash import IdHashKey, hash_ids
from treedp.noise import RandomSource
from treedp.noise.rng import InsecureSeededSource, SystemRandomSource, words
from treedp.privacy.contribution import bound_contributions

__all__ = [
    "BUCKETS_MAX",
    "BUCKETS_MIN",
    "ROW",
    "SLICE",
    "bounded_tasks",
    "id_values",
    "key_column",
    "person_codes",
]

#: One compacted row: the keyed hash of the person id (routing only) and the row's cell
#: ``key·B + bin``; the ids themselves travel next to the rows.
ROW = np.dtype([("p", "<u8"), ("cell", "<i8")])
#: Rows of a partition compacted at a time.
SLICE = 1 << 20
#: Fewest and most buckets (bound tasks); there are ``N x P`` small transfers for ``N``
#: partitions, so ``P`` stays small.
BUCKETS_MIN = 32
BUCKETS_MAX = 64  # at most 256: bucket numbers are sorted as uint8


def bounded_tasks(
    parts: list[Any],
    job: GroupedJob,
    source: RandomSource,
    shared: Callable[[Any], Any],
    pieces: int = 1,
) -> list[Any]:
    """One delayed ``G·B + 1`` count vector per bucket (the last entry: rows left out).

    Parameters
    ----------
    parts : list of dask.delayed.Delayed
        The partitions of the DataFrame holding ``job.columns`` (checked by the caller).
    job : GroupedJob
        The job, with a privacy unit.
    source : RandomSource
        The release's source: the hash key, and with a seeded source the buckets' seeds.
    shared : callable
        ``shared(obj)``: ``obj`` as one graph node (or scattered to every worker once).
    pieces : int, default=1
        Each partition is cut into this many pieces (row ranges), compacted by separate tasks
        that idle workers can take over: fewer partitions than workers must not leave all
        the compaction to one worker.
    """
    from dask.delayed import delayed

    n_buckets = min(max(len(parts), BUCKETS_MIN), BUCKETS_MAX)
    key = IdHashKey.draw(source)
    seeds: list[int | None] = [None] * n_buckets
    if getattr(source, "seeded", False):
        seeds = [int(s) for s in words(source, 64, n_buckets)]
    job_node = shared(job)
    compact_task = delayed(compact, nout=n_buckets + 1, pure=False)
    inputs = parts
    if pieces > 1:
        split_task = delayed(_split, nout=pieces, pure=False)
        inputs = [piece for p in parts for piece in split_task(p, pieces)]
    compacted = [compact_task(p, job_node, key, n_buckets, SLICE) for p in inputs]
    bound_task = delayed(bound_bucket, pure=False)
    tasks = []
    for j in range(n_buckets):
        dropped = [c[n_buckets] for c in compacted] if j == 0 else []
        tasks.append(bound_task(job_node, seeds[j], dropped, *[c[j] for c in compacted]))
    return tasks


def _split(frame: Any, pieces: int) -> tuple[Any, ...]:
    """``frame`` as ``pieces`` consecutive row ranges (views where pandas can)."""
    ends = [len(frame) * i // pieces for i in range(pieces + 1)]
    return tuple(frame.iloc[a:b] for a, b in itertools.pairwise(ends))


def compact(
    frame: Any, job: GroupedJob, key: IdHashKey, n_buckets: int, rows: int
) -> tuple[Any, ...]:
    """One partition, ``rows`` (:data:`SLICE`, read on the client) at a time, as ``n_buckets``
    lists of pieces ``(ROW array, ids)`` (one per slice; ``ids[i]`` the person of row ``i``),
    then the number of its records left out (missing under ``nan="drop"``, unlisted keys)."""
    if job.nan == "error":
        _refuse_missing(frame, job)
    buckets: list[list[tuple[np.ndarray, Any]]] = [[] for _ in range(n_buckets)]
    dropped = 0
    for start in range(0, len(frame), rows):
        part = frame.iloc[start : start + rows]
        kept, ids = _compact_slice(part, job, key)
        dropped += len(part) - kept.size
        bucket = (kept["p"] % np.uint64(n_buckets)).astype(np.uint8)  # radix-sorted below
        ends = np.cumsum(np.bincount(bucket, minlength=n_buckets))
        order = np.argsort(bucket, kind="stable")
        kept = kept[order]
        for j in range(n_buckets):
            lo = int(ends[j - 1]) if j else 0
            if ends[j] > lo:
                buckets[j].append((kept[lo : int(ends[j])], _take(ids, order[lo : int(ends[j])])))
    return (*buckets, dropped)


def _refuse_missing(frame: Any, job: GroupedJob) -> None:
    """Under ``nan="error"``: the in-memory errors, in its order (values, ids, keys)."""
    if bool(frame[job.column].isna().any()):
        raise missing_values_error()
    assert job.unit is not None
    if bool(frame[job.unit].isna().any()):
        raise person_missing_error()
    if any(bool(frame[b].isna().any()) for b in job.by):
        raise missing_key_error()


def _compact_slice(part: Any, job: GroupedJob, key: IdHashKey) -> tuple[np.ndarray, Any]:
    """The :data:`ROW` rows of one slice kept for bounding (value, id and public key present)
    and their person ids (:func:`id_values`)."""
    assert job.unit is not None
    bins = bin_index(as_1d_array(part[job.column]), job.bins, job.nan)
    person = part[job.unit]
    keep = (bins >= 0) & ~np.asarray(person.isna())
    codes = _key_codes(part, job)
    keep &= codes >= 0
    cells = codes * job.bins.n_bins + bins
    if keep.all():  # the common case: no row left out, no row taken
        rows = np.empty(len(part), dtype=ROW)
        rows["p"] = hash_ids(person, key)
        rows["cell"] = cells
        return rows, id_values(person)
    idx = np.flatnonzero(keep)
    person = person.iloc[idx]
    rows = np.empty(idx.size, dtype=ROW)
    rows["p"] = hash_ids(person, key)
    rows["cell"] = cells[idx]
    return rows, id_values(person)


def id_values(person: Any) -> Any:
    """The ids of a pandas Series without missing ones, as they travel to the buckets: a numpy
    array for a numpy column (``object`` included), an Arrow array for an extension column
    (text held by Arrow or Python, categories as an Arrow dictionary, nullable numbers);
    ``object`` numpy if Arrow cannot hold it."""
    if isinstance(person.dtype, np.dtype):
        return np.asarray(person.to_numpy())
    import pyarrow as pa

    try:
        arr = pa.array(person.array)
    except (pa.ArrowException, TypeError, ValueError):
        return np.asarray(person.to_numpy(dtype=object))
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _take(ids: Any, idx: np.ndarray) -> Any:
    """``ids`` at the rows ``idx`` (a compact copy, numpy or Arrow); Arrow text and bytes
    dictionary-encoded (int32 indices and the piece's distinct values: a person's many rows
    travel as 4 bytes each)."""
    if isinstance(ids, np.ndarray):
        return ids[idx]
    import pyarrow as pa
    import pyarrow.compute as pc

    piece = ids.take(pa.array(idx))
    t = piece.type
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary)
    if any(is_type(t) for is_type in text) or pa.types.is_large_binary(t):
        return pc.dictionary_encode(piece)
    return piece


def person_codes(ids: list[Any]) -> np.ndarray:
    """One code per id of a bucket's pieces (concatenated): equal codes exactly for equal ids.

    The in-memory path's rule (:func:`pandas.factorize`): pieces of one numpy dtype or one
    Arrow type are concatenated and encoded as such (Arrow text byte for byte); pieces of
    different types are first turned into Python objects by pandas (numbers as ``int`` or
    ``float``, datetimes as ``Timestamp``), so that equality is Python's across them (5, 5.0,
    ``True``, ``Decimal(5)`` one id; ``"5"`` another).
    """
    import pandas as pd
    import pyarrow as pa

    plain = [_decoded(a) for a in ids]
    types = {(type(a), a.dtype if isinstance(a, np.ndarray) else a.type) for a in plain}
    if not plain:
        return np.zeros(0, dtype=np.int64)
    values: Any
    if len(types) == 1 and isinstance(plain[0], np.ndarray):
        values = np.concatenate(plain)
    elif len(types) == 1:
        values = pd.arrays.ArrowExtensionArray(pa.chunked_array(plain))
    else:
        values = np.concatenate([_objects(a) for a in plain])
    codes, _ = pd.factorize(values, sort=False, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64)


def _decoded(ids: Any) -> Any:
    """Arrow dictionaries (categories) as their values: each partition has its own dictionary."""
    if isinstance(ids, np.ndarray):
        return ids
    import pyarrow as pa

    return ids.dictionary_decode() if pa.types.is_dictionary(ids.type) else ids


def _objects(ids: Any) -> np.ndarray:
    """Ids as Python objects, converted by pandas (not numpy, which makes nanosecond datetimes
    integers)."""
    import pandas as pd

    series = pd.Series(ids) if isinstance(ids, np.ndarray) else ids.to_pandas()
    return np.asarray(series.astype(object).to_numpy(), dtype=object)


def _key_codes(part: Any, job: GroupedJob) -> np.ndarray:
    """Each row's key position (``-1``: missing, under ``nan="drop"``, or not public).

    One text ``by`` column held by Arrow and text keys: Arrow's ``index_in`` (one hash lookup
    per row, the same byte-for-byte equality as Python's for text); else
    :func:`treedp.engines.grouped.encode_keys` on the column encoded by pandas."""
    if not job.by:
        return np.zeros(len(part), dtype=np.int64)
    if len(job.by) == 1 and all(type(k) is str for k in job.keys):
        text = _arrow_text(part[job.by[0]])
        if text is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            public = pa.array(list(job.keys), type=pa.large_string())
            found = pc.index_in(text.cast(pa.large_string()), value_set=public)
            return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    by = [encoded_column(part[b], lambda s, b=b: key_column(s, b)) for b in job.by]
    return encode_keys(by, job.keys, job.nan)


def _arrow_text(series: Any) -> Any:
    """The Arrow array of a pandas text column held by Arrow, else None."""
    import pandas as pd
    import pyarrow as pa

    dtype = series.dtype
    arrow_backed = isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    pa_type = getattr(dtype, "pyarrow_dtype", None)
    if not arrow_backed and not (
        pa_type is not None and (pa.types.is_string(pa_type) or pa.types.is_large_string(pa_type))
    ):
        return None
    return pa.array(series.array)


def bound_bucket(
    job: GroupedJob, seed: int | None, dropped: list[int], *pieces: list[tuple[np.ndarray, Any]]
) -> np.ndarray:
    """Bound and count one bucket: ``G·B`` counts, then the rows left out (those dropped by
    sampling, plus ``dropped``, the compaction's, given to one bucket only). Persons are the
    distinct ids (:func:`person_codes`), never the routing hash."""
    chunks = [c for piece in pieces for c in piece]
    rows = np.concatenate([r for r, _ in chunks]) if chunks else np.zeros(0, dtype=ROW)
    n_keys, n_bins = len(job.keys), job.bins.n_bins
    out = np.zeros(n_keys * n_bins + 1, dtype=np.int64)
    kept_rows = 0
    if rows.size:
        person = person_codes([ids for _, ids in chunks])
        source = SystemRandomSource() if seed is None else InsecureSeededSource(seed)
        cells = rows["cell"]
        group = cells // n_bins if job.by else None
        kept = bound_contributions(person, group, job.bounds, source, n_keys)
        out[:-1] = np.bincount(cells[kept], minlength=n_keys * n_bins)
        kept_rows = int(kept.size)
    out[-1] = rows.size - kept_rows + sum(int(d) for d in dropped)
    return out


def key_column(series: Any, name: str) -> np.ndarray:
    """A key or id column as numpy, pandas' missing markers (``pd.NA`` of the string and
    nullable dtypes, which numpy cannot compare) as None."""
    arr = column_array(series, name)
    gone = np.asarray(series.isna())
    if arr.dtype.kind == "O" and gone.any():
        arr = arr.copy()
        arr[gone] = None
    return arr
