"""SentencePiece-style vocabularies for the models we run ourselves (candle, llama2).

Bridges a GGUF ``llama`` vocabulary or a llama2.c ``tokenizer.bin`` to token
ids and back: text is split on the vocabulary's special tokens, each piece of
plain text is cut into characters and merged pair by pair in order of score
(llama.cpp's and run.c's algorithm), and a character the vocabulary lacks falls
back to its ``<0xXX>`` byte tokens. Decoding gives bytes, so a caller can hold
back a character split across tokens.
"""

from __future__ import annotations

import heapq
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

# GGUF token kinds
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


@dataclass
class PieceVocab:
    """Pieces with their merge scores and kinds; ``space`` is how a piece spells a space."""

    pieces: list[str]
    scores: list[float]
    kinds: list[int]
    space: str = "\u2581"
    add_space_prefix: bool = True
    space_after_special: bool = True  # llama.cpp prefixes a space after each special token
    bos_id: int | None = 1
    eos_id: int | None = 2
    _ids: dict[str, int] = field(init=False, repr=False)
    _bytes: dict[int, int] = field(init=False, repr=False)
    _special_ids: dict[str, int] = field(init=False, repr=False)
    _specials: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not (len(self.pieces) == len(self.scores) == len(self.kinds)):
            raise ValueError("a vocabulary needs one score and one kind per piece")
        self._ids = {}
        self._bytes = {}
        self._special_ids = {}
        for index, (piece, kind) in enumerate(zip(self.pieces, self.kinds)):
            if kind == BYTE:
                match = _BYTE_PIECE.fullmatch(piece)
                if match:
                    self._bytes[int(match.group(1), 16)] = index
            elif kind in (NORMAL, USER_DEFINED):
                self._ids.setdefault(piece, index)
            if kind in (CONTROL, USER_DEFINED) and piece:
                self._special_ids.setdefault(piece, index)
        specials = sorted(self._special_ids, key=len, reverse=True)
        self._specials = re.compile("|".join(map(re.escape, specials))) if specials else None

    def __len__(self) -> int:
        return len(self.pieces)

    @classmethod
    def from_gguf_metadata(cls, metadata: dict[str, Any]) -> PieceVocab:
        """The vocabulary of a GGUF whose ``tokenizer.ggml.model`` is ``llama``."""
        model = metadata.get("tokenizer.ggml.model")
        if model != "llama":
            raise ValueError(f"only SentencePiece (llama) vocabularies are supported, this GGUF has {model!r}")
        pieces = [str(p) for p in metadata["tokenizer.ggml.tokens"]]
        scores = [float(s) for s in metadata.get("tokenizer.ggml.scores", [0.0] * len(pieces))]
        kinds = [int(k) for k in metadata.get("tokenizer.ggml.token_type", [NORMAL] * len(pieces))]
        return cls(
            pieces,
            scores,
            kinds,
            add_space_prefix=bool(metadata.get("tokenizer.ggml.add_space_prefix", True)),
            bos_id=_optional_int(metadata.get("tokenizer.ggml.bos_token_id", 1)),
            eos_id=_optional_int(metadata.get("tokenizer.ggml.eos_token_id", 2)),
        )

    @classmethod
    def from_llama2_tokenizer(cls, path: Path, vocab_size: int) -> PieceVocab:
        """llama2.c's tokenizer.bin: max piece length, then per piece a float score, a length, the bytes."""
        data = Path(path).read_bytes()
        pieces: list[str] = []
        scores: list[float] = []
        offset = 4
        try:
            for _ in range(vocab_size):
                score, length = struct.unpack_from("<fi", data, offset)
                offset += 8
                pieces.append(data[offset : offset + length].decode("utf-8", errors="replace"))
                scores.append(score)
                offset += length
        except struct.error:
            raise ValueError(f"{path} holds fewer than the model's {vocab_size} pieces") from None
        # run.c's layout: <unk>, <s>, </s>, then byte pieces and ordinary ones
        kinds = [UNKNOWN, CONTROL, CONTROL][: min(3, vocab_size)]
        kinds += [BYTE if _BYTE_PIECE.fullmatch(p) else NORMAL for p in pieces[3:]]
        return cls(pieces, scores, kinds, space=" ", space_after_special=False)

    def encode(self, text: str, add_bos: bool = True) -> list[int]:
        ids = [self.bos_id] if add_bos and self.bos_id is not None else []
        previous_special = True
        position = 0
        for match in self._specials.finditer(text) if self._specials else ():
            ids += self._encode_plain(text[position : match.start()], previous_special)
            ids.append(self._special_ids[match.group()])
            previous_special = self.space_after_special
            position = match.end()
        ids += self._encode_plain(text[position:], previous_special)
        return ids

    def _encode_plain(self, text: str, after_special: bool) -> list[int]:
        if not text:
            return []
        if self.add_space_prefix and after_special:
            text = " " + text
        symbols = _merge(list(text.replace(" ", self.space)), self._ids, self.scores)
        ids: list[int] = []
        for symbol in symbols:
            known = self._ids.get(symbol)
            if known is not None:
                ids.append(known)
                continue
            for byte in symbol.encode("utf-8"):
                if byte not in self._bytes:
                    raise ValueError(f"the vocabulary has neither {symbol!r} nor a byte piece for it")
                ids.append(self._bytes[byte])
        return ids

    def piece_bytes(self, token: int) -> bytes:
        """What ``token`` adds to the text; specials and unknown ids add nothing."""
        if not 0 <= token < len(self.pieces):
            return b""
        kind = self.kinds[token]
        piece = self.pieces[token]
        if kind == BYTE:
            match = _BYTE_PIECE.fullmatch(piece)
            return bytes([int(match.group(1), 16)]) if match else b""
        if kind in (NORMAL, USER_DEFINED):
            return piece.replace(self.space, " ").encode("utf-8")
        return b""

    def decode(self, tokens: Sequence[int]) -> str:
        return b"".join(self.piece_bytes(t) for t in tokens).decode("utf-8", errors="replace")


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _merge(symbols: list[str], ids: dict[str, int], scores: Sequence[float]) -> list[str]:
    """Merge adjacent symbols whose join is a piece, best score first, leftmost on ties."""
    count = len(symbols)
    following = list(range(1, count)) + [-1]
    preceding = list(range(-1, count - 1))
    alive = [True] * count
    queue: list[tuple[float, int, str]] = []

    def offer(left: int) -> None:
        right = following[left]
        if right != -1:
            joined = symbols[left] + symbols[right]
            token = ids.get(joined)
            if token is not None:
                heapq.heappush(queue, (-scores[token], left, joined))

    for left in range(count - 1):
        offer(left)
    while queue:
        _, left, joined = heapq.heappop(queue)
        right = following[left]
        if not alive[left] or right == -1 or symbols[left] + symbols[right] != joined:
            continue  # a neighbour changed since this pair was offered
        symbols[left] = joined
        alive[right] = False
        following[left] = following[right]
        if following[right] != -1:
            preceding[following[right]] = left
        if preceding[left] != -1:
            offer(preceding[left])
        offer(left)
    return [symbol for symbol, keep in zip(symbols, alive) if keep]
