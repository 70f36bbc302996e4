"""``elelem-lsp``: serve the language server, or use it from a terminal.

``serve`` runs the server (stdio, or ``--tcp HOST:PORT``). ``ask`` and ``chat``
start that server as a subprocess and drive it as an editor would.
``providers`` lists what ``-p`` can name here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .client.trust import TrustDecision


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="elelem-lsp", description="A coding agent in your editor, over LSP.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP address instead")
    serve.add_argument("--log-level", default="WARNING", help="log level for stderr (default WARNING)")
    serve.set_defaults(run=run_serve)

    def client_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("-p", "--provider", help="provider name (default: picked from the environment)")
        sub.add_argument("--model", help="model for the provider")
        sub.add_argument("-y", "--yes", action="store_true", help="let the agent run commands without asking")
        sub.add_argument("-C", "--directory", type=Path, default=Path.cwd(), help="workspace folder (default: .)")
        sub.add_argument("-v", "--verbose", action="store_true", help="show the server's log")
        trust_option(sub)

    ask = commands.add_parser("ask", help="ask once and print the reply")
    client_options(ask)
    ask.add_argument("prompt", nargs="+", help="what to ask; piped stdin is added in a code fence")
    ask.set_defaults(run=run_ask)

    chat = commands.add_parser("chat", help="an interactive conversation")
    client_options(chat)
    chat.set_defaults(run=run_chat)

    providers = commands.add_parser("providers", help="list the providers -p can name here")
    providers.add_argument("-C", "--directory", type=Path, default=Path.cwd())
    trust_option(providers)
    providers.set_defaults(run=run_providers)
    return parser


def trust_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--trust", action="store_true", help="load the folder's .agents/plugins without asking")


def run_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    # pygls logs every message body at INFO, httpx every request URL (a ?key= too) and httpcore
    # its traffic: they stay at WARNING whatever the level asked for
    for noisy in ("pygls", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    from .server.server import create_server

    server = create_server()
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


def plugin_trust(args: argparse.Namespace, interactive: bool, notice: Callable[[str], None]) -> "TrustDecision":
    """Whether the folder's own plugins may load: --trust, the trust file, or the person's answer."""
    from .client.trust import PluginSet, decide

    return decide(PluginSet.scan(args.directory), interactive=interactive, trust_flag=args.trust, notice=notice)


def server_options(args: argparse.Namespace, trust: "TrustDecision") -> dict[str, Any]:
    """The settings a terminal session passes as initializationOptions."""
    options: dict[str, Any] = {"workspacePlugins": trust.load}
    if args.provider:
        options["provider"] = args.provider
    if args.model:
        options["model"] = args.model
    if args.yes:
        options["execute"] = "allow"
    return options


def run_ask(args: argparse.Namespace) -> int:
    from .client import TerminalClient
    from .client.terminal import Terminal

    prompt = " ".join(args.prompt)
    piped = not sys.stdin.isatty()
    if piped:
        data = sys.stdin.read()
        if data.strip():
            prompt += f"\n\n```\n{data.rstrip()}\n```"
    terminal = Terminal(interactive=False if piped else None, assume_yes=args.yes, verbose=args.verbose)
    options = server_options(args, plugin_trust(args, terminal.interactive, terminal.notice))

    async def session() -> int:
        client = TerminalClient(args.directory, terminal, options=options)
        await client.start()
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, client.cancel)  # Ctrl-C stops the turn
        try:
            result = await client.ask(prompt, terminal.show)
        finally:
            await client.stop()
        if result.get("cancelled"):
            terminal.newline()
            terminal.notice("cancelled")
            return 130
        terminal.finish(result["reply"])
        return 1 if result.get("error") else 0

    try:
        return asyncio.run(session())
    except KeyboardInterrupt:
        return 130


def run_chat(args: argparse.Namespace) -> int:
    from .client.chat import chat
    from .client.terminal import Terminal

    trust = plugin_trust(args, sys.stdin.isatty(), Terminal(interactive=False).notice)
    return chat(args, server_options(args, trust), trust)


def run_providers(args: argparse.Namespace) -> int:
    from .client import TerminalClient
    from .client.terminal import Terminal

    terminal = Terminal()
    trust = plugin_trust(args, terminal.interactive, terminal.notice)

    async def listing() -> int:
        client = TerminalClient(args.directory, Terminal(interactive=False), options={"workspacePlugins": trust.load})
        await client.start()
        try:
            result = await client.command("elelem.providers", {})
        finally:
            await client.stop()
        for name in result["available"]:
            mark = "*" if name == result["provider"] else " "
            print(f"{mark} {name}")
        return 0

    return asyncio.run(listing())
