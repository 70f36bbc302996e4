"""The slash commands a person types in an ACP prompt (``/provider``, ``/model``, ``/reset``,
``/compact``, ``/rewind``, ``/tools``, ``/context``): the list announced as ``available_commands_update``, and each
command's answer in words for the person."""

from __future__ import annotations

from acp.helpers import update_available_commands
from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput

from ..agent.prompt_size import window_text
from ..agent.wording import checkpoint_lines, rewind_lines
from ..host import rewinding, stored
from ..host.folder_agent import FolderAgent
from ..host.tool_list import listed_tools
from .options import DEFAULT_MODEL, select
from .session import AcpSession

COMMANDS = {
    "provider": ("Show the providers, or switch: /provider NAME [MODEL]", "NAME [MODEL]"),
    "model": ("Switch the model of the current provider: /model NAME", "NAME"),
    # The LSP face's /reset moves the folder to a new conversation. Here a session is one stored
    # conversation for good (session/load and session/list name it by the session id), so /reset
    # starts the model's context over inside it: the earlier turns stay stored and shown.
    "reset": ("Start the context over: the model forgets this thread's earlier turns (they stay shown)", None),
    "compact": ("Replace the older turns with a summary, to fit more in the context", None),
    "rewind": ("List the turns that changed files, or put files and context back to before turn N", "[N [force]]"),
    "tools": ("List the tools the agent can use", None),
    "context": ("How the context window is used: the prompt's mode, its fixed part, history and room left", None),
}


def available_commands() -> AvailableCommandsUpdate:
    """The ``available_commands_update`` announcing the commands."""
    return update_available_commands(
        [
            AvailableCommand(
                name=name,
                description=description,
                input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None,
            )
            for name, (description, hint) in COMMANDS.items()
        ]
    )


def slash_command(text: str) -> tuple[str, str] | None:
    """``("provider", "openai gpt-4o")`` for ``/provider openai gpt-4o``; None for a prompt."""
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].strip().partition(" ")
    return (name, argument.strip()) if name in COMMANDS else None


async def command(session: AcpSession, name: str, argument: str) -> str:
    """What a slash command answers, in words for the person."""
    agent = session.agent
    if name == "provider":
        if not argument:
            info = await agent.providers()
            listed = "\n".join(f"{'*' if n == info['provider'] else ' '} {n}" for n in info["available"])
            return f"{listed}\n\n* = this session's provider; /provider NAME [MODEL] switches"
        provider, _, model = argument.partition(" ")
        await select(agent, provider, model.strip() or None)
        await session.options_changed()
        return f"provider: {provider}" + (f" (model {model.strip()})" if model.strip() else "")
    if name == "model":
        if not argument:
            return f"model: {agent.provider_choice.choice().model or DEFAULT_MODEL}; /model NAME switches"
        await select(agent, None, argument)
        await session.options_changed()
        return f"model: {argument}"
    if name == "reset":
        await stored.start_over(agent)
        return "the context starts over: the model no longer sees the turns above"
    if name == "compact":
        return (await agent.compact())["text"]
    if name == "rewind":
        return await rewind(agent, argument)
    if name == "context":
        window = (await agent.context()).get("window")
        return window_text(window) if window else "no provider to measure the context for"
    names = [tool["name"] for tool in listed_tools(agent.toolbox, [agent])["tools"]]
    return "tools: " + ", ".join(names)


async def rewind(agent: FolderAgent, argument: str) -> str:
    """``/rewind``: the checkpoints; ``/rewind N [force]``: the files, and the context when turn N
    is this session's, back to before turn N."""
    listing = await rewinding.checkpoints(agent)
    wanted, _, force = argument.partition(" ")
    if not wanted:
        return "\n".join(checkpoint_lines(listing))
    if not wanted.isdigit() or int(wanted) < 1 or force.strip() not in ("", "force"):
        return "usage: /rewind [N [force]] (/rewind lists the turns)"
    turn = int(wanted)
    ours = any(c["turn"] == turn and c["conversation"] == agent.current.id for c in listing)
    result = await rewinding.rewind(agent, turn, conversation=ours, force=bool(force.strip()))
    lines = rewind_lines(result, "(/rewind {turn} undoes this)")
    if not result["rewound"]:
        lines.append(f"nothing was rewound; /rewind {turn} force overwrites them")
    return "\n".join(lines)
