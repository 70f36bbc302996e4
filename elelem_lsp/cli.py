"""``elelem-lsp``: serve the language server, or use it from a terminal.

``serve`` runs the server (stdio, or ``--tcp HOST:PORT``); ``acp`` runs the same agent
over the Agent Client Protocol on stdio. ``ask`` and ``chat``
start that server as a subprocess and drive it as an editor would.
``providers`` lists what ``-p`` can name here. A bad argument is a one-line
error (exit 2), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spinner import Spinner

if TYPE_CHECKING:
    from .client.trust_prompt import TrustDecision

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    status = args.run(args)
    # The process ends next. Frozen, the tens of thousands of objects that lsprotocol's and pygls'
    # classes hold are left to the OS instead of being torn down one by one (0.2 s to 1 s a process).
    gc.freeze()
    return status


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported on one line."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def tcp_address(value: str) -> tuple[str, int]:
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:2087, got {value!r}")
    return host or "127.0.0.1", int(port)


def log_level(value: str) -> str:
    if value.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(LOG_LEVELS)}")
    return value.upper()


def folder(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a file, not a folder")
    return path


def image_file(value: str) -> dict[str, str]:
    """An image named to ``ask --image``, read and checked, as ``elelem.ask``'s ``images`` take it."""
    from .host.images import ImageError, read_image

    try:
        media_type, content = read_image(Path(value).expanduser())
    except ImageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{value}: {error.strerror or error}") from None
    return {"mimeType": media_type, "data": base64.b64encode(content).decode("ascii")}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="elelem-lsp", description="A coding agent in your editor, over LSP.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", type=tcp_address, help="listen on a TCP address instead")
    log_option(serve)
    serve.set_defaults(run=run_serve)

    acp = commands.add_parser("acp", help="run as an Agent Client Protocol agent on stdin/stdout (Zed, JetBrains...)")
    trust_option(acp)
    log_option(acp)
    acp.set_defaults(run=run_acp)

    def client_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("-p", "--provider", help="provider name (default: picked from the environment)")
        sub.add_argument("--model", help="model for the provider")
        sub.add_argument(
            "-y", "--yes", action="store_true", help="let the agent run commands without asking (MCP tool calls are still asked)"
        )
        sub.add_argument("-C", "--directory", type=folder, default=Path("."), help="workspace folder (default: .)")
        sub.add_argument("-v", "--verbose", action="store_true", help="show the server's log")
        which = sub.add_mutually_exclusive_group()
        which.add_argument(
            "-c",
            "--continue",
            dest="keep",
            action="store_true",
            help="go on with the folder's current conversation (default: a new one)",
        )
        which.add_argument("-r", "--resume", metavar="ID", help="go on with conversation ID (chat's /conversations lists them)")
        trust_option(sub)

    ask = commands.add_parser("ask", help="ask once and print the reply")
    client_options(ask)
    ask.add_argument(
        "--image",
        dest="images",
        metavar="FILE",
        action="append",
        type=image_file,
        default=[],
        help="send an image (PNG, JPEG, GIF, WebP, at most 3.75 MiB) with the prompt; may be repeated",
    )
    ask.add_argument("prompt", nargs="+", help="what to ask; piped stdin is added in a code fence")
    ask.set_defaults(run=run_ask)

    chat = commands.add_parser("chat", help="an interactive conversation")
    client_options(chat)
    chat.set_defaults(run=run_chat)

    rewind = commands.add_parser("rewind", help="list the turns that changed files, or put the files back to before one")
    rewind.add_argument("turn", nargs="?", type=int, metavar="TURN", help="the turn to rewind (leave out to list them)")
    rewind.add_argument("--file", dest="files", action="append", metavar="PATH", help="rewind only this file (repeatable)")
    rewind.add_argument("--conversation", action="store_true", help="the folder's current conversation goes back too")
    rewind.add_argument("--force", action="store_true", help="overwrite files changed since the turn")
    rewind.add_argument("-C", "--directory", type=folder, default=Path("."), help="workspace folder (default: .)")
    trust_option(rewind)
    rewind.set_defaults(run=run_rewind)

    providers = commands.add_parser("providers", help="list the providers -p can name here")
    providers.add_argument("-C", "--directory", type=folder, default=Path("."), help="workspace folder (default: .)")
    trust_option(providers)
    providers.set_defaults(run=run_providers)
    return parser


