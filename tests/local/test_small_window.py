"""Each local provider runs whole turns with a tool call on a 4,096-token model, whose tokenizer
gives about one token a byte: the compact prompt fits, the call is made and answered, and the same
holds in an editor that announces navigation. The model is built here (``tool_caller_weights``)."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest

from local_extras import PROVIDERS, ggml_library, require_extra
from navigating_workspace import workspace_and_toolbox
from tiny_models import DONE, TinyConfig, write_gguf, write_llama2
from elelem_lsp.agent.session import Session
from elelem_lsp.providers import implementation

WINDOW = 4096


@pytest.fixture(scope="module")
def small_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("tool-caller")
    config = TinyConfig(context_length=WINDOW, n_layers=1)
    write_gguf(folder / "caller.gguf", config, tool_caller=True)
    write_llama2(folder / "caller.bin", folder / "tokenizer.bin", config, tool_caller=True)
    return {
        "ELELEM_LLAMA_MODEL": str(folder / "caller.gguf"),
        "ELELEM_LLAMA_CTX": str(WINDOW),
        "ELELEM_GGML_MODEL": str(folder / "caller.gguf"),
        "ELELEM_GGML_CTX": str(WINDOW),
        "ELELEM_GGML_LIB": ggml_library(),
        "ELELEM_CANDLE_MODEL": str(folder / "caller.gguf"),
        "ELELEM_LLAMA2_MODEL": str(folder / "caller.bin"),
        "ELELEM_LLAMA2_TOKENIZER": str(folder / "tokenizer.bin"),
    }


def session_for(name: str, root: Path, editor: bool) -> Session:
    require_extra(name)
    provider = import_module(implementation(name)).factory(temperature=0, max_tokens=32)
    workspace, toolbox = workspace_and_toolbox(root, "editor" if editor else "terminal", editor)
    return Session(provider, workspace, toolbox=toolbox)


@pytest.mark.parametrize("editor", [False, True], ids=["terminal", "editor-with-navigation"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_turn_with_a_tool_call_fits_a_4096_token_model(name, editor, small_env, monkeypatch, tmp_path):
    for variable, value in small_env.items():
        monkeypatch.setenv(variable, value)
    (tmp_path / "§notes.txt").write_text("the list result names this file; the model answers once it sees it\n")
    (tmp_path / "README.md").write_text("# a project\n")
    session = session_for(name, tmp_path, editor)
    for n in range(3):
        events: list[dict] = []
        result = await session.turn(f"turn {n}: which files are there? " + "words " * 40, events.append)
        assert result.error is None, result.error
        calls = [e for e in events if e["type"] == "doing"]
        results = [e for e in events if e["type"] == "result"]
        assert [c["name"] for c in calls] == ["list"] and results[0]["ok"] and results[0]["summary"] == "2 files"
        assert result.reply == DONE and result.steps == 2
        assert not [e for e in events if e["type"] == "context"]  # nothing left out of these turns
    assert session.prompt_mode == "compact" and session.context_tokens == WINDOW - 32
    system = (await session.messages())[0]["content"]
    assert session.provider.count_tokens(system) > 0.8 * len(system.encode())  # about a token a byte
    estimate = await session.estimate("one more")
    assert estimate.tokens <= session.context_tokens and estimate.left_out == 0 and estimate.kept == 3


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
async def test_through_the_server_an_editor_announcing_navigation_gets_the_call_and_the_answer(name, project, start_editor, small_env):
    from pytest_lsp import client_capabilities

    require_extra(name)
    (project / "§notes.txt").write_text("the list result names this file\n")
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"elelem": {"diagnostics": True, "definition": True, "references": True, "symbols": True}}
    editor = await start_editor(
        project, client=capabilities, settings={"provider": name, "temperature": 0, "maxTokens": 32}, env=small_env
    )
    for n in range(2):
        result = await editor.ask(f"turn {n}: which files are there?", token=f"t{n}")
        assert result["error"] is None and result["reply"] == DONE and result["steps"] == 2, result
        events = editor.events(f"t{n}")
        assert [e["name"] for e in events if e["type"] == "doing"] == ["list"]
        assert [e["summary"] for e in events if e["type"] == "result"] == ["2 files"]
    window = (await editor.command("elelem.context", {}))["window"]
    assert window["mode"] == "compact" and window["turnsKept"] == 2 and window["budgetTokens"] == WINDOW - 32
