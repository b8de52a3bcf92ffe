"""``--bounds`` as the commands take it (public ``LO HI``, ``private``, or one public side)
and how bounds found privately are described (shared; imports no command module)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import treedp
from treedp.cli._common import UsageError, number_or_text

__all__ = [
    "BOUNDS_REQUIRED",
    "add_bounds",
    "bounds_arg",
    "check_share",
    "found_side",
    "found_text",
    "is_private",
    "known_side",
]


#: What 'treedp quantiles' and 'treedp median' (tree, exponential) say without --bounds.
BOUNDS_REQUIRED = (
    "--bounds is required: public bounds LO HI (values outside are clamped), or 'private' "
    "(a share of the budget finds them), or one public side: LO private, private HI"
)


def add_bounds(parser: Any, help: str, required: bool = False, share: bool = False) -> None:
    """``--bounds`` (read by :func:`bounds_arg`) and, with ``share``, ``--bounds-share``."""
    parser.add_argument("--bounds", nargs="+", required=required, metavar="LO HI", help=help)
    parser.add_argument(
        "--tz",
        metavar="ZONE",
        help="time zone of datetime --bounds given without one (UTC, Europe/Paris, +05:30); "
        "answers are printed in the data's zone (needed for CSV times written with an offset)",
    )
    if share:
        parser.add_argument(
            "--bounds-share",
            type=float,
            help="share of epsilon spent on --bounds private (default 0.1)",
        )


def bounds_arg(words: list[str] | None, tz: str | None = None, datetimes: bool = False) -> Any:
    """``--bounds LO HI`` as a pair, ``--bounds private`` as ``"private"``, ``--bounds LO
    private`` / ``--bounds private HI`` (one side public) as ``(LO, "private")`` /
    ``("private", HI)``, absent as None; with ``--tz``, datetime bounds written without a
    zone are wall times there (tz-aware datetimes). ``--bounds private`` with ``--tz`` or
    ``--datetimes`` (``datetimes``): private datetime bounds, in that zone."""
    if words in (["private"], ["private", "private"]) and (tz is not None or datetimes):
        try:
            return treedp.PrivateBounds(datetimes=True, timezone=tz)
        except treedp.InvalidParameterError:
            raise UsageError(
                f"--tz takes a zone such as UTC, Europe/Paris or +05:30; got {tz!r}."
            ) from None
    if datetimes:
        raise UsageError("--datetimes applies to --bounds private (public bounds say it).")
    if tz is not None:
        pair = bounds_arg(words)
        if not isinstance(pair, tuple) or not all(isinstance(w, str) for w in pair):
            raise UsageError("--tz applies to datetime --bounds LO HI.")
        return tuple(_in_zone(w, tz) for w in pair)
    if words is None:
        return None
    if words == ["private"]:
        return "private"
    if len(words) != 2:
        raise UsageError(
            "--bounds takes two values LO HI, the word 'private', or one public side with "
            "'private' for the other (LO private, private HI)."
        )
    if words == ["private", "private"]:
        return "private"
    pair = tuple(w if w == "private" else number_or_text(w) for w in words)
    numbers = [isinstance(v, int | float) for v in pair]
    if numbers.count(True) == 1 and "private" not in pair:  # e.g. "0 privat"
        raise UsageError(
            "--bounds takes two numbers or two datetimes LO HI, or one public number with "
            "the word 'private' for the side to find (LO private, private HI)."
        )
    return pair


def _in_zone(word: str, tz: str) -> Any:
    """A datetime bound in the zone ``tz`` (kept as given when it carries its own offset)."""
    import datetime as dt
    import zoneinfo

    try:
        wall = dt.datetime.fromisoformat(word)
    except ValueError:
        raise UsageError(f"--bounds takes ISO 8601 datetimes with --tz; got {word!r}.") from None
    if wall.tzinfo is not None:
        return word
    try:
        zone: dt.tzinfo = dt.UTC if tz.upper() == "UTC" else zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        try:  # a fixed offset such as +05:30
            zone = dt.datetime.fromisoformat(f"2000-01-01T00:00{tz}").tzinfo or dt.UTC
        except ValueError:
            raise UsageError(
                f"--tz takes a zone such as UTC, Europe/Paris or +05:30; got {tz!r}."
            ) from None
    first, second = wall.replace(tzinfo=zone), wall.replace(tzinfo=zone, fold=1)
    if (
        first.utcoffset() != second.utcoffset()
        or first.astimezone(dt.UTC).astimezone(zone).replace(tzinfo=None) != wall
    ):
        raise UsageError(
            f"--bounds {word} does not exist or occurs twice in {tz} (a change of daylight-"
            "saving time); write it with its UTC offset."
        )
    return first


def check_share(bounds_share: float | None, bounds: Any) -> None:
    """``--bounds-share`` is refused without a bounds step (it would do nothing)."""
    if bounds_share is not None and not is_private(bounds):
        raise UsageError("--bounds-share applies only with --bounds private.")


def is_private(bounds: Any) -> bool:
    """Whether ``bounds`` (from :func:`bounds_arg`) asks for a bounds step."""
    return bounds == "private" or (isinstance(bounds, tuple) and "private" in bounds)


def known_side(bounds: Any) -> str | None:
    """The public side of a one-sided request from :func:`bounds_arg` (``"lower"`` for
    ``(LO, "private")``), else None."""
    if not is_private(bounds) or bounds == "private":
        return None
    return "lower" if bounds[1] == "private" else "upper"


def found_side(known: str | None) -> str:
    """What a bounds step found privately: ``"bounds"``, or with the ``known`` side public
    the other one (``"upper bound"`` when the lower one was public)."""
    if known is None:
        return "bounds"
    return "upper bound" if known == "lower" else "lower bound"


def found_text(bounds: Any, epsilon: float | None = None) -> str:
    """What the answer line says of bounds found privately (nothing for public bounds),
    with the bounds step's epsilon when given."""
    if not is_private(bounds):
        return ""
    spent = "" if epsilon is None else f" with epsilon={epsilon:.4g}"
    known = known_side(bounds)
    side = "" if known is None else found_side(known).split()[0] + " "  # "upper " or "lower "
    return f" ({side}found privately{spent})"


def bounds_offsets(bounds: Any) -> bool | None:
    """Whether CSV datetime cells read under ``bounds`` (from :func:`bounds_arg`) must carry
    a UTC offset (aware bounds: True), none (naive datetime bounds: False), or either (numbers,
    private or no bounds: None): the check ``treedp release`` makes while counting."""
    if not isinstance(bounds, tuple) or len(bounds) != 2 or "private" in bounds:
        return None
    kinds = {_aware_word(b) for b in bounds}
    return kinds.pop() if len(kinds) == 1 else None


def _aware_word(bound: Any) -> bool | None:
    """A bound's awareness: True (a tz-aware datetime, or text ending in Z or an offset),
    False (a naive datetime or datetime text), None (a number)."""
    import re

    if isinstance(bound, dt.datetime):
        return bound.tzinfo is not None
    if not isinstance(bound, str):
        return None
    text = bound.strip()
    if re.search(r"\d(?:[Zz]|[+-]\d\d:?(?:\d\d)?)$", text) and ("T" in text or " " in text):
        return True
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return False
