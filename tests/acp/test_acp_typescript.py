"""``elelem-lsp acp`` driven by the official ACP TypeScript SDK (``@agentclientprotocol/sdk``, its
stable v1 entrypoint) as the client: initialize, authenticate, a prompt with an image block that
sends a plan, a usage update and the title, session/close, session/resume; a command's permission
request that says whether it runs in the sandbox; every message both ways checked against the
schema the SDK ships (``schema_check``)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path

from typing import Any

import pytest

from scaffold import write_user_settings
from optional_parts import require, require_bubblewrap, require_program
from schema_check import problems
from scaffold import write_script
from test_acp_tools import doing

from test_acp_current import PNG, recorded

SDK_FOLDER = Path.home() / ".cache" / "elelem-acp"  # where .ci/run installs the SDK
DRIVER = Path(__file__).parent / "typescript" / "drive.mjs"
INSTALL = (
    "mkdir -p ~/.cache/elelem-acp && cp tests/acp/typescript/package*.json ~/.cache/elelem-acp/ "
    "&& npm ci --prefix ~/.cache/elelem-acp"
)


async def drive(project: Path, out: Path, *arguments: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What ``drive.mjs`` recorded, driving ``elelem-lsp acp`` in ``project`` through the SDK (``arguments``: the scenario)."""
    node = require_program("node", "acp_sdk", "apt-get install nodejs")
    require((SDK_FOLDER / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(), "acp_sdk",
            "the ACP TypeScript SDK", INSTALL)
    process = await asyncio.create_subprocess_exec(
        node, str(DRIVER), str(SDK_FOLDER), str(project), str(out), *arguments,
        env={**os.environ, "PYTHON": sys.executable, **(env or {})}, cwd=project, stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, stderr.decode(errors="replace")[-3000:]
    return json.loads(out.read_text())


async def test_the_typescript_sdk_client_sees_plan_usage_title_and_closes_and_resumes(
    scripted_project: Path, home: Path, tmp_path: Path
):
    (home / ".config" / "elelem-lsp" / "settings.json").write_text(
        json.dumps({"provider": "scripted", "model": "claude-haiku-4-5"}))
    entries = [{"content": "look at the picture", "status": "completed"}, {"content": "say what it is", "status": "in_progress"}]
    write_script(scripted_project, [
        [{"type": "record"}, {"type": "doing", "id": "p1", "name": "plan", "arguments": {"entries": entries}},
         {"type": "usage", "inputTokens": 900, "outputTokens": 30}],
        [{"type": "saying", "text": "A single dot."}, {"type": "usage", "inputTokens": 950, "outputTokens": 8}],
    ])  # played again from the start by the resumed session's provider
    session = await drive(scripted_project, tmp_path / "session.json", "session", base64.b64encode(PNG).decode(),
                          env={"SCRIPTED_IMAGES": "1"})
    steps, updates = session["steps"], session["updates"]

    capabilities = steps["initialize"]["agentCapabilities"]
    assert capabilities["promptCapabilities"]["image"] is True
    assert {"close", "resume", "list"} <= set(capabilities["sessionCapabilities"])
    assert steps["initialize"]["authMethods"][0]["id"] == "environment" and steps["authenticate"] == {}
    assert steps["prompt"]["stopReason"] == "end_turn"

    plan = next(u for u in updates if u["sessionUpdate"] == "plan")
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [(e["content"], e["status"]) for e in entries]
    usage = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert usage[0]["used"] == 958 and usage[0]["cost"]["currency"] == "USD" and usage[0]["cost"]["amount"] > 0
    assert usage[1]["cost"]["amount"] > usage[0]["cost"]["amount"]  # the resumed conversation's cost goes on
    titles = [u["title"] for u in updates if u["sessionUpdate"] == "session_info_update" and u.get("title")]
    assert titles[0] == "what is in this picture?"
    said = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert said and all(isinstance(u.get("messageId"), str) and u["messageId"] for u in said)  # each chunk names its message

    first, resumed = recorded(scripted_project)
    [image] = first["messages"][-1]["images"]
    assert Path(image["path"]).read_bytes() == PNG

    assert steps["close"] == {} and steps["closedPrompt"]["code"] == -32602
    assert steps["replayed"] == 0 and steps["resumedPrompt"]["stopReason"] == "end_turn"
    said = [m["content"] for m in resumed["messages"] if m["role"] in ("user", "assistant")]
    assert said == ["what is in this picture?", "A single dot.", "and now?"]
    assert resumed["messages"][1]["images"] == [image]  # the resumed history still names the image
    assert steps["exitCode"] == 0

    sent = [(m["from"], m["message"]) for m in session["messages"]]
    assert {sender for sender, _ in sent} == {"client", "agent"} and len(sent) > 20
    assert problems(sent) == []


@pytest.mark.parametrize(("sandbox", "note"), [("auto", "in the sandbox"), ("off", "no sandbox")])
async def test_the_typescript_sdk_client_is_asked_about_a_command_naming_the_sandbox(
    scripted_project: Path, home: Path, tmp_path: Path, sandbox: str, note: str
):
    if sandbox == "auto":
        require_bubblewrap()
    write_user_settings(home, {"provider": "scripted", "sandbox": sandbox})
    write_script(scripted_project, [[doing("x1", "execute", command="echo hi")], [{"type": "say_tool_result"}]])
    session = await drive(scripted_project, tmp_path / "permission.json", "permission")
    assert session["steps"]["prompt"]["stopReason"] == "end_turn"
    [asked] = session["permissions"]
    call = asked["toolCall"]
    assert (call["toolCallId"], call["title"]) == ("x1", f"Run echo hi ({note})")
    assert call["content"] == [{"type": "content", "content": {"type": "text", "text": f"elelem wants to run: echo hi ({note})"}}]
    assert [o["kind"] for o in asked["options"]][0] == "allow_once"
    done = [u for u in session["updates"] if u.get("toolCallId") == "x1"][-1]
    assert done["status"] == "completed"
    assert '"exit_code":0' in "".join(u["content"]["text"] for u in session["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert problems([(m["from"], m["message"]) for m in session["messages"]]) == []
