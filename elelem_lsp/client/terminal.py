"""Terminal: how a turn looks in a terminal, and how the person answers there.

Saying is streamed as text, thinking dimmed, each tool call as one line of its title and
outcome ``+ Read README.md → 132 lines``, a ``context`` or ``compacted`` event as its text, a
``plan`` as a checklist, the host's ``usage`` as a dimmed row at the turn's end and the
answer's footer (``done — scripted · 2 steps``) under it.
When stdout is not a terminal, everything but the reply goes to stderr so that
``elelem-lsp ask ... > file`` captures the reply alone; an error goes to stderr. Model text never drives the terminal:
control characters (escape sequences, OSC clipboard writes, C1 codes, CR, BEL)
are removed from everything printed, newline and tab kept. Questions
(permission, the human provider) are asked on the terminal; with nobody there
they are refused, never left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from ..agent.wording import shorten
from ..host.permission import RUN_QUESTION

DIM, RESET = "\033[2m", "\033[0m"
REPLY_CUE = "your reply> "
Reader = Callable[[str], Awaitable["str | None"]]
# Whole escape sequences first (CSI; OSC, DCS, APC and PM up to BEL or ST; other ESC codes), so no
# "[31m" residue is left; then any control character but newline and tab, C1 included.
ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_X][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# An escape sequence known to be over: OSC and the like only once their BEL or ST has come.
# (The last branch leaves out the introducers of the others: "[", "]", "P", "X", "^" and "_".)
FINISHED_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_X][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-OQ-WYZ\\`-~]")
ARGUMENT_WIDTH = 100


def printable(text: str) -> str:
    """``text`` with nothing left that a terminal would obey."""
    return CONTROL.sub("", ESCAPE_SEQUENCE.sub("", text))


def unfinished_escape(text: str) -> int:
    """Where an escape sequence that the next streamed piece may finish starts in ``text``
    (``len(text)`` when there is none): held back, it is cleaned whole, as the printed reply is."""
    start = text.rfind("\x1b")
    if start == -1 or FINISHED_ESCAPE.match(text, start):
        return len(text)
    return start


def one_line(text: str, width: int = ARGUMENT_WIDTH) -> str:
    return shorten(printable(text), width)


CHECKED_LINES = 10  # of a ``checked`` event's problems or command output, under its row


def checked_lines(event: dict[str, Any]) -> str:
    """``✓ checked app.py: 1 new error`` and, indented below, the new problems or the end of the
    check command's output."""
    problems = [p for p in event.get("newProblems") or [] if isinstance(p, dict)]
    details = [
        f"{p.get('path')}:{p.get('line')}:{p.get('column')} {p.get('severity')}: {one_line(str(p.get('message')), 300)}"
        for p in problems
    ]
    output = event.get("output")
    if isinstance(output, str) and output.strip():
        details += output.strip().splitlines()[-CHECKED_LINES:]
    shown = [f"    {line}\n" for line in details[:CHECKED_LINES]]
    if len(details) > CHECKED_LINES:
        shown.append(f"    ... and {len(details) - CHECKED_LINES} more\n")
    return f"✓ {one_line(str(event.get('text') or 'checked'), 300)}\n" + "".join(shown)


def usage_row(usage: dict[str, Any]) -> str | None:
    """The dim row ending a turn, for the host's ``usage`` (a live event or a stored turn's, with its
    ``text``); none for a provider's own (no ``text``) or a turn no provider counted (the stub, a
    request that failed: nothing worth a row)."""
    counted = usage.get("inputTokens") or usage.get("outputTokens")
    return one_line(usage["text"], 300) + "\n" if counted and isinstance(usage.get("text"), str) else None


# The figures of elelem.context besides the conversation's, each shown under its name when there are any.
SUGGESTION_FIGURES = (("completion", "inline completion"), ("nextEdit", "next edit"))


