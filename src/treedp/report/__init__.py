"""Views of a release: plots, the HTML page, the notebook display, tables, the bounds warning.

The release never imports this package: importing it registers the functions behind the
release's view methods in the hook table :mod:`treedp._views`.
"""

from treedp._views import register_view
from treedp.report.grouped import render_grouped_report
from treedp.report.html import SEEDED_WARNING, expected_error
from treedp.report.notebook import grouped_html, summary_html
from treedp.report.page import render_report, write_report
from treedp.report.plot import plot_groups, plot_release
from treedp.report.tables import (
    bounds_warning,
    clamped_quantiles,
    grouped_frame,
    release_arrays,
    release_frame,
)

__all__ = [
    "SEEDED_WARNING",
    "bounds_warning",
    "expected_error",
    "render_grouped_report",
    "render_report",
    "summary_html",
    "write_report",
]

register_view("plot", plot_release)
register_view("_repr_html_", summary_html)
register_view("to_arrays", release_arrays)
register_view("to_frame", release_frame)
register_view("bounds_warning", bounds_warning)
register_view("clamped_quantiles", clamped_quantiles)
register_view("grouped.plot", plot_groups)
register_view("grouped._repr_html_", grouped_html)
register_view("grouped.to_frame", grouped_frame)
