"""Test configuration: hypothesis runs derandomized by default, so CI is reproducible.

``HYPOTHESIS_PROFILE=explore`` runs the property tests with fresh random examples (for
nightly or local exploration); the statistical tests use the fixed ``tests.stats.TEST_SEED``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
