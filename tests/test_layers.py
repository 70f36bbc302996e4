"""The package's layering, checked on every run from the source's imports (``ast``, function-level
imports included): no cycles between modules; the agent imports nothing else of ours; the host
speaks no protocol and knows no face; providers know neither host nor server; the ACP face knows
no LSP and nothing of the terminal client."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "elelem_lsp"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache  # each file parsed once per run: the checks walk the package several times
def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line: ``from . import x`` names ``pkg.x``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, node.lineno))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def graph() -> dict[str, dict[str, int]]:
    """Module -> the modules of ours it imports (only names that are modules), with a line each."""
    sources = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, dict[str, int]] = {}
    for name, path in sources.items():
        edges[name] = {}
        for target, line in imports_of(path):
            if target in sources and target != name:
                edges[name].setdefault(target, line)
    return edges


def all_imports() -> list[tuple[str, str, int]]:
    """(module, what it imports, line) for every import in the package, ours or not."""
    return [(module_name(p), target, line) for p in PACKAGE.rglob("*.py") for target, line in imports_of(p)]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def find_cycle(edges: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle, as the modules around it, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(edges.get(node, {})):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def forbidden(importer: str, banned: tuple[str, ...]) -> list[str]:
    return [
        f"{module} imports {target} (line {line})"
        for module, target, line in all_imports()
        if within(module, importer) and any(within(target, b) for b in banned)
    ]


def test_there_are_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    ("importer", "banned"),
    [
        ("elelem_lsp.agent", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.client", "elelem_lsp.providers",
                              "elelem_lsp.cli", "elelem_lsp.textedits", "elelem_lsp.spinner", "pygls", "lsprotocol")),
        ("elelem_lsp.host", ("pygls", "lsprotocol", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                             "elelem_lsp.cli")),
        ("elelem_lsp.providers", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                                  "elelem_lsp.cli", "elelem_lsp.textedits", "elelem_lsp.spinner")),
        ("elelem_lsp.acp", ("elelem_lsp.server", "elelem_lsp.client", "elelem_lsp.cli", "elelem_lsp.textedits",
                            "pygls", "lsprotocol")),
    ],
)
def test_each_layer_imports_only_what_is_below_it(importer, banned):
    assert forbidden(importer, banned) == []


def test_only_the_mcp_module_speaks_mcp():
    """The SDK (and the HTTP client it brings) is one package's business: host/mcp/."""
    speakers = sorted({m for m, t, _ in all_imports() if any(within(t, sdk) for sdk in ("mcp", "httpx2"))})
    assert speakers and all(within(m, "elelem_lsp.host.mcp") for m in speakers)


def test_the_agent_imports_nothing_of_ours_but_itself():
    ours = [f"{m} imports {t} (line {n})" for m, t, n in all_imports()
            if within(m, "elelem_lsp.agent") and within(t, "elelem_lsp") and not within(t, "elelem_lsp.agent")]
    assert ours == []


# -- the checks themselves catch what they are for ---------------------------------


def test_a_cycle_is_found_and_named():
    assert find_cycle({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1}}) is None


def test_imports_inside_functions_and_relative_imports_are_seen(tmp_path, monkeypatch):
    package = tmp_path / "elelem_lsp"
    (package / "host").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "host" / "__init__.py").write_text("")
    (package / "host" / "late.py").write_text("def f():\n    from ..server import editor\n    import pygls.uris\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    found = imports_of(package / "host" / "late.py")
    assert ("elelem_lsp.server", 2) in found and ("elelem_lsp.server.editor", 2) in found
    assert ("pygls.uris", 3) in found


def test_this_package_is_what_is_walked():
    edges = graph()
    assert {"elelem_lsp.agent.session", "elelem_lsp.host.host", "elelem_lsp.server.server"} <= set(edges)
    assert "elelem_lsp.host.frontend" in edges["elelem_lsp.server.editor"]
    assert "elelem_lsp.host.host" in edges["elelem_lsp.server.editor"]  # imported inside a function
