"""No private module or private name of another library (stdlib included) is used by treedp.

A private module (``scipy.optimize._pava_pybind``) or attribute (``argparse._SubParsersAction``)
can be renamed or removed in any release of its library, silently. The scan reads the source of
``src/treedp`` (the AST, so comments and strings do not count) and flags:

* ``import a._b`` / ``import a.b._c`` and ``from a._b import x``;
* ``from a import _b`` (a private name taken from another library);
* ``a._b`` and ``a.b._c`` where ``a`` is a name bound by importing another library's module;
* a string naming another library's private module (``"scipy.optimize._pava_pybind"``), and
  loading a module from a file path (``spec_from_file_location``), the ways the old code
  reached scipy's compiled PAVA without an import statement.

Names of treedp itself and dunders (``__version__``) are allowed.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import treedp

SRC = Path(treedp.__file__).parent


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _foreign(module: str) -> bool:
    return module.split(".")[0] not in {"treedp", "__future__"}


def _library(name: str) -> bool:
    """``name`` is the top-level module of another library (installed, or in the stdlib)."""
    if not _foreign(name):
        return False
    return name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None


def private_uses(source: str) -> list[str]:
    """Each use of another library's private module or name in ``source``, as ``line: text``."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: set[str] = set()  # local names bound to another library's module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _foreign(alias.name):
                    if any(map(_private, alias.name.split("."))):
                        found.append(f"{node.lineno}: import {alias.name}")
                    aliases.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and _foreign(node.module):
            if node.level:  # a relative import: the package's own
                continue
            if any(map(_private, node.module.split("."))):
                found.append(f"{node.lineno}: from {node.module} import ...")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                else:  # may be a module (from scipy import optimize): followed like one
                    aliases.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts = node.value.split(".")
            dotted = len(parts) > 1 and all(part.isidentifier() for part in parts)
            if dotted and _library(parts[0]) and any(map(_private, parts)):
                found.append(f"{node.lineno}: {node.value!r}")
        if isinstance(node, ast.Attribute | ast.Name) and "spec_from_file_location" in (
            getattr(node, "attr", None),
            getattr(node, "id", None),
        ):
            found.append(f"{node.lineno}: spec_from_file_location")
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base: ast.expr = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_the_scan_finds_each_kind_of_private_use() -> None:
    """The scan can fail: each form the old code used (or might use again) is caught."""
    code = (
        "import argparse, scipy\n"
        "import scipy.optimize._pava_pybind\n"
        "from scipy.optimize._pava_pybind import pava\n"
        "from argparse import _SubParsersAction\n"
        "import numpy as np\n"
        "from scipy import optimize\n"
        "x = argparse._SubParsersAction\n"
        "y = np.lib._index_tricks_impl\n"
        "z = optimize._minimize\n"
        "name = 'scipy.optimize._pava_pybind'\n"
        "spec = importlib.util.spec_from_file_location(name, path)\n"
    )
    uses = private_uses(code)
    assert len(uses) == 8, uses
    for text in ("_pava_pybind", "_SubParsersAction", "np.lib._index", "optimize._minimize"):
        assert any(text in use for use in uses), (text, uses)


def test_the_scan_allows_public_and_own_names() -> None:
    code = (
        "import argparse\n"
        "import numpy as np\n"
        "from treedp._validation import must\n"
        "import treedp._atomic\n"
        "from treedp.engines import _kernel_numba\n"
        "from scipy.optimize import isotonic_regression\n"
        "x = np.__version__\n"
        "m = 'treedp.engines._kernel_numba'\n"
        "v = 'grouped._repr_html_'\n"
        "class P(argparse.ArgumentParser):\n"
        "    def f(self): return self._own\n"
    )
    assert private_uses(code) == []


def test_treedp_uses_no_private_module_of_another_library() -> None:
    found = {
        str(path.relative_to(SRC)): uses
        for path in sorted(SRC.rglob("*.py"))
        if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}
