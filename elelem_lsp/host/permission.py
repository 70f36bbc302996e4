"""The permission policy for ``execute``: the ``elelem.execute`` setting (ask|allow|deny),
``allowCommands``, what the person allowed for this session, and otherwise the person,
asked through the front end."""

from __future__ import annotations

from .frontend import Frontend, Unanswered
from .settings import Settings

ALLOW_ONCE, ALLOW_SESSION, DENY = "Allow once", "Allow for this session", "Deny"


def allowed_by_setting(command: str, allow_commands: list[str]) -> bool:
    """True when ``allowCommands`` lets ``command`` run without asking."""
    return any(command.strip().startswith(prefix) for prefix in allow_commands if prefix)


async def allow_command(command: str, settings: Settings, session: set[str], frontend: Frontend) -> tuple[bool, str]:
    """Whether ``command`` may run, and why not; ``session`` gains what the person allows for it."""
    if settings.execute == "allow":
        return True, ""
    if settings.execute == "deny":
        return False, "denied by the elelem.execute setting"
    if allowed_by_setting(command, settings.allow_commands) or command in session:
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
