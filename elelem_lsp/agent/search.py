"""Searching and listing a workspace's files: ripgrep's walk and matcher bridged to ``grep`` and ``list``.

Why ripgrep (the ``ripgrep`` wheel ships the ``rg`` binary into the environment): it walks
20,000 files on every core faster than any walk written in Python, reads ``.gitignore`` and
``.ignore`` as developers' own tools do (here even outside a git repository), skips binary
files, never follows a symbolic link, and matches with Rust's regex engine, which runs in
linear time, so no pattern can hang the server. There is no pure-Python fallback on purpose:
a second engine would be a second regex dialect for the model to be told about and a second
reading of ignore rules; without ``rg`` the tools say how to install it.

Every file is searched: results are capped, the totals (files searched, matching lines) never
are. Unsaved editor buffers are searched as the editor holds them: each is fed to ``rg`` on
stdin, so one engine judges every line, and its copy on disk is left out of the walk. Symbolic
links that lead out of the workspace are not followed (``rg`` never follows any); a walk of the
folders counts them so the result can say what was skipped and why.

``rg`` runs as a subprocess read by the event loop, so other requests are answered while it
works; cancelling the caller kills it and ends the walk that counts links.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import shutil
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

# Folders nobody means when searching a project, ignored by rule or not.
SKIPPED = (".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache")
LINE_LIMIT = 500  # characters of a matching line shown
SKIPPED_NAMED = 10  # skipped links named in a result
CHUNK = 1 << 18

WALK_OPTIONS = [
    "--no-config",
    "--hidden",  # dotfiles such as .github/ are part of a project; .git is excluded below
    "--no-require-git",  # a .gitignore counts even before `git init`
    *(f"--glob=!{name}" for name in SKIPPED),
]
MATCH_OPTIONS = [
    "--no-heading",
    "--with-filename",
    "--line-number",
    "--null",
    "--color=never",
    f"--max-columns={LINE_LIMIT}",
    "--max-columns-preview",
    "--stats",
]
STATS = re.compile(rb"^(\d+) (matched lines|files searched)$", re.MULTILINE)
NUMBERED = re.compile(rb"(\d+)([:-])")  # after the NUL: a matching line's number and ":", a context line's and "-"


class SearchFailure(Exception):
    """A search that could not run: a bad pattern, or no ``rg``."""


@dataclass
class Skipped:
    """Entries of the walk left out, and why."""

    paths: list[str] = field(default_factory=list)

    def report(self) -> dict[str, object]:
        if not self.paths:
            return {}
        named = ", ".join(self.paths[:SKIPPED_NAMED]) + (", ..." if len(self.paths) > SKIPPED_NAMED else "")
        return {
            "skipped": len(self.paths),
            "skipped_reason": f"symbolic links that lead outside the workspace are not followed: {named}",
        }


@functools.cache
def rg_binary() -> str:
    """The ``rg`` of this environment (the ``ripgrep`` wheel), else the one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rg")
    if found is None:
        raise SearchFailure("grep and list need ripgrep: pip install ripgrep")
    return found


def links_out(root: Path, top: Path, stop: threading.Event) -> Skipped:
    """Symbolic links below ``top`` whose target is outside ``root``, workspace-relative, sorted;
    the walk ends early once ``stop`` is set (its caller was cancelled)."""
    skipped = Skipped()
    folders = [top]
    while folders and not stop.is_set():
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue  # an unreadable folder: rg reports nothing from it either
        for entry in entries:
            if entry.is_symlink():
                try:
                    target = Path(entry.path).resolve()
                except (OSError, RuntimeError):
                    continue  # a loop of links leads nowhere, and rg does not follow it
                if target != root and root not in target.parents:
                    skipped.paths.append(Path(entry.path).relative_to(root).as_posix())
            elif entry.name not in SKIPPED and entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
    skipped.paths.sort()
    return skipped


def glob_literal(name: str) -> str:
    """A workspace-relative path as an rg glob that matches only it."""
    return "/" + re.sub(r"([\\*?\[\]{}!])", r"\\\1", name)


