"""Anthropic's prompt cache as the API bills it: which prompt tokens of a Messages request are read
from the cache, written to it, or read in full; and the fake server answering a task of several
steps with those counts (for tests/providers/test_prompt_caching.py and bench/caching.py).

The rules are the API's (docs: "Prompt caching"): the prompt is its blocks in order, tools,
then system, then each message's content blocks; a block marked ``cache_control`` is a
breakpoint, and the prefix up to it is written to the cache (when it holds at least
``MIN_CACHEABLE`` tokens). A request reads the longest cached prefix ending at one of its
breakpoints, or at a block boundary up to ``LOOKBACK`` blocks before one. Billed: the prefix read
(``cache_read_input_tokens``), from there to the last breakpoint written
(``cache_creation_input_tokens``), the rest in full (``input_tokens``). A token here is four
characters of a block's JSON, which is all a bill needs to compare requests by.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from providers.fake_model_server import FakeModelServer, Reply, anthropic_message, wire_of

MIN_CACHEABLE = 1024  # tokens: Sonnet's and Opus' shortest cacheable prompt
LOOKBACK = 20  # blocks before a breakpoint where the API also looks for a cache entry


def prompt_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's prompt as the cache sees it: every block in order, with its message's role."""
    system = body.get("system") or []
    blocks = [*body.get("tools", ()), *([{"type": "text", "text": system}] if isinstance(system, str) else system)]
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks += [{"role": message["role"], **part} for part in parts]
    return blocks


def tokens(block: dict[str, Any]) -> int:
    plain = {key: value for key, value in block.items() if key != "cache_control"}
    return max(1, len(json.dumps(plain, sort_keys=True)) // 4)


class PromptCache:
    """The cache entries written so far (prefix digests), and the bill of each request."""

    def __init__(self) -> None:
        self.entries: set[str] = set()

    def bill(self, body: dict[str, Any]) -> dict[str, int]:
        """The usage counts the API would report for ``body``, the cache updated as it would be."""
        blocks = prompt_blocks(body)
        digest, keys, ends, total = hashlib.sha256(), [], [], 0
        for block in blocks:
            plain = {key: value for key, value in block.items() if key != "cache_control"}
            digest.update(json.dumps(plain, sort_keys=True).encode())
            keys.append(digest.hexdigest())
            total += tokens(block)
            ends.append(total)
        breakpoints = [index for index, block in enumerate(blocks) if "cache_control" in block]
        read = 0
        for point in breakpoints:
            hit = next((q for q in range(point, max(point - LOOKBACK, -1), -1) if keys[q] in self.entries), None)
            if hit is not None:
                read = max(read, ends[hit])
        cached_end = ends[breakpoints[-1]] if breakpoints else 0
        written = cached_end - read if cached_end >= MIN_CACHEABLE else 0
        self.entries.update(keys[point] for point in breakpoints if ends[point] >= MIN_CACHEABLE)
        return {"input_tokens": total - read - written, "cache_creation_input_tokens": written, "cache_read_input_tokens": read}


class BillingAnthropicServer(FakeModelServer):
    """The fake server answering Messages requests as a model working through a task of
    ``steps`` fetches: a ``read`` of README.md at each step but the last, which answers in text;
    each request billed by one ``PromptCache`` (``bills``, in order), the counts in its stream."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.cache = PromptCache()
        self.bills: list[dict[str, int]] = []

    def route(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Reply:
        if wire_of(path) != "anthropic":
            return super().route(method, path, headers, body)
        request = json.loads(body)
        bill = self.cache.bill(request)
        self.bills.append({**bill, "output_tokens": OUTPUT_TOKENS})
        done = steps_so_far(request["messages"])
        start_usage = {**bill, "output_tokens": 1}
        delta_usage = {"output_tokens": OUTPUT_TOKENS}
        if done + 1 < self.steps:
            call = (f"toolu_{done:02d}", "read", ['{"path": ', '"README.md"}'])
            blocks = [{"text": [f"Step {done + 1}: reading."]}, {"tool_use": call}]
            return Reply(anthropic_message(blocks, stop_reason="tool_use", start_usage=start_usage, delta_usage=delta_usage))
        answer = [{"text": ["Done in ", f"{self.steps} steps."]}]
        return Reply(anthropic_message(answer, start_usage=start_usage, delta_usage=delta_usage))


OUTPUT_TOKENS = 25  # what the model writes at each step


def steps_so_far(messages: list[dict[str, Any]]) -> int:
    """The fetches of this turn already answered: the tool results since its prompt."""
    done = 0
    for message in reversed(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "user" and not any(block.get("type") == "tool_result" for block in blocks):
            break
        done += message["role"] == "assistant"
    return done
