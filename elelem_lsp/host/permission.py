"""The permission policy for ``execute``: the ``elelem.execute`` setting (ask|allow|deny),
``allowCommands``, what the person allowed for this session, and otherwise the person,
asked through the front end."""

from __future__ import annotations

from ..agent.command_allowlist import allows
from .frontend import Frontend, Unanswered
from .settings import Settings

ALLOW_ONCE, ALLOW_SESSION, DENY = "Allow once", "Allow for this session", "Deny"


async def allow_command(command: str, settings: Settings, session: set[str], frontend: Frontend) -> tuple[bool, str]:
    """Whether ``command`` may run, and why not; ``session`` gains what the person allows for it."""
    if settings.execute == "allow" or allows(settings.allow_commands, command):
        return True, ""
    if settings.execute == "deny":
        return False, "denied by the elelem.execute setting (and not allowed by elelem.allowCommands)"
    if command in session:
        return True, ""
    try:
        answer = await frontend.ask_permission(f"elelem wants to run: {command}", [ALLOW_ONCE, ALLOW_SESSION, DENY])
    except Unanswered as error:
        return False, str(error)
    if answer == ALLOW_SESSION:
        session.add(command)
    if answer in (ALLOW_ONCE, ALLOW_SESSION):
        return True, ""
    return False, "the person denied it" if answer == DENY else "the prompt was dismissed"