async def run_rg(arguments: list[str], cwd: Path, stdin: bytes | None, consume) -> tuple[int, bytes]:
    """Run rg, handing its output to ``consume`` chunk by chunk; its exit code and error text.

    Cancelling the caller kills rg.
    """
    process = await asyncio.create_subprocess_exec(
        rg_binary(),
        *arguments,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout and process.stderr
    errors = asyncio.ensure_future(process.stderr.read())
    try:
        if stdin is not None:
            assert process.stdin
            process.stdin.write(stdin)
            process.stdin.close()
        while chunk := await process.stdout.read(CHUNK):
            consume(chunk)
        await process.wait()
        return process.returncode or 0, await errors
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        errors.cancel()
        raise


class Kept:
    """Which lines of a search to show: every matching line up to ``limit``, each with the lines
    of context around it, and after the last one shown its lines of context that follow."""

    def __init__(self, limit: int, context: int) -> None:
        self.limit = limit
        self.context = context
        self.matches = 0
        self.last: tuple[str, int] = ("", 0)  # the file and line of the last match shown
        self.full = False  # nothing more will be kept

    def offer(self, path: str, line: int, is_match: bool) -> bool:
        """Whether to show this line (``is_match`` or a line of context), lines offered in order."""
        if self.full:
            return False
        if self.matches < self.limit:
            if is_match:
                self.matches += 1
                self.last = (path, line)
            return True  # context before a match that will be shown, or after one that was
        if not is_match and self.last[0] == path and line <= self.last[1] + self.context:
            return True
        self.full = True
        return False


class Found(TypedDict):
    """One line of a search's answer: a match, or (``context`` set) a line around one."""

    path: str
    line: int
    text: str
    context: NotRequired[bool]


class Matches:
    """Matching lines (and their context) parsed from rg's output, the first ``limit`` matches kept,
    the totals counted by rg."""

    def __init__(self, limit: int, context: int, name: str | None = None) -> None:
        self.kept = Kept(limit, context)
        self.name = name  # the path to report for a buffer read on stdin
        self.found: list[Found] = []
        self.pending = b""
        self.statistics = bytearray()  # rg's closing lines, which carry the totals
        self.files_searched = 0
        self.matched_lines = 0

    def consume(self, chunk: bytes) -> None:
        data = self.pending + chunk
        if self.kept.full:
            self.pending = data[-4096:]  # only the statistics at the very end are still wanted
            return
        lines = data.split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            path, nul, rest = line.partition(b"\0")
            numbered = NUMBERED.match(rest)
            if not nul or not numbered:
                self.statistics += line + b"\n"  # the totals, or the "--" between groups of context
                continue
            name, number, is_match = self.name or path.decode("utf-8", "replace"), int(numbered[1]), numbered[2] == b":"
            if self.kept.offer(name, number, is_match):
                text = rest[numbered.end() :].decode("utf-8", "replace").rstrip("\r")[:LINE_LIMIT]
                found: Found = {"path": name, "line": number, "text": text}
                if not is_match:
                    found["context"] = True
                self.found.append(found)

    def finish(self, code: int, errors: bytes) -> None:
        closing = bytes(self.statistics + self.pending)
        if code == 2 and not STATS.search(closing):
            message = errors.decode("utf-8", "replace").strip()
            if "glob" in message:
                raise SearchFailure(f"bad glob: {message}")
            if "regex" in message or "error:" in message:
                raise SearchFailure(f"bad pattern: {message}")
            raise SearchFailure(f"rg failed: {message}")
        for number, what in STATS.findall(closing):
            if what == b"matched lines":
                self.matched_lines = int(number)
            else:
                self.files_searched = int(number)


def refuse_unreadable(root: Path, top: Path) -> None:
    """rg counts an unreadable starting point as one more error among many: refuse it outright, as read does."""
    try:
        if top.is_dir():
            os.scandir(top).close()
        else:
            os.close(os.open(top, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as error:
        raise SearchFailure(f"{top.relative_to(root).as_posix()}: {error.strerror or error}") from None


async def grep(
    root: Path, top: Path, pattern: str, buffers: dict[Path, str], *, limit: int, context: int = 0, glob: str | None = None
) -> dict[str, object]:
    """Lines matching ``pattern`` in every file below ``top`` (or in the file ``top``), with
    ``context`` lines around each; only files matching ``glob`` (rg's ``--glob``) when given.

    ``buffers`` maps files to the text the editor holds; that text is searched instead of the disk's.
    """
    if top not in buffers:
        refuse_unreadable(root, top)
    arguments = [*WALK_OPTIONS, *MATCH_OPTIONS, f"--context={context}", f"--regexp={pattern}"]
    runs: list[tuple[Matches, list[str], bytes | None]] = []
    names = {path: path.relative_to(root).as_posix() for path in buffers}
    if top not in buffers:
        excluded = [f"--glob={'!' + glob_literal(name)}" for name in names.values()]
        where = [] if top == root else ["--", top.relative_to(root).as_posix()]
        chosen = [f"--glob={glob}"] if glob else []
        runs.append((Matches(limit, context), [*arguments, *chosen, *excluded, *where], None))
    if glob and buffers and top not in buffers:  # a file named outright is searched whatever the glob, as rg does
        buffers = {path: buffers[path] for path in await matching_glob(root, list(buffers), glob)}
    for path, text in buffers.items():
        runs.append((Matches(limit, context, names[path]), [*arguments, "-"], text.encode("utf-8")))
    stop = threading.Event()
    walk = asyncio.ensure_future(asyncio.to_thread(links_out, root, top, stop) if top.is_dir() else _nothing_skipped())
    try:
        outcomes = await asyncio.gather(*(run_rg(args, root, stdin, m.consume) for m, args, stdin in runs))
        skipped = await walk
    finally:
        stop.set()
        walk.cancel()
    for (matches, _, _), (code, errors) in zip(runs, outcomes):
        matches.finish(code, errors)
    kept = Kept(limit, context)
    ordered = sorted((m for run in runs for m in run[0].found), key=lambda m: (m["path"], m["line"]))
    found = [m for m in ordered if kept.offer(m["path"], m["line"], "context" not in m)]
    matched = sum(run[0].matched_lines for run in runs)
    return {
        "matches": found,
        "files_searched": sum(run[0].files_searched for run in runs),
        "matches_found": matched,
        "matches_shown": kept.matches,
        "truncated": matched > kept.matches,
        **skipped.report(),
    }


async def matching_glob(root: Path, paths: list[Path], glob: str) -> list[Path]:
    """Those of ``paths`` (files in the workspace) that rg's ``--glob`` would search: rg itself
    is asked, listing their folders, so the glob means what it means in the walk. A file that is
    only an editor buffer, with nothing on disk, is not listed, and so not searched."""
    folders = sorted({path.parent.relative_to(root).as_posix() for path in paths})
    output = bytearray()
    listing = ["--files", "--null", "--no-config", "--hidden", "--no-ignore", "--max-depth=1", f"--glob={glob}"]
    code, errors = await run_rg([*listing, "--", *folders], root, None, output.extend)
    if code == 2 and not output:
        raise SearchFailure(f"bad glob: {errors.decode('utf-8', 'replace').strip()}")
    listed = {(root / name.decode("utf-8", "replace")) for name in bytes(output).split(b"\0") if name}
    return [path for path in paths if path in listed]


async def list_files(root: Path, top: Path, *, limit: int) -> dict[str, object]:
    """Every file below ``top`` that grep would search, the first ``limit`` by path, and the total."""
    refuse_unreadable(root, top)
    output = bytearray()
    where = [] if top == root else ["--", top.relative_to(root).as_posix()]
    stop = threading.Event()
    walk = asyncio.ensure_future(asyncio.to_thread(links_out, root, top, stop))
    try:
        code, errors = await run_rg(["--files", "--null", *WALK_OPTIONS, *where], root, None, output.extend)
        skipped = await walk
    finally:
        stop.set()
        walk.cancel()
    if code == 2 and not output:
        raise SearchFailure(f"rg failed: {errors.decode('utf-8', 'replace').strip()}")
    files = sorted(name.decode("utf-8", "replace") for name in bytes(output).split(b"\0") if name)
    return {"files": files[:limit], "total": len(files), "truncated": len(files) > limit, **skipped.report()}


async def _nothing_skipped() -> Skipped:
    return Skipped()
