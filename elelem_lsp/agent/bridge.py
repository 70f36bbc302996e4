"""The one bridge from blocking work on a thread to the agent's event loop.

Two ways across, ``run_in_thread`` (a thread per piece of work, with events) and a ``Worker``
(one thread, jobs in order); both bring the work's end back the same way (``_settle``: its
result or exception set on the loop's future, unless the awaiter gave up).

A plain ``fetch`` (see docs/contract.md) and local token generation both block;
``run_in_thread(work, deliver)`` runs ``work(emit, cancelled)`` on a thread of
its own, with the awaiting task's contextvars, and hands every event the work
emits to ``deliver`` on the loop, in order. Events are batched: one loop
wake-up drains everything emitted since the last. Cancelling the awaiting task
sets ``cancelled`` (a ``threading.Event`` the work checks, e.g. between tokens)
and drops the events not yet delivered. Once the work has ended, or its task
was cancelled, the emit is closed for good: a later event, from the work or a
thread it started, is never delivered and raises ``TurnAbandoned`` in the
thread that sent it. An exception from the work, or from ``deliver`` (which
also sets ``cancelled``), is raised on the loop.

A ``Worker`` is one daemon thread, started once, that does jobs in order (a folder's checkpoint
snapshots, ``host/checkpoints.py``): ``await worker.run(work)`` hands it ``work()`` without
waiting for a thread to start and returns its result, or raises its exception, on the loop;
``worker.put(work)`` hands it work nobody waits for (its exception is logged, and the worker goes
on). Being a daemon, a process told to exit mid-job does not wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

Event = dict[str, Any]
Work = Callable[[Callable[[Event], None], threading.Event], None]
T = TypeVar("T")
log = logging.getLogger(__name__)


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the loop: the work's outcome onto the future its awaiter waits on (gone if it was cancelled)."""
    if done.done():
        return
    if error is None:
        done.set_result(result)
    else:
        done.set_exception(error)


class TurnAbandoned(Exception):
    """Raised by an emit called after its fetch ended (returned, failed or was cancelled)."""


class _ThreadBridge:
    """The state one ``run_in_thread`` shares between its thread and the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[Event], None]) -> None:
        self.loop = loop
        self.deliver = deliver
        self.cancelled = threading.Event()
        self.pending: deque[Event] = deque()
        self.lock = threading.Lock()
        self.scheduled = False  # a drain is on its way to the loop
        self.closed = False
        self.failure: BaseException | None = None  # the first exception ``deliver`` raised

    def emit(self, event: Event) -> None:
        """Called on any thread: queue ``event``, waking the loop only if no drain is on its way."""
        with self.lock:
            if self.closed:
                raise TurnAbandoned("the fetch this emit belongs to has ended")
            self.pending.append(event)
            wake = not self.scheduled
            self.scheduled = True
        if wake:
            self.loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """On the loop: deliver everything queued since the last drain."""
        with self.lock:
            events = list(self.pending)
            self.pending.clear()
            self.scheduled = False
        for event in events:
            if self.failure is not None:
                return
            try:
                self.deliver(event)
            except BaseException as error:  # stop the work; raised on the loop when it ends
                self.failure = error
                self.cancelled.set()
                self.close(drop_pending=True)

    def close(self, *, drop_pending: bool = False) -> None:
        """Take no more events; those not yet drained are kept unless the turn is over."""
        with self.lock:
            self.closed = True
            if drop_pending:
                self.pending.clear()


async def run_in_thread(work: Work, deliver: Callable[[Event], None], *, name: str = "elelem-fetch") -> None:
    """Run ``work(emit, cancelled)`` on its own thread; see the module's docstring."""
    loop = asyncio.get_running_loop()
    bridge = _ThreadBridge(loop, deliver)
    done: asyncio.Future[None] = loop.create_future()

    def run() -> None:
        error: BaseException | None = None
        try:
            work(bridge.emit, bridge.cancelled)
        except BaseException as raised:  # reported on the loop, whatever it is
            error = raised
        bridge.close()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for the answer any more
            loop.call_soon_threadsafe(_settle, done, None, error)

    # The thread sees the turn's context (e.g. current_workspace), as an async fetch would.
    context = contextvars.copy_context()
    # A daemon thread: work that ignores ``cancelled`` must not keep the process alive.
    threading.Thread(target=context.run, args=(run,), name=name, daemon=True).start()
    try:
        await done
    except asyncio.CancelledError:
        bridge.cancelled.set()
        bridge.close(drop_pending=True)
        raise
    except BaseException as error:
        work_error: BaseException | None = error
    else:
        work_error = None
    bridge.drain()  # the result may overtake the last drain: deliver what is left
    if bridge.failure is not None:  # the work's own error is then most likely TurnAbandoned
        raise bridge.failure
    if work_error is not None:
        raise work_error


class Worker:
    """One daemon thread doing jobs in order; see the module's docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception:  # work nobody waits for: the next job still runs
                log.exception("a job on %s failed", self.name)

    def put(self, work: Callable[[], None]) -> None:
        """Hand ``work`` to the thread, after what it was handed before; nobody waits for it."""
        self.jobs.put(work)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on the thread, with the awaiting task's contextvars; its result or its exception here."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def job() -> None:
            outcome: tuple[Any, BaseException | None]
            try:
                outcome = (context.run(work), None)
            except BaseException as error:  # reported on the loop, whatever it is
                outcome = (None, error)
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done, *outcome)

        self.jobs.put(job)
        return await done