def log_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--log-level",
        default="WARNING",
        type=log_level,
        metavar="LEVEL",
        help=f"log level for stderr: {', '.join(LOG_LEVELS)} (default WARNING)",
    )


def trust_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--trust", action="store_true", help="load the folder's .agents/plugins without asking")


def log_to_stderr(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s")
    # pygls logs every message body at INFO, httpx every request URL (a ?key= too) and httpcore
    # its traffic, and so do the MCP SDK and its httpx2 (an MCP server's URL): they stay at
    # WARNING whatever the level asked for
    for noisy in ("pygls", "httpx", "httpcore", "mcp", "httpx2"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def leave_out_unused_libraries() -> None:
    """The servers run on asyncio alone. httpcore imports trio whenever it is installed, and httpx
    its command-line tool (click, pygments): 4 MB of a server's memory for nothing. ``None`` in
    ``sys.modules`` makes those imports fail as if the packages were absent, which both expect."""
    for name in ("trio", "httpx._main"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def freeze_protocol_library() -> None:
    """pygls and lsprotocol imported, their objects (tens of thousands, kept for the process's
    life) frozen: the full collection that importing our own modules sets off then leaves them
    out (about 20 ms of CPU less before ``initialize`` is answered, and no more memory)."""
    import pygls.lsp.server  # noqa: F401

    gc.freeze()


def run_serve(args: argparse.Namespace) -> int:
    log_to_stderr(args.log_level)
    leave_out_unused_libraries()
    freeze_protocol_library()
    from .server.server import create_server

    server = create_server()
    if args.tcp:
        host, port = args.tcp
        try:
            server.start_tcp(host, port)
        except OSError as error:
            print(f"elelem-lsp serve: cannot listen on {host}:{port}: {error.strerror or error}", file=sys.stderr)
            return 1
    else:
        server.start_io()
    return 0


def run_acp(args: argparse.Namespace) -> int:
    log_to_stderr(args.log_level)
    leave_out_unused_libraries()
    from .acp.stdio import serve
    from .stop_signals import StopSignals

    stop_signals = StopSignals()
    try:
        asyncio.run(serve(stop_signals, trust=args.trust))
    except KeyboardInterrupt:
        return 130
    stop_signals.end_process()
    return 0


def starting() -> Spinner:
    """The spinner shown (on a terminal) until the server answers; ``with starting() as spinner:``."""
    return Spinner("starting elelem-lsp…")


def plugin_trust(args: argparse.Namespace, interactive: bool, notice: Callable[[str], None], spinner: Spinner) -> TrustDecision:
    """Whether the folder's own plugins may load: --trust, the trust file, or the person's answer."""
    from .client.trust_prompt import decide
    from .host.trust import PluginSet

    with spinner.paused():
        return decide(PluginSet.scan(args.directory), interactive=interactive, trust_flag=args.trust, notice=notice)


def server_options(args: argparse.Namespace, trust: TrustDecision) -> dict[str, Any] | None:
    """The settings a terminal session passes as initializationOptions: the user's settings
    file, then the flags; None (after saying why) when the file is broken. Whether the
    folder's plugins load is the folder's trust, never a setting of the file."""
    from .host.user_settings import SettingsFileError, read_user_settings

    try:
        file_settings = read_user_settings()
    except SettingsFileError as error:
        print(f"elelem: {error}", file=sys.stderr)
        return None
    options: dict[str, Any] = {**file_settings, "workspacePlugins": trust.load}
    if getattr(args, "provider", None):
        options["provider"] = args.provider
    if getattr(args, "model", None):
        options["model"] = args.model
    if getattr(args, "yes", False):
        options["execute"] = "allow"
    return options


def run_ask(args: argparse.Namespace) -> int:
    with starting() as spinner:
        from pygls.exceptions import JsonRpcException

        from .client import TerminalClient
        from .client.terminal import Terminal

        prompt = " ".join(args.prompt)
        piped = not sys.stdin.isatty()
        if piped:
            data = sys.stdin.read()
            if data.strip():
                prompt += f"\n\n```\n{data.rstrip()}\n```"
        terminal = Terminal(interactive=False if piped else None, assume_yes=args.yes, verbose=args.verbose)
        options = server_options(args, plugin_trust(args, terminal.interactive, terminal.notice, spinner))
        if options is None:
            return 2

        async def session() -> int:
            client = TerminalClient(args.directory, terminal, options=options)
            try:
                await client.start()
            finally:
                spinner.stop()
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, client.cancel)  # Ctrl-C stops the turn
            try:
                await client.open_conversation(resume=args.resume, keep=args.keep)
                result = await client.ask(prompt, terminal.show, **({"images": args.images} if args.images else {}))
            except JsonRpcException as error:  # a --resume ID that names no conversation here
                terminal.finish(f"Error: {error}", error=True)
                return 2
            finally:
                await client.stop()
            if result.get("cancelled"):
                terminal.newline()
                terminal.notice("cancelled")
                return 130
            terminal.finish(result["reply"], error=bool(result.get("error")))
            return 1 if result.get("error") else 0

        try:
            return asyncio.run(session())
        except KeyboardInterrupt:
            return 130


def run_chat(args: argparse.Namespace) -> int:
    with starting() as spinner:
        from .client.chat import chat
        from .client.terminal import Terminal

        trust = plugin_trust(args, sys.stdin.isatty(), Terminal(interactive=False).notice, spinner)
        options = server_options(args, trust)
        return 2 if options is None else chat(args, options, trust, spinner)


def one_command(directory: Path, terminal: Any, options: dict[str, Any], spinner: Spinner, name: str, argument: Any) -> Any:
    """Start a server on ``directory``, run one command and stop it; the command's answer."""
    from .client import TerminalClient

    async def command() -> Any:
        client = TerminalClient(directory, terminal, options=options)
        try:
            await client.start()
        finally:
            spinner.stop()
        try:
            return await client.command(name, argument)
        finally:
            await client.stop()

    return asyncio.run(command())


def run_rewind(args: argparse.Namespace) -> int:
    """List the checkpoints, or rewind one: exit 1 when files changed since stop it, 2 for a bad turn or file."""
    with starting() as spinner:
        from pygls.exceptions import JsonRpcException

        from .agent.wording import checkpoint_lines, rewind_lines
        from .client.terminal import Terminal

        terminal = Terminal(interactive=False)
        options = server_options(args, plugin_trust(args, sys.stdin.isatty(), terminal.notice, spinner))
        if options is None:
            return 2
        argument = {"turn": args.turn, "conversation": args.conversation, "force": args.force}
        if args.files:
            argument["files"] = args.files
        try:
            if args.turn is None:
                result = one_command(args.directory, terminal, options, spinner, "elelem.checkpoints", {})
            else:
                result = one_command(args.directory, terminal, options, spinner, "elelem.rewind", argument)
        except JsonRpcException as error:
            terminal.notice(str(error))
            return 2
    if args.turn is None:
        terminal.print("\n".join(checkpoint_lines(result)))
        return 0
    terminal.print("\n".join(rewind_lines(result, "(elelem-lsp rewind {turn} undoes this)")))
    if not result["rewound"]:
        terminal.notice("nothing was rewound; --force overwrites them, --file PATH rewinds one file alone")
        return 1
    return 0


SOURCES = {
    "environment": "picked from the environment: ANTHROPIC_API_KEY -> anthropic, OPENAI_API_KEY -> openai, else stub",
    "settings": "the provider setting of your settings file",
    "selected": "selected",
}


def run_providers(args: argparse.Namespace) -> int:
    with starting() as spinner:
        from .client.terminal import Terminal

        trust = plugin_trust(args, sys.stdin.isatty(), Terminal(interactive=False).notice, spinner)
        options = server_options(args, trust)
        if options is None:
            return 2
        terminal = Terminal(interactive=False)
        result = one_command(args.directory, terminal, options, spinner, "elelem.providers", {})
    for name in result["available"]:
        terminal.print(f"{'*' if name == result['provider'] else ' '} {name}")
    source = SOURCES.get(result["source"], result["source"])
    terminal.print(f"\n* = what ask and chat use here without -p ({source}); -p NAME picks another.")
    for failure in result.get("pluginErrors") or []:
        terminal.notice(f"a plugin failed to load: {failure}")
    return 0
