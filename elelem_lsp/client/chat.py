"""``elelem-lsp chat``: a conversation in the terminal, over the same LSP client as ``ask``.

The prompt runs on the main thread with readline (history, completion of
slash commands and provider names); the LSP client runs on an event loop in a
second thread. Questions during a turn (a permission, the human provider's
reply) are typed on the main thread too, so Ctrl-C reaches them. Ctrl-C during
a turn cancels the turn; at the prompt it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import queue
import readline
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from pygls.exceptions import JsonRpcException

from ..agent.private_files import FILE_MODE, create_private, private_folder, state_dir
from ..agent.prompt_size import window_text
from ..agent.wording import checkpoint_lines, counted, rewind_lines
from ..host.trust import PluginSet
from ..spinner import Spinner
from . import TerminalClient
from .terminal import Terminal, checked_lines, one_line, plan_lines, usage_lines, usage_row
from .trust_prompt import TrustDecision

HELP = """\
/provider [NAME]   list the providers, or switch to NAME (the conversation is kept)
/model NAME        use model NAME with the current provider
/reset             start a new conversation (the old one is kept)
/conversations     list this folder's conversations, newest first (* is the current one)
/resume ID         go on with conversation ID (or the start of it)
/compact           have the provider summarise the older turns into one message
/rewind [N]        list the turns that changed files; with N, put the files (and this
                   conversation) back to before turn N
/context           show the conversation as the provider sees it
/usage             the conversation's tokens, the context used and the cost so far (and
                   inline completion's and next edit's figures, when an editor used them)
