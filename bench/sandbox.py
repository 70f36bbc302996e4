"""The command sandbox: how long it adds to a short command.

Each command (``true``, ``echo hi``) is run as ``execute`` runs it (``run_process``: a shell in its
own process group, its output read through a pipe), in turn without the sandbox, in it (bubblewrap
on Linux, sandbox-exec on macOS), in it with the network on (no network namespace to make) and, on
Linux where /tmp can be a private layer, in it with /tmp read-only instead (as where the kernel
refuses the layer), and the figure is the median wall time of each and what the sandbox adds. The sandbox's one-off
probe (is there one that works here?) is timed apart, as it is paid once per server.
``python bench/sandbox.py [--runs R]`` (default 50 runs of each; a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from elelem_lsp.agent import sandbox  # noqa: E402
from elelem_lsp.agent.workspace import run_process  # noqa: E402

COMMANDS = ("true", "echo hi")


async def timed(command: str, root: Path, policy: sandbox.SandboxPolicy, found: sandbox.Available) -> float:
    """The wall time of ``command`` under ``policy``, with the sandbox ``found`` (the probe's, or
    bubblewrap without the layer over /tmp)."""
    started = time.perf_counter()
    if found.tmp_overlay or policy.mode == "off" or found.kind != "bubblewrap":
        contained = await sandbox.contain(["/bin/sh", "-c", command], root, policy)
    else:  # what contain() builds where the kernel refuses the layer
        argv = sandbox.bwrap_argv(found.program, ["/bin/sh", "-c", command], root, policy, Path.home(), (), sandbox.private_tmp())
        contained = sandbox.Contained(argv, "bubblewrap")
    result = await run_process(contained, root, timeout=30, output_cap=65536)
    took = time.perf_counter() - started
    assert result.exit_code == 0, result
    assert bool(result.sandbox) == (policy.mode != "off"), "the sandbox was not used"
    return took


async def main(runs: int) -> None:
    started = time.perf_counter()
    found = sandbox.probe()
    print(f"probe: {(time.perf_counter() - started) * 1000:.1f} ms, once per server ({found.kind or found.why_not})")
    if found.kind is None:
        sys.exit("no sandbox works here: nothing to measure")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        required = sandbox.SandboxPolicy(mode="required")
        policies = {
            "without": (sandbox.SandboxPolicy(mode="off"), found),
            "sandbox": (required, found),
            "sandbox, network on": (sandbox.SandboxPolicy(mode="required", network=True), found),
        }
        if found.tmp_overlay:
            policies["sandbox, /tmp read-only"] = (required, dataclasses.replace(found, tmp_overlay=False))
        for policy, kind in policies.values():
            await timed("true", root, policy, kind)  # a first run, not counted: files the first start reads get cached
        for command in COMMANDS:
            times: dict[str, list[float]] = {name: [] for name in policies}
            for _ in range(runs):  # in turn, so that a busy moment of the machine weighs on each
                for name, (policy, kind) in policies.items():
                    times[name].append(await timed(command, root, policy, kind))
            medians = {name: statistics.median(taken) * 1000 for name, taken in times.items()}
            shown = ", ".join(
                f"{name} {ms:5.1f} ms" + (f" (+{ms - medians['without']:.1f})" if name != "without" else "")
                for name, ms in medians.items()
            )
            print(f"{command!r:>10}: {shown}  (medians of {runs})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(main(parser.parse_args().runs))
