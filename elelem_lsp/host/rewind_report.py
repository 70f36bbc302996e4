"""What the checkpoints are and what a rewind did, as lines for a person.

The answers of ``elelem.checkpoints`` and ``elelem.rewind`` (``rewinding``) in words, shared by
``elelem-lsp rewind``, chat's ``/rewind`` and ACP's ``/rewind`` (a terminal strips what it must
not print)."""

from __future__ import annotations

from typing import Any

from .transcript import preview


def checkpoint_lines(listing: list[dict[str, Any]]) -> list[str]:
    """Each kept turn, newest first: its number, when, its prompt, then the files it changed."""
    if not listing:
        return ["no turn has changed files in this folder yet (or checkpoints are off)"]
    lines = []
    for checkpoint in listing:
        when = str(checkpoint["at"])[:16].replace("T", " ")
        lines.append(f"turn {checkpoint['turn']:<4} {when}  {preview(checkpoint['prompt'] or '', 70)}")
        lines += [f"    {f['change']:<8} {f['path']}" for f in checkpoint["files"]]
    return lines


def conflict_lines(result: dict[str, Any]) -> list[str]:
    return [f"    {conflict['path']}: {conflict['reason']}" for conflict in result["conflicts"]]


def rewind_lines(result: dict[str, Any], undo_hint: str) -> list[str]:
    """What a rewind did (``undo_hint`` is formatted with the turn that undoes it)."""
    if not result["rewound"]:
        return [f"not rewound: {len(result['conflicts'])} file(s) changed since turn {result['turn']}:", *conflict_lines(result)]
    turns = result["turns"]
    which = f"turn {turns[0]}" if len(turns) == 1 else f"turns {turns[0]}–{turns[-1]}"
    lines = [f"rewound {which}" + (" and the conversation" if result["conversation"] else "") + ":"]
    lines += [f"    {'restored' if f['action'] == 'write' else 'deleted':<8} {f['path']}" for f in result["files"]]
    if result.get("undo"):
        lines.append(undo_hint.format(turn=result["undo"]))
    return lines
