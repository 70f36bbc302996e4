"""A provider's own ``complete`` (a plugin's completion method), plain or async, text or pieces:
asked with the context, its answer cut and cleaned like any model's; without it, its ``fetch``."""

from __future__ import annotations

import threading


class AsyncCompleter:
    def __init__(self) -> None:
        self.requests: list[dict] = []

    def fetch(self, messages, tools, emit):
        raise AssertionError("complete is there: fetch is not asked")

    async def complete(self, request):
        self.requests.append(request)
        return "os\nimport sys"


class PiecesCompleter:
    def __init__(self) -> None:
        self.threads: list[str] = []

    def complete(self, request):
        self.threads.append(threading.current_thread().name)
        yield "b, "
        yield "c)"


class ChatOnly:
    def __init__(self) -> None:
        self.asked: list[list[dict]] = []

    def fetch(self, messages, tools, emit):
        self.asked.append(messages)
        emit({"type": "saying", "text": "<COMPLETION>42</COMPLETION>"})


async def test_an_async_complete_is_asked_with_the_context(folder):
    completer = AsyncCompleter()
    folder.use("mine", completer)
    folder.configure(enabled=True, maxTokens=9)
    folder.edit("util.py", "HELPER = 1")
    suggestion = await folder.complete("a.py", "import |\n")
    assert suggestion is not None and suggestion.text == "os"  # one line: cut at its end
    [request] = completer.requests
    assert request["prefix"] == "import " and request["suffix"] == "\n" and request["path"] == "a.py"
    assert request["language"] == "python" and request["maxTokens"] == 9 and request["multiline"] is False
    assert request["snippets"] == [{"path": "util.py", "text": "HELPER = 1"}] and request["stop"] == ["\n"]


async def test_a_plain_complete_runs_off_the_loop_and_may_give_pieces(folder):
    completer = PiecesCompleter()
    folder.use("mine", completer)
    folder.configure(enabled=True)
    suggestion = await folder.complete("a.py", "f(a, |)\n")
    assert suggestion is not None and suggestion.text == "b, c"
    assert completer.threads and completer.threads[0] != threading.main_thread().name


async def test_a_plugin_without_complete_is_asked_through_its_fetch(folder):
    chat = ChatOnly()
    folder.use("mine", chat)
    folder.configure(enabled=True)
    suggestion = await folder.complete("a.py", "answer = |\n")
    assert suggestion is not None and suggestion.text == "42"
    assert "answer = {{FILL_HERE}}" in chat.asked[0][-1]["content"]
