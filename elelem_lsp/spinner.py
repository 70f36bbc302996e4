"""Spinner: a sign of life on the terminal while the language server starts.

``ask``, ``chat`` and ``providers`` show it on stderr, only when stderr is a
terminal, from the moment the arguments are parsed until the server answers;
it imports nothing heavy so that it appears at once. Not on a dumb terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
INTERVAL = 0.08
CLEAR_LINE = "\r\033[K"


class Spinner:
    def __init__(self, message: str, stream: TextIO = sys.stderr) -> None:
        self.message = message
        self.stream = stream
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> Spinner:
        if self.stream.isatty() and os.environ.get("TERM") != "dumb":  # a dumb terminal has no line clearing
            self.thread = threading.Thread(target=self._spin, name="elelem-spinner", daemon=True)
            self.thread.start()
        return self

    def _spin(self) -> None:
        frame = 0
        while True:
            self.stream.write(f"{CLEAR_LINE}{FRAMES[frame % len(FRAMES)]} {self.message}")
            self.stream.flush()
            frame += 1
            if self.stopped.wait(INTERVAL):
                break
        self.stream.write(CLEAR_LINE)  # leave the line as it was found
        self.stream.flush()

    def __enter__(self) -> Spinner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No spinning while the person is asked something on the terminal; it spins again after."""
        spinning = self.thread is not None
        self.stop()
        try:
            yield
        finally:
            if spinning:
                self.stopped = threading.Event()
                self.start()

    def stop(self) -> None:
        """Clear the spinner's line; stopping twice is harmless."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
