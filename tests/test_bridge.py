"""The thread bridge (agent.bridge: run_in_thread and the Worker) on a real event loop and real threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from elelem_lsp.agent.bridge import TurnAbandoned, Worker, run_in_thread

WAIT = 5.0  # seconds a step may take before the test counts it as hung


def counting_wakeups(monkeypatch) -> list[str]:
    """The name of every callback a thread hands to this loop, in order."""
    loop = asyncio.get_running_loop()
    handed: list[str] = []
    original = loop.call_soon_threadsafe

    def count(callback, *args, **kwargs):
        handed.append(getattr(callback, "__name__", repr(callback)))
        return original(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", count)
    return handed


@pytest.mark.parametrize("count", [1, 2, 500])
async def test_events_arrive_in_order_on_the_loop_thread(count):
    delivered: list[tuple[int, bool]] = []

    def work(emit, cancelled):
        for number in range(count):
            emit({"type": "saying", "text": str(number)})

    loop_thread = threading.get_ident()
    await run_in_thread(work, lambda event: delivered.append((int(event["text"]), threading.get_ident() == loop_thread)))
    assert delivered == [(number, True) for number in range(count)]


async def test_one_wakeup_drains_everything_emitted_since_the_last(monkeypatch):
    handed = counting_wakeups(monkeypatch)
    first_delivered, rest_sent = threading.Event(), threading.Event()
    delivered: list[str] = []

    def work(emit, cancelled):
        emit({"n": 0})
        assert first_delivered.wait(WAIT)
        for number in range(1, 100):  # all while the loop is busy delivering event 0
            emit({"n": number})
        rest_sent.set()

    def deliver(event):
        delivered.append(event["n"])
        if event["n"] == 0:
            first_delivered.set()
            assert rest_sent.wait(WAIT)

    await run_in_thread(work, deliver)
    assert delivered == list(range(100))
    assert handed.count("drain") == 2  # event 0, then events 1..99 in one batch
    assert handed.count("_settle") == 1


async def test_cancelling_the_task_sets_the_signal_and_the_next_emit_is_abandoned():
    started, stopped = threading.Event(), threading.Event()
    seen: list[object] = []
    late: list[BaseException] = []

    def work(emit, cancelled):
        started.set()
        seen.append(cancelled.wait(WAIT))
        try:
            emit({"type": "saying", "text": "too late"})
        except TurnAbandoned as error:
            late.append(error)
        stopped.set()

    task = asyncio.ensure_future(run_in_thread(work, seen.append))
    await asyncio.to_thread(started.wait, WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # A late emit would hand its drain to the loop before the thread's end reaches it: it has run by now.
    assert await asyncio.to_thread(stopped.wait, WAIT)
    assert seen == [True] and len(late) == 1


async def test_events_queued_when_the_task_is_cancelled_are_dropped():
    go_on, second_sent = threading.Event(), threading.Event()
    delivered: list[int] = []

    def work(emit, cancelled):
        emit({"n": 1})
        assert go_on.wait(WAIT)
        emit({"n": 2})  # queued behind the cancellation
        second_sent.set()
        cancelled.wait(WAIT)

    def deliver(event):
        delivered.append(event["n"])
        if event["n"] == 1:
            task.cancel()
            go_on.set()
            assert second_sent.wait(WAIT)

    task = asyncio.ensure_future(run_in_thread(work, deliver))
    # The second event's drain was handed to the loop before the task's end: it has run by now.
    with pytest.raises(asyncio.CancelledError):
        await task
    assert delivered == [1]


async def test_a_thread_left_running_after_the_work_returned_cannot_emit():
    results: list[object] = []
    finished = threading.Event()
    delivered: list[dict] = []

    def straggler(emit):
        try:
            emit({"type": "saying", "text": "after the end"})
            results.append("delivered")
        except TurnAbandoned:
            results.append("abandoned")
        finished.set()

    def work(emit, cancelled):
        emit({"type": "saying", "text": "in time"})
        threading.Timer(0.05, straggler, args=(emit,)).start()

    await run_in_thread(work, delivered.append)
    # A late emit would hand its drain to the loop before the straggler's end reaches it: it has run by now.
    assert await asyncio.to_thread(finished.wait, WAIT)
    assert results == ["abandoned"] and delivered == [{"type": "saying", "text": "in time"}]


@pytest.mark.parametrize("error", [ValueError("bad model file"), KeyError("x"), SystemExit(3)])
async def test_the_works_error_is_raised_on_the_loop_after_its_events(error):
    delivered: list[dict] = []

    def work(emit, cancelled):
        emit({"type": "saying", "text": "partial"})
        raise error

    with pytest.raises(type(error)) as raised:
        await run_in_thread(work, delivered.append)
    assert raised.value is error and delivered == [{"type": "saying", "text": "partial"}]


async def test_an_error_in_deliver_stops_the_work_and_is_raised():
    stopped: list[bool] = []

    def work(emit, cancelled):
        emit({"n": 1})
        stopped.append(cancelled.wait(WAIT))
        try:
            emit({"n": 2})
        except TurnAbandoned:
            stopped.append(True)

    delivered: list[int] = []

    def deliver(event):
        delivered.append(event["n"])
        raise RuntimeError("observer broke")

    with pytest.raises(RuntimeError, match="observer broke"):
        await run_in_thread(work, deliver)
    assert delivered == [1] and stopped == [True, True]


TURN = contextvars.ContextVar("turn", default="none")


async def test_the_work_sees_the_turns_contextvars_and_cannot_change_them():
    seen: list[str] = []

    def work(emit, cancelled):
        seen.append(TURN.get())
        TURN.set("changed in the thread")

    TURN.set("turn 7")
    await run_in_thread(work, lambda event: None)
    assert seen == ["turn 7"] and TURN.get() == "turn 7"


async def test_a_worker_does_its_jobs_in_order_on_one_thread_and_answers_on_the_loop():
    worker = Worker("elelem-test-worker")
    loop_thread = threading.get_ident()
    threads: list[int] = []
    first_may_end = threading.Event()
    done: list[str] = []

    def job(name: str, wait: threading.Event | None = None) -> str:
        threads.append(threading.get_ident())
        if wait is not None:
            assert wait.wait(WAIT)
        done.append(name)
        return name

    first = asyncio.ensure_future(worker.run(lambda: job("first", first_may_end)))
    await asyncio.sleep(0)  # the task runs up to its wait: the job is handed over
    worker.put(lambda: job("unawaited"))
    second = asyncio.ensure_future(worker.run(lambda: job("second")))
    await asyncio.sleep(0)  # handed over while the first job still waits
    assert not second.done()
    first_may_end.set()
    assert await asyncio.wait_for(asyncio.gather(first, second), WAIT) == ["first", "second"]
    assert done == ["first", "unawaited", "second"]
    assert len(set(threads)) == 1 and loop_thread not in threads


async def test_a_workers_job_that_fails_raises_on_the_loop_and_the_worker_goes_on(caplog):
    worker = Worker("elelem-test-worker")

    def fail() -> None:
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        await asyncio.wait_for(worker.run(fail), WAIT)
    worker.put(fail)  # nobody waits for this one: logged
    assert await asyncio.wait_for(worker.run(lambda: 42), WAIT) == 42
    assert "a job on elelem-test-worker failed" in caplog.text and "disk gone" in caplog.text


async def test_a_workers_job_sees_the_awaiting_tasks_contextvars():
    asked = contextvars.ContextVar("asked", default="nobody")
    asked.set("the turn")
    assert await asyncio.wait_for(Worker("elelem-test-worker").run(asked.get), WAIT) == "the turn"
