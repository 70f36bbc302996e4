"""The ``elelem.*`` commands: argument models and what each command does.

Each command takes one object argument, validated here with pydantic; a bad
argument is a JSON-RPC InvalidParams naming the field. A turn's result is
``{reply, provider, model, steps, cancelled, error}``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ..agent.messages import ProviderError
from ..agent.session import TurnResult
from ..agent.toolbox import describe
from .folders import Busy, Folder
from .stream import ProgressStream

if TYPE_CHECKING:
    from .server import ElelemServer


UINTEGER_MAX = 2**31 - 1  # LSP's uinteger, the type of a position's line and character


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the arguments were fine but the request could not be done."""

    CODE = -32803


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class PositionArgument(Arguments):
    line: int = Field(ge=0, le=UINTEGER_MAX)
    character: int = Field(ge=0, le=UINTEGER_MAX)


class RangeArgument(Arguments):
    start: PositionArgument
    end: PositionArgument


class FolderArguments(Arguments):
    uri: str | None = None


class AskArguments(FolderArguments):
    prompt: str = Field(min_length=1)
    range: RangeArgument | None = None
    progress_token: Union[str, int, None] = Field(default=None, alias="progressToken")


class DiagnosticArgument(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: str
    range: RangeArgument
    code: Union[str, int, None] = None
    source: str | None = None
    severity: int | None = None


class FixArguments(Arguments):
    uri: str
    range: RangeArgument
    diagnostics: list[DiagnosticArgument] = Field(default_factory=list)
    progress_token: Union[str, int, None] = Field(default=None, alias="progressToken")


class SelectProviderArguments(FolderArguments):
    name: str = Field(min_length=1)
    model: str | None = None


class NoArguments(Arguments):
    pass


def parse(model: type[Arguments], arguments: tuple[Any, ...]) -> Any:
    """The command's one object argument, validated; InvalidParams naming the field otherwise."""
    if len(arguments) > 1:
        raise JsonRpcInvalidParams(f"expected one object argument, got {len(arguments)} arguments")
    raw = arguments[0] if arguments else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"expected one object argument, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise JsonRpcInvalidParams(f"invalid arguments: {describe(error)}") from None


# -- turns ---------------------------------------------------------------------


async def ask(server: "ElelemServer", args: AskArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    location = server.describe_location(folder, args.uri, args.range) if args.uri is not None else ""
    prompt = f"{args.prompt}\n\n{location}" if location else args.prompt
    return await run_turn(server, folder, prompt, args.progress_token)


async def fix(server: "ElelemServer", args: FixArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    problems = "\n".join(
        f"- line {d.range.start.line + 1}: {d.message}"
        + (f" [{d.source}{' ' + str(d.code) if d.code is not None else ''}]" if d.source or d.code is not None else "")
        for d in args.diagnostics
    )
    prompt = (
        "Fix the problem"
        + (f"s reported here:\n{problems}" if problems else " in the selected code.")
        + "\n\nChange the file with the edit tool; keep the change as small as the fix allows.\n\n"
        + server.describe_location(folder, args.uri, args.range, context_lines=5)
    )
    return await run_turn(server, folder, prompt, args.progress_token)


async def run_turn(server: "ElelemServer", folder: Folder, prompt: str, token: str | int | None) -> dict[str, Any]:
    record = server.record_turn(prompt)
    result = await play_turn(server, folder, prompt, token, record.add if record else lambda event: None)
    if record is not None:
        server.show_turn(folder, record, result)
    return result


async def play_turn(
    server: "ElelemServer", folder: Folder, prompt: str, token: str | int | None, observe: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    await server.refresh_settings(folder)
    choice = folder.choice()
    try:
        session = folder.ready_session()
    except ProviderError as error:
        return turn_result(choice.name, choice.model, TurnResult(f"Error: {error}", 0, error=str(error)))
    server.tell_choice(folder, choice)
    progress = await server.open_progress(token)
    stream = ProgressStream(progress.send)
    stream.begin("elelem", prompt)

    def add(event: dict[str, Any]) -> None:
        stream.add(event)
        observe(event)

    try:
        task = folder.start(session.turn(prompt, add))
    except Busy as error:
        stream.end(f"Error: {error}")
        progress.close()
        raise RequestFailed(str(error)) from None
    server.track_turn(folder, progress.token)
    await asyncio.wait({task})
    if task.cancelled():
        result = session.cancelled_turn or TurnResult("", 0)
        result.cancelled = True
        stream.end("cancelled")
    else:
        result = task.result()
        stream.end(result.reply if result.error else "done")
    server.untrack_turn(folder, progress.token)
    progress.close()
    return turn_result(choice.name, choice.model, result)


def turn_result(provider: str, model: str | None, result: TurnResult) -> dict[str, Any]:
    return {
        "reply": result.reply,
        "provider": provider,
        "model": model,
        "steps": result.steps,
        "cancelled": result.cancelled,
        "error": result.error,
    }


# -- the conversation and its provider -----------------------------------------


async def providers(server: "ElelemServer", args: FolderArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    await server.refresh_settings(folder)
    choice = folder.choice()
    return {
        "provider": choice.name,
        "model": choice.model,
        "source": choice.source,
        "available": folder.available(),
        "pluginErrors": [failure.describe() for failure in folder.config.failures],
    }


async def select_provider(server: "ElelemServer", args: SelectProviderArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    await server.refresh_settings(folder)
    try:
        folder.select(args.name, args.model)
    except ProviderError as error:
        raise RequestFailed(str(error)) from None
    except Exception as error:  # a factory's own failure, e.g. a missing API key
        raise RequestFailed(f"could not build provider {args.name!r}: {error}") from None
    return {"provider": args.name, "model": args.model}


async def cancel(server: "ElelemServer", args: FolderArguments) -> dict[str, Any]:
    return {"cancelled": server.folder_for(args.uri).cancel()}


async def reset(server: "ElelemServer", args: FolderArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    if folder.turn is not None and not folder.turn.done():
        raise RequestFailed("a turn is running; cancel it before starting a new conversation")
    folder.reset()
    return {"reset": True}


async def context(server: "ElelemServer", args: FolderArguments) -> dict[str, Any]:
    folder = server.folder_for(args.uri)
    session = folder.session
    messages = await session.messages() if session else []
    return {"messages": messages}


async def tools(server: "ElelemServer", args: NoArguments) -> dict[str, Any]:
    return {"tools": [d["function"] for d in server.toolbox.definitions()]}


async def reload(server: "ElelemServer", args: NoArguments) -> dict[str, Any]:
    failures: list[str] = []
    for folder in server.folders.values():
        failures += folder.reload()
    return {"pluginErrors": failures}


Handler = Callable[["ElelemServer", Any], Awaitable[dict[str, Any]]]
COMMANDS: dict[str, tuple[type[Arguments], Handler]] = {
    "elelem.ask": (AskArguments, ask),
    "elelem.fix": (FixArguments, fix),
    "elelem.providers": (FolderArguments, providers),
    "elelem.selectProvider": (SelectProviderArguments, select_provider),
    "elelem.cancel": (FolderArguments, cancel),
    "elelem.reset": (FolderArguments, reset),
    "elelem.context": (FolderArguments, context),
    "elelem.tools": (NoArguments, tools),
    "elelem.reload": (NoArguments, reload),
}
