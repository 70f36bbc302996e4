"""The package's layering, checked on every run from the source's imports (``ast``, function-level
imports included): the rules numbered in docs/architecture.md, "Rules the tests keep"; each test
names the rule it checks. No cycles between modules; faces above the host above the agent and
the providers: the agent imports nothing else of ours; the host speaks no protocol and knows no
face; providers know neither host nor server; the ACP face knows no LSP and nothing of the
terminal client, and holds a folder agent, not the host. Inside the host: the registry above
the stored-conversation and checkpoint operations above the folder agent above its parts above the ports,
which are small roles that the parts take one by one. One bridge hands work from threads to the loop."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path

import pytest

from elelem_lsp.host import frontend as ports

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
    """Rule 1 of docs/architecture.md, no cycles."""
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    ("importer", "banned"),
    [
        # Rule 2, the agent stands alone (with test_the_agent_imports_nothing_of_ours_but_itself)
        ("elelem_lsp.agent", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.client", "elelem_lsp.providers",
                              "elelem_lsp.cli", "elelem_lsp.textedits", "elelem_lsp.spinner", "pygls", "lsprotocol")),
        # Rule 4, the host speaks no protocol
        ("elelem_lsp.host", ("pygls", "lsprotocol", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                             "elelem_lsp.cli")),
        # Rule 3, providers know only the agent
        ("elelem_lsp.providers", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                                  "elelem_lsp.cli", "elelem_lsp.textedits", "elelem_lsp.spinner")),
        # Rule 16, completion and next edit are rooms beside the agent: providers and documents, no turn loop, no face
        ("elelem_lsp.completion", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                                   "elelem_lsp.cli", "elelem_lsp.nextedit", "pygls", "lsprotocol")),
        ("elelem_lsp.nextedit", ("elelem_lsp.host", "elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client",
                                 "elelem_lsp.cli", "pygls", "lsprotocol")),
        # Rule 5, the ACP face knows no LSP (nor the host's registry)
        ("elelem_lsp.acp", ("elelem_lsp.server", "elelem_lsp.client", "elelem_lsp.cli", "elelem_lsp.textedits",
                            "pygls", "lsprotocol", "elelem_lsp.host.host")),
    ],
)
def test_each_layer_imports_only_what_is_below_it(importer, banned):
    """Rules 2 to 5 and 16 of docs/architecture.md (see the comments above)."""
    assert forbidden(importer, banned) == []


# The host's own layers, top down; a host module not named is one of the folder agent's parts.
HOST_LAYERS = {
    "elelem_lsp.host.host": 4,  # the registry of folder agents
    "elelem_lsp.host.stored": 3,  # the operations on stored conversations, given a folder agent
    "elelem_lsp.host.rewinding": 3,  # the operations on checkpoints (list, rewind), given a folder agent
    "elelem_lsp.host.folder_agent": 2,
    "elelem_lsp.host.frontend": 0,  # the ports
}
PARTS = 1


def host_layer(module: str) -> int:
    return HOST_LAYERS.get(module, PARTS)


def test_inside_the_host_each_layer_imports_only_what_is_below_it():
    """Rule 7 of docs/architecture.md, the host's own layers: registry > stored (and rewinding) >
    folder agent > parts > ports."""
    upward = [
        f"{module} imports {target} (line {line})"
        for module, targets in graph().items()
        if within(module, "elelem_lsp.host") and module != "elelem_lsp.host"
        for target, line in targets.items()
        if within(target, "elelem_lsp.host") and target != "elelem_lsp.host"
        and host_layer(target) >= host_layer(module) and not (host_layer(module) == PARTS == host_layer(target))
    ]
    assert upward == []


def test_only_the_lsp_face_holds_the_host_and_the_agent_is_the_acp_faces():
    """Rule 6 of docs/architecture.md, one holder of the registry."""
    holders = sorted({m for m, t, _ in all_imports() if within(t, "elelem_lsp.host.host") and not within(m, "elelem_lsp.host")})
    assert holders == ["elelem_lsp.server.router"]
    assert "elelem_lsp.host.folder_agent" in graph()["elelem_lsp.acp.session"]


def roles() -> tuple[type, ...]:
    return ports.Frontend.__bases__


def members(role: type) -> set[str]:
    return {name for name in vars(role) if not name.startswith("_")}


def test_the_ports_are_small_roles_that_the_frontend_only_gathers():
    """Rule 8 of docs/architecture.md, small roles."""
    assert [role.__name__ for role in roles()] == ["Face", "SettingsSource", "Person", "Documents", "Progress"]
    assert {role.__name__: len(members(role)) for role in roles() if len(members(role)) > 8} == {}
    assert members(ports.Frontend) == set()  # nothing beyond its roles
    assert sum(len(members(role)) for role in roles()) == len(
        {name for name, _ in inspect.getmembers(ports.Frontend) if not name.startswith("_")})


def test_a_part_of_the_host_takes_the_roles_it_uses_not_the_whole_frontend():
    """Rule 9 of docs/architecture.md, parts take roles: the folder agent hands each part its
    roles; only it and the registry take the whole Frontend (and host/mcp, which uses the face
    and the person, until it is narrowed)."""
    takers = sorted({m for m, t, _ in all_imports() if t == "elelem_lsp.host.frontend.Frontend" and within(m, "elelem_lsp.host")})
    assert [m for m in takers if not within(m, "elelem_lsp.host.mcp")] == ["elelem_lsp.host.folder_agent", "elelem_lsp.host.host"]


# Rule 10 of docs/architecture.md, one MCP speaker.
def test_only_the_mcp_module_speaks_mcp():
    """The SDK (and the HTTP client it brings) is one package's business: host/mcp/."""
    speakers = sorted({m for m, t, _ in all_imports() if any(within(t, sdk) for sdk in ("mcp", "httpx2"))})
    assert speakers and all(within(m, "elelem_lsp.host.mcp") for m in speakers)


