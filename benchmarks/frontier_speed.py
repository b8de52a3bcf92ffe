"""Issue 33, item 7: release to first answer at 2^24 bins, and default counting at 4096 bins.

Run from the repository root::

    PYTHONPATH=src python benchmarks/frontier_speed.py

1. The default in-memory counting (``LocalEngine()``: two threads, ``kernel="auto"``) of 2·10^7
   uniform values into 4096 equal-width bins, best of 3, in M values/s, each round in a fresh
   process (3 rounds; ``--counting [OTHER_SRC]``: 6 rounds and nothing else): on ``(0, 1)``,
   whose arithmetic is the bin rule, and on ``(0, 10^5)``, where it is not and values next to an
   edge are compared with the edges. Baselines in the same
   run: ``np.bincount`` of the precomputed bin indices on one thread and on two threads (each
   counting half: the most a kernel built on ``np.bincount`` can reach), and one numpy pass
   over the same data (``x·B`` into a cache-sized buffer, chunk by chunk, two threads: the
   memory-bandwidth bound of any kernel that reads the column once). Also the default's
   values per CPU-second (all its threads): on a loaded machine the wall rate says more about
   the other jobs than about the kernel. Goal: at least 400 M/s.
2. ``release_counts`` of the counts of 10^6 lognormal values over 2^24 equal-width bins at
   ε = 1 (the plan made beforehand and passed, as ``bench_targets.py`` does), then the first
   answer (``cdf``), wall and CPU seconds, each *first in a fresh process* (a subprocess per
   run, 3 runs), then the second release in the same process. The baseline in the same run is
   numpy's cumulative sum of the same counts. Goal: release + first answer at most 2 s on 2
   cores. ``python benchmarks/frontier_speed.py OTHER_SRC`` also runs the ``src`` folder of
   another checkout (the code before a change), its fresh processes interleaved with these.
   With each: the system time (on a VM that maps guest memory on its first touch, the page
   faults of memory not touched recently) and the traced peak of numpy memory of a third
   release in the process (``tracemalloc``, outside the timed runs). ``--release [OTHER_SRC]``
   runs this part alone, 6 runs. Each checkout's treedp bytecode is compiled first, as an
   installed package's is (pip compiles it at install).
3. The imports of that first release, in a fresh process after the same setup imports: the
   treedp modules ``release_counts`` and its bounds warning load, then ``scipy.optimize``.
4. ``--pava`` (alone): a numpy-only isotonic regression of the 2^24 prefixes against scipy's,
   CPU seconds in one process — what dropping the ``scipy.optimize`` import would cost.

The machine is shared: the load average is printed with every line.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from _common import machine


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


#: The counting settings: the goal's (uniform on (0, 1), whose binary64 arithmetic is the bin
#: rule) and a typical user's bounds, where it is not and values next to an edge are compared
#: with the edges (both 4096 bins).
COUNTING_BOUNDS = ((0.0, 1.0), (0.0, 1e5))


def counting(baseline_src: str | None = None, rounds: int = 3) -> None:
    """The counting rates of :func:`_counting_rates`, each round in a fresh process; with
    ``baseline_src`` the other checkout's processes are interleaved with these."""
    found = _interleaved(["--counting-json"], baseline_src, rounds)
    for label, runs in found.items():
        for k, (lo, hi) in enumerate(COUNTING_BOUNDS):
            rows = [run[k] for run in runs]

            def span(key: str, rows: list[dict[str, float]] = rows) -> str:
                values = sorted(r[key] for r in rows)
                return f"{values[0]:.0f}-{values[-1]:.0f}"

            print(
                f"counting 2*10^7 uniform values on ({lo:g}, {hi:g}) into 4096 bins{label}: "
                f"default {span('default')} M/s over {rounds} processes (goal 400), "
                f"{span('per_cpu')} M values per CPU-second of its threads; np.bincount of "
                f"precomputed indices {span('bincount')} M/s on one thread, "
                f"{span('bincount_2')} on two; one numpy pass (x·B, chunked, two threads) "
                f"{span('one_pass_2')} M/s ({_load()})",
                flush=True,
            )


def _counting_rates(n_bins: int = 4096, size: int = 2 * 10**7) -> list[dict[str, float]]:
    """The default in-memory counting against its baselines, best of 3, for each of
    :data:`COUNTING_BOUNDS` (M values/s)."""
    from treedp.domain import make_bins
    from treedp.engines.local import LocalEngine

    u = np.random.default_rng(1).random(size)
    engine = LocalEngine()
    out = []
    for lo, hi in COUNTING_BOUNDS:
        x = lo + u * (hi - lo) if (lo, hi) != (0.0, 1.0) else u
        bins = make_bins(bounds=(lo, hi), bins=n_bins)
        engine.count(x, bins)  # warm-up (the exactness proofs are cached per edges array)
        out.append(_rates(engine, x, bins, np.minimum((u * n_bins).astype(np.intp), n_bins - 1)))
    return out


