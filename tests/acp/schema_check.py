"""Every ACP message checked against the protocol's JSON schema, both ways.

The schema is the stable ACP v1 schema as the official TypeScript SDK ships it
(``schema/acp-v1-sdk-2.4.0.json``: ``@agentclientprotocol/sdk`` 2.4.0's
``schema/v1/schema.json``, the agent-client-protocol repository's schema v1.21 with the
``notice`` and ``compaction_update`` updates since made stable). Each request and notification is
checked against the definition the schema ties to its method and side (``x-method``,
``x-side``), each result against its request's response definition, each error against ``Error``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA = Path(__file__).parent / "schema" / "acp-v1-sdk-2.4.0.json"
HANDLED_BY = {"client": "agent", "agent": "client"}  # who answers what each side sends


@functools.cache
def definitions() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text())["$defs"]


@functools.cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": definitions()})


def definition_of(method: str, side: str, response: bool) -> str | None:
    for name, definition in definitions().items():
        if definition.get("x-method") == method and definition.get("x-side") == side and name.endswith("Response") == response:
            return name
    return None


def problems(messages: Iterable[tuple[str, dict[str, Any]]]) -> list[str]:
    """What does not match the schema in ``messages``, each ``(sender, message)`` with sender
    ``client`` or ``agent``; an empty list when all do."""
    found: list[str] = []
    asked: dict[tuple[str, Any], str] = {}  # (sender, id) -> method
    for sender, message in messages:
        method = message.get("method")
        if method is not None:
            if "id" in message:
                asked[(sender, message["id"])] = method
            name = definition_of(method, HANDLED_BY[sender], response=False)
            payload = message.get("params")
        elif "error" in message:
            name, payload = "Error", message["error"]
        else:
            request = asked.get((HANDLED_BY[sender], message.get("id")))
            name = definition_of(request, sender, response=True) if request else None
            payload = message.get("result")
            method = f"the answer to {request}"
        if name is None:
            found.append(f"{sender}: no schema definition for {method or message}")
            continue
        for error in validator(name).iter_errors(payload):
            found.append(f"{sender} {method} ({name}) at {'/'.join(map(str, error.absolute_path))}: {error.message}")
    return found
