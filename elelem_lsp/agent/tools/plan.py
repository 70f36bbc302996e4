"""``plan``: the model's plan for the turn, a checklist the person sees (ACP ``plan`` updates, the
``plan`` event over LSP) and the conversation keeps. The model sends the whole list each time."""

from typing import Literal

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool


class PlanEntry(BaseModel):
    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed"]
    priority: Literal["high", "medium", "low"] = "medium"


class PlanArguments(BaseModel):
    entries: list[PlanEntry]


async def keep_plan(args: PlanArguments, workspace: Workspace) -> dict:
    return {"plan": [entry.model_dump() for entry in args.entries]}


PLAN = Tool(
    "plan",
    "Show the person your plan for a task of several steps as a checklist: send every step, in order, "
    "each time one starts or is done. Skip it for a one-step answer.",
    PlanArguments,
    keep_plan,
    changes_files=False,
    summary="Show your plan as a checklist: every step, each time one starts or is done.",
    core=False,
)
