"""Load time and tokens per second of the local providers (llama, ggml, candle, llama2).

All four run the same model: by default the tests' tiny random llama (written
on the spot as a GGUF and as a llama2.c checkpoint), or a GGUF of your own with
``--gguf`` (llama, ggml, candle) and a llama2.c pair with ``--llama2``. Each
provider is built from the environment as the server builds it, then:

- load: the model read from disk into a ready provider;
- prompt: the agent's first fetch (system prompt, the built-in tools described,
  one user line) at ``maxTokens`` 1, in prompt tokens per second;
- generate: the same fetch again at ``maxTokens`` N, greedy, the median of
  ``--repeat`` runs; the prompt is cached by then, so this is generated tokens per
  second as the agent receives them.

    python bench/local.py [--tokens 200] [--repeat 3] [--q8] [--gguf PATH] [--llama2 CKPT TOKENIZER] [-p NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from importlib import import_module
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = {"llama": "llama_cpp", "ggml": "ctransformers", "candle": "candle", "llama2": "numpy"}


def tiny_models(folder: Path, q8: bool) -> tuple[Path, Path, Path]:
    spec = importlib.util.spec_from_file_location("tiny_models", ROOT / "tests" / "local" / "tiny_models.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiny_models"] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    gguf = module.write_gguf(folder / "tiny.gguf", quantize_q8=q8)
    checkpoint, tokenizer = module.write_llama2(folder / "tiny.bin", folder / "tokenizer.bin")
    return gguf, checkpoint, tokenizer


def conversation() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from elelem_lsp.agent.toolbox import Toolbox

    system = ("You are a coding agent working in a software project through the user's terminal.\n"
              "Use the tools to read, change and run things in the workspace.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "what is in README.md?"}], \
        Toolbox().definitions()


def cached_tokens(provider: Any) -> int:
    generator = getattr(provider, "generator", None)
    return generator.cached_tokens if generator is not None else provider.llm.n_tokens


def load(provider: Any) -> None:
    generator = getattr(provider, "generator", None)
    if generator is not None:
        generator.model
    else:
        provider.llm


async def measure(name: str, tokens: int, repeats: int) -> str:
    messages, tools = conversation()
    from elelem_lsp.providers import implementation

    module = import_module(implementation(name))

    started = time.perf_counter()
    provider = module.factory(temperature=0, max_tokens=1)
    load(provider)
    loaded = time.perf_counter() - started

    started = time.perf_counter()
    await provider.fetch(messages, tools, lambda event: None)
    prompt_time = time.perf_counter() - started
    prompt_tokens = cached_tokens(provider)

    provider.max_tokens = tokens
    events = 0

    def count(event: dict[str, Any]) -> None:
        nonlocal events
        events += 1

    timings = []
    for _ in range(repeats):
        events = 0
        started = time.perf_counter()
        await provider.fetch(messages, tools, count)
        timings.append(time.perf_counter() - started)
    generate_time = statistics.median(timings)
    generated = cached_tokens(provider) - prompt_tokens + 1  # the last token is sampled, not evaluated
    return (f"{name:7} load {loaded * 1000:8.1f} ms"
            f"   prompt {prompt_tokens:5d} tok {prompt_tokens / prompt_time:9.0f} tok/s"
            f"   generate {generated:4d} tok {generated / generate_time:8.0f} tok/s ({events} saying events)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200, help="tokens to generate (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="generation runs, the median is shown (default 3)")
    parser.add_argument("--q8", action="store_true", help="write the tiny GGUF with Q8_0 matrices")
    parser.add_argument("--gguf", type=Path, help="a llama GGUF to use instead of the tiny one")
    parser.add_argument("--llama2", type=Path, nargs=2, metavar=("CHECKPOINT", "TOKENIZER"))
    parser.add_argument("-p", "--provider", action="append", choices=list(EXTRAS), help="only these providers")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        gguf, checkpoint, tokenizer = tiny_models(Path(folder), args.q8)
        gguf = args.gguf or gguf
        checkpoint, tokenizer = args.llama2 or (checkpoint, tokenizer)
        os.environ.update({
            "ELELEM_LLAMA_MODEL": str(gguf), "ELELEM_GGML_MODEL": str(gguf), "ELELEM_CANDLE_MODEL": str(gguf),
            "ELELEM_LLAMA2_MODEL": str(checkpoint), "ELELEM_LLAMA2_TOKENIZER": str(tokenizer),
        })
        os.environ.setdefault("ELELEM_GGML_LIB", "avx2")
        print(f"model: {gguf.name if args.gguf else 'tiny random llama'}"
              f"{' (Q8_0)' if args.q8 and not args.gguf else ''}; {os.cpu_count()} CPUs", flush=True)
        for name in args.provider or EXTRAS:
            if importlib.util.find_spec(EXTRAS[name]) is None:
                print(f"{name:7} skipped: pip install 'elelem-lsp[{name}]'")
                continue
            print(await measure(name, args.tokens, args.repeat), flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
