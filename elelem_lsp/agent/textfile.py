"""A file's text two ways: as it is stored, and as the model sees it.

Stored: bytes in an encoding, maybe behind a byte-order mark, with whatever line
endings the file has (``\\r\\n``, ``\\n``, a lone ``\\r``, or a mix). The model: the
decoded text with every line break spelled ``\\n``. Reads hand the model its view;
a change the model makes is carried back onto the stored text so that lines it did
not touch keep their endings exactly and the line breaks it writes take the file's
own ending. Line breaks are the three the Language Server Protocol counts.

Differences are found with slice comparisons (memcmp in C), never a character loop,
so a one-line change in a large file costs little.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

LINE_BREAK = re.compile(r"\r\n|\r|\n")
LONE_CR = re.compile(r"\r(?!\n)")
KEPT_VIEW_LENGTH = 1 << 16  # characters: a text this long keeps its model view while it is the text
KEPT_VIEWS = 2  # the latest such views: each holds its text and a copy, so only the buffers being edited

# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class StoredText:
    """A file's text as stored: without its byte-order mark, line endings untouched."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""

    @property
    def writable(self) -> bool:
        """Whether this text can be written back as it was stored (only UTF-8 is written)."""
        return self.encoding == "utf-8"

    def encode(self, text: str) -> bytes:
        """``text`` as this file stores text: the same mark, the same encoding."""
        return self.bom + text.encode(self.encoding)


def decode(data: bytes) -> StoredText:
    """The text of a file's bytes; raises UnicodeDecodeError for text that is not what its mark says."""
    for bom, encoding in BYTE_ORDER_MARKS:
        if data.startswith(bom):
            return StoredText(data[len(bom) :].decode(encoding), encoding, bom)
    return StoredText(data.decode("utf-8"))


def for_model(text: str) -> str:
    """``text`` with every line break spelled ``\\n`` (a long one's kept: ``ModelView.of``)."""
    if "\r" not in text:
        return text
    return ModelView.of(text).text


def breaks_as_lf(text: str) -> str:
    """``text`` of the same length in which every line break ends in ``\\n`` (a lone ``\\r`` becomes one).

    Line numbers and line starts of the original can then be found with ``count``,
    ``rfind`` and ``split`` on ``\\n`` alone, all at C speed.
    """
    if "\r" not in text:
        return text
    kept = _kept_views.get(id(text))
    if kept is not None and kept.stored is text and not kept.lone_cr:
        return text
    if text.count("\r") == text.count("\r\n"):
        return text
    return LONE_CR.sub("\n", text)


def line_start(text: str, line: int) -> int | None:
    """Offset of the first character of ``line`` (from 0) in ``text``; None past the last line."""
    if line == 0:
        return 0
    marked = breaks_as_lf(text)
    parts = marked.split("\n", line)
    if len(parts) <= line:
        return None
    return len(marked) - len(parts[-1])


# -- differences -------------------------------------------------------------------


@dataclass(frozen=True)
class Replacement:
    """``text[start:end]`` becomes ``text``: a change that knows where it lands (code-point offsets)."""

    start: int
    end: int
    text: str

    def applied_to(self, text: str) -> str:
        return text[: self.start] + self.text + text[self.end :]


def common_prefix_length(a: str, b: str, limit: int) -> int:
    """How many leading characters ``a`` and ``b`` share, at most ``limit``, by bisection of slices."""
    low, high = 0, limit  # a[:low] == b[:low] holds throughout
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[low:middle], low):  # copies only b's slice
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix_length(a: str, b: str, limit: int) -> int:
    """How many trailing characters ``a`` and ``b`` share, at most ``limit``, by bisection of slices."""
    low, high = 0, limit
    end_a, end_b = len(a), len(b)
    while low < high:
        middle = (low + high + 1) // 2
        if a.endswith(b[end_b - middle : end_b - low], 0, end_a - low):
            low = middle
        else:
            high = middle - 1
    return low


