"""Each route against the fake FIM server: what is sent (prefix, suffix, snippets, stops, the
token limit), the item that comes back, and the fallback when an endpoint refuses FIM."""

from __future__ import annotations

import pytest

from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import factory as preset


def openai_at(fim, model: str | None = "coder") -> OpenAIProvider:
    return OpenAIProvider(model, base_url=f"{fim.url}/v1")


async def test_completions_route_sends_prefix_suffix_snippets_stop_and_limit(fim, folder):
    folder.use("llamacpp", openai_at(fim))
    folder.configure(api="completions", maxTokens=40, multiline="never")
    folder.edit("helpers.py", "def add(a, b):\n    return a + b\n")
    fim.answer = ["b, ", "c", ")\n", "print('never')"]

    suggestion = await folder.complete("main.py", "import helpers\nresult = add(a, |)\nprint(result)\n")

    assert suggestion is not None and suggestion.text == "b, c"  # cut at the line end, the ")" already there
    [body] = fim.bodies("/v1/completions")
    assert body["prompt"].endswith("import helpers\nresult = add(a, ")
    assert "# Path: helpers.py\n# def add(a, b):" in body["prompt"]  # the other open file, as comments
    assert body["suffix"] == ")\nprint(result)\n"
    assert body["max_tokens"] == 40 and body["stop"] == ["\n"] and body["stream"] is True


async def test_infill_route_sends_other_files_as_input_extra(fim, folder):
    folder.use("llamacpp", openai_at(fim))
    folder.configure(api="infill", maxTokens=64)
    folder.edit("helpers.py", "def add(a, b):\n    return a + b\n")
    fim.answer = ["\n    return ", "a * b\n", "\ndef other():\n    pass\n"]

    suggestion = await folder.complete("main.py", "def mul(a, b):|\n\nprint(mul(2, 3))\n")

    assert suggestion is not None and suggestion.text == "\n    return a * b"  # the block ends where the indentation comes back
    [body] = fim.bodies("/infill")
    assert body["input_prefix"] == "def mul(a, b):" and body["input_suffix"] == "\n\nprint(mul(2, 3))\n"
    assert body["input_extra"] == [{"filename": "helpers.py", "text": "def add(a, b):\n    return a + b"}]
    assert body["n_predict"] == 64 and "stop" not in body  # a block: no stop at the line's end


