"""Every tool, fed generated arguments over a generated workspace, answers with a result the model
can read: a dict with ``ok``, JSON as its message is, within a time bound, and, when it fails, in
words made for that failure (never the catch-all's ``failed unexpectedly``, which marks a bug the
toolbox only contained).

The workspace holds what models and people run into: folders, named pipes, binary, empty, CRLF,
UTF-16 and Latin-1 files, a very long line, symlink loops, links out of the folder, dangling
links, an image, unreadable files and folders, odd names (unicode, a space, a leading dash, a
line break), and unsaved editor buffers. The arguments are right and wrong types, missing fields,
unknown keys, and paths that go up (``..``), start at ``/``, are empty, hold a NUL byte, are
very long or are unicode. Calls go in-process through the ports: a ``FrontendWorkspace`` over the
in-memory front end (its editor answering navigation and diagnostics from the generated files),
or the plain ``Workspace``. ``execute`` runs only commands from a fixed, harmless list, in the
generated folder.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from host.memory_frontend import MemoryFrontend
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scaffold import png
from security.attacks_cmds import without_root_powers

from elelem_lsp.agent.editor_tools import TOOLBOX as EDITOR_TOOLBOX
from elelem_lsp.agent.editor_tools import EditorTools
from elelem_lsp.agent.insight import KINDS, Diagnostics, Insight, Location, Problem, Symbol
from elelem_lsp.agent.toolbox import Toolbox, encode
from elelem_lsp.agent.workspace import Workspace
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import FrontendWorkspace

CALL_BOUND = 10.0  # seconds a call may take before the test calls it stuck: a bound, not a speed
# per tool: the whole file stays within a few seconds; ELELEM_ROBUSTNESS_EXAMPLES=500 hunts longer
EXAMPLES = int(os.environ.get("ELELEM_ROBUSTNESS_EXAMPLES", "12"))
KEPT = "beside the project: never changed\n"
UNEXPECTED = "failed unexpectedly"  # the toolbox's words for an exception no tool meant

NAMES = ["src", "a.py", "日本語.txt", "with space.md", "-rf", ".hidden", "sub/deeper.py", "new\nline", "ünï/cødé.rs"]


def long_line(path: Path) -> None:
    path.write_bytes(b"x = '" + b"y" * 300_000 + b"'\n")


def loop(path: Path) -> None:
    """Two links that lead to each other."""
    other = path.with_name(path.name + ".other")
    if not other.exists() and not other.is_symlink():
        os.symlink(path.name, other)
        os.symlink(other.name, path)


def outside_of(path: Path) -> Path:
    """The folder beside the generated project, which no call may change."""
    return next(folder for folder in path.parents if folder.name == "project").parent / "outside"


def unreadable(path: Path) -> None:
    path.write_text("secret\n")
    path.chmod(0)


def unreadable_folder(path: Path) -> None:
    path.mkdir()
    (path / "inside.py").write_text("x = 1\n")
    path.chmod(0)


def folder(path: Path) -> None:
    path.mkdir()
    (path / "inner.py").write_text("def inner():\n    return 1\n")


KINDS_OF_ENTRY = {
    "folder": folder,
    "text": lambda path: path.write_text("def total(values):\n    return sum(values)\n\nprint(total([1, 2]))\n"),
    "crlf": lambda path: path.write_bytes(b"first\r\nsecond\rthird\n"),
    "empty": lambda path: path.write_bytes(b""),
    "binary": lambda path: path.write_bytes(bytes(range(256)) * 4),
    "latin-1": lambda path: path.write_bytes("café déjà vu\n".encode("latin-1")),
    "utf-16": lambda path: path.write_bytes(codecs.BOM_UTF16_LE + "wide text\n".encode("utf-16-le")),
    "long line": long_line,
    "many lines": lambda path: path.write_text("".join(f"line {n}\n" for n in range(5000))),
    "named pipe": lambda path: os.mkfifo(path),
    "symlink loop": loop,
    "link to itself": lambda path: os.symlink(path.name, path),
    "link out": lambda path: os.symlink(outside_of(path), path),
    "link to the root": lambda path: os.symlink(".", path),
    "dangling link": lambda path: os.symlink("nowhere", path),
    "unreadable": unreadable,
    "unreadable folder": unreadable_folder,
    "image": lambda path: path.write_bytes(png()),
}

entries = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(sorted(KINDS_OF_ENTRY))), max_size=6, unique_by=lambda e: e[0]
)


@st.composite
def odd_paths(draw: st.DrawFn) -> str:
    """A path as a model might send one: a workspace entry, or one that goes up, out, nowhere."""
    workspace_entry = st.sampled_from(["src/inner.py", *NAMES])  # the first is drawn most: it always exists
    return draw(
        st.one_of(
            workspace_entry,
            workspace_entry,
            workspace_entry,
            st.sampled_from(
                [
                    "src",
                    "src/",
                    "./src/../src",
                    ".",
                    "",
                    " ",
                    "..",
                    "../..",
                    "../outside",
                    "../outside/kept.txt",
                    "{outside}/kept.txt",
                    "{root}/src/inner.py",
                    "link out/kept.txt",
                    "/",
                    "/dev/zero",
                    "/proc/self/fd/0",
                    "~",
                    "~nobody-here/x",
                    "a.py/child",
                    "src/inner.py",
                    "a\0b",
                    "x" * 5000,
                    "ä/" * 300,
                    "src//inner.py",
                    "symlink loop/x",
                    "\u202e.py",
                ]
            ),
            st.text(max_size=40),
            st.builds(lambda name, rest: f"{name}/{rest}", st.sampled_from(NAMES), st.text(max_size=10)),
        )
    )


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
texts = st.one_of(
    st.sampled_from(["inner", "def inner", "return 1", "total", "Outer.total", "sum(values)", "line 1"]),  # in the files
    st.text(max_size=60),
    st.sampled_from(["", "\0", "x" * 100_000, "   1\tdef", "\r\n", "(?<=a)b", "[", "*", "*.py", "ü"]),
)
in_range = st.integers(min_value=1, max_value=12)
numbers = st.one_of(in_range, in_range, in_range, st.integers(-5, 10_000), st.sampled_from([0, 2**31, 2**63, -(2**63)]))
globs = st.one_of(st.sampled_from(["*.py", "src/**", "*.{py,md}", "!*.md", "**/", "[", "{", "\0", "*\n*"]), texts)

SAFE_COMMANDS = [
    "true",
    "false",
    "echo hello",
    "printf '\\377\\376 not utf-8\\n'",
    "ls -la",
    "cat src/inner.py",
    "exit 3",
    "yes | head -c 200000",
    "pwd",
    "echo out; echo err >&2",
]

GOOD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "path": odd_paths(),
    "content": texts,
    "old": texts,
    "new": texts,
    "pattern": texts,
    "query": texts,
    "symbol": texts,
    "glob": globs,
    "offset": numbers,
    "limit": numbers,
    "line": numbers,
    "context": numbers,
    "replace_all": st.booleans(),
    "include_declaration": st.booleans(),
    "severity": st.sampled_from(["error", "warning", "info", "hint", "fatal"]),
    "entries": st.lists(
        st.fixed_dictionaries(
            {"content": texts, "status": st.sampled_from(["pending", "in_progress", "completed", "done"])},
            optional={"priority": st.sampled_from(["high", "low", "urgent"])},
        ),
        max_size=4,
    ),
}


@st.composite
def execute_arguments(draw: st.DrawFn) -> dict[str, Any]:
    """A harmless command, or arguments validation refuses before anything runs."""
    return draw(
        st.one_of(
            st.fixed_dictionaries({"command": st.sampled_from(SAFE_COMMANDS)}),
            st.fixed_dictionaries(
                {"command": st.sampled_from([*SAFE_COMMANDS, "sleep 5"]), "timeout": st.floats(min_value=0.05, max_value=1)}
            ),
            st.fixed_dictionaries({"command": st.sampled_from(["echo \0 x", "\0"])}),  # a NUL byte: refused
            st.fixed_dictionaries({"command": junk.filter(lambda v: not isinstance(v, str))}),
            st.fixed_dictionaries(
                {"command": st.just("true"), "timeout": st.sampled_from([0, -1, 3601, "soon", None, [], 1e308])}
            ),
            st.fixed_dictionaries({}, optional={"timeout": junk}),
        )
    )


@st.composite
def arguments_for(draw: st.DrawFn, fields: list[str]) -> dict[str, Any]:
    """Each field a right value, a wrong type or missing; sometimes a key no tool knows."""
    arguments: dict[str, Any] = {}
    for name in fields:
        choice = draw(st.sampled_from(["good"] * 6 + ["junk", "missing"]))
        if choice == "good":
            arguments[name] = draw(GOOD_VALUES.get(name, junk))
        elif choice == "junk":
            arguments[name] = draw(junk)
    if draw(st.integers(0, 4)) == 0:
        arguments[draw(st.sampled_from(["extra", "file_path", "", "\0"]))] = draw(junk)
    return arguments


class GeneratedInsight(Insight):
    """An editor whose language servers answer with places among the generated files (and out of them)."""

    def __init__(self, places: list[tuple[Path, int, int]]) -> None:
        self.places = places

    @property
    def offers(self) -> frozenset[str]:
        return frozenset(KINDS)

    def _locations(self) -> list[Location]:
        return [Location(path, line, column) for path, line, column in self.places]

    async def diagnostics(self, paths: list[Path] | None, *, wait_ms: int = 0, since: int | None = None) -> Diagnostics:
        problems = [Problem(path, line, column, 1 + line % 4, f"problem\nat {line}") for path, line, column in self.places]
        return Diagnostics(problems, generation=1)

    async def definition(self, path: Path, line: int, column: int) -> list[Location]:
        return self._locations()

    async def references(self, path: Path, line: int, column: int, *, include_declaration: bool) -> list[Location]:
        return self._locations() * 60  # past the tool's limit

    async def symbols(self, path: Path | None, query: str) -> list[Symbol]:
        return [
            Symbol(f"name{n}", "function", location, "Outer" if n % 2 else None) for n, location in enumerate(self._locations())
        ]


@dataclass
class Editor(MemoryFrontend):
    given_insight: Insight | None = None
    buffers: dict[str, str] = field(default_factory=dict)

    @property
    def insight(self) -> Insight:
        assert self.given_insight is not None
        return self.given_insight


@contextmanager
def generated_folder(made: list[tuple[str, str]]) -> Iterator[Path]:
    """A fresh folder holding ``made`` (name, kind), removed afterwards whatever its modes."""
    top = Path(tempfile.mkdtemp(prefix="elelem-robust-"))
    root = top / "project"
    root.mkdir()
    (top / "outside").mkdir()
    (top / "outside" / "kept.txt").write_text(KEPT)
    (root / "src").mkdir()
    (root / "src" / "inner.py").write_text("def inner():\n    return 1\n")
    try:
        for name, kind in made:
            path = root / name
            if path.exists() or path.is_symlink():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            KINDS_OF_ENTRY[kind](path)
        yield root
    finally:
        for folder_path, _, _ in os.walk(top):
            with_mode = Path(folder_path)
            if not with_mode.is_symlink():
                with_mode.chmod(stat.S_IRWXU)
        for name, kind in made:
            if kind.startswith("unreadable") and (root / name).exists() and not (root / name).is_symlink():
                (root / name).chmod(stat.S_IRWXU)
        shutil.rmtree(top, ignore_errors=True)


def workspace_over(root: Path, kind: str, places: list[tuple[str, int, int]], buffers: dict[str, str]) -> Workspace:
    if kind == "plain":
        return Workspace(root)
    editor = Editor(given_insight=GeneratedInsight([(root / name, line, column) for name, line, column in places]))
    for name, text in buffers.items():
        editor.open(root / name, text)
    # execute runs the harmless commands at once, outside the sandbox (its own tests are in tests/security)
    settings_now = Settings(execute="allow", sandbox="off")
    return FrontendWorkspace(
        root, lambda: settings_now, documents=editor, person=editor, progress=editor, face=editor, client="memory"
    )


def toolbox_of(workspace: Workspace) -> Toolbox:
    """The built-in tools, and the editor's where the workspace has an editor behind it."""
    return Toolbox().with_sources(EditorTools(workspace)) if isinstance(workspace, FrontendWorkspace) else Toolbox()


