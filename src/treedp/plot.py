"""The plots of a release, kept under their first name: they live in :mod:`treedp.report.plot`
(and the band in :mod:`treedp.report.band`), so ``from treedp.plot import plot_groups`` works."""

from treedp.report.band import CDFBand, cdf_band
from treedp.report.plot import figure_svg, plot_groups, plot_release, require_matplotlib

__all__ = ["CDFBand", "cdf_band", "figure_svg", "plot_groups", "plot_release", "require_matplotlib"]
