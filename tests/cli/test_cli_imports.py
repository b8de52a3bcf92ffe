"""The command line is a thin shell: it imports only the public ``treedp`` package.

Every module under ``src/treedp/cli`` is parsed with :mod:`ast`; every import counts, at module
level, inside a function or under ``if TYPE_CHECKING:``. A module may import ``treedp`` itself
(names of ``treedp.__all__`` only, with ``from treedp import X``) and modules of
``treedp.cli``; nothing else of treedp. The ``treedp.cli`` modules import each other without a
cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import treedp
from tests.test_structure import cycles
from treedp.cli import COMMANDS

CLI = Path(__file__).parents[2] / "src" / "treedp" / "cli"


def _module_name(path: Path) -> str:
    rel = path.relative_to(CLI.parent.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(source: str, module: str) -> Iterator[tuple[int, str, str | None]]:
    """``(line, imported module, imported name or None)`` for every import in ``source``."""
    package = module if module.endswith(".cli") else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield node.lineno, base, alias.name


def violations(source: str, module: str) -> list[str]:
    """What ``source`` (the module ``module`` of ``treedp.cli``) imports beyond the public API."""
    public = set(treedp.__all__)
    found = []
    for line, target, name in _imports(source, module):
        if target != "treedp" and not target.startswith("treedp."):
            continue  # the standard library, numpy, ...
        if target == "treedp.cli" or target.startswith("treedp.cli."):
            continue
        if target == "treedp" and (name is None or name in public):
            continue
        if target == "treedp" and name == "cli":
            continue  # ``from treedp import cli``: the package itself
        shown = target if name is None else f"{target}.{name}"
        found.append(f"{module}:{line} imports {shown}")
    return found


def cli_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """module -> the ``treedp.cli`` modules it imports (the package counts as a module)."""
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for module, source in sources.items():
        for _, target, name in _imports(source, module):
            if name is not None and f"{target}.{name}" in sources:
                graph[module].add(f"{target}.{name}")  # from treedp.cli import _common
            elif target in sources and target != module:
                graph[module].add(target)
    return graph


def _cli_sources() -> dict[str, str]:
    return {_module_name(p): p.read_text(encoding="utf-8") for p in sorted(CLI.rglob("*.py"))}


def test_the_cli_imports_only_the_public_api() -> None:
    sources = _cli_sources()
    assert "treedp.cli.release" in sources and "treedp.cli" in sources
    found = [v for module, source in sources.items() for v in violations(source, module)]
    assert found == []


def test_the_cli_modules_import_each_other_without_a_cycle() -> None:
    sources = _cli_sources()
    graph = cli_graph(sources)
    assert cycles(graph) == []
    commands = {f"treedp.cli.{name}" for name in COMMANDS}
    for module in commands:  # a command module imports helpers (``_name``) only
        assert not graph[module] & commands, (module, graph[module] & commands)


def test_the_checks_can_fail() -> None:
    """Internal imports at every level are reported, and a cycle is found."""
    snippet = (
        "from typing import TYPE_CHECKING\n"
        "import numpy as np\n"
        "import treedp\n"
        "from treedp import release_cdf, cli\n"
        "from treedp.cli._common import fmt\n"
        "from treedp.engines.files import FileSource\n"
        "if TYPE_CHECKING:\n"
        "    from treedp.privacy.measures import Measure\n"
        "def f():\n"
        "    import treedp.io\n"
        "    from treedp import _version\n"
        "    from .. import budget\n"
    )
    found = violations(snippet, "treedp.cli.fake")
    assert found == [
        "treedp.cli.fake:6 imports treedp.engines.files.FileSource",
        "treedp.cli.fake:8 imports treedp.privacy.measures.Measure",
        "treedp.cli.fake:10 imports treedp.io",
        "treedp.cli.fake:11 imports treedp._version",
        "treedp.cli.fake:12 imports treedp.budget",
    ]
    looped = {
        "treedp.cli.a": "from treedp.cli import b\n",
        "treedp.cli.b": "def g():\n    from treedp.cli.c import x\n",
        "treedp.cli.c": "from . import a\n",
        "treedp.cli.d": "import treedp.cli.a\n",
    }
    graph = cli_graph(looped)
    assert graph["treedp.cli.d"] == {"treedp.cli.a"}
    assert cycles(graph) == [["treedp.cli.a", "treedp.cli.b", "treedp.cli.c"]]
