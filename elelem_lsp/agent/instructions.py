"""The system prompt: its own words (who the agent is, where it works, how to work), then AGENTS.md.

Bridges a workspace to the first message of every request (``system_prompt``). The words are
written for this agent and its tools (their names and limits are the tools' descriptions);
the project's AGENTS.md follows them (``project_instructions``), cut to the room the budget
leaves it. It stays the same from turn to turn in a folder but for the date, so a provider
that caches the start of a conversation keeps the cache: what changes each turn (the editor, git's status) comes with the
turn instead (``editor_context``). Its size is measured by ``bench/context.py``.

A small window gets ``compact_instructions``: the same rules in a few lines, so that the fixed part
of each request (this prompt and the tool definitions) leaves the window to the conversation.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

from .budget import Counter, cut_text, estimate_tokens
from .workspace import Workspace, WorkspaceError

AGENTS_MD = "AGENTS.md"

WORKING = """\
How to work:
- Look before you change: read the files involved (with offset and limit for a long one) and grep \
for where a name is defined and used. Do not guess at files, functions, options or APIs you have \
not seen in the workspace or been shown.
- Change files with edit, replacing small exact pieces of text you have just read; use write only \
for new files or complete rewrites.
- Keep each change small and to the point of the request: do not reformat, rename or tidy what \
you were not asked to touch.
- After changing code, check it: run the project's tests, linter or type checker with execute when \
it has them, read what they report, and fix what you broke.
- When a request is unclear, a check fails in a way you cannot explain, or you are unsure of a \
fact, say so plainly rather than guess; ask when the person's answer decides what to do.
- Finish with a short answer: what you changed and where, how you checked it, and what is left."""


COMPACT_WORKING = (
    "Read before changing; edit small exact pieces, write only new files; run the checks with execute; "
    "say when unsure. End with what you changed and checked."
)


def shell_name() -> str:
    return Path(os.environ["SHELL"]).name if os.environ.get("SHELL") else "unknown"


def environment(today: datetime.date | None = None) -> str:
    """The lines on the machine the agent works on: its OS, the person's shell, today's date."""
    date = (today or datetime.date.today()).isoformat()
    return f"Environment: {platform.system()} {platform.release()}, shell {shell_name()}, today is {date}."


def instructions(client: str, root: Path) -> str:
    """The system prompt before the project's own instructions."""
    return (
        f"You are a coding agent working in a software project through the person's {client}.\n"
        f"Workspace root: {root}. Tools take paths relative to it.\n"
        f"{environment()}\n"
        "Your file changes reach the person as editor edits they can review and undo; commands may need their "
        "approval. Each message of theirs may end with the editor's context: the file they are in, their "
        "selection, the other open files and the state of git.\n\n"
        f"{WORKING}"
    )


def compact_instructions(client: str, root: Path) -> str:
    """The system prompt of a small window: who, where, and the rules of ``WORKING`` in brief."""
    date = datetime.date.today().isoformat()
    return (
        f"You are a coding agent in the person's {client}. Workspace: {root} (tool paths are relative to it). "
        f"{platform.system()}, {shell_name()}, {date}.\n{COMPACT_WORKING}"
    )


async def system_prompt(
    workspace: Workspace, compact: bool = False, room: int | None = None, count: Counter = estimate_tokens
) -> str:
    """The system prompt, the project's AGENTS.md after it; ``compact``: a small window's. AGENTS.md
    takes at most ``room`` tokens (counted by ``count``), cut with a marker past it."""
    written = compact_instructions if compact else instructions
    project = await project_instructions(workspace)
    return written(workspace.client, workspace.root) + (cut_text(project, room, count) if room else project)


async def project_instructions(workspace: Workspace) -> str:
    """AGENTS.md, read as the tools read a file: confined to the workspace, an unsaved buffer first.

    When it cannot be read (it leads outside, it is a folder, it is not text) the prompt
    says so and why, so neither the model nor the person takes its absence for silence.
    """
    try:
        text = await workspace.read_text(workspace.resolve(AGENTS_MD))
    except (WorkspaceError, OSError) as error:
        if not os.path.lexists(workspace.root / AGENTS_MD):
            return ""  # no AGENTS.md: nothing to say
        reason = workspace.describe(error) if isinstance(error, OSError) else str(error)
        return f"\n\n({AGENTS_MD} was skipped: {reason})"
    return f"\n\n# {AGENTS_MD}\n\n{text}"