def test_the_agent_imports_nothing_of_ours_but_itself():
    """Rule 2 of docs/architecture.md, the agent stands alone."""
    ours = [f"{m} imports {t} (line {n})" for m, t, n in all_imports()
            if within(m, "elelem_lsp.agent") and within(t, "elelem_lsp") and not within(t, "elelem_lsp.agent")]
    assert ours == []


FACES = ("elelem_lsp.server", "elelem_lsp.acp", "elelem_lsp.client")


@pytest.mark.parametrize("face", FACES)
def test_the_faces_do_not_know_each_other(face):
    """Rule 11 of docs/architecture.md: the terminal client reaches the server only over LSP."""
    assert forbidden(face, tuple(other for other in FACES if other != face)) == []


def test_the_terminal_client_takes_two_things_of_the_host():
    """Rule 12 of docs/architecture.md: of the host, the plugin-trust store and the permission question."""
    taken = {
        target
        for module, targets in graph().items()
        if within(module, "elelem_lsp.client")
        for target in targets
        if within(target, "elelem_lsp.host")
    }
    assert taken <= {"elelem_lsp.host.trust", "elelem_lsp.host.permission"}


def test_cli_is_on_top():
    """Rule 13 of docs/architecture.md: nothing imports the command line but ``__main__``."""
    importers = sorted({m for m, t, _ in all_imports() if within(t, "elelem_lsp.cli") and m != "elelem_lsp.cli"})
    assert importers == ["elelem_lsp.__main__"]


SHARED = ("elelem_lsp.textedits", "elelem_lsp.our_clients", "elelem_lsp.stop_signals", "elelem_lsp.spinner")


@pytest.mark.parametrize("shared", SHARED)
def test_the_shared_modules_sit_below_the_faces(shared):
    """Rule 14 of docs/architecture.md."""
    assert forbidden(shared, (*FACES, "elelem_lsp.host", "elelem_lsp.providers", "elelem_lsp.cli")) == []


THREAD_TO_LOOP = ("call_soon_threadsafe", "run_coroutine_threadsafe")


def test_one_bridge_from_threads_to_the_loop():
    """Rule 15 of docs/architecture.md: outside the terminal client (whose input is read on a thread
    of its own), only agent/bridge.py hands work from a thread back to the event loop."""
    crossing = sorted(
        f"{module_name(path)} line {node.lineno}"
        for path in PACKAGE.rglob("*.py")
        if not within(module_name(path), "elelem_lsp.client") and module_name(path) != "elelem_lsp.agent.bridge"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if isinstance(node, ast.Attribute) and node.attr in THREAD_TO_LOOP
    )
    assert crossing == []


# -- the checks themselves catch what they are for (no rule of their own) -----------


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
    assert "elelem_lsp.host.host" in edges["elelem_lsp.server.router"]  # imported inside a function
