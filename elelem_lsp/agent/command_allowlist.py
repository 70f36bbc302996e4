"""The ``allowCommands`` rule: which shell commands may run without asking the person.

A pure function of the command text and the person's list, with no protocol in it,
so every face (editor, terminal) judges a command the same way.

An entry allows a command when the command is one simple command whose words, as
the shell splits them, start with the entry's words: ``git status`` allows
``git status -s`` but not ``git statusx`` or ``git``. A command with anything the
shell would treat as more than words is never allowed by the list, whatever it
starts with: command separators and pipes (``; & | newline``), any ``$`` or
backquote (parameter, command and arithmetic expansion), redirections, here-docs,
here-strings and process substitution (``< >``), subshells (``( )``), backslash
escapes and line continuations, other control characters, and quotes that do not
close. The rule errs on the side of asking: such a command goes to the permission
prompt like any other.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

# Characters the shell gives a meaning beyond "part of a word", and every control
# character but tab: a tab splits words for shlex and the shell alike, a carriage
# return splits them for shlex only, a newline ends the command.
SHELL_CONTROL = frozenset(";&|<>()$`\\") | {chr(code) for code in range(32) if chr(code) != "\t"} | {"\x7f"}


def shell_control(command: str) -> str | None:
    """The first character of ``command`` that makes it more than one simple command, if any."""
    return next((char for char in command if char in SHELL_CONTROL), None)


def simple_words(command: str) -> list[str] | None:
    """The words of ``command`` as the shell would run them, or None when that is not certain."""
    if shell_control(command) is not None:
        return None
    try:
        return shlex.split(command)
    except ValueError:  # a quote that does not close
        return None


def allows(entries: Iterable[str], command: str) -> bool:
    """Whether one of the ``allowCommands`` entries lets ``command`` run without asking."""
    words = simple_words(command)
    if not words:
        return False
    for entry in entries:
        prefix = simple_words(entry) if isinstance(entry, str) else None
        if prefix and words[: len(prefix)] == prefix:
            return True
    return False
