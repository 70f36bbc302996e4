"""Fixtures for the ACP face: a project whose provider is the scripted plugin, and agents in it."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from acp_client import running_agent
from scaffold import add_plugin, write_user_settings


@pytest.fixture
def scripted_project(project: Path, home: Path) -> Path:
    """The project, with the scripted provider in its plugins and chosen in the user's settings file."""
    add_plugin(project, "scripted")
    write_user_settings(home, {"provider": "scripted"})
    return project


@pytest_asyncio.fixture
async def start_agent(tmp_path: Path):
    """``async with``-free start: ``agent = await start_agent(root, fs=..., terminal=...)``; stopped at the end."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(root: Path, **options: Any):
            return await stack.enter_async_context(running_agent(root, tmp_path / "logs", **options))

        yield start
