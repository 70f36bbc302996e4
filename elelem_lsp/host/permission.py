"""The permission policy for ``execute``, for MCP tools and for changes to the guarded files.

``execute``: the ``elelem.execute`` setting (ask|allow|deny), ``allowCommands``, what the
person allowed for this session, and otherwise the person, asked through the front end
(told whether the command runs in the sandbox).
An MCP tool: the ``elelem.mcp`` setting (ask|allow|deny), ``allowMcpTools`` (a server's
``NAME`` or one ``NAME__tool``), what the person allowed for this session, then the person.
A change to a guarded file (``sandbox.GUARDED``: what says what elelem and git may run): what
the person allowed for this session, else the person, whatever the settings say (they are
among those files).
"""

from __future__ import annotations

from ..agent.command_allowlist import allows
from .frontend import Person, Unanswered
from .settings import Settings

ALLOW_ONCE, ALLOW_SESSION, DENY = "Allow once", "Allow for this session", "Deny"
RUN_QUESTION = "elelem wants to run: "  # how a question about a command begins (the terminal's --yes answers those)
IN_SANDBOX, NO_SANDBOX = " (in the sandbox)", " (no sandbox)"  # how the question ends


async def allow_command(
    command: str, settings: Settings, session: set[str], frontend: Person, *, sandboxed: bool
) -> tuple[bool, str]:
    """Whether ``command`` may run, and why not; ``session`` gains what the person allows for it.
    The person is told whether it runs in the sandbox (``sandboxed``)."""
    if settings.execute == "allow" or allows(settings.allow_commands, command):
        return True, ""
    if settings.execute == "deny":
        return False, "denied by the elelem.execute setting (and not allowed by elelem.allowCommands)"
    return await ask_person(run_question(command, sandboxed), command, session, frontend)


def run_question(command: str, sandboxed: bool) -> str:
    """How the person is asked about a command: the command, and whether it runs in the sandbox."""
    return f"{RUN_QUESTION}{command}{IN_SANDBOX if sandboxed else NO_SANDBOX}"


async def allow_guarded_change(name: str, session: set[str], frontend: Person) -> tuple[bool, str]:
    """Whether the workspace file ``name``, one of the guarded, may be changed: the person says."""
    question = f"elelem wants to change {name}, which says what elelem or git may run (settings, plugins, git hooks)"
    return await ask_person(question, f"\0change {name}", session, frontend)  # no command is named so


async def allow_mcp_tool(
    server: str, tool: str, call: str, settings: Settings, session: set[str], frontend: Person
) -> tuple[bool, str]:
    """Whether the MCP ``tool`` of ``server`` may be called (``call``: the call as the person reads it)."""
    name = f"{server}__{tool}"
    if settings.mcp == "allow" or server in settings.allow_mcp_tools or name in settings.allow_mcp_tools:
        return True, ""
    if settings.mcp == "deny":
        return False, "denied by the elelem.mcp setting (and not allowed by elelem.allowMcpTools)"
    return await ask_person(f"elelem wants to call {call} (MCP server {server})", name, session, frontend)


async def ask_person(question: str, key: str, session: set[str], frontend: Person) -> tuple[bool, str]:
    """Allow once, for this session (``session`` remembers ``key``) or deny: the person's answer."""
    if key in session:
        return True, ""
    try:
        answer = await frontend.ask_permission(question, [ALLOW_ONCE, ALLOW_SESSION, DENY])
    except Unanswered as error:
        return False, str(error)
    if answer == ALLOW_SESSION:
        session.add(key)
    if answer in (ALLOW_ONCE, ALLOW_SESSION):
        return True, ""
    return False, "the person denied it" if answer == DENY else "the prompt was dismissed"