def usage_lines(context: dict[str, Any]) -> list[str]:
    """``/usage`` from ``elelem.context``: the conversation's figures and the context in the
    server's words (``conversationText``), then inline completion's and next edit's (their
    ``text``) when they showed or asked for anything."""
    lines = [f"this conversation: {context['usage']['conversationText']}"]
    for key, name in SUGGESTION_FIGURES:
        figures = context.get(key)
        if (
            isinstance(figures, dict)
            and (figures.get("shown") or figures.get("requests"))
            and isinstance(figures.get("text"), str)
        ):
            lines.append(f"{name}: {figures['text']}")
    return lines


PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]"}  # any other status is pending: "[ ]"


def plan_lines(event: dict[str, Any]) -> str:
    """``Plan:`` and one ``[x]``/``[~]``/``[ ]`` line per entry: each plan event is the whole plan."""
    entries = [e for e in event.get("entries") or [] if isinstance(e, dict)]
    rows = [f"  {PLAN_MARKS.get(str(e.get('status')), '[ ]')} {one_line(str(e.get('content') or ''), 300)}\n" for e in entries]
    return "Plan:\n" + "".join(rows)


class Terminal:
    def __init__(
        self,
        *,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
        interactive: bool | None = None,
        assume_yes: bool = False,
        verbose: bool = False,
        reader: Reader | None = None,
    ) -> None:
        self.out = out
        self.err = err
        self.live = out.isatty()  # a person watches stdout: stream there, in colour
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.assume_yes = assume_yes
        self.verbose = verbose
        self.streamed = ""  # the saying text of the current fetch, as shown
        self.held = ""  # streamed text from an escape sequence that may go on in the next piece
        self.at_line_start = True
        self.last_kind = ""
        self.open_call: str | None = None  # the id of the tool call whose line awaits its outcome
        self.reader = reader or read_on_a_thread
        self.questions: set[asyncio.Future[str | None]] = set()

    # -- a turn ---------------------------------------------------------------
    @property
    def events_out(self) -> TextIO:
        return self.out if self.live else self.err

    def write(self, text: str, dim: bool = False) -> None:
        text = printable(text)
        if not text:
            return
        stream = self.events_out
        stream.write(f"{DIM}{text}{RESET}" if dim and self.live else text)
        stream.flush()
        self.at_line_start = text.endswith("\n")
        self.open_call = None

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def show(self, value: dict[str, Any]) -> None:
        """Take one ``$/progress`` value of the turn."""
        if value.get("kind") == "begin":
            self.streamed = ""
        for event in value.get("events") or []:
            kind = event.get("type")
            if kind != self.last_kind:
                self.release()
                if {kind, self.last_kind} == {"saying", "thinking"}:
                    self.newline()
            self.last_kind = kind
            if kind == "saying":
                self.streamed += event["text"]
                self.stream(event["text"])
            elif kind == "thinking":
                self.stream(event["text"], dim=True)
            elif kind == "doing":
                self.newline()
                self.write(one_line(f"+ {event['title']}"))
                self.open_call = event["id"]
                self.streamed = ""
            elif kind == "result":
                self.outcome(event)
            elif kind in ("context", "compacted"):
                self.newline()
                self.write(one_line(event["text"], 300) + "\n", dim=True)
            elif kind == "checked":
                self.newline()
                self.write(checked_lines(event))
            elif kind == "plan":
                self.newline()
                self.write(plan_lines(event))
            elif kind == "usage" and (row := usage_row(event)):
                self.newline()
                self.write(row, dim=True)

    def stream(self, text: str, dim: bool = False) -> None:
        """A piece of streamed text; an escape sequence split across pieces is held until whole."""
        text = self.held + text
        cut = unfinished_escape(text)
        self.held = text[cut:]
        self.write(text[:cut], dim)

    def release(self) -> None:
        """The held piece, cleaned, once its stream has moved on."""
        held, self.held = self.held, ""
        self.write(held, dim=self.last_kind == "thinking")

    def outcome(self, event: dict[str, Any]) -> None:
        """`` → 132 lines`` on the call's own line, or on a line of its own when others came between."""
        if event.get("ok"):
            text = f"→ {one_line(str(event.get('summary') or 'done'))}"
        else:
            text = f"→ failed: {one_line(str(event.get('error') or 'failed'), 300)}"
        if self.open_call == event.get("id"):
            self.write(f" {text}\n", dim=not event.get("ok"))
        else:
            self.newline()
            self.write(f"  {one_line(event['title'])} {text}\n", dim=not event.get("ok"))

    def finish(self, reply: str, *, error: bool = False) -> None:
        """End the turn: the reply goes to stdout unless it was already streamed there; an error to stderr."""
        self.release()
        self.newline()
        if self.live and self.streamed == reply and not error:
            return
        reply = printable(reply)
        if reply:
            stream = self.err if error else self.out
            stream.write(reply if reply.endswith("\n") else reply + "\n")
            stream.flush()

    def footer(self, result: dict[str, Any]) -> None:
        """The turn's last row, in the server's words (``done — scripted · 2 steps``), dimmed; a
        turn cancelled before the server answered it (or an older server's answer) says ``cancelled``."""
        text = result.get("text")
        if isinstance(text, str) and text:
            self.newline()
            self.write(one_line(text, 300) + "\n", dim=True)
        elif result.get("cancelled"):
            self.notice("cancelled")

    # -- messages -------------------------------------------------------------
    def notice(self, message: str) -> None:
        self.newline()
        self.err.write(f"elelem: {printable(message.removeprefix('elelem: '))}\n")
        self.err.flush()

    def print(self, text: str) -> None:
        """A line of a chat command's output (a listing, the context), on stdout."""
        self.out.write(printable(text) + "\n")
        self.out.flush()

    def server_log(self, line: str) -> None:
        if self.verbose:
            self.err.write(printable(line.rstrip("\n")) + "\n")
            self.err.flush()

    # -- questions ------------------------------------------------------------
    async def read_line(self, prompt: str) -> str | None:
        """A line the person types; None when nobody is there, at end of input, or after ``dismiss()``."""
        if not self.interactive:
            return None
        self.newline()
        answer = asyncio.ensure_future(self.reader(printable(prompt)))
        self.questions.add(answer)
        try:
            return await answer
        except asyncio.CancelledError:
            if answer.cancelled():  # dismissed: the turn was cancelled while the person was typing
                return None
            raise
        finally:
            self.questions.discard(answer)

    def dismiss(self) -> None:
        """Stop waiting for the person (Ctrl-C cancelled the turn): open questions answer None."""
        for answer in list(self.questions):
            answer.cancel()

    async def ask_person(self, question: str) -> str | None:
        """The human provider's question on its own line, then a cue where the person types."""
        if not self.interactive:
            return None
        self.newline()
        self.write(f"{question.rstrip()}\n" if question else "")
        return await self.read_line(REPLY_CUE)

    async def choose(self, message: str, titles: list[str]) -> str | None:
        if self.assume_yes and titles and message.startswith(RUN_QUESTION):
            return titles[0]  # --yes answers for commands only: an MCP call is asked, as only the mcp setting may silence it
        if not self.interactive or not titles:
            return None
        menu = "  ".join(f"[{number}] {title}" for number, title in enumerate(titles, 1))
        while True:
            answer = await self.read_line(f"{message}\n{menu}? ")
            if answer is None:
                return None
            answer = answer.strip()
            if answer.isdigit() and 1 <= int(answer) <= len(titles):
                return titles[int(answer) - 1]
            for title in titles:
                if answer.lower() == title.lower():
                    return title


async def read_on_a_thread(prompt: str) -> str | None:
    """``input()`` on a daemon thread: an abandoned read never keeps the process alive."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def settle(text: str | None) -> None:
        if not answer.done():
            answer.set_result(text)

    def read() -> None:
        try:
            text: str | None = input(prompt)
        except (EOFError, OSError):
            text = None
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits for this answer any more
            loop.call_soon_threadsafe(settle, text)

    threading.Thread(target=read, name="elelem-input", daemon=True).start()
    return await answer
