"""Bad answers real models give, kept as cases (``cases/*.json``), each through the whole path:
the fake server streams the model's pieces over the route the model is asked by, and the
suggestion must be what a person wants to see (or none).

A case: ``model``, ``route`` (``fim``: /v1/completions; ``chat``: chat completions),
``text`` with ``|`` at the cursor, ``pieces`` as streamed, ``expected`` (null: no suggestion),
``multiline`` (the setting, ``auto`` if absent) and ``why`` (what the model does wrong).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elelem_lsp.providers.remote.openai import OpenAIProvider

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
async def test_bad_output(case, fim, folder):
    data = json.loads(case.read_text())
    folder.use("llamacpp", OpenAIProvider(data["model"], base_url=f"{fim.url}/v1"), data["model"])
    folder.configure(api="completions" if data["route"] == "fim" else "chat", multiline=data.get("multiline", "auto"))
    fim.answer = data["pieces"]

    suggestion = await folder.complete("case.py", data["text"])

    assert (suggestion.text if suggestion else None) == data["expected"], data["why"]
    assert len(fim.requests) == 1
