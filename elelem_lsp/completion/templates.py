"""The prompts that ask a model to fill the hole at the cursor.

Bridges a ``CompletionContext`` to the text a model reads: the fill-in-the-middle token formats
of the code model families (StarCoder2, Qwen2.5-Coder, CodeLlama, DeepSeek-Coder, Codestral),
found by a model's name or by the special tokens its vocabulary holds, and, for chat models, a
hole-filling prompt with a cursor marker whose answer is cut out of the reply as it streams
(``answer_of``). Snippets of other files go where the format has room for them (Qwen's
``<|file_sep|>``) or as comments at the prompt's head.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..agent.messages import Message
from .context import CompletionContext

LINE_COMMENTS = {
    "python": "#", "shellscript": "#", "sh": "#", "bash": "#", "ruby": "#", "yaml": "#", "toml": "#", "r": "#",
    "perl": "#", "elixir": "#", "dockerfile": "#", "makefile": "#", "lua": "--", "sql": "--", "haskell": "--",
}  # fmt: skip


def comment(language: str) -> str:
    return LINE_COMMENTS.get(language.lower(), "//")


def commented_snippets(context: CompletionContext) -> str:
    """The other files' snippets as line comments of the file's language, to put before the prefix."""
    mark = comment(context.language)
    blocks = []
    for snippet in context.snippets:
        body = "\n".join(f"{mark} {line}" if line else mark for line in snippet.text.split("\n"))
        blocks.append(f"{mark} Path: {snippet.path}\n{body}\n")
    return "".join(blocks)


@dataclass(frozen=True)
class FimFormat:
    """A model family's fill-in-the-middle prompt: ``order`` is ``psm`` (prefix, suffix, middle) or ``spm``."""

    name: str
    prefix: str
    suffix: str
    middle: str
    stops: tuple[str, ...]
    order: str = "psm"
    file_separator: str | None = None  # where the family reads other files as files, not comments

    @property
    def tokens(self) -> tuple[str, ...]:
        """The special tokens a vocabulary must hold for this format (trimmed of CodeLlama's spaces)."""
        return tuple(token.strip() for token in (self.prefix, self.suffix, self.middle) if token.strip())

    def render(self, context: CompletionContext) -> str:
        if self.file_separator and context.snippets:  # the repository form: files, then the file with the hole
            files = "".join(f"{self.file_separator}{s.path}\n{s.text}\n" for s in context.snippets)
            head, prefix = f"{files}{self.file_separator}{context.path}\n", context.prefix
        else:
            head, prefix = "", commented_snippets(context) + context.prefix
        if self.order == "spm":
            return f"{head}{self.suffix}{context.suffix}{self.prefix}{prefix}{self.middle}"
        return f"{head}{self.prefix}{prefix}{self.suffix}{context.suffix}{self.middle}"


FORMATS: dict[str, FimFormat] = {
    "starcoder2": FimFormat(
        "starcoder2", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", ("<|endoftext|>", "<file_sep>", "<fim_prefix>")
    ),
    "qwen2.5-coder": FimFormat(
        "qwen2.5-coder",
        "<|fim_prefix|>",
        "<|fim_suffix|>",
        "<|fim_middle|>",
        ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|im_end|>", "<|fim_prefix|>", "<|repo_name|>"),
        file_separator="<|file_sep|>",
    ),
    "codellama": FimFormat("codellama", "<PRE> ", " <SUF>", " <MID>", ("<EOT>", "</s>")),
    "deepseek-coder": FimFormat(
        "deepseek-coder",
        "<｜fim▁begin｜>",
        "<｜fim▁hole｜>",
        "<｜fim▁end｜>",
        ("<｜end▁of▁sentence｜>", "<｜fim▁begin｜>", "<|EOT|>"),
    ),
    "codestral": FimFormat("codestral", "[PREFIX]", "[SUFFIX]", "", ("[PREFIX]", "[SUFFIX]", "</s>"), order="spm"),
}

