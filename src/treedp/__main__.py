"""``python -m treedp``: the command line (see :mod:`treedp.cli`)."""

from __future__ import annotations

import sys

from treedp.cli import main

if __name__ == "__main__":
    sys.exit(main())
