"""Answers as models really write them, read back into edits: line breaks of another system."""

from __future__ import annotations

from elelem_lsp.nextedit.predictor import predict
from elelem_lsp.nextedit.zeta import EDITABLE_END, EDITABLE_START, apply

LINES = ["def f(factor):", "    a = scale", "    return a * scale"]
RENAMED = [line.replace("scale", "factor") for line in LINES]


async def edits_for(answer: str):
    async def ask(prompt: str) -> str:
        return answer

    return await predict(LINES, "a.py", 0, 12, "", ask)


async def test_an_answer_with_crlf_line_breaks_gives_the_same_edits():
    plain = await edits_for(f"{EDITABLE_START}\n" + "\n".join(RENAMED) + f"\n{EDITABLE_END}")
    crlf = await edits_for(f"{EDITABLE_START}\r\n" + "\r\n".join(RENAMED) + f"\r\n{EDITABLE_END}")
    assert apply(LINES, plain) == RENAMED
    assert crlf == plain
