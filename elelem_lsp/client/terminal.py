"""Terminal: how a turn looks in a terminal, and how the person answers there.

Saying is streamed as text, thinking dimmed, each tool call as ``+ name({...})``.
When stdout is not a terminal, everything but the reply goes to stderr so that
``elelem-lsp ask ... > file`` captures the reply alone. Questions (permission,
the human provider) are asked on the terminal; with nobody there they are
refused, never left hanging.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO

DIM, RESET = "\033[2m", "\033[0m"


class Terminal:
    def __init__(
        self,
        *,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
        interactive: bool | None = None,
        assume_yes: bool = False,
        verbose: bool = False,
    ) -> None:
        self.out = out
        self.err = err
        self.live = out.isatty()  # a person watches stdout: stream there, in colour
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.assume_yes = assume_yes
        self.verbose = verbose
        self.streamed = ""  # the saying text of the current fetch, as shown
        self.at_line_start = True
        self.last_kind = ""

    # -- a turn ---------------------------------------------------------------
    @property
    def events_out(self) -> TextIO:
        return self.out if self.live else self.err

    def write(self, text: str, dim: bool = False) -> None:
        if not text:
            return
        stream = self.events_out
        stream.write(f"{DIM}{text}{RESET}" if dim and self.live else text)
        stream.flush()
        self.at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def show(self, value: dict[str, Any]) -> None:
        """Take one ``$/progress`` value of the turn."""
        if value.get("kind") == "begin":
            self.streamed = ""
        for event in value.get("events") or []:
            kind = event.get("type")
            if kind != self.last_kind and {kind, self.last_kind} == {"saying", "thinking"}:
                self.newline()
            self.last_kind = kind
            if kind == "saying":
                self.streamed += event["text"]
                self.write(event["text"])
            elif kind == "thinking":
                self.write(event["text"], dim=True)
            elif kind == "doing":
                self.newline()
                self.write(f"+ {event['name']}({json.dumps(event['arguments'], ensure_ascii=False)})\n")
                self.streamed = ""
            elif kind == "result" and not event.get("ok"):
                self.write(f"  ! {event.get('error', 'failed')}\n", dim=True)

    def finish(self, reply: str) -> None:
        """End the turn: the reply goes to stdout unless it was already streamed there."""
        if self.live and self.streamed == reply:
            self.newline()
            return
        self.newline()
        if reply:
            self.out.write(reply if reply.endswith("\n") else reply + "\n")
            self.out.flush()

    # -- messages -------------------------------------------------------------
    def notice(self, message: str) -> None:
        self.err.write(f"elelem: {message.removeprefix('elelem: ')}\n")
        self.err.flush()

    def server_log(self, line: str) -> None:
        if self.verbose:
            self.err.write(line)
            self.err.flush()

    # -- questions ------------------------------------------------------------
    async def read_line(self, prompt: str) -> str | None:
        if not self.interactive:
            return None
        self.newline()
        try:
            return await asyncio.to_thread(input, prompt)
        except EOFError:
            return None

    async def choose(self, message: str, titles: list[str]) -> str | None:
        if self.assume_yes and titles:
            return titles[0]
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
