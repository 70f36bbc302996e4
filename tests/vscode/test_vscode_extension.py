"""vscode-extension through pytest, so .ci/run covers it: the TypeScript type check, the node unit
tests of the transcript rendering and argument building, and the end-to-end test in a real VS Code
(code-server in Debian's chromium, driven by playwright-core; see vscode-extension/test/e2e/run.ts).

The npm packages, chromium and code-server come from vscode-extension/scripts/install-e2e.sh.
Without them these tests skip, unless ELELEM_REQUIRE_VSCODE=1 or ELELEM_REQUIRE_ALL=1 (set by CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from optional_parts import require as require_part

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "vscode-extension"
OUTPUT = ROOT / "tests" / "output" / "vscode"
CACHE = Path(os.environ.get("ELELEM_VSCODE_CACHE", Path.home() / ".cache" / "elelem-vscode-e2e"))
CODE_SERVER = CACHE / "code-server-4.100.3" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
CHROMIUM = Path(os.environ.get("ELELEM_CHROMIUM", "/usr/bin/chromium"))
INSTALL_HINT = "run vscode-extension/scripts/install-e2e.sh"

# One worker runs them all: they share what `compiled` puts in vscode-extension/out/.
pytestmark = pytest.mark.xdist_group("vscode-extension")


def require(condition: bool, what: str) -> None:
    require_part(condition, "vscode", what, INSTALL_HINT)


def npm_run(script: str, *, timeout: float, env: dict[str, str] | None = None) -> str:
    require(shutil.which("npm") is not None, "npm")
    require((EXTENSION / "node_modules" / ".bin" / "tsc").exists(), "vscode-extension/node_modules")
    # Its own process group, so a timeout stops npm and everything it started (the e2e runner
    # stops code-server's group when it gets SIGTERM).
    process = subprocess.Popen(
        ["npm", "run", "--silent", script],
        cwd=EXTENSION,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        pytest.fail(f"npm run {script} took longer than {timeout} s:\n{output[-8000:]}")
    assert process.returncode == 0, f"npm run {script} failed ({process.returncode}):\n{output[-8000:]}"
    return output


@pytest.fixture(scope="module")
def compiled() -> str:
    """The extension and its tests compiled into out/ once for the three tests below: tsc over
    src/ and test/ with the type check's options (tsconfig.test.json extends tsconfig.json)."""
    return npm_run("compile-tests", timeout=120)


@pytest.fixture(scope="module")
def packaged() -> Path:
    """The .vsix `npm run package` builds (production bundles, then vsce), once for the tests below."""
    npm_run("package", timeout=120)
    return EXTENSION / "elelem-lsp.vsix"


def test_typescript_type_checks(compiled):
    # `npm run typecheck` is the same program without the output: a type error fails compile-tests
    assert "error TS" not in compiled, compiled


def test_transcript_rendering_and_argument_building(compiled):
    output = npm_run("unit", timeout=120)
    passed = re.search(r"^# pass (\d+)$", output, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", output, re.MULTILINE)
    assert passed and failed, output
    assert int(failed.group(1)) == 0, output
    assert int(passed.group(1)) >= 15, f"expected the unit tests to run, got:\n{output}"


def test_the_package_holds_the_bundles_the_font_the_pictures_and_the_notices(packaged):
    """What the installed extension loads: a file missing from the .vsix is a blank chat view."""
    with zipfile.ZipFile(packaged) as vsix:
        names = set(vsix.namelist())
        webview = vsix.read("extension/dist/webview.js").decode()
    # (vsce stores README.md as readme.md and LICENSE as LICENSE.txt)
    for needed in ["dist/extension.js", "dist/webview.js", "dist/webview.css", "dist/codicon.ttf", "package.json",
                   "readme.md", "LICENSE.txt", "ThirdPartyNotices.txt"]:
        assert f"extension/{needed}" in names, (needed, sorted(names))
    media = {path.relative_to(EXTENSION).as_posix() for path in (EXTENSION / "media").iterdir()}
    assert media and {f"extension/{name}" for name in media} <= names, (media, sorted(names))
    assert "DOMPurify" in webview  # the page's sanitiser is bundled, not fetched
    assert not any("node_modules" in name or name.endswith(".map") for name in names), sorted(names)


def run_e2e(scenarios: str, timeout: int) -> list[str]:
    """``npm run e2e:run`` (after the ``packaged`` fixture's package and compile-tests) with the
    scenarios of vscode-extension/test/e2e named; the steps it printed, the last one a PASS."""
    require(CODE_SERVER.exists(), f"code-server ({CODE_SERVER})")
    require(CHROMIUM.exists(), f"chromium ({CHROMIUM})")
    output = npm_run(
        "e2e:run",
        timeout=timeout,
        env={
            "ELELEM_CODE_SERVER": str(CODE_SERVER),
            "ELELEM_CHROMIUM": str(CHROMIUM),
            "ELELEM_LSP_COMMAND": json.dumps([sys.executable, "-m", "elelem_lsp", "serve"]),
            "ELELEM_E2E_SCENARIOS": scenarios,
        },
    )
    steps = [line for line in output.splitlines() if line.startswith("[e2e")]
    print("\n".join(steps))  # what was seen, step by step (pytest -rP shows it)
    assert steps and steps[-1].endswith("PASS"), output[-8000:]
    return steps


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_ask_fix_cancel_undo_in_code_server(compiled, packaged):
    (OUTPUT / "chat-dark.png").unlink(missing_ok=True)
    run_e2e("chat,untrusted", timeout=420)
    assert (OUTPUT / "chat-dark.png").stat().st_size > 10_000
    assert (OUTPUT / "chat-light.png").stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ghost_text_and_next_edit_in_code_server(compiled, packaged):
    """vscode-extension/test/e2e/editing.ts: the ghost text shown and accepted with Tab, the status
    bar's toggle, a next edit shown, jumped to and accepted, the file as expected."""
    (OUTPUT / "next-edit.png").unlink(missing_ok=True)
    steps = run_e2e("editing", timeout=240)
    assert any("Tab accepted it" in line for line in steps) and any("Alt+Y accepted them" in line for line in steps), steps
    assert (OUTPUT / "next-edit.png").stat().st_size > 10_000


def test_every_picture_of_the_packaged_readme_is_packaged_with_it():
    """vsce packages only what .vscodeignore lets through, and we ask it not to rewrite links:
    a picture outside the package (../docs/...) would be a broken image on the extension's page."""
    readme = (EXTENSION / "README.md").read_text()
    pictures = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme)
    assert pictures
    packaged = [line[1:].removesuffix("/**") for line in (EXTENSION / ".vscodeignore").read_text().split() if line.startswith("!")]
    for picture in pictures:
        assert not picture.startswith(("../", "/")), picture
        assert (EXTENSION / picture).is_file(), picture
        assert any(picture == entry or picture.startswith(entry + "/") for entry in packaged), picture
