"""Helpers shared by the command-line tests."""

from __future__ import annotations


def one_error_line(err: str) -> str:
    """The CLI's stderr holds exactly one line, an error in the CLI's terms: return it."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("treedp: error:")
    return lines[0]
