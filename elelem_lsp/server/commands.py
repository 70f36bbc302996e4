"""The ``elelem.*`` commands: argument models, and each command as a call to a folder agent
(or, for what concerns every folder, the host), reached through ``router.LspRouter``.

Each command takes one object argument, validated here with pydantic; a bad
argument is a JSON-RPC InvalidParams naming the field, and what the host refuses
is RequestFailed. A turn's result is ``{reply, provider, model, steps, cancelled, error, stopReason, checkpoint}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ..agent.editor_context import known_changes
from ..agent.messages import Image
from ..agent.toolbox import describe
from ..host import rewinding, stored
from ..host.conversations import ID_PATTERN
from ..host.frontend import BadRequest, Refused
from ..host.images import check_image_type, decode_image
from .completion import HasCompletions, InlineCompletions
from .documents import describe_location, editor_context
from .next_edit import HasNextEdits
from .router import LspRouter

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


class ImageArgument(Arguments):
    mime_type: str = Field(alias="mimeType")
    data: str

    @field_validator("mime_type")
    @classmethod
    def image_type(cls, mime_type: str) -> str:
        check_image_type(mime_type)
        return mime_type

    @field_validator("data")
    @classmethod
    def image(cls, data: str, info: ValidationInfo) -> str:
        """Base64 of an image a provider takes (``host.images.decode_image``), under the field's name."""
        if "mime_type" in info.data:  # else the type's own error names mimeType
            decode_image(info.data["mime_type"], data)
        return data


class AskArguments(FolderArguments):
    prompt: str = Field(min_length=1)
    range: RangeArgument | None = None
    images: list[ImageArgument] = Field(default_factory=list)
    progress_token: str | int | None = Field(default=None, alias="progressToken")


