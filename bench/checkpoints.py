"""Checkpoints: what one costs a turn on a 20,000-file tree, and how long a rewind of 100 files takes.

A generated tree (200 folders of 100 source files of 1-2 KB, and an ignored ``build/`` of 1,000
more) in a temporary folder, the store in a temporary state directory. For each run:

- first-request delay: from the turn's start (``TurnCheckpoint`` made) to the point where the
  turn may send its model request (the next turn of the event loop), and the longest the event
  loop was held up while the snapshot ran in the background (a 1 ms ticker's worst lateness);
- total work: wall and CPU time (ours and git's) of the snapshot before a turn: the first ever
  (every file read), one with nothing changed, one after 100 files changed; and of the turn's end
  (the snapshot after it, recording what changed and pruning);
- rewind: planning and applying the rewind of a turn that changed 100 files.

Run: ``python bench/checkpoints.py [--runs N] [--files N]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from elelem_lsp.host.checkpoints import CheckpointStore
from elelem_lsp.host.turn_checkpoints import TurnCheckpoint


def make_tree(root: Path, files: int) -> list[Path]:
    made = []
    per_folder = 100
    for n in range(files):
        folder = root / f"pkg{n // per_folder:03d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"module{n % per_folder:03d}.py"
        path.write_text(f"# module {n}\n" + "def f(x):\n    return x + 1\n" * (40 + n % 40))
        made.append(path)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for n in range(1000):
        (root / "build" / f"out{n}.o").write_bytes(os.urandom(512))
    return made


class Cost:
    """Wall and CPU time (this process and its children) of one piece of work."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Cost:
        self._start = (time.perf_counter(), cpu_seconds())
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = (time.perf_counter() - self._start[0]) * 1000
        self.cpu = (cpu_seconds() - self._start[1]) * 1000


def cpu_seconds() -> float:
    ours, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return ours.ru_utime + ours.ru_stime + children.ru_utime + children.ru_stime


async def turn_start(store: CheckpointStore) -> tuple[float, float, TurnCheckpoint]:
    """(ms to the model request, worst event-loop lateness in ms while the snapshot ran, the checkpoint)."""
    started = time.perf_counter()
    checkpoint = TurnCheckpoint(store, "bench", None)
    await asyncio.sleep(0)  # where the turn goes on to build and send its model request
    to_request = (time.perf_counter() - started) * 1000
    worst = 0.0
    while not checkpoint.before.done():
        tick = time.perf_counter()
        await asyncio.sleep(0.001)
        worst = max(worst, (time.perf_counter() - tick - 0.001) * 1000)
    return to_request, worst, checkpoint


async def timed_turn(store: CheckpointStore, change: Callable[[], Any]) -> dict[str, float]:
    with Cost() as before:
        to_request, worst, checkpoint = await turn_start(store)
        await checkpoint.ready()
    change()
    with Cost() as after:
        await checkpoint.finish()
    return {
        "to_request": to_request,
        "loop": worst,
        "before_wall": before.wall,
        "before_cpu": before.cpu,
        "after_wall": after.wall,
        "after_cpu": after.cpu,
    }


async def one_run(files: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "project"
        root.mkdir()
        made = make_tree(root, files)
        store = CheckpointStore(root, base=Path(scratch) / "state")
        figures: dict[str, float] = {}
        first = await timed_turn(store, lambda: None)
        figures.update({f"first {k}": v for k, v in first.items()})
        same = await timed_turn(store, lambda: None)
        figures.update({f"unchanged {k}": v for k, v in same.items()})
        for path in made[:100]:  # the person changed 100 files since
            path.write_text(path.read_text() + "# edited\n")
        changed = await timed_turn(store, lambda: None)
        figures.update({f"changed {k}": v for k, v in changed.items()})

        def hundred() -> None:
            for path in made[1000:1100]:
                path.write_text("# rewritten by the turn\n")

        turn = await timed_turn(store, hundred)
        figures["turn of 100 files: end wall"] = turn["after_wall"]
        figures["turn of 100 files: end cpu"] = turn["after_cpu"]
        number = store.list()[-1].turn
        with Cost() as planning:
            plan = store.plan(number)
        with Cost() as applying:
            store.apply(plan)
        assert len(plan.restores) == 100 and not plan.conflicts
        assert made[1000].read_text().startswith("# module 1000")
        figures["rewind 100 files: plan wall"] = planning.wall
        figures["rewind 100 files: apply wall"] = applying.wall
        figures["rewind 100 files: total cpu"] = planning.cpu + applying.cpu
        return figures


ROWS = [
    ("first snapshot: turn start → model request may go (ms)", "first to_request"),
    ("first snapshot: worst event-loop delay while it runs (ms)", "first loop"),
    ("first snapshot, 20,000 files read: wall (ms)", "first before_wall"),
    ("first snapshot: CPU, ours + git (ms)", "first before_cpu"),
    ("nothing changed: turn start → model request may go (ms)", "unchanged to_request"),
    ("nothing changed: worst event-loop delay (ms)", "unchanged loop"),
    ("nothing changed: snapshot wall (ms)", "unchanged before_wall"),
    ("nothing changed: snapshot CPU (ms)", "unchanged before_cpu"),
    ("100 files changed since: snapshot wall (ms)", "changed before_wall"),
    ("100 files changed since: snapshot CPU (ms)", "changed before_cpu"),
    ("turn that wrote 100 files: its end (snapshot, record, prune) wall (ms)", "turn of 100 files: end wall"),
    ("turn that wrote 100 files: its end CPU (ms)", "turn of 100 files: end cpu"),
    ("rewind of that turn: plan wall (ms)", "rewind 100 files: plan wall"),
    ("rewind of that turn: apply wall (ms)", "rewind 100 files: apply wall"),
    ("rewind of that turn: CPU (ms)", "rewind 100 files: total cpu"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=20_000)
    options = parser.parse_args()
    runs = [asyncio.run(one_run(options.files)) for _ in range(options.runs)]
    print(f"{options.files} files, {options.runs} runs: median (min–max)")
    for label, key in ROWS:
        values = [run[key] for run in runs]
        print(f"{label:<72} {statistics.median(values):8.1f} ({min(values):.1f}–{max(values):.1f})")


if __name__ == "__main__":
    main()