def _splits_pair(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def difference(old: str, new: str) -> Replacement | None:
    """The one span of ``old`` to replace to get ``new``; None when they are equal.

    The span never falls between the two characters of a ``\\r\\n``, in either text.
    """
    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = common_prefix_length(old, new, limit)
    if _splits_pair(old, prefix) or _splits_pair(new, prefix):
        prefix -= 1
    suffix = common_suffix_length(old, new, limit - prefix)
    if suffix and (_splits_pair(old, len(old) - suffix) or _splits_pair(new, len(new) - suffix)):
        suffix -= 1
    return Replacement(prefix, len(old) - suffix, new[prefix : len(new) - suffix])


def narrowed(old: str, replacement: Replacement) -> Replacement | None:
    """``replacement`` without the text it keeps at either end; None when it changes nothing."""
    inner = difference(old[replacement.start : replacement.end], replacement.text)
    if inner is None:
        return None
    return Replacement(replacement.start + inner.start, replacement.start + inner.end, inner.text)


# -- from the model's view back to the stored text ------------------------------------


@dataclass(frozen=True)
class ModelView:
    """A stored text as the model sees it, and what it takes to carry the model's changes back."""

    stored: str
    text: str  # every line break spelled "\n"; lines and columns are the stored text's
    newline: str | None  # the ending most lines use (a tie goes to "\n"); None without a line break
    mixed: bool  # more than one kind of ending
    lone_cr: bool = False  # some line ends in a "\r" alone

    @classmethod
    def of(cls, stored: str) -> ModelView:
        """The view of ``stored``; a long text's is made once and kept while it is the text (an
        open buffer's, until the editor changes it), since spelling its breaks anew costs
        milliseconds."""
        if "\r" not in stored:  # the common case costs one memchr
            return cls(stored, stored, "\n" if "\n" in stored else None, False)
        kept = _kept_views.get(id(stored))
        if kept is not None and kept.stored is stored:
            return kept
        joined = stored.replace("\r\n", "\n")
        crlf = len(stored) - len(joined)
        lone_cr = joined.count("\r") if "\r" in joined else 0
        text = joined.replace("\r", "\n") if lone_cr else joined
        counts = {"\n": text.count("\n") - crlf - lone_cr, "\r\n": crlf, "\r": lone_cr}
        newline = max(counts, key=counts.__getitem__)
        view = cls(stored, text, newline, sum(1 for n in counts.values() if n) > 1, lone_cr > 0)
        if len(stored) >= KEPT_VIEW_LENGTH:
            _kept_views[id(stored)] = view  # by identity: the entry holds the text, so its id is not reused
            while len(_kept_views) > KEPT_VIEWS:
                del _kept_views[next(iter(_kept_views))]
        return view

    def carry(self, change: str | Replacement) -> Replacement | None:
        """The model's change, narrowed to what it changes; None when it changes nothing.

        ``change`` is the model's whole new text or a Replacement in ``self.text``. The
        result is in ``self.text`` offsets (the same lines and columns as the stored
        text) with its text in the stored endings: line breaks the model wrote, however
        spelled, take the file's ending, and lines it kept keep theirs. A file without a
        line break yet takes the model's text as written.
        """
        if isinstance(change, str):
            found = difference(self.text, for_model(change) if self.newline else change)
        else:
            text = for_model(change.text) if self.newline else change.text
            found = narrowed(self.text, Replacement(change.start, change.end, text))
        if found is None or self.newline in (None, "\n") and not self.mixed:
            return found
        if not self.mixed:
            return Replacement(found.start, found.end, found.text.replace("\n", self.newline or "\n"))
        stored_span = self.stored[self.stored_offset(found.start) : self.stored_offset(found.end)]
        return Replacement(found.start, found.end, with_endings(stored_span, found.text, self.newline or "\n"))

    def stored_offset(self, offset: int) -> int:
        """The offset in the stored text of ``offset`` in the model's."""
        if self.stored is self.text:
            return offset
        line = self.text.count("\n", 0, offset)
        column = offset - (self.text.rfind("\n", 0, offset) + 1)
        start = line_start(self.stored, line)
        assert start is not None, "the model's text has the stored text's lines"
        return start + column

    def in_stored(self, replacement: Replacement) -> Replacement:
        """``replacement`` (offsets in the model's text) at the same place in the stored text."""
        return Replacement(self.stored_offset(replacement.start), self.stored_offset(replacement.end), replacement.text)


_kept_views: dict[int, ModelView] = {}  # by the id of the stored text, oldest first


def with_endings(stored_span: str, text: str, newline: str) -> str:
    """``text`` (breaks spelled ``\\n``) replacing ``stored_span``, its lines in the stored endings.

    Lines of ``text`` that were in ``stored_span`` keep the ending they had; other
    line breaks become ``newline``.
    """
    old_breaks = LINE_BREAK.findall(stored_span)
    old_lines = LINE_BREAK.split(stored_span)
    new_lines = text.split("\n")
    endings = [newline] * (len(new_lines) - 1)
    matcher = SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for old_start, new_start, size in matcher.get_matching_blocks():
        for k in range(size):
            if new_start + k < len(endings) and old_start + k < len(old_breaks):
                endings[new_start + k] = old_breaks[old_start + k]
    return "".join(line + ending for line, ending in zip(new_lines, endings + [""]))
