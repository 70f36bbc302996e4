"""Secrets kept out of error texts: the one place a provider's failure is scrubbed of keys.

Bridges the secrets elelem knows of to every error text a provider raises, built in or a
plugin, before it is shown, logged or stored. Known secrets are the values of environment
variables whose names say they hold one (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*PASSWORD*``...), and those a caller adds (the settings' keys: ``host/settings.py``); each
is found bare, percent-encoded as in a URL, and as a long enough run of its start (a message
cut short inside a key). Values shorter than ``MINIMUM_SECRET`` are never treated as secrets
found by name alone: ``TOKEN=1`` must not turn every ``1`` into ``***``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote

REDACTED = "***"
# A cut message ("…") may end inside a secret: a run this long of a secret's start is redacted too.
SECRET_PREFIX = 8
MINIMUM_SECRET = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|BEARER|SESSION|COOKIE", re.IGNORECASE)


def environment_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """The values of the environment variables named as secrets, long enough to be ones."""
    environ = os.environ if environ is None else environ
    return {value.strip() for name, value in environ.items() if SECRET_NAME.search(name) and len(value.strip()) >= MINIMUM_SECRET}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, and every long enough run of a secret's start, as ``***``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
        if len(secret) > SECRET_PREFIX:
            text = _redact_starts(text, secret)
    return text


def _redact_starts(text: str, secret: str) -> str:
    head = secret[:SECRET_PREFIX]
    out, position = [], 0
    while (found := text.find(head, position)) >= 0:
        end = found + SECRET_PREFIX
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        out += [text[position:found], REDACTED]
        position = end
    return "".join(out) + text[position:]


def redact_error(text: str, known: Iterable[str] = ()) -> str:
    """A provider's error text without the environment's secrets and the ``known`` ones."""
    secrets = environment_secrets() | {value for value in known if len(value) >= MINIMUM_SECRET}
    secrets |= {quote(secret, safe="") for secret in secrets}  # as it appears inside a URL
    return redact(text, sorted(secrets, key=len, reverse=True))  # a longer secret before one inside it