def placed(arguments: dict[str, Any], root: Path) -> dict[str, Any]:
    """``arguments`` with a path's ``{root}`` and ``{outside}`` made absolute: out of the project, only
    the folder beside it is named, so a call that escaped would change nothing else."""
    path = arguments.get("path")
    if not isinstance(path, str):
        return arguments
    return {**arguments, "path": path.replace("{root}", str(root)).replace("{outside}", str(root.parent / "outside"))}


async def call_within_bound(toolbox: Toolbox, name: str, arguments: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(toolbox.call(name, arguments, workspace), CALL_BOUND)
    except TimeoutError:
        pytest.fail(f"{name}({arguments!r}) took more than {CALL_BOUND:g}s")


def assert_readable(toolbox: Toolbox, name: str, arguments: dict[str, Any], result: Any) -> None:
    """A result as the model and the person get it, its failure in words made for it."""
    assert isinstance(result, dict) and isinstance(result.get("ok"), bool), f"{name}({arguments!r}) gave {result!r}"
    encode(result)  # the tool message is its JSON
    event = toolbox.event("call_1", name, arguments, result)
    assert isinstance(event["title"], str)
    if not result["ok"]:
        assert isinstance(result["error"], str) and result["error"].strip(), f"{name}({arguments!r}): empty error"
        assert UNEXPECTED not in result["error"], f"{name}({arguments!r}) hit a bug: {result['error']}"
    else:
        assert isinstance(event["summary"], str)


BUILT_IN = ["read", "write", "edit", "list", "grep", "plan"]
EDITORS = ["diagnostics", "definition", "references", "symbols"]
FIELDS = {
    "read": ["path", "offset", "limit"],
    "write": ["path", "content"],
    "edit": ["path", "old", "new", "replace_all"],
    "list": ["path"],
    "grep": ["pattern", "path", "glob", "context"],
    "plan": ["entries"],
    "diagnostics": ["path", "severity"],
    "definition": ["path", "symbol", "line"],
    "references": ["path", "symbol", "line", "include_declaration"],
    "symbols": ["path", "query"],
}

# Inputs that once failed, tried on every run beside the generated ones.
UNREADABLE = (".hidden", "with space.md")  # a file and a folder the person may not read (where modes bind)
KNOWN = {
    "read": [{"path": "src"}, {"path": "."}, *({"path": p} for p in UNREADABLE)],  # a folder: it ended the whole turn
    "grep": [{"pattern": "\0"}, {"pattern": "x", "glob": "\0"}, *({"pattern": "x", "path": p} for p in UNREADABLE)],
    "list": [{"path": p} for p in UNREADABLE],
    # the folder beside the project: by its absolute path, by going up, through a link
    "write": [{"path": p, "content": "escaped"} for p in ("{outside}/kept.txt", "../outside/new.txt", "-rf/kept.txt")],
    "edit": [{"path": p, "old": "beside", "new": "escaped"} for p in ("{outside}/kept.txt", "-rf/kept.txt", *UNREADABLE)],
}
PLAIN_FOLDER = {
    "made": [("a.py", "folder"), ("-rf", "link out"), (".hidden", "unreadable"), ("with space.md", "unreadable folder")],
    "kind": "plain",
    "places": [],
    "buffers": {},
}

workspaces = st.fixed_dictionaries(
    {
        "made": entries,
        "kind": st.sampled_from(["plain", "editor"]),
        "places": st.lists(
            st.tuples(st.sampled_from([*NAMES, "src/inner.py", "../outside.py"]), st.integers(0, 6000), st.integers(0, 300)),
            max_size=4,
        ),
        "buffers": st.dictionaries(st.sampled_from([*NAMES, "src/inner.py"]), st.text(max_size=40), max_size=2),
    }
)


def run_calls(given_workspace: dict[str, Any], name: str, calls: list[dict[str, Any]]) -> None:
    with generated_folder(given_workspace["made"]) as root:
        workspace = workspace_over(root, given_workspace["kind"], given_workspace["places"], given_workspace["buffers"])
        toolbox = toolbox_of(workspace)

        async def play() -> None:
            for arguments in calls:
                arguments = placed(arguments, root)
                result = await call_within_bound(toolbox, name, arguments, workspace)
                assert_readable(toolbox, name, arguments, result)

        asyncio.run(play())
        outside = root.parent / "outside"
        assert [entry.name for entry in outside.iterdir()] == ["kept.txt"] and (outside / "kept.txt").read_text() == KEPT


# No example database: nothing is written in the clone, and every run draws afresh.
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def test_the_generated_fields_are_those_the_tools_take():
    """A field renamed or added in an argument model would otherwise go untested."""
    for name in [*BUILT_IN, "execute"]:
        tool = Toolbox().find(name)
        assert tool is not None and sorted(tool.arguments.model_fields) == sorted(FIELDS.get(name, ["command", "timeout"]))
    for name in EDITORS:
        tool = EDITOR_TOOLBOX.find(name)
        assert tool is not None and sorted(tool.arguments.model_fields) == sorted(FIELDS[name]), name


@pytest.mark.parametrize("name", BUILT_IN + EDITORS)
def test_every_tool_answers_generated_arguments_with_a_result_the_model_can_read(name):
    @PROPERTY
    @given(given_workspace=workspaces, calls=st.lists(arguments_for(FIELDS[name]), min_size=1, max_size=3))
    def check(given_workspace: dict[str, Any], calls: list[dict[str, Any]]) -> None:
        if name in EDITORS:
            given_workspace = {**given_workspace, "kind": "editor"}  # offered only where an editor answers
        run_calls(given_workspace, name, calls)

    if name in KNOWN:
        check = example(given_workspace=PLAIN_FOLDER, calls=KNOWN[name])(check)
    check()


@PROPERTY
@given(given_workspace=workspaces, calls=st.lists(execute_arguments(), min_size=1, max_size=2))
def test_execute_answers_generated_arguments_with_a_result_the_model_can_read(given_workspace, calls):
    run_calls({**given_workspace, "kind": "editor"}, "execute", calls)


@PROPERTY
@given(
    given_workspace=workspaces,
    name=st.one_of(st.sampled_from(["", "Read", "bash", "read ", "\0", "list_files", "mcp__x"]), st.text(max_size=10)),
    arguments=st.dictionaries(st.text(max_size=8), junk, max_size=3),
)
def test_an_unknown_or_aliased_tool_name_is_answered_too(given_workspace, name, arguments):
    if name in ("bash", "sh", "exec"):
        arguments = {"command": "true"}  # an alias of execute: a harmless command
    run_calls(given_workspace, name, [arguments])


@pytest.mark.parametrize("kind", ["plain", "editor"])
async def test_reading_a_folder_says_to_list_it(tmp_path, kind):
    """The case that ended whole turns: the model reads ``src``, a folder."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    workspace = workspace_over(tmp_path, kind, [], {})
    for path in ("src", "src/", "."):
        result = await Toolbox().call("read", {"path": path}, workspace)
        shown = "." if path == "." else "src"
        assert result == {"ok": False, "error": f"{shown} is a directory: use list to see the files in it"}


PERMISSIONS_BINDING = """
import test_tool_robustness as generated
for name in ("read", "list", "grep", "write", "edit"):
    generated.test_every_tool_answers_generated_arguments_with_a_result_the_model_can_read(name)
"""


def test_unreadable_files_are_answered_too_where_file_modes_bind(tmp_path):
    """Root reads through any mode, so where the suite runs as root (a CI container) the unreadable
    files and folders above are read like any other: the file tools' properties once more, in a
    process without the capabilities that bypass file modes."""
    run = subprocess.run(
        [*without_root_powers(), sys.executable, "-c", PERMISSIONS_BINDING],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ELELEM_ROBUSTNESS_EXAMPLES": "8", "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "hypothesis")},
    )
    assert run.returncode == 0, run.stderr[-3000:]
