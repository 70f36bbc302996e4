"""The terminal client's plugin-trust question: ``--trust``, the trust file, or ``y``/``N``/``always``.

``ask`` and ``chat`` ask once per folder, on the terminal, before the server
starts; "always" is remembered in the host's trust file (``host/trust.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ..host.trust import PluginSet, TrustStore


@dataclass
class TrustDecision:
    """What the person decided for one folder: load its plugins or not, and which files they saw."""

    plugins: PluginSet
    load: bool


def read_answer(prompt: str, err: TextIO = sys.stderr) -> str | None:
    """Ask on stderr (stdout may be a file the reply goes to) and read one line from stdin."""
    err.write(prompt)
    err.flush()
    line = sys.stdin.readline()
    return line.strip().lower() if line else None


def decide(
    plugins: PluginSet,
    *,
    interactive: bool,
    trust_flag: bool = False,
    store: TrustStore | None = None,
    ask: Callable[[str], str | None] = read_answer,
    notice: Callable[[str], None] = lambda message: None,
) -> TrustDecision:
    """Whether the server may load ``plugins``: ``--trust``, the trust file, or the person's answer."""
    if not plugins.files:
        return TrustDecision(plugins, load=False)
    if trust_flag:
        return TrustDecision(plugins, load=True)
    store = store or TrustStore()
    if store.trusts(plugins):
        return TrustDecision(plugins, load=True)
    where = plugins.shown()
    if not interactive:
        notice(
            f"not loading the plugins in {where} ({', '.join(plugins.files)}): no terminal to ask; run with --trust to load them"
        )
        return TrustDecision(plugins, load=False)
    answer = ask(question(plugins, store.trusted_files(plugins)))
    if answer in ("always", "a"):
        store.remember(plugins)
        return TrustDecision(plugins, load=True)
    return TrustDecision(plugins, load=answer in ("y", "yes"))


def question(plugins: PluginSet, trusted: dict[str, str] | None) -> str:
    changed = f"; changed since you trusted them: {', '.join(plugins.changed_since(trusted))}" if trusted else ""
    return f"Load the plugins in {plugins.shown()} ({', '.join(plugins.files)}{changed})? [y/N/always] "
