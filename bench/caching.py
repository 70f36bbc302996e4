"""Prompt caching: the input tokens a ten-step Claude turn is billed, with the cache's breakpoints
and without them.

The agent's real session (system prompt, built-in tools, a ``read`` of a 200-line README at each
step but the last) runs against the fake Anthropic server of the tests
(tests/providers/prompt_cache.py), which bills each request as the API does: the prefix up to a
breakpoint already cached is read at the read price, the rest up to the last breakpoint written
at the write price, what follows read in full; four characters a token. A second turn follows,
which reads the first from the cache. Prices: claude-sonnet-4-5's, from the price table.

    python bench/caching.py [--steps 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent / "tests")]

from providers.prompt_cache import BillingAnthropicServer  # noqa: E402

from elelem_lsp.agent.session import Session  # noqa: E402
from elelem_lsp.agent.workspace import Workspace  # noqa: E402
from elelem_lsp.providers.prices import cost  # noqa: E402
from elelem_lsp.providers.remote.anthropic import AnthropicProvider  # noqa: E402

MODEL = "claude-sonnet-4-5"
KINDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


async def turns(root: Path, steps: int, cache_prompts: bool) -> list[list[dict[str, int]]]:
    """The bills of each request of two turns (``steps`` fetches, then one)."""
    server = BillingAnthropicServer(steps).start()
    try:
        provider = AnthropicProvider(MODEL, api_key="bench", base_url=server.url, cache_prompts=cache_prompts)
        session = Session(provider, Workspace(root))
        first = await session.turn("Read README.md once at each step, then say what it is about.", lambda event: None)
        assert first.steps == steps and not first.error, first.reply
        billed = len(server.bills)
        server.steps = 1
        await session.turn("And in one word?", lambda event: None)
        return [server.bills[:billed], server.bills[billed:]]
    finally:
        server.stop()


def row(name: str, bills: list[dict[str, int]]) -> tuple[str, int, int, int, float]:
    full, read, written = (sum(bill[kind] for bill in bills) for kind in KINDS)
    output = sum(bill["output_tokens"] for bill in bills)
    dollars = cost(MODEL, full + read + written, output, cache_read=read, cache_write=written) or 0.0
    return name, full, read, written, dollars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        architecture = (BENCH.parent / "docs" / "architecture.md").read_text().splitlines()[:200]
        (root / "README.md").write_text("\n".join(architecture) + "\n")
        cached = asyncio.run(turns(root, steps, cache_prompts=True))
        uncached = asyncio.run(turns(root, steps, cache_prompts=False))
    rows = [
        row(f"{steps}-step turn, no breakpoints", uncached[0]),
        row(f"{steps}-step turn, cached", cached[0]),
        row("next turn, no breakpoints", uncached[1]),
        row("next turn, cached", cached[1]),
    ]
    print(f"{'':34} {'input (full price)':>18} {'cache read':>11} {'cache write':>12} {'billed as input':>16} {'cost':>9}")
    for name, full, read, written, dollars in rows:
        equivalent = full + read * 0.1 + written * 1.25  # Anthropic's multipliers of the input price
        print(f"{name:34} {full:18,} {read:11,} {written:12,} {equivalent:16,.0f} ${dollars:8.4f}")
    print()
    print(f"per request of the {steps}-step turn, cached (input / read / written):")
    print("  " + "  ".join("/".join(str(bill[kind]) for kind in KINDS) for bill in cached[0]))
    before, after = rows[0], rows[1]
    print(f"the {steps}-step turn costs {after[4] / before[4]:.2f}× as much with the cache (${before[4]:.4f} → ${after[4]:.4f})")


if __name__ == "__main__":
    main()
