"""A progress bar for long counting work, shown on an interactive terminal only.

The bar shows the fraction done and the time, never a number of rows: what the data holder
sees on their own terminal is still kept free of counts. It needs tqdm (``treedp[progress]``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from treedp._validation import must
from treedp.exceptions import InvalidTypeError, MissingDependencyError

__all__ = ["progress_bar", "wants_progress"]

#: Environment variables set by continuous-integration services.
_CI = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD")


def wants_progress(progress: bool | None) -> bool:
    """Whether to show a bar: ``None`` means on an interactive terminal, outside CI."""
    if progress is not None and not isinstance(progress, bool):
        raise InvalidTypeError(
            must("progress", f"be True, False or None. Got {type(progress).__name__} instead.")
        )
    if progress is not None:
        return progress
    if any(os.environ.get(name) for name in _CI):
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and _has_tqdm()


def _has_tqdm() -> bool:
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def progress_bar(
    progress: bool | None, *, total: int | None, desc: str = "counting"
) -> Iterator[Callable[[int], None] | None]:
    """Yield a callback advancing the bar by a number of rows, or None when no bar is shown."""
    if not wants_progress(progress):
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        raise MissingDependencyError(
            "progress=True needs tqdm: install treedp[progress] (pip install tqdm)."
        ) from None
    fmt = (
        "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}" if total else "{desc}: {elapsed}"
    )
    bar: Any = tqdm(total=total or None, desc=desc, bar_format=fmt, leave=False, file=sys.stderr)
    try:
        yield bar.update
    finally:
        bar.close()
