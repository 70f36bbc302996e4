"""The engine's promises over real HTTP: a burst of keystrokes costs at most two model requests,
each superseded stream is closed, every request is answered; typing along asks nothing; a
request cancelled from outside closes its stream; the figures counted."""

from __future__ import annotations

import asyncio
import time

from elelem_lsp.providers.remote.openai import OpenAIProvider


async def wait_for(condition, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_a_burst_of_twenty_keystrokes_costs_at_most_two_model_requests(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions")
    fim.answer = ["x", " +", " 1", "\n"] + ["more = 1\n"] * 40
    fim.delay = 0.05  # a slow model: each answer would take 2.2 s to its end
    typed = "value = "
    requests = []
    for keystroke in range(20):
        typed += "ab"[keystroke % 2]
        requests.append(asyncio.ensure_future(folder.complete("burst.py", f"{typed}|\n")))
        await asyncio.sleep(0.03)
    answers = await asyncio.wait_for(asyncio.gather(*requests), 10)

    assert all(answer is None for answer in answers[:-1])  # every older request answered, with nothing
    assert answers[-1] is not None and answers[-1].text == "x + 1"
    assert len(fim.requests) <= 2
    await wait_for(lambda: fim.closed + fim.finished == len(fim.requests), "the server to see each request end")
    # None ran to its end: a superseded stream was closed, the last one once its line ended.
    assert fim.finished == 0 and fim.closed == len(fim.requests)


async def test_a_request_cancelled_from_outside_closes_its_stream(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions")
    fim.answer, fim.delay = ["a"] * 40, 0.05
    request = asyncio.ensure_future(folder.complete("c.py", "x = |"))
    await wait_for(lambda: fim.requests, "the model request")
    request.cancel()
    await wait_for(lambda: fim.closed == 1, "the stream to be closed")
    assert fim.finished == 0 and request.cancelled()


async def test_typing_along_a_suggestion_is_answered_from_memory(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions")
    fim.answer = ["print(", "'hello')"]
    first = await folder.complete("t.py", "def greet():\n    |\n")
    assert first is not None and first.text == "print('hello')"

    along = await folder.complete("t.py", "def greet():\n    pri|\n")
    further = await folder.complete("t.py", "def greet():\n    print('he|\n")
    assert along is not None and along.text == "nt('hello')" and along.typed_along
    assert further is not None and further.text == "llo')"
    assert len(fim.requests) == 1  # no model request while typing along

    await folder.complete("t.py", "def greet():\n    prx|\n")  # typed something else: asked again
    assert len(fim.requests) == 2


async def test_a_suggestion_accepted_a_word_then_the_rest_is_one_acceptance_of_all_its_characters(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions")
    fim.answer = ["print(", "'hello')"]
    first = await folder.complete("t.py", "def greet():\n    |\n")
    assert folder.engine.accept(first.id, 5)  # "print": a word, as Neovim's built-in path accepts it
    rest = await folder.complete("t.py", "def greet():\n    print|\n")
    assert rest is not None and rest.text == "('hello')" and rest.id != first.id
    assert folder.engine.accept(rest.id, None)
    assert not folder.engine.accept(rest.id, None)  # an id is recorded once
    figures = folder.engine.counts("folder")
    assert (figures["shown"], figures["accepted"], figures["charsAccepted"]) == (1, 1, len("print('hello')"))


async def test_deleting_and_retyping_is_answered_from_the_cache(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions", debounceMs=0)
    fim.answer = ["42"]
    await folder.complete("k.py", "answer = |")
    await folder.complete("k.py", "answer =|")
    again = await folder.complete("k.py", "answer = |")
    assert again is not None and again.text == "42" and len(fim.requests) == 2


async def test_shown_accepted_and_latency_are_counted(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions", debounceMs=0)
    fim.answer = ["hello"]
    shown = await folder.complete("n.py", "name = '|'")
    await folder.complete("n.py", "other = '|'")
    assert shown is not None
    assert folder.engine.accept(shown.id, None) and not folder.engine.accept(shown.id, None)  # once
    figures = folder.engine.counts("folder")
    assert (figures["shown"], figures["accepted"], figures["charsAccepted"], figures["requests"]) == (2, 1, 5, 2)
    assert figures["medianLatencyMs"] is not None and "cost" not in figures  # a local server costs nothing
    assert figures["text"].startswith("1 of 2 suggestions accepted · 5 chars")


async def test_a_failing_provider_answers_nothing_and_says_why_in_the_log(folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url="http://127.0.0.1:9/v1"))  # nothing listens there
    folder.configure(api="completions")
    assert await folder.complete("f.py", "x = |") is None
    assert len(folder.failures) == 1 and "cannot connect" in folder.failures[0]


async def test_a_paid_model_s_requests_are_priced(fim, folder):
    folder.use("openai", OpenAIProvider("gpt-4.1-mini", base_url=f"{fim.url}/v1"), "gpt-4.1-mini")
    folder.configure(api="completions", enabled=True, debounceMs=0)
    fim.answer = ["total"]
    await folder.complete("p.py", "x = |")
    await folder.complete("p.py", "y = |")
    figures = folder.engine.counts("folder")
    assert figures["requests"] == 2 and figures["currency"] == "USD" and figures["cost"] > 0
    assert "$" in figures["text"]


async def test_context_is_sized_in_tokens_and_snippets_come_most_recently_edited_first(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions", prefixTokens=20, suffixTokens=16, snippetTokens=200)
    folder.edit("older.py", "OLDER = 1")
    folder.edit("newer.py", "NEWER = 2")
    far = "".join(f"far_{n} = {n}\n" for n in range(50))
    await folder.complete("main.py", far + "near = 1\nvalue = |\nafter = 1\n" + far)
    [body] = fim.bodies("/v1/completions")
    assert body["prompt"].endswith("near = 1\nvalue = ") and "far_1 = 1\n" not in body["prompt"]
    assert body["suffix"].startswith("\nafter = 1\n") and "far_40" not in body["suffix"]
    assert body["prompt"].index("NEWER") < body["prompt"].index("OLDER")


async def test_typing_along_a_model_request_under_way_waits_for_it_instead_of_asking_again(fim, folder):
    folder.use("llamacpp", OpenAIProvider("coder", base_url=f"{fim.url}/v1"))
    folder.configure(api="completions", debounceMs=0)
    fim.answer, fim.delay = ["print", "(", "'hello'", ")", "\n"], 0.1
    first = asyncio.ensure_future(folder.complete("w.py", "def greet():\n    |\n"))
    await wait_for(lambda: fim.requests, "the model request")
    await asyncio.sleep(0.15)  # it has said "print" by now
    along = await folder.complete("w.py", "def greet():\n    pr|\n")
    assert await first is None  # superseded: the newer request took its answer over
    assert along is not None and along.text == "int('hello')"
    assert len(fim.requests) == 1
    assert folder.engine.counts("folder")["shown"] == 1