/tools             list the tools the agent can use
/reload            load the plugin files again
/help              this list
/exit              leave (Ctrl-D works too)"""
HISTORY = state_dir() / "history"
SLASH = [
    "/provider",
    "/model",
    "/reset",
    "/conversations",
    "/resume",
    "/compact",
    "/rewind",
    "/context",
    "/usage",
    "/tools",
    "/reload",
    "/help",
    "/exit",
]


class Chat:
    def __init__(self, client: TerminalClient, terminal: Terminal, trust: TrustDecision) -> None:
        self.client = client
        self.terminal = terminal
        self.trust = trust
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="elelem-lsp-client", daemon=True)
        self.providers: list[str] = []
        # What the main thread has to do while a call runs: a question to ask (prompt and the
        # loop's future for the answer), or None once the call is done.
        self.errands: queue.Queue[tuple[str, asyncio.Future[str | None]] | None] = queue.Queue()
        terminal.reader = self.read_on_main_thread

    async def read_on_main_thread(self, prompt: str) -> str | None:
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.errands.put((prompt, answer))
        return await answer

    def call(self, coroutine: Any) -> Any:
        """Run a coroutine on the client's loop, asking its questions here; Ctrl-C cancels the turn."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        future.add_done_callback(lambda _: self.errands.put(None))
        while True:
            try:
                errand = self.errands.get()
                if errand is None:
                    return future.result()
                prompt, answer = errand
                try:
                    text: str | None = input(prompt)
                except EOFError:
                    text = None
                self.loop.call_soon_threadsafe(settle, answer, text)
            except KeyboardInterrupt:
                self.loop.call_soon_threadsafe(self.client.cancel)

    def start(self, spinner: Spinner) -> dict[str, Any]:
        """Start the server and check the provider; the listing of ``elelem.providers``."""
        self.thread.start()
        try:
            self.call(self.client.start())
        finally:
            spinner.stop()
        listing = self.call(self.client.command("elelem.providers", {}))
        self.providers = listing["available"]
        with contextlib.suppress(OSError):
            readline.read_history_file(HISTORY)
        readline.set_completer(self.complete)
        readline.set_completer_delims(" ")
        readline.parse_and_bind("tab: complete")
        return listing

    def check_provider(self, name: str, model: str | None) -> str | None:
        """Build the provider now, so that a bad ``-p`` fails before the first prompt; the error, if any."""
        try:
            self.command("elelem.selectProvider", {"name": name, **({"model": model} if model else {})})
        except JsonRpcException as error:  # the server's refusal, e.g. an unknown provider
            return str(error)
        return None

    def banner(self, listing: dict[str, Any]) -> None:
        model = listing.get("model") or "its default model"
        how = "picked from the environment; -p NAME picks another" if listing["source"] == "environment" else ""
        self.terminal.notice(f"chat with {listing['provider']} ({model}{'; ' + how if how else ''})")
        self.terminal.notice("type a request, /help for commands, Ctrl-D to leave")

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            private_folder(HISTORY.parent)
            create_private(HISTORY, b"")  # made private before the person's prompts are in it
            readline.write_history_file(HISTORY)
            HISTORY.chmod(FILE_MODE)  # GNU readline keeps the mode of the file it writes over, libedit does not
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
            if not result.get("cancelled"):
                self.terminal.finish(result["reply"], error=bool(result.get("error")))
            self.terminal.footer(result)

    def slash(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        actions: dict[str, Callable[[], Any]] = {
            "/provider": lambda: self.provider(rest),
            "/model": lambda: self.model(rest),
            "/reset": self.reset,
            "/conversations": self.conversations,
            "/resume": lambda: self.resume(rest),
            "/compact": self.compact,
            "/rewind": lambda: self.rewind(rest),
            "/context": self.context,
            "/usage": self.usage,
            "/tools": lambda: self.terminal.print(
                "\n".join(f"{t['name']:8} {t['description']}" for t in self.command("elelem.tools")["tools"])
            ),
            "/reload": self.reload,
            "/help": lambda: self.terminal.print(HELP),
        }
        if name in ("/exit", "/quit"):
            return False
        action = actions.get(name)
        if action is None:
            self.terminal.print(f"unknown command {name}; /help lists them")
            return True
        try:
            action()
        except Exception as error:  # a refused command is shown, never fatal
            self.terminal.notice(str(error))
        return True

    def command(self, name: str, argument: dict[str, Any] | None = None) -> Any:
        return self.call(self.client.command(name, argument))

    def reset(self) -> None:
        if self.command("elelem.reset"):
            self.terminal.print("new conversation")

    def provider(self, name: str) -> None:
        if not name:
            listing = self.command("elelem.providers")
            self.providers = listing["available"]
            for provider in self.providers:
                self.terminal.print(f"{'*' if provider == listing['provider'] else ' '} {provider}")
            return
        self.command("elelem.selectProvider", {"name": name})
        self.terminal.print(f"provider: {name}")

    def model(self, model: str) -> None:
        if not model:
            self.terminal.print("usage: /model NAME")
            return
        current = self.command("elelem.providers")["provider"]
        self.command("elelem.selectProvider", {"name": current, "model": model})
        self.terminal.print(f"provider: {current}, model: {model}")

    def conversations(self) -> None:
        listing = self.command("elelem.conversations")
        if not listing:
            self.terminal.print("no stored conversations in this folder yet")
            return
        current = self.command("elelem.transcript")["id"]
        for conversation in listing:
            mark = "*" if conversation["id"] == current else " "
            when = str(conversation["updated"])[:16].replace("T", " ")
            turns = counted(conversation["turns"], "turn")
            self.terminal.print(f"{mark} {conversation['id']}  {when}  {turns:>9}  {conversation['title']}")

    def resume(self, wanted: str) -> None:
        """Go on with the conversation whose id is, or starts with, ``wanted``."""
        if not wanted:
            self.terminal.print("usage: /resume ID (/conversations lists them)")
            return
        ids = [c["id"] for c in self.command("elelem.conversations")]
        matches = [i for i in ids if i == wanted] or [i for i in ids if i.startswith(wanted)]
        if len(matches) != 1:
            self.terminal.print(f"{'no' if not matches else 'more than one'} conversation here starts with {wanted!r}")
            return
        self.recap(self.command("elelem.resume", {"id": matches[0]}), "resumed")

    def recap(self, transcript: dict[str, Any], how: str) -> None:
        """One line on the conversation this chat goes on with, and its last exchange: the prompt,
        the checks after its steps and its plan (as the turn showed them), the reply, its usage."""
        turns = [entry for entry in transcript["entries"] if entry["kind"] == "turn"]
        if not turns:
            self.terminal.notice(f"{how}: a conversation with no turns yet")
            return
        self.terminal.notice(f"{how}: {transcript['title']} ({counted(len(turns), 'turn')})")
        last = turns[-1]
        checks = [checked_lines(tool["checked"]) for tool in last.get("tools") or [] if isinstance(tool.get("checked"), dict)]
        plan = [plan_lines({"entries": last["plan"]})] if isinstance(last.get("plan"), list) else []
        shown = [f"> {one_line(last['prompt'])}\n", *checks, *plan, one_line(last["reply"] or "(no reply)", 300)]
        row = usage_row(last["usage"]) if isinstance(last.get("usage"), dict) else None
        self.terminal.print("".join(shown) + (f"\n{row.rstrip()}" if row else ""))

    def compact(self) -> None:
        self.terminal.print(self.command("elelem.compact")["text"])

    def rewind(self, wanted: str) -> None:
        """List the checkpoints, or rewind to before turn ``wanted`` (the conversation too when the
        turn is this chat's), asking before files changed since are overwritten."""
        listing = self.command("elelem.checkpoints")
        if not wanted:
            self.terminal.print("\n".join(checkpoint_lines(listing)))
            return
        if not wanted.isdigit() or int(wanted) < 1:
            self.terminal.print("usage: /rewind [N] (/rewind lists the turns)")
            return
        turn = int(wanted)
        current = self.command("elelem.transcript")["id"]
        ours = any(c["turn"] == turn and c["conversation"] == current for c in listing)
        arguments = {"turn": turn, "conversation": ours}
        result = self.command("elelem.rewind", arguments)
        if not result["rewound"]:
            self.terminal.print("\n".join(rewind_lines(result, "")))
            try:
                answer = input("overwrite them with how they were before the turn? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                self.terminal.print("nothing rewound")
                return
            result = self.command("elelem.rewind", {**arguments, "force": True})
        self.terminal.print("\n".join(rewind_lines(result, "(/rewind {turn} undoes this)")))

    def context(self) -> None:
        context = self.command("elelem.context")
        for message in context["messages"]:
            calls = message.get("tool_calls")
            content = message.get("content") or (json.dumps(calls, ensure_ascii=False) if calls else "")
            self.terminal.print(f"[{message['role']}] {content}")
        if context.get("window"):  # how the window is used: the mode, the fixed part, history, room left
            self.terminal.print(window_text(context["window"]))

    def usage(self) -> None:
        self.terminal.print("\n".join(usage_lines(self.command("elelem.context"))))

    def reload(self) -> None:
        now = PluginSet.scan(self.client.root)
        changed = now.changed_since(self.trust.plugins.files)
        if self.trust.load and changed:
            # The files allowed at the start are the only workspace code this session may run.
            print(
                f"not reloading: {now.shown()} changed since you allowed it ({', '.join(changed)}); start chat again to be asked"
            )
            return
        errors = self.command("elelem.reload")["pluginErrors"]
        self.providers = self.command("elelem.providers")["available"]
        self.terminal.print("\n".join(errors) if errors else "plugins reloaded")


def settle(answer: asyncio.Future[str | None], text: str | None) -> None:
    if not answer.done():  # a cancelled turn may have dismissed the question meanwhile
        answer.set_result(text)


def chat(args: argparse.Namespace, options: dict[str, Any], trust: TrustDecision, spinner: Spinner) -> int:
    terminal = Terminal(interactive=True, assume_yes=args.yes, verbose=args.verbose)
    session = Chat(TerminalClient(args.directory, terminal, options=options), terminal, trust)
    try:
        listing = session.start(spinner)
        if args.provider:
            error = session.check_provider(args.provider, args.model)
            if error is not None:
                terminal.finish(f"Error: {error}", error=True)  # as ask says it
                return 1
        try:
            transcript = session.call(session.client.open_conversation(resume=args.resume, keep=args.keep))
        except JsonRpcException as error:  # a --resume ID that names no conversation here
            terminal.finish(f"Error: {error}", error=True)
            return 1
        session.banner(listing)
        if transcript is not None:
            session.recap(transcript, "continuing")
        return session.repl()
    finally:
        session.stop()