# The end markers code models leak into plain text answers, cut wherever they appear.
END_MARKERS = ("<|endoftext|>", "<|im_end|>", "<|file_sep|>", "<|fim_pad|>", "<EOT>", "</s>", "<｜end▁of▁sentence｜>")

# A model's name -> its family, first match wins (codellama before the generic "llama" names nothing).
NAME_HINTS = (
    ("starcoder", "starcoder2"),
    ("qwen", "qwen2.5-coder"),
    ("codellama", "codellama"),
    ("code-llama", "codellama"),
    ("deepseek", "deepseek-coder"),
    ("codestral", "codestral"),
)


def format_for_model(model: str | None) -> FimFormat | None:
    """The FIM format a model's name says it was trained with; None for an unknown family."""
    lowered = (model or "").lower()
    return next((FORMATS[family] for hint, family in NAME_HINTS if hint in lowered), None)


def format_in_vocabulary(has_token: Callable[[str], bool]) -> FimFormat | None:
    """The FIM format whose special tokens a model's vocabulary holds, each as one token."""
    return next((fim for fim in FORMATS.values() if all(has_token(token) for token in fim.tokens)), None)


# -- chat models: the hole-filling prompt -------------------------------------------

HOLE = "{{FILL_HERE}}"
OPEN, CLOSE = "<COMPLETION>", "</COMPLETION>"
INSTRUCTIONS = f"""You are a code completion engine. The user shows a file with the marker {HOLE} at the \
cursor. Answer with exactly the text to insert at the marker, between {OPEN} and {CLOSE}, and nothing \
else: no explanation, no code fence, no repeating of the text around the marker. Keep the file's \
indentation. If nothing should be inserted, answer {OPEN}{CLOSE}."""


def chat_messages(context: CompletionContext, multiline: bool) -> list[Message]:
    """The hole-filling prompt: the other files, then the file with the cursor marker."""
    others = "".join(f"Another open file, {s.path}:\n```\n{s.text}\n```\n\n" for s in context.snippets)
    extent = "a whole block if the code calls for one" if multiline else "the rest of the current line only"
    user = (
        f"{others}The file {context.path} ({context.language}):\n<QUERY>\n{context.prefix}{HOLE}{context.suffix}\n</QUERY>\n\n"
        f"Fill {HOLE} with {extent}."
    )
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": user}]


class AnswerOf:
    """Cuts the inserted text out of a chat reply as it streams: what follows ``<COMPLETION>`` up to
    ``</COMPLETION>``; a reply without the tags is taken as it is, from a code fence's inside if
    it has one. ``feed`` returns the text that is surely the answer so far; ``done`` is set once
    the closing tag arrived."""

    def __init__(self) -> None:
        self.reply = ""
        self.given = 0  # characters of the answer handed out
        self.done = False

    def feed(self, text: str) -> str:
        self.reply += text
        return self._new(final=False)

    def finish(self) -> str:
        return self._new(final=True)

    def _new(self, *, final: bool) -> str:
        answer, complete = self._answer(final)
        self.done = complete
        if answer is None:
            return ""
        fresh = answer[self.given :]
        self.given = len(answer)
        return fresh

    def _answer(self, final: bool) -> tuple[str | None, bool]:
        start = self.reply.find(OPEN)
        if start >= 0:
            body = self.reply[start + len(OPEN) :]
            end = body.find(CLOSE)
            if end >= 0:
                return body[:end], True
            return (body if final else held_back(body, CLOSE)), False
        if not final:
            return None, False  # the tag may still come
        return fenced(self.reply), True


def held_back(text: str, marker: str) -> str:
    """``text`` but a tail that could be the start of ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return text[:-size]
    return text


def fenced(reply: str) -> str:
    """The inside of a reply's first code fence, else the reply."""
    start = reply.find("```")
    if start < 0:
        return reply
    body = reply[start + 3 :].split("\n", 1)
    inside = body[1] if len(body) > 1 else ""
    return inside.split("```", 1)[0].removesuffix("\n")
