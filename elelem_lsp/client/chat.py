"""``elelem-lsp chat``: a conversation in the terminal, over the same LSP client as ``ask``.

The prompt runs on the main thread with readline (history, completion of
slash commands and provider names); the LSP client runs on an event loop in a
second thread. Ctrl-C during a turn cancels the turn; at the prompt it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import readline
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from . import TerminalClient
from .terminal import Terminal
from .trust import PluginSet, TrustDecision

HELP = """\
/provider [NAME]   list the providers, or switch to NAME (the conversation is kept)
/model NAME        use model NAME with the current provider
/reset             start a new conversation
/context           show the conversation as the provider sees it
/tools             list the tools the agent can use
/reload            load the plugin files again
/help              this list
/exit              leave (Ctrl-D works too)"""
HISTORY = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "elelem-lsp" / "history"
SLASH = ["/provider", "/model", "/reset", "/context", "/tools", "/reload", "/help", "/exit"]


class Chat:
    def __init__(self, client: TerminalClient, terminal: Terminal, trust: TrustDecision) -> None:
        self.client = client
        self.terminal = terminal
        self.trust = trust
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="elelem-lsp-client", daemon=True)
        self.providers: list[str] = []

    def call(self, coroutine: Any) -> Any:
        """Run a coroutine on the client's loop; Ctrl-C while waiting cancels the turn."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        while True:
            try:
                return future.result()
            except KeyboardInterrupt:
                self.loop.call_soon_threadsafe(self.client.cancel)

    def start(self) -> None:
        self.thread.start()
        self.call(self.client.start())
        self.providers = self.call(self.client.command("elelem.providers", {}))["available"]
        with contextlib.suppress(OSError):
            readline.read_history_file(HISTORY)
        readline.set_completer(self.complete)
        readline.set_completer_delims(" ")
        readline.parse_and_bind("tab: complete")

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            HISTORY.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(HISTORY)
        self.call(self.client.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)

    def complete(self, text: str, state: int) -> str | None:
        line = readline.get_line_buffer()
        if line.startswith("/provider "):
            options = [name for name in self.providers if name.startswith(text)]
        else:
            options = [command for command in SLASH if command.startswith(text)]
        return options[state] if state < len(options) else None

    def repl(self) -> int:
        self.terminal.notice("type a request, /help for commands, Ctrl-D to leave")
        while True:
            try:
                line = input("elelem> ").strip()
            except (EOFError, KeyboardInterrupt):
                print()
                return 0
            if not line:
                continue
            if line.startswith("/"):
                if not self.slash(line):
                    return 0
                continue
            result = self.call(self.client.ask(line, self.terminal.show))
            if result.get("cancelled"):
                self.terminal.newline()
                self.terminal.notice("cancelled")
            else:
                self.terminal.finish(result["reply"])

    def slash(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        actions: dict[str, Callable[[], Any]] = {
            "/provider": lambda: self.provider(rest),
            "/model": lambda: self.model(rest),
            "/reset": lambda: self.command("elelem.reset") and print("new conversation"),
            "/context": self.context,
            "/tools": lambda: print(
                "\n".join(f"{t['name']:8} {t['description']}" for t in self.command("elelem.tools")["tools"])
            ),
            "/reload": self.reload,
            "/help": lambda: print(HELP),
        }
        if name in ("/exit", "/quit"):
            return False
        action = actions.get(name)
        if action is None:
            print(f"unknown command {name}; /help lists them")
            return True
        try:
            action()
        except Exception as error:  # a refused command is shown, never fatal
            self.terminal.notice(str(error))
        return True

    def command(self, name: str, argument: dict[str, Any] | None = None) -> Any:
        return self.call(self.client.command(name, argument))

    def provider(self, name: str) -> None:
        if not name:
            listing = self.command("elelem.providers")
            self.providers = listing["available"]
            for provider in self.providers:
                print(f"{'*' if provider == listing['provider'] else ' '} {provider}")
            return
        self.command("elelem.selectProvider", {"name": name})
        print(f"provider: {name}")

    def model(self, model: str) -> None:
        if not model:
            print("usage: /model NAME")
            return
        current = self.command("elelem.providers")["provider"]
        self.command("elelem.selectProvider", {"name": current, "model": model})
        print(f"provider: {current}, model: {model}")

    def context(self) -> None:
        for message in self.command("elelem.context")["messages"]:
            content = message.get("content") or json.dumps(message.get("tool_calls"))
            print(f"[{message['role']}] {content}")

    def reload(self) -> None:
        now = PluginSet.scan(self.client.root)
        changed = now.changed_since(self.trust.plugins.files)
        if self.trust.load and changed:
            # The files allowed at the start are the only workspace code this session may run.
            print(f"not reloading: {now.shown()} changed since you allowed it ({', '.join(changed)}); "
                  "start chat again to be asked")
            return
        errors = self.command("elelem.reload")["pluginErrors"]
        self.providers = self.command("elelem.providers")["available"]
        print("\n".join(errors) if errors else "plugins reloaded")


def chat(args: argparse.Namespace, options: dict[str, Any], trust: TrustDecision) -> int:
    terminal = Terminal(interactive=True, assume_yes=args.yes, verbose=args.verbose)
    session = Chat(TerminalClient(args.directory, terminal, options=options), terminal, trust)
    session.start()
    try:
        return session.repl()
    finally:
        session.stop()
