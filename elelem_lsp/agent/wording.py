"""The sentences a person reads about a turn, said once for every client.

A tool call's title (``Read src/app.py``; ``Ran npm test`` once it worked), what the history
left out to fit the budget, what a compaction did, the checkpoints kept and what a rewind did
(``elelem.checkpoints`` and ``elelem.rewind``, for the terminal and ACP's ``/rewind``), the footer
ending a turn (``done — scripted · llama3 · 2 steps``), and ``shorten``, the one way a text is
put on one line and cut to a length. The events and a turn's answer carry these words
(``events``); the LSP, ACP and terminal faces and the editor clients show them as they are.
"""

from __future__ import annotations

import json
from typing import Any

TITLE_LENGTH = 200
ARGUMENT_LENGTH = 48  # each argument of a call without a sentence of its own, at most
# A built-in tool's verbs, before and after it ran, and the argument its sentence names.
SENTENCES: dict[str, tuple[str, str, str]] = {
    "read": ("Read", "Read", "path"),
    "write": ("Write", "Wrote", "path"),
    "edit": ("Edit", "Edited", "path"),
    "list": ("List", "Listed", "path"),
    "execute": ("Run", "Ran", "command"),
    "grep": ("Search for", "Searched for", "pattern"),
}


def shorten(text: str, length: int) -> str:
    """``text`` on one line (every run of whitespace one space), cut to ``length`` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


def counted(number: int, noun: str) -> str:
    """``3 earlier turns``, ``1 earlier turn``, ``12,000 tokens``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def call_title(tool: str, arguments: dict[str, Any], done: bool = False) -> str:
    """A call as a person reads it: ``Read src/app.py``, ``Run npm test`` (``Ran npm test`` when
    ``done``), ``Search for "TODO" in src``; an MCP tool (``server__tool``) or one without a
    sentence as ``github: create_issue title="Bug"``. ``tool`` is the tool's own name (not an alias)."""
    if tool == "plan":  # the plan itself follows as a ``plan`` event, its entries shown as a checklist
        return "Updated the plan" if done else "Plan"
    sentence = SENTENCES.get(tool)
    main = arguments.get(sentence[2]) if sentence else None
    if sentence is None or (main is None and tool != "list") or (main is not None and not isinstance(main, str)):
        server, _, name = tool.partition("__")
        shown = f"{server}: {name}" if server and name else tool
        return shorten(f"{shown} {brief_arguments(arguments)}", TITLE_LENGTH)
    verb = sentence[1] if done else sentence[0]
    if tool == "grep":
        where = arguments.get("path")
        main = json.dumps(main, ensure_ascii=False) + (f" in {where}" if isinstance(where, str) and where else "")
    return shorten(f"{verb} {main or '.'}", TITLE_LENGTH)


def brief_arguments(arguments: dict[str, Any]) -> str:
    """``path="a.py", old="x"``: each argument, its value cut short."""
    shown = []
    for key, value in arguments.items():
        text = json.dumps(value, ensure_ascii=False, default=repr).replace("\\n", "⏎")  # a plugin may send any object
        shown.append(f"{key}={text if len(text) <= ARGUMENT_LENGTH else text[: ARGUMENT_LENGTH - 1] + '…'}")
    return ", ".join(shown)


def context_text(left_out: int, shortened: int, budget: int) -> str:
    """``3 earlier turns left out and 2 tool results shortened to fit 32,000 tokens``."""
    parts = [counted(left_out, "earlier turn") + " left out"] if left_out else []
    if shortened:
        parts.append(counted(shortened, "tool result") + " shortened")
    return f"{' and '.join(parts) or 'the history was trimmed'} to fit {budget:,} tokens"


def compaction_text(turns: int, tokens_before: int | None = None, tokens_after: int | None = None) -> str:
    """``12 turns compacted into a summary (30,000 → 4,000 tokens)``, without the figures when not known."""
    if not turns:
        return "nothing to compact: the last turns are always kept as they are"
    figures = f" ({tokens_before:,} → {tokens_after:,} tokens)" if tokens_before is not None and tokens_after is not None else ""
    return f"{counted(turns, 'turn')} compacted into a summary{figures}"


def turn_footer(provider: Any, model: Any, steps: Any, *, cancelled: bool, failed: bool) -> str:
    """``done — scripted · llama3 · 2 steps``: how the turn ended, who answered and in how many
    steps (each part left out when not known: a stored turn from before steps were kept)."""
    ending = "cancelled" if cancelled else "failed" if failed else "done"
    about = [part for part in (provider, model) if isinstance(part, str) and part]
    if isinstance(steps, int) and not isinstance(steps, bool):
        about.append(counted(steps, "step"))
    return f"{ending} — {' · '.join(about)}" if about else ending


def checkpoint_lines(listing: list[dict[str, Any]]) -> list[str]:
    """Each kept turn, newest first: its number, when, its prompt, then the files it changed."""
    if not listing:
        return ["no turn has changed files in this folder yet (or checkpoints are off)"]
    lines = []
    for checkpoint in listing:
        when = str(checkpoint["at"])[:16].replace("T", " ")
        lines.append(f"turn {checkpoint['turn']:<4} {when}  {shorten(checkpoint['prompt'] or '', 70)}")
        lines += [f"    {f['change']:<8} {f['path']}" for f in checkpoint["files"]]
    return lines


def conflict_lines(result: dict[str, Any]) -> list[str]:
    return [f"    {conflict['path']}: {conflict['reason']}" for conflict in result["conflicts"]]


def rewind_text(result: dict[str, Any]) -> str:
    """``rewound turns 3–5 and the conversation``, or ``not rewound: 2 file(s) changed since turn 3``."""
    if not result["rewound"]:
        return f"not rewound: {len(result['conflicts'])} file(s) changed since turn {result['turn']}"
    turns = result["turns"]
    which = f"turn {turns[0]}" if len(turns) == 1 else f"turns {turns[0]}–{turns[-1]}"
    return f"rewound {which}" + (" and the conversation" if result["conversation"] else "")


def rewind_lines(result: dict[str, Any], undo_hint: str) -> list[str]:
    """What a rewind did (``undo_hint`` is formatted with the turn that undoes it)."""
    if not result["rewound"]:
        return [rewind_text(result) + ":", *conflict_lines(result)]
    lines = [rewind_text(result) + ":"]
    lines += [f"    {'restored' if f['action'] == 'write' else 'deleted':<8} {f['path']}" for f in result["files"]]
    if result.get("undo"):
        lines.append(undo_hint.format(turn=result["undo"]))
    return lines