class DiagnosticArgument(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: str
    range: RangeArgument
    code: str | int | None = None
    source: str | None = None
    severity: int | None = None


class FixArguments(Arguments):
    uri: str
    range: RangeArgument
    diagnostics: list[DiagnosticArgument] = Field(default_factory=list)
    progress_token: str | int | None = Field(default=None, alias="progressToken")


class SelectProviderArguments(FolderArguments):
    name: str = Field(min_length=1)
    model: str | None = None


class NoArguments(Arguments):
    pass


ConversationId = Annotated[str, Field(pattern=ID_PATTERN)]


class ConversationArguments(FolderArguments):
    id: ConversationId


class TranscriptArguments(FolderArguments):
    id: ConversationId | None = None


class AcceptedArguments(Arguments):
    id: str = Field(min_length=1)
    chars: int | None = Field(default=None, ge=0)


class RewindArguments(FolderArguments):
    turn: int = Field(ge=1)
    files: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    conversation: bool = False
    force: bool = False


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


# -- what each command asks of the host -------------------------------------------


async def ask(router: LspRouter, args: AskArguments) -> dict[str, Any]:
    agent = router.agent_for(args.uri)
    trusted = agent.settings.trusted  # as last taken (the host takes the settings at start): whether git may run
    context = await editor_context(router.server.workspace, agent.root, args.uri, args.range, trusted=trusted)
    images: list[Image] = [{"mimeType": image.mime_type, "data": image.data} for image in args.images]
    try:
        return await router.turn(
            agent, args.prompt, context=context, images=images, token=args.progress_token, request=router.server.protocol.msg_id
        )
    finally:
        if trusted:  # what the turn changed, for the next ask's context
            known_changes(agent.root).refresh()


async def fix(router: LspRouter, args: FixArguments) -> dict[str, Any]:
    agent = router.agent_for(args.uri)
    prompt = fix_request(args.diagnostics)
    context = "Change the file with the edit tool; keep the change as small as the fix allows.\n\n" + describe_location(
        router.server.workspace, agent.root, args.uri, args.range, context_lines=5
    )
    return await router.turn(agent, prompt, context=context, token=args.progress_token, request=router.server.protocol.msg_id)


def fix_request(diagnostics: list[DiagnosticArgument]) -> str:
    """The first line of a fix prompt: the problems reported, one a line, or the selection."""
    problems = "\n".join(f"- line {d.range.start.line + 1}: {d.message}{_origin(d)}" for d in diagnostics)
    return "Fix the problem" + (f"s reported here:\n{problems}" if problems else " in the selected code.")


def _origin(diagnostic: DiagnosticArgument) -> str:
    """`` [source code]`` of a diagnostic, naming what it has of the two."""
    named = [str(part) for part in (diagnostic.source, diagnostic.code) if part not in (None, "")]
    return f" [{' '.join(named)}]" if named else ""


async def providers(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    return await router.agent_for(args.uri).providers()


async def select_provider(router: LspRouter, args: SelectProviderArguments) -> dict[str, Any]:
    return await router.agent_for(args.uri).select_provider(args.name, args.model)


async def cancel(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    return {"cancelled": router.agent_for(args.uri).cancel()}


async def reset(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    return await stored.new_conversation(router.agent_for(args.uri))


async def conversations(router: LspRouter, args: FolderArguments) -> list[dict[str, Any]]:
    return await stored.conversations(router.agent_for(args.uri))


async def resume(router: LspRouter, args: ConversationArguments) -> dict[str, Any]:
    return await stored.resume(router.agent_for(args.uri), args.id)


async def transcript(router: LspRouter, args: TranscriptArguments) -> dict[str, Any]:
    return await stored.transcript(router.agent_for(args.uri), args.id)


async def delete_conversation(router: LspRouter, args: ConversationArguments) -> dict[str, Any]:
    return await stored.delete_conversation(router.agent_for(args.uri), args.id)


async def compact(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    return await router.agent_for(args.uri).compact()


async def context(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    agent = router.agent_for(args.uri)
    next_edits = cast(HasNextEdits, router.server).next_edit
    return await agent.context() | {"completion": completions(router).counts(agent), "nextEdit": next_edits.summary(agent)}


async def completion_accepted(router: LspRouter, args: AcceptedArguments) -> dict[str, Any]:
    return {"recorded": completions(router).accept(args.id, args.chars)}


def completions(router: LspRouter) -> InlineCompletions:
    return cast(HasCompletions, router.server).completion


async def tools(router: LspRouter, args: NoArguments) -> dict[str, Any]:
    return router.host.tools()


async def reload(router: LspRouter, args: NoArguments) -> dict[str, Any]:
    return router.host.reload()


async def mcp(router: LspRouter, args: FolderArguments) -> dict[str, Any]:
    return await router.agent_for(args.uri).mcp_status()


async def checkpoints(router: LspRouter, args: FolderArguments) -> list[dict[str, Any]]:
    return await rewinding.checkpoints(router.agent_for(args.uri))


async def rewind(router: LspRouter, args: RewindArguments) -> dict[str, Any]:
    return await rewinding.rewind(
        router.agent_for(args.uri), args.turn, args.files, conversation=args.conversation, force=args.force
    )


Handler = Callable[[LspRouter, Any], Awaitable[Any]]
COMMANDS: dict[str, tuple[type[Arguments], Handler]] = {
    "elelem.ask": (AskArguments, ask),
    "elelem.fix": (FixArguments, fix),
    "elelem.providers": (FolderArguments, providers),
    "elelem.selectProvider": (SelectProviderArguments, select_provider),
    "elelem.cancel": (FolderArguments, cancel),
    "elelem.reset": (FolderArguments, reset),
    "elelem.context": (FolderArguments, context),
    "elelem.conversations": (FolderArguments, conversations),
    "elelem.resume": (ConversationArguments, resume),
    "elelem.transcript": (TranscriptArguments, transcript),
    "elelem.deleteConversation": (ConversationArguments, delete_conversation),
    "elelem.compact": (FolderArguments, compact),
    "elelem.tools": (NoArguments, tools),
    "elelem.reload": (NoArguments, reload),
    "elelem.mcp": (FolderArguments, mcp),
    "elelem.checkpoints": (FolderArguments, checkpoints),
    "elelem.rewind": (RewindArguments, rewind),
    "elelem.completionAccepted": (AcceptedArguments, completion_accepted),
}


async def run(router: LspRouter, name: str, arguments: tuple[Any, ...]) -> Any:
    """One command, parsed and done; what names nothing is InvalidParams, what the host refuses RequestFailed."""
    model, handler = COMMANDS[name]
    try:
        return await handler(router, parse(model, arguments))
    except BadRequest as error:
        raise JsonRpcInvalidParams(str(error)) from None
    except Refused as error:
        raise RequestFailed(str(error)) from None
