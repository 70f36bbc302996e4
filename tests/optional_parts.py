"""Tests of optional parts (an editor, a browser, a model extra): skip naming the install step.

A newcomer's `pytest -q` passes without them; CI sets ``ELELEM_REQUIRE_ALL=1`` (or one part's
``ELELEM_REQUIRE_<PART>=1``) so that a missing part fails there instead of hiding behind a skip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from types import ModuleType

import pytest


def required(part: str) -> bool:
    """Whether a missing ``part`` must fail the test rather than skip it."""
    return "1" in (os.environ.get("ELELEM_REQUIRE_ALL"), os.environ.get(f"ELELEM_REQUIRE_{part.upper()}"))


def require(available: bool, part: str, what: str, install: str, *, whole_module: bool = False) -> None:
    """Skip (or, when the part is required, fail) unless ``available``; ``whole_module`` when
    called as a test module is imported."""
    if available:
        return
    message = f"{what} is missing; to run this test: {install}"
    if required(part):
        pytest.fail(f"{message} (ELELEM_REQUIRE_{part.upper()} or ELELEM_REQUIRE_ALL is set)", pytrace=not whole_module)
    pytest.skip(message, allow_module_level=whole_module)


def require_program(name: str, part: str, install: str) -> str:
    """The path of the program ``name`` on the PATH."""
    found = shutil.which(name)
    require(found is not None, part, f"{name} (not on the PATH)", install)
    assert found is not None
    return found


def import_required(module: str, part: str, install: str) -> ModuleType:
    """``module``, imported for a test module that needs it: without it the module's tests are
    skipped (or, when the part is required, fail)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        require(False, part, f"the Python module {module}", install, whole_module=True)
        raise


def require_module(module: str, part: str, install: str) -> None:
    """Whether ``module`` can be imported (found, not blocked), without importing it."""
    try:
        present = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or the module is blocked
        present = False
    require(present, part, f"the Python module {module}", install)


def require_sandbox() -> None:
    """Skip (or, with ``ELELEM_REQUIRE_SANDBOX``, fail) unless a command sandbox works here."""
    from elelem_lsp.agent.sandbox import probe

    found = probe()
    require(
        found.kind is not None, "sandbox", f"a working command sandbox ({found.why_not})",
        "Linux with unprivileged user namespaces allowed (bubblewrap comes with the package)",
    )


def require_bubblewrap() -> None:
    """For a test of what bubblewrap does: skipped off Linux (another platform, not a missing part:
    no ELELEM_REQUIRE makes it fail); on Linux a sandbox that does not work fails, since the package
    brings bubblewrap."""
    from elelem_lsp.agent.sandbox import probe

    if not sys.platform.startswith("linux"):
        pytest.skip(f"checked with bubblewrap, on Linux ({sys.platform} here)")
    works = probe()
    assert works.kind == "bubblewrap", f"no sandbox works on this Linux machine: {works.why_not}"
