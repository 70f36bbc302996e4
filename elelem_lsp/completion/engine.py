"""The completion engine: one suggestion for a cursor, fast, cheap and never stale.

Bridges a request (a document, the cursor, the other open documents, the folder's settings and
provider) to one suggestion or none, through the stages of this package: no request in a
private file; typing along and the answer cache first (no model request); the context; a wait
within a burst of keystrokes; the provider's route, its stream cut (``filters``) and cleaned;
counted. A newer request for the same document cancels the older one at once, its model stream
included, and the older answers None; a request cancelled from outside is cancelled through.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.budget import estimate_tokens
from ..providers.prices import PerMillion
from .cache import AnswerCache, Shown, TypingAlong, context_key
from .context import CompletionContext, OpenText, build_context
from .counts import Acceptances, Counts
from .filters import clean, within_extent
from .multiline import wants_block
from .privacy import PrivateFiles
from .routes import Fill
from .routing import Routes, candidates, is_local
from .settings import CompletionSettings

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 6  # the length cap of an answer: maxTokens of long tokens


@dataclass
class FolderSource:
    """What the engine needs of a folder: its settings and the provider they name."""

    key: str
    root: Path
    settings: Callable[[], Awaitable[CompletionSettings]]
    provider: Callable[[CompletionSettings], tuple[str, Any, str | None]]  # (name, provider, model)
    prices: Callable[[], Mapping[str, PerMillion]] = dict


@dataclass
class Ask:
    """One request: the document (its path, None for a buffer without a file), the cursor's offset
    in its text, and the other open documents, most recently edited first."""

    uri: str
    folder: FolderSource
    path: Path | None
    document: OpenText
    offset: int
    others: Callable[[], Iterable[tuple[Path | None, OpenText]]] = lambda: ()
    invoked: bool = False  # asked for by the person (not as they type): no wait for more keystrokes


@dataclass(frozen=True)
class Suggestion:
    id: str
    text: str
    typed_along: bool = False  # the rest of the suggestion shown before, given from memory


@dataclass
class _Inflight:
    """A model request under way for a document, with the text around the cursor it was asked at
    and what it has said so far: a request typing along it waits for its answer instead."""

    before: str
    after: str
    task: asyncio.Task[str | None]
    said: list[str] = field(default_factory=list)
    waiters: int = 0

    def typed_along(self, before: str, after: str) -> str | None:
        """What was typed since, if it is the start of what the model has said so far."""
        if self.task.done() or after != self.after or len(before) <= len(self.before) or not before.startswith(self.before):
            return None
        typed, said = before[len(self.before) :], "".join(self.said)
        return typed if len(said) > len(typed) and said.startswith(typed) else None

    def join(self) -> None:
        """A request waits for it (from now: a request superseded meanwhile cannot end it)."""
        self.waiters += 1

    def leave(self) -> None:
        """A request no longer waits: the last one going away cancels it, its stream closed."""
        self.waiters -= 1
        if not self.waiters:
            cancel_once(self.task)


@dataclass
class _Document:
    task: asyncio.Task[Suggestion | None] | None = None
    inflight: _Inflight | None = None
    last_request: float = float("-inf")


@dataclass
class _Folder:
    privacy: PrivateFiles
    counts: Counts = field(default_factory=Counts)
    provider: Any = None
    routes: Routes | None = None
    api: str = "auto"


class CompletionEngine:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.documents: dict[str, _Document] = {}
        self.folders: dict[str, _Folder] = {}
        self.typing_along = TypingAlong()
        self.answers = AnswerCache()
        self.acceptances = Acceptances()
        self.ids = itertools.count(1)
        self.on_failure: Callable[[str], None] = lambda message: log.warning("%s", message)

    # -- the request, and its cancellation ---------------------------------------------
    async def complete(self, ask: Ask) -> Suggestion | None:
        """The suggestion at the cursor; None when there is none or a newer request took over."""
        state = self.documents.setdefault(ask.uri, _Document())
        text = ask.document.text
        around = (text[: ask.offset], text[ask.offset :])
        shared = state.inflight if state.inflight and state.inflight.typed_along(*around) is not None else None
        if state.inflight is not None and shared is None:
            cancel_once(state.inflight.task)  # its stream closed at once
        if state.task is not None:
            cancel_once(state.task)  # the older request answers None at once
        started = self.clock()
        within_burst = started - state.last_request
        state.last_request = started
        task = asyncio.ensure_future(self._complete(ask, state, around, started, within_burst, shared))
        state.task = task
        if shared is not None:
            shared.join()
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or not current.cancelling()):
                return None  # superseded by a newer request for the document
            raise
        finally:
            if shared is not None:
                shared.leave()
            if state.task is task:
                state.task = None

    def closed(self, uri: str) -> None:
        """The document was closed: cancel its request and forget it."""
        state = self.documents.pop(uri, None)
        for task in (state.task, state.inflight.task if state.inflight else None) if state else ():
            if task is not None:
                cancel_once(task)
        self.typing_along.forget(uri)

    def accept(self, item: str, chars: int | None) -> bool:
        return self.acceptances.accept(item, chars)

    def private(self, key: str, root: Path, path: Path, exclude: list[str]) -> bool:
        """Whether the folder's rules keep ``path`` from any model (next edit asks it too)."""
        return self._folder(key, root).privacy.private(path, exclude)

    def _folder(self, key: str, root: Path) -> _Folder:
        folder = self.folders.get(key)
        if folder is None:
            folder = self.folders[key] = _Folder(PrivateFiles(root))
        return folder

    def counts(self, folder: str) -> dict[str, Any]:
        known = self.folders.get(folder)
        return (known.counts if known else Counts()).summary()

    # -- the stages ---------------------------------------------------------------------
    async def _complete(
        self, ask: Ask, state: _Document, around: tuple[str, str], started: float, since_last: float, shared: _Inflight | None
    ) -> Suggestion | None:
        folder = self._folder(ask.folder.key, ask.folder.root)
        before, after = around
        if shared is not None:  # typing along a model request still under way: its answer, less what was typed
            typed, answer = before[len(shared.before) :], await asyncio.shield(shared.task)
            if answer is None or len(answer) <= len(typed) or not answer.startswith(typed):
                return None
            return self._shown(ask, folder, answer[len(typed) :], before, after, started, typed_along=False)
        settings = await ask.folder.settings()
        if ask.path is not None and folder.privacy.private(ask.path, settings.exclude):
            return None
        along = self.typing_along.rest(ask.uri, before, after)
        if along is not None:
            rest, shown = along
            return self._shown(ask, folder, rest, before, after, started, typed_along=True, of=shown)
        try:
            name, provider, model = ask.folder.provider(settings)
        except Exception as error:  # a missing key, an unknown provider: said in the log, not in a popup
            self.on_failure(f"elelem: inline completion has no provider: {error}")
            return None
        if not (settings.enabled if settings.enabled is not None else is_local(name, provider)):
            return None
        context = build_context(
            ask.document,
            ask.offset,
            self._others(ask, folder, settings),
            prefix_tokens=settings.prefix_tokens,
            suffix_tokens=settings.suffix_tokens,
            snippet_tokens=settings.snippet_tokens,
        )
        multiline = wants_block(context, settings.multiline)
        key = context_key(context, multiline)
        known, answer = self.answers.get(ask.folder.key, key)
        if not known:
            if since_last < settings.debounce_ms / 1000 and not ask.invoked:
                await asyncio.sleep(settings.debounce_ms / 1000)  # a newer keystroke cancels this wait
            said: list[str] = []
            asking = self._model_answer(ask.folder, folder, (name, provider, model), settings, context, multiline, key, said)
            inflight = state.inflight = _Inflight(before, after, asyncio.ensure_future(asking), said)
            inflight.join()
            try:
                answer = await asyncio.shield(inflight.task)
            finally:
                inflight.leave()
        if answer is None:
            return None
        return self._shown(ask, folder, answer, before, after, started, typed_along=False)

    def _others(self, ask: Ask, folder: _Folder, settings: CompletionSettings) -> list[OpenText]:
        if settings.snippet_tokens <= 0:
            return []
        return [text for path, text in ask.others() if path is None or not folder.privacy.private(path, settings.exclude)]

    async def _model_answer(
        self,
        source: FolderSource,
        folder: _Folder,
        chosen: tuple[str, Any, str | None],
        settings: CompletionSettings,
        context: CompletionContext,
        multiline: bool,
        key: int,
        said: list[str],
    ) -> str | None:
        """The model's cleaned answer, kept in the answer cache; None after a failure, which is logged."""
        name, provider, model = chosen
        try:
            answer = await self._ask_model(
                source.key, folder, name, provider, model, settings, context, multiline, source.prices(), said
            )
        except Exception as error:  # said in the log, not in a popup; asked again next time
            self.on_failure(f"elelem: inline completion from {name!r} failed: {error}")
            return None
        self.answers.put(source.key, key, answer)
        return answer

    async def _ask_model(
        self,
        key: str,
        folder: _Folder,
        name: str,
        provider: Any,
        model: str | None,
        settings: CompletionSettings,
        context: CompletionContext,
        multiline: bool,
        prices: Mapping[str, PerMillion],
        said: list[str],
    ) -> str | None:
        """The answer, cut and cleaned; ``said`` gathers the model's text as it streams (a request
        typing along reads it)."""
        fill = Fill(context, multiline, settings.max_tokens)
        pieces: list[str] = []
        try:
            if folder.provider is not provider or folder.api != settings.api or folder.routes is None:
                folder.routes = Routes(await candidates(name, provider, settings.api))
                folder.provider, folder.api = provider, settings.api
                self.answers.clear(key)  # its answers came from another provider
            async with aclosing(self._stream(folder.routes, fill, said, multiline, settings.max_tokens)) as stream:
                async for piece in stream:
                    pieces.append(piece)
        finally:  # a request cancelled or failed midway was still asked, and may be paid for
            if fill.asked:
                self._count(folder, model, fill, "".join(pieces), prices)
        return clean("".join(pieces), context)

    async def _stream(self, routes: Routes, fill: Fill, said: list[str], multiline: bool, max_tokens: int):
        async def heard() -> AsyncGenerator[str, None]:
            async with aclosing(routes.stream(fill)) as stream:
                async for piece in stream:
                    said.append(piece)
                    yield piece

        limit = max_tokens * CHARS_PER_TOKEN
        async with aclosing(within_extent(heard(), fill.context, multiline, limit)) as cut:
            async for piece in cut:
                yield piece

    def _count(self, folder: _Folder, model: str | None, fill: Fill, answer: str, prices: Mapping[str, PerMillion]) -> None:
        context = fill.context
        prompt = context.prefix + context.suffix + "".join(snippet.text for snippet in context.snippets)
        read = fill.input_tokens if fill.input_tokens is not None else estimate_tokens(prompt)
        written = fill.output_tokens if fill.output_tokens is not None else estimate_tokens(answer)
        folder.counts.model_request(model, read, written, prices)

    def _shown(
        self, ask: Ask, folder: _Folder, text: str, before: str, after: str, started: float, *, typed_along: bool, of: str = ""
    ) -> Suggestion:
        """A suggestion given: counted as shown unless it is the rest of one (``of``, its id) typed along."""
        item = f"c-{next(self.ids)}"
        if not typed_along:  # the rest of a suggestion already shown is not shown again
            folder.counts.shown += 1
            self.typing_along.remember(ask.uri, Shown(before, after, text, item))
        self.acceptances.shown(item, folder.counts, len(text), of or item)
        folder.counts.latencies.append((self.clock() - started) * 1000)
        return Suggestion(item, text, typed_along)


def cancel_once(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` unless it is done or already cancelled: a second cancel would interrupt its
    cleanup (closing the HTTP stream) halfway, leaving the connection open."""
    if not task.done() and not task.cancelling():
        task.cancel()
