"""The permission policy for execute, without an editor: the setting, allowCommands, what the
person allowed for the session, and the person's answer (or the lack of one)."""

from __future__ import annotations

import pytest

from elelem_lsp.host.frontend import Unanswered
from elelem_lsp.host.permission import ALLOW_ONCE, ALLOW_SESSION, DENY, allow_command
from elelem_lsp.host.settings import Settings

from .memory_frontend import MemoryPerson


@pytest.mark.parametrize(
    ("command", "entries", "execute", "allowed"),
    [
        ("make test", ["make"], "ask", True),
        ("pytest -q", ["make", "pytest"], "deny", True),  # allowCommands lets it through even under deny
        ("makefoo", ["make"], "ask", False),  # whole words only
        ("make; rm -rf /", ["make"], "ask", False),  # more than one simple command
        ("anything", [""], "ask", False),
        ("anything", [], "deny", False),
    ],
)
async def test_allow_commands_lets_a_simple_command_run_without_asking(command, entries, execute, allowed):
    frontend = MemoryPerson(answers=[DENY])
    decision = await allow_command(command, Settings(execute=execute, allowCommands=entries), set(), frontend, sandboxed=False)
    assert decision[0] is allowed
    assert frontend.questions == ([] if allowed or execute == "deny" else [f"elelem wants to run: {command} (no sandbox)"])


async def test_allow_and_deny_settings_decide_without_asking():
    frontend = MemoryPerson(answers=[DENY])
    assert await allow_command("ls", Settings(execute="allow"), set(), frontend, sandboxed=False) == (True, "")
    assert await allow_command("ls", Settings(execute="deny"), set(), frontend, sandboxed=False) == (
        False, "denied by the elelem.execute setting (and not allowed by elelem.allowCommands)")
    assert frontend.questions == []


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (ALLOW_ONCE, (True, "")),
        (ALLOW_SESSION, (True, "")),
        (DENY, (False, "the person denied it")),
        (None, (False, "the prompt was dismissed")),
        ("Something else", (False, "the prompt was dismissed")),
        (Unanswered("the editor could not ask for permission: gone"), (False, "the editor could not ask for permission: gone")),
    ],
)
async def test_under_ask_the_person_decides(answer, outcome):
    frontend = MemoryPerson(answers=[answer])
    assert await allow_command("make", Settings(), set(), frontend, sandboxed=False) == outcome
    assert frontend.questions == ["elelem wants to run: make (no sandbox)"]


async def test_allow_for_this_session_is_remembered_for_that_command_only():
    frontend = MemoryPerson(answers=[ALLOW_SESSION, DENY])
    session: set[str] = set()
    assert (await allow_command("make", Settings(), session, frontend, sandboxed=False))[0]
    assert (await allow_command("make", Settings(), session, frontend, sandboxed=False))[0]  # not asked again
    assert not (await allow_command("make install", Settings(), session, frontend, sandboxed=False))[0]
    assert frontend.questions == ["elelem wants to run: make (no sandbox)", "elelem wants to run: make install (no sandbox)"]


async def test_allow_once_is_not_remembered():
    frontend = MemoryPerson(answers=[ALLOW_ONCE, DENY])
    session: set[str] = set()
    assert (await allow_command("make", Settings(), session, frontend, sandboxed=False))[0]
    assert not (await allow_command("make", Settings(), session, frontend, sandboxed=False))[0]
    assert session == set()
