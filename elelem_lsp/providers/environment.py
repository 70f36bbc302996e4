"""Numbers a provider reads from the environment (a timeout, a context length, a thread count):
one reading, and one wording of what is wrong with a value, for the remote and the local ones."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from ..agent.messages import ProviderError

Number = TypeVar("Number", int, float)


def positive_number(name: str, default: Number, parse: Callable[[str], Number], what: str) -> Number:
    """``name``'s value as ``parse`` reads it (``what`` says what it must be), ``default`` when unset or blank."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        number = parse(raw)
    except ValueError:
        raise ProviderError(f"{name} must be {what}, got {raw!r}") from None
    if number <= 0:
        raise ProviderError(f"{name} must be positive, got {raw!r}")
    return number
