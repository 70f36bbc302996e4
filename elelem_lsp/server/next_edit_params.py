"""The params of ``elelem/nextEdit`` checked (pydantic): a bad field is InvalidParams naming it.

Apart from ``next_edit.py`` so that pydantic is imported with the first request, not before
``initialize`` is answered.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pygls.exceptions import JsonRpcInvalidParams

UINTEGER = 2**31 - 1  # LSP's uinteger


class Position(BaseModel):
    # strict: "3" or true is no line number, though pydantic would take them as 3 and 1
    model_config = ConfigDict(extra="ignore", strict=True)
    line: int = Field(ge=0, le=UINTEGER)
    character: int = Field(ge=0, le=UINTEGER)


class Document(BaseModel):
    model_config = ConfigDict(extra="ignore")
    uri: str = Field(min_length=1)


class NextEditParams(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    text_document: Document = Field(alias="textDocument")
    position: Position


def parsed(raw: Any) -> NextEditParams:
    """The request's params, or InvalidParams naming the field that is wrong."""
    try:
        return NextEditParams.model_validate(plain(raw))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "params"
        raise JsonRpcInvalidParams(f"{field}: {first['msg']}") from None


def plain(value: Any) -> Any:
    """pygls hands a custom request's params over as nested objects: back to dicts."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
        return [plain(item) for item in value]
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {key: plain(item) for key, item in vars(value).items()}
    return value