def _rates(engine: Any, x: np.ndarray, bins: Any, idx: np.ndarray) -> dict[str, float]:
    n_bins, size = bins.n_bins, x.size
    halves, idx_halves = np.array_split(x, 2), np.array_split(idx, 2)
    with ThreadPoolExecutor(max_workers=2) as pool:

        def bincount_2() -> None:
            list(pool.map(lambda part: np.bincount(part, minlength=n_bins), idx_halves))

        def one_pass_2() -> None:
            list(pool.map(lambda part: _one_pass(part, float(n_bins)), halves))

        cpu = min(_cpu_timed(lambda: engine.count(x, bins)) for _ in range(3))
        rates = {
            name: size / min(_timed(fn) for _ in range(3)) / 1e6
            for name, fn in [
                ("default", lambda: engine.count(x, bins)),
                ("bincount", lambda: np.bincount(idx, minlength=n_bins)),
                ("bincount_2", bincount_2),
                ("one_pass_2", one_pass_2),
            ]
        }
    return {**rates, "per_cpu": size / cpu / 1e6}


def _interleaved(args: list[str], baseline_src: str | None, runs: int) -> dict[str, list[Any]]:
    """This script with ``args`` in ``runs`` fresh processes, its last output line read as
    JSON; with ``baseline_src`` (the ``src`` folder of another checkout) as many of that
    checkout's, alternated so that both see the same load. Keyed by label ("" for this one)."""
    sources = {"": None} if baseline_src is None else {"": None, " [baseline src]": baseline_src}
    found: dict[str, list[Any]] = {label: [] for label in sources}
    for src in sources.values():
        _compiled(src)
    for i in range(runs):
        for label in list(sources) if i % 2 == 0 else list(sources)[::-1]:
            env = dict(os.environ)
            if sources[label] is not None:
                env["PYTHONPATH"] = str(sources[label])
            done = subprocess.run(
                [sys.executable, __file__, *args],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            found[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return found


def _compiled(src: str | None) -> None:
    """Compile the bytecode of the treedp package a child imports (``src``'s, else this
    process's), as an installed package has it (pip compiles it at install): a source
    checkout run with ``PYTHONDONTWRITEBYTECODE`` set compiled about 120 modules from source
    in every fresh process, 0.4 s of the first release's time that no user pays."""
    import compileall
    import importlib.util

    if src is None:
        spec = importlib.util.find_spec("treedp")
        locations = [] if spec is None else list(spec.submodule_search_locations or [])
    else:
        locations = [os.path.join(src, "treedp")]
    for folder in locations:
        compileall.compile_dir(folder, quiet=1)


def _one_pass(x: np.ndarray, scale: float, chunk: int = 1 << 16) -> None:
    out = np.empty(chunk)
    for start in range(0, x.size, chunk):
        part = x[start : start + chunk]
        np.multiply(part, scale, out=out[: part.size])


def release_to_first_answer(
    n_bins: int = 2**24, runs: int = 3, baseline_src: str | None = None
) -> None:
    """Release + first answer, each run in a fresh process; with ``baseline_src`` (the ``src``
    folder of another checkout, e.g. main before a change) its runs are interleaved with this
    checkout's, under the same load."""
    rows = _interleaved(["--cold", str(n_bins)], baseline_src, runs)
    for label, found in rows.items():
        _report_cold(n_bins, found, label)


def _report_cold(n_bins: int, rows: list[dict[str, float]], label: str) -> None:
    for suffix, what in (("", "first in a fresh process"), ("2", "second in the process")):
        totals = [r["release" + suffix] + r["answer" + suffix] for r in rows]
        cpu = [r["cpu" + suffix] for r in rows]
        print(
            f"2^{n_bins.bit_length() - 1} bins{label}, {what}: release + first answer "
            f"{', '.join(f'{t:.2f}' for t in totals)} s wall (median "
            f"{statistics.median(totals):.2f}: release "
            f"{statistics.median(r['release' + suffix] for r in rows):.2f} + answer "
            f"{statistics.median(r['answer' + suffix] for r in rows):.2f}; goal 2 s), CPU "
            f"{', '.join(f'{c:.2f}' for c in cpu)} s (median {statistics.median(cpu):.2f}), "
            f"of it system {statistics.median(r['sys' + suffix] for r in rows):.2f} (median); "
            f"traced peak {statistics.median(r['peak_mb'] for r in rows):.0f} MB; "
            f"numpy cumsum of the counts "
            f"{statistics.median(r['cumsum'] for r in rows):.3f} s ({_load()})",
            flush=True,
        )


def first_release_imports(runs: int = 3) -> None:
    """Where a fresh process's first release spends on imports: after the benchmark's own
    setup imports, the modules ``release_counts`` and its bounds warning load (treedp's API,
    query, engines and report layers), then ``scipy.optimize`` (the consistent CDF's
    isotonic regression), each timed in wall and CPU seconds (fresh process per run)."""
    code = (
        "import json, time\n"
        "import numpy, treedp, treedp.domain, treedp.planning\n"
        "def timed(names):\n"
        "    w, c = time.perf_counter(), time.process_time()\n"
        "    for name in names: __import__(name)\n"
        "    return [time.perf_counter() - w, time.process_time() - c]\n"
        "print(json.dumps([timed(['treedp.api', 'treedp.report']), "
        "timed(['scipy.optimize'])]))\n"
    )
    found = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    for i, what in enumerate(("treedp.api + treedp.report", "scipy.optimize")):
        wall = ", ".join(f"{r[i][0]:.2f}" for r in found)
        cpu = ", ".join(f"{r[i][1]:.2f}" for r in found)
        print(
            f"fresh process, importing {what}: {wall} s wall, CPU {cpu} s ({_load()})",
            flush=True,
        )


def numpy_pava_vs_scipy(n_bins: int = 2**24, repeats: int = 2) -> None:
    """The consistent CDF's isotonic regression at ``n_bins`` (the prefixes of a seeded
    release of the benchmark's data): scipy's public ``isotonic_regression`` (the baseline,
    same process, alternated) against a numpy-only pool-adjacent-violators that would spare
    the ``scipy.optimize`` import (rounds pooling every run of decreasing block means)."""
    import treedp
    from treedp.domain import make_bins
    from treedp.planning import plan

    x = np.random.default_rng(0).lognormal(10, 1, size=1_000_000)
    bins = make_bins(bounds=(0.0, 2e6), bins=n_bins)
    counts, _ = bins.count(x)
    release = treedp.release_counts(
        counts,
        bins=bins,
        epsilon=1.0,
        plan=plan(n_bins, epsilon=1.0),
        rng=treedp.InsecureSeededSource(0),
    )
    y = np.asarray(release.prefix_counts)[1:-1]
    from scipy.optimize import isotonic_regression

    for _ in range(repeats):
        mine, rounds = _cpu_timed_value(lambda: _pava_rounds(y))
        theirs, _ = _cpu_timed_value(lambda: isotonic_regression(y).x)
        print(
            f"isotonic regression of {y.size:,} prefixes: numpy rounds {mine:.2f} s CPU "
            f"({rounds} rounds), scipy {theirs:.2f} s CPU ({_load()})",
            flush=True,
        )


def _pava_rounds(y: np.ndarray) -> int:
    """Pool every maximal run of decreasing block means until none is left; the rounds."""
    starts = np.flatnonzero(np.concatenate([[True], y[:-1] <= y[1:]]))
    sums = np.add.reduceat(y, starts)
    weights = np.diff(starts, append=y.size).astype(np.float64)
    rounds = 1
    while True:
        means = sums / weights
        keep = np.concatenate([[True], means[:-1] <= means[1:]])
        if keep.all():
            np.repeat(means, np.diff(starts, append=y.size))  # the fit, for the timing
            return rounds
        at = np.flatnonzero(keep)
        sums, weights, starts = np.add.reduceat(sums, at), np.add.reduceat(weights, at), starts[at]
        rounds += 1


def _cpu_timed_value(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def _cold(n_bins: int) -> None:
    """One fresh process: the counts, then two releases and their first answers, with the
    system time of each (the kernel's page faults: memory touched for the first time), and a
    third release's traced peak of memory (JSON)."""
    import treedp
    from treedp.domain import make_bins
    from treedp.planning import plan

    x = np.random.default_rng(0).lognormal(10, 1, size=1_000_000)
    bins = make_bins(bounds=(0.0, 2e6), bins=n_bins)
    chosen = plan(n_bins, epsilon=1.0)
    counts, _ = bins.count(x)
    row = {"cumsum": _timed(lambda: np.cumsum(counts))}
    for suffix in ("", "2"):
        w0, c0 = time.perf_counter(), time.process_time()
        s0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
        rel = treedp.release_counts(counts, bins=bins, epsilon=1.0, plan=chosen)
        w1 = time.perf_counter()
        rel.cdf(1e5)
        row["release" + suffix], row["answer" + suffix] = w1 - w0, time.perf_counter() - w1
        row["cpu" + suffix] = time.process_time() - c0
        row["sys" + suffix] = resource.getrusage(resource.RUSAGE_SELF).ru_stime - s0
    # a third release, traced: the most numpy memory it holds at once
    del rel
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    treedp.release_counts(counts, bins=bins, epsilon=1.0, plan=chosen).cdf(1e5)
    row["peak_mb"] = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    tracemalloc.stop()
    print(json.dumps(row))


def _cpu_timed(fn: Callable[[], object]) -> float:
    """CPU seconds of the process (all its threads) for one call: steadier than wall time
    on a shared machine, and the wall time on ``k`` idle cores is at best CPU / k."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cold":
        _cold(int(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--pava":
        numpy_pava_vs_scipy()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--counting-json":
        print(json.dumps(_counting_rates()))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--release":
        print(f"# {machine()}")
        release_to_first_answer(runs=6, baseline_src=sys.argv[2] if len(sys.argv) > 2 else None)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--counting":
        print(f"# {machine()}")
        counting(sys.argv[2] if len(sys.argv) > 2 else None, rounds=6)
        return
    baseline = sys.argv[1] if len(sys.argv) > 1 else None
    print(f"# {machine()}")
    counting(baseline)
    release_to_first_answer(baseline_src=baseline)
    first_release_imports()


if __name__ == "__main__":
    main()