async def test_a_loopback_server_without_infill_falls_back_to_completions_and_keeps_it(fim, folder):
    fim.refuse["/infill"] = (404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
    folder.use("llamacpp", openai_at(fim))
    fim.answer = ["42"]

    first = await folder.complete("a.py", "answer = |\n")
    second = await folder.complete("a.py", "x = 1\nanswer = |\n")

    assert first is not None and first.text == "42" and second is not None
    assert [request.path for request in fim.requests] == ["/infill", "/v1/completions", "/v1/completions"]


async def test_ollama_generate_with_suffix(fim, folder):
    folder.use("ollama", OllamaProvider("qwen2.5-coder:1.5b", host=fim.url))
    folder.configure(maxTokens=20)
    fim.answer = ["total", " += x"]

    suggestion = await folder.complete("sum.py", "for x in xs:\n    |\nprint(total)\n")

    assert suggestion is not None and suggestion.text == "total += x"
    [body] = fim.bodies("/api/generate")
    assert body["prompt"] == "for x in xs:\n    " and body["suffix"] == "\nprint(total)\n"
    assert body["options"]["num_predict"] == 20 and body["model"] == "qwen2.5-coder:1.5b" and "raw" not in body


async def test_ollama_model_that_cannot_insert_is_asked_raw_with_its_fim_tokens(fim, folder):
    fim.refuse["/api/generate+suffix"] = (400, {"error": "registry.ollama.ai/library/qwen2.5-coder:1.5b does not support insert"})
    folder.use("ollama", OllamaProvider("qwen2.5-coder:1.5b", host=fim.url))
    fim.answer = ["total", " += x", "<|endoftext|>", "junk"]

    suggestion = await folder.complete("sum.py", "for x in xs:\n    |\nprint(total)\n")

    assert suggestion is not None and suggestion.text == "total += x"
    refused, raw = fim.bodies("/api/generate")
    assert "suffix" in refused
    assert raw["raw"] is True and "suffix" not in raw
    assert raw["prompt"] == "<|fim_prefix|>for x in xs:\n    <|fim_suffix|>\nprint(total)\n<|fim_middle|>"
    assert "<|endoftext|>" in raw["options"]["stop"]


async def test_mistral_fim_route(fim, folder, monkeypatch):
    monkeypatch.setenv("MISTRAL_BASE_URL", f"{fim.url}/v1")
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-test-key")
    folder.use("mistral", preset("mistral"), "mistral-large-latest")
    folder.configure(api="mistral-fim", enabled=True)
    fim.answer = ["return ", "n * 2"]

    suggestion = await folder.complete("d.py", "def double(n):\n    |")

    assert suggestion is not None and suggestion.text == "return n * 2"
    [request] = [r for r in fim.requests if r.path == "/v1/fim/completions"]
    assert request.body["model"] == "codestral-latest"  # a chat model's name is not a FIM model
    assert request.body["prompt"] == "def double(n):\n    " and request.body["suffix"] == ""
    assert request.headers["authorization"] == "Bearer mistral-test-key"


async def test_chat_model_fills_the_marked_hole_and_its_answer_is_cut_out(fim, folder):
    folder.use("openai", openai_at(fim, "gpt-4.1"))
    folder.configure(enabled=True)
    fim.refuse["/v1/completions"] = (404, {"error": {"message": "This is a chat model and not supported in the v1/completions endpoint."}})
    fim.refuse["/infill"] = (404, {"error": "not found"})
    fim.answer = ["Here:\n<COMPLE", "TION>b)</COMPLETION>", " hope it helps"]

    suggestion = await folder.complete("m.py", "y = max(a, |)\n")

    assert suggestion is not None and suggestion.text == "b"
    [body] = fim.bodies("/v1/chat/completions")
    assert "y = max(a, {{FILL_HERE}})" in body["messages"][-1]["content"]


async def test_a_paid_api_is_not_asked_until_enabled(fim, folder, monkeypatch):
    monkeypatch.setenv("MISTRAL_API_KEY", "k")
    folder.use("mistral", preset("mistral"))
    assert await folder.complete("a.py", "x = |") is None
    assert fim.requests == []


@pytest.mark.parametrize("name", [".env", ".env.production", "deploy/id_ed25519", "certs/server.key", "secrets/app.pem"])
async def test_no_request_in_a_private_file(fim, folder, name):
    folder.use("llamacpp", openai_at(fim))
    assert await folder.complete(name, "API_KEY=|") is None
    assert fim.requests == []


async def test_no_request_in_an_ignored_or_excluded_file_and_no_snippet_from_one(fim, folder):
    (folder.root / ".gitignore").write_text("build/\n*.log\n")
    folder.use("llamacpp", openai_at(fim))
    folder.configure(api="completions", exclude=["vendor/**"])
    assert await folder.complete("build/gen.py", "x = |") is None
    assert await folder.complete("vendor/lib/x.py", "x = |") is None
    assert await folder.complete("run.log", "x = |") is None
    assert fim.requests == []

    folder.edit(".env", "TOKEN=sekrit-value")
    folder.edit("vendor/lib/y.py", "VENDORED = 1")
    folder.edit("util.py", "def util(): pass")
    await folder.complete("main.py", "x = |")
    [body] = fim.bodies("/v1/completions")
    assert "util.py" in body["prompt"] and "sekrit" not in body["prompt"] and "VENDORED" not in body["prompt"]
