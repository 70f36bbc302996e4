"""A call of an MCP tool: its arguments checked against the tool's schema and shown to the person as
asked about, and its result shaped into the answer the model reads."""

from __future__ import annotations

import json
import logging
from typing import Any

from ...agent.toolbox import encode, failure
from ...agent.tools.execute import OUTPUT_CAP

log = logging.getLogger(__name__)

ARGUMENTS_SHOWN = 300  # characters of a call's arguments in the question to the person


def shown_call(tool: str, arguments: dict[str, Any]) -> str:
    """``query {"sql": "DROP TABLE users"}``: the call as the person is asked about it, every argument
    shown (an MCP tool's arguments have no main one), cut short past ARGUMENTS_SHOWN characters."""
    shown = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    if len(shown) > ARGUMENTS_SHOWN:
        shown = shown[:ARGUMENTS_SHOWN] + "…"
    return f"{tool} {shown}".rstrip()


def schema_problem(validator: Any, arguments: dict[str, Any]) -> str | None:
    """``path: problem`` for each way the arguments break the tool's schema, None when they fit
    (or when the schema cannot be followed: the server then judges the arguments itself)."""
    if validator is None:
        return None
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except Unresolvable as error:  # a $ref to what the schema does not hold
        log.info("not checking arguments against a schema with an unresolvable reference: %s", error)
        return None
    problems = [f"{'.'.join(str(part) for part in error.absolute_path) or 'arguments'}: {error.message}" for error in errors]
    return "; ".join(problems) or None


def outcome(result: Any) -> dict[str, Any]:
    """The tool result the model reads: text, a placeholder per image or audio, resources, structured
    content; cut short (``truncated``) where its encoding would pass OUTPUT_CAP, as ``read``'s is."""
    text = "\n".join(filter(None, (content_text(block) for block in result.content)))
    if result.is_error:
        return capped(failure(text or "the tool reported an error and said nothing more"), "error")
    answer: dict[str, Any] = {"ok": True, "content": text}
    if result.structured_content is not None:
        answer["structured"] = result.structured_content
    return capped(answer, "content")


def capped(answer: dict[str, Any], field: str) -> dict[str, Any]:
    """The answer as it is when its encoding fits OUTPUT_CAP; else without structured content and
    with the text of ``field`` cut where the encoding fits."""
    if len(encode(answer)) <= OUTPUT_CAP:
        return answer
    answer = {key: value for key, value in answer.items() if key != "structured"}
    text, answer[field], answer["truncated"] = answer[field], "", True
    room = OUTPUT_CAP - len(encode(answer))  # for the text's escaped characters, the quotes are there
    fits, too_long = 0, min(len(text), room) + 1  # a character encodes to one or more: never fewer
    while too_long - fits > 1:  # the longest start of the text that fits
        middle = (fits + too_long) // 2
        if len(json.dumps(text[:middle], ensure_ascii=False)) - 2 <= room:
            fits = middle
        else:
            too_long = middle
    answer[field] = text[:fits]
    return answer


def content_text(block: Any) -> str:
    """One content block as text: images, audio and binary resources as a short placeholder."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4 - block.data[-2:].count("=")  # base64's length, decoded
        return f"[{kind}: {block.mime_type}, {size} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource: {block.uri}{f' ({block.name})' if block.name else ''}]"
    if kind == "resource":
        resource = block.resource
        body = getattr(resource, "text", None)
        if body is not None:
            return f"[resource: {resource.uri}]\n{body}"
        return f"[resource: {resource.uri}, {resource.mime_type or 'binary'}, not shown]"
    return f"[{kind or 'unknown'} content, not shown]"
