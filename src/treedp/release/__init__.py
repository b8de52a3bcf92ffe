"""Releases: the frozen record (:mod:`.record`), its queries (:mod:`.queries`), inference
(:mod:`.inference`) and files (:mod:`.format`)."""

from treedp.release.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    _checksum,
    load_release,
)
from treedp.release.record import Release

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Release", "_checksum", "load_release"]
