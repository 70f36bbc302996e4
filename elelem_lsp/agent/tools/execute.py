"""``execute``: a shell command at the workspace root, if the person allows it."""

from pydantic import BaseModel, Field, field_validator

from ..sandbox import hidden_note
from ..workspace import Workspace
from .base import Tool, ToolFailure

OUTPUT_CAP = 64 * 1024
DEFAULT_TIMEOUT = 120  # seconds


class ExecuteArguments(BaseModel):
    command: str = Field(description="A shell command, run in the workspace root")
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=3600, description="Seconds before it is killed")

    @field_validator("command")
    @classmethod
    def no_nul(cls, command: str) -> str:
        if "\0" in command:  # no process can be given one: refuse before the person is asked
            raise ValueError("contains a NUL byte, which no command can hold")
        return command


async def execute(args: ExecuteArguments, workspace: Workspace) -> dict:
    allowed, why = await workspace.allow_command(args.command)
    if not allowed:
        raise ToolFailure(f"not allowed to run {args.command!r}: {why}")
    result = await workspace.run(args.command, timeout=args.timeout, output_cap=OUTPUT_CAP)
    if result.timed_out:
        raise ToolFailure(f"timed out after {args.timeout:g}s; output so far:\n{result.output}")
    shown = {"sandbox": result.sandbox} if result.sandbox else {}  # why a write or a connection may fail
    hidden = hidden_note(result.output) if result.sandbox and result.exit_code != 0 else ""
    if hidden:  # it failed on what the sandbox hides: say so, and what would show it
        shown["hidden"] = hidden
    return {"exit_code": result.exit_code, "output": result.output, "truncated": result.truncated, **shown}


DESCRIPTION = (
    "Run a shell command in the workspace root: tests, linters, type checkers, builds, git. Use it to check "
    "your changes. The person may be asked to approve it first, and may refuse. It runs without a terminal "
    "(nothing can be typed into it) and is killed after `timeout` seconds with everything it started; "
    f"output (stdout and stderr together) is kept up to {OUTPUT_CAP // 1024} KiB. Prefer read, grep and list "
    "for looking at files."
)

EXECUTE = Tool("execute", DESCRIPTION, ExecuteArguments, execute, aliases=("bash", "sh", "exec"), summary="Run a shell command.")
