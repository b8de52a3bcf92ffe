"""Sphinx configuration of the API reference (``make docs``; built into docs/_build/html)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import treedp

project = "treedp"
copyright = "the treedp authors, Apache-2.0"
release = version = treedp.__version__

extensions = ["sphinx.ext.autodoc", "numpydoc"]
root_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"treedp {release} API reference"

autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the signatures stay readable; the docstrings give the types
autodoc_inherit_docstrings = False
# numpydoc renders the sections; its member tables would need autosummary stubs
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
nitpicky = False

PAGES = ("releases", "quantiles", "streams", "planning", "privacy", "inputs", "errors")


def _unlisted() -> list[str]:
    """Public names (``treedp.__all__``) that no page documents: shown on the page "Other"
    so a new export is in the reference before anyone files it under a topic."""
    here = Path(__file__).parent
    text = " ".join((here / f"{page}.rst").read_text(encoding="utf-8") for page in PAGES)
    return [
        name for name in treedp.__all__ if name != "__version__" and f"treedp.{name}\n" not in text
    ]


def _fill_other(app: object, docname: str, source: list[str]) -> None:
    if docname == "other":
        directives = []
        for name in _unlisted():
            value = getattr(treedp, name)
            kind = "autoclass" if isinstance(value, type) else "autofunction"
            kind = kind if callable(value) else "autodata"
            directives.append(f".. {kind}:: treedp.{name}\n")
        source[0] += "\n" + ("\n".join(directives) or "(Every public name is on a topic page.)\n")


def setup(app: object) -> None:
    app.connect("source-read", _fill_other)  # type: ignore[attr-defined]
