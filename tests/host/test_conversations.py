"""The conversation store on disk: private append-only files, torn lines, symlinks, ids, two
writers at once, the listing, and the history rebuilt from the entries as the session built it."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from elelem_lsp.agent.history import CANCELLED_EMPTY_MARK, CANCELLED_MARK, SUMMARY_MARK
from elelem_lsp.host.conversations import (
    ConversationStore,
    StoreError,
    conversations_dir,
    folder_key,
    history_from,
    new_id,
)
from elelem_lsp.host.frontend import BadRequest


def turn(prompt: str, reply: str = "ok", *, cancelled: bool = False, ended: str = "2026-01-01T00:00:00.000Z", **more):
    return {"kind": "turn", "prompt": prompt, "reply": reply, "provider": "stub", "model": None,
            "started": ended, "ended": ended, "cancelled": cancelled, "error": None, "tools": [], **more}


@pytest.fixture
def store(tmp_path: Path) -> ConversationStore:
    return ConversationStore(tmp_path / "project", base=tmp_path / "state")


def test_the_state_dir_follows_the_users_home(home):
    assert conversations_dir() == home / ".local" / "state" / "elelem-lsp" / "conversations"


def test_entries_come_back_in_order_from_private_files(store):
    conversation = new_id()
    store.append(conversation, turn("first"))
    store.append(conversation, turn("second ünïcode \ud800 lone surrogate"))
    entries = store.entries(conversation)
    assert [e["prompt"] for e in entries] == ["first", "second ünïcode \ud800 lone surrogate"]  # as sent
    path = store.path(conversation)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert path.read_text().count("\n") == 2


def test_a_torn_last_line_is_skipped_and_the_next_entry_starts_a_line_of_its_own(store):
    conversation = new_id()
    store.append(conversation, turn("kept"))
    with open(store.path(conversation), "a") as file:
        file.write('{"kind": "turn", "prompt": "cut sho')  # the process was killed mid-write
    assert [e["prompt"] for e in store.entries(conversation)] == ["kept"]
    store.append(conversation, turn("after"))
    assert [e["prompt"] for e in store.entries(conversation)] == ["kept", "after"]


# characters str.splitlines takes for line ends; only "\n" ends a stored line
LINE_BREAKS_WITHIN_TEXT = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


@pytest.mark.parametrize("character", LINE_BREAKS_WITHIN_TEXT, ids=lambda c: f"U+{ord(c):04X}")
def test_a_text_holding_a_line_separator_comes_back_whole(store, character):
    conversation = new_id()
    store.append(conversation, turn(f"before{character}after", f"reply{character}more"))
    store.append(conversation, {"kind": "compaction", "turns": 1, "summary": f"sum{character}mary", "at": "x"})
    store.append(conversation, turn("next"))
    entries = store.entries(conversation)
    assert [(e.get("prompt"), e.get("reply"), e.get("summary")) for e in entries] == [
        (f"before{character}after", f"reply{character}more", None),
        (None, None, f"sum{character}mary"),
        ("next", "ok", None),
    ]


def test_lines_that_are_not_entries_are_skipped(store):
    conversation = new_id()
    store.append(conversation, turn("one"))
    with open(store.path(conversation), "a") as file:
        file.write('[1, 2]\n{"kind": "mystery"}\n"text"\n')
    store.append(conversation, turn("two"))
    assert [e["prompt"] for e in store.entries(conversation)] == ["one", "two"]


@pytest.mark.parametrize("bad", ["", "../escape", "a/b", ".hidden", "x" * 65, "name.jsonl", "current\n"])
def test_an_id_that_is_not_a_safe_file_name_is_refused(store, bad):
    with pytest.raises(BadRequest, match="^id: .* is not a conversation id$"):
        store.append(bad, turn("x"))
    assert not (store.base.exists() and any(store.base.rglob("*.jsonl")))


def test_a_symlink_planted_for_the_folder_or_the_file_is_not_followed(store, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.base.mkdir()
    store.directory.symlink_to(elsewhere)
    with pytest.raises(StoreError, match="is a symlink"):
        store.append(new_id(), turn("x"))
    assert list(elsewhere.iterdir()) == []

    store.directory.unlink()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    conversation = new_id()
    store.directory.mkdir()
    store.path(conversation).symlink_to(victim)
    with pytest.raises(OSError):
        store.append(conversation, turn("x"))
    assert victim.read_text() == "precious\n"
    assert store.list() == []  # a symlinked file is not read either

    store.path(conversation).unlink()
    lock = Path(str(store.path(conversation)) + ".lock")
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)  # the lock file planted
    with pytest.raises(OSError):
        store.append(conversation, turn("x"))
    assert victim.read_text() == "precious\n"


def test_a_hand_edited_file_with_odd_values_still_loads(store):
    conversation = new_id()
    store.append(conversation, {"kind": "turn", "prompt": 5, "reply": None, "cancelled": "no"})
    store.append(conversation, {"kind": "compaction", "turns": "many", "summary": 7})
    store.append(conversation, {"kind": "turn", "prompt": "last"})
    history = history_from(store.entries(conversation))
    assert history == [{"role": "user", "content": f"{SUMMARY_MARK}\n\n7"}, {"role": "user", "content": "5"},
                       {"role": "assistant", "content": ""}, {"role": "user", "content": "last"},
                       {"role": "assistant", "content": ""}]
    [listed] = store.list()
    assert listed["turns"] == 2 and listed["title"] == "5"


def test_folders_with_one_name_get_their_own_directories(tmp_path):
    one, two = tmp_path / "a" / "app", tmp_path / "b" / "app"
    assert folder_key(one) != folder_key(two)
    assert folder_key(one).startswith("app-")
    assert "/" not in folder_key(tmp_path / "we ird\\name:*") and folder_key(Path("/")).startswith("root-")


def test_the_listing_is_newest_first_with_a_short_title(store):
    old, recent = "20260101T000000-aaaaaaaa", "20260102T000000-bbbbbbbb"
    store.append(old, turn("an old question\nover two lines", ended="2026-01-01T10:00:00.000Z"))
    store.append(recent, turn("x" * 200, ended="2026-01-02T10:00:00.000Z"))
    store.append(recent, turn("second", ended="2026-01-02T11:00:00.000Z", provider="openai", model="gpt-4o"))
    store.append(old, turn("late", ended="2026-01-03T10:00:00.000Z"))  # updated last: now the newest
    listing = store.list()
    assert [c["id"] for c in listing] == [old, recent]
    assert listing[0]["title"] == "an old question over two lines" and listing[0]["turns"] == 2
    assert listing[1]["title"] == "x" * 59 + "…"
    assert listing[1] | {"title": ""} == {
        "id": recent, "title": "", "created": "2026-01-02T10:00:00.000Z", "updated": "2026-01-02T11:00:00.000Z",
        "turns": 2, "provider": "openai", "model": "gpt-4o",
    }


def test_the_current_conversation_is_the_one_made_current_else_the_newest(store):
    assert store.current() is None
    store.append("20260101T000000-aaaaaaaa", turn("a", ended="2026-01-01T00:00:00.000Z"))
    store.append("20260102T000000-bbbbbbbb", turn("b", ended="2026-01-02T00:00:00.000Z"))
    assert store.current() == "20260102T000000-bbbbbbbb"
    store.make_current("20260101T000000-aaaaaaaa")
    assert store.current() == "20260101T000000-aaaaaaaa"
    fresh = new_id()
    store.make_current(fresh)  # a new conversation with nothing in it yet
    assert store.current() == fresh and not store.exists(fresh)
    store.delete("20260101T000000-aaaaaaaa")
    with pytest.raises(BadRequest, match="no conversation"):
        store.delete("20260101T000000-aaaaaaaa")


def test_a_delete_waits_for_an_append_under_way_and_leaves_the_lock_file_to_its_holders(store):
    conversation = new_id()
    store.append(conversation, turn("first"))
    lock_file = Path(str(store.path(conversation)) + ".lock")
    holder = subprocess.Popen(  # another server, in the middle of an append
        [sys.executable, "-c", "import sys\nfrom filelock import FileLock\n"
         "with FileLock(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n", str(lock_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    deleting = threading.Thread(target=store.delete, args=(conversation,))
    deleting.start()
    deleting.join(0.5)
    assert deleting.is_alive() and store.exists(conversation)  # not while the append is under way
    holder.stdin.close()
    deleting.join(30)
    assert holder.wait(30) == 0 and not store.exists(conversation)
    assert lock_file.exists()  # the file the other process locked: a new one at its path would not exclude it


def test_two_processes_appending_at_once_keep_every_line(store, tmp_path):
    conversation = new_id()
    writer = (
        "import sys\nfrom pathlib import Path\nfrom elelem_lsp.host.conversations import ConversationStore\n"
        "store = ConversationStore(Path(sys.argv[1]), base=Path(sys.argv[2]))\n"
        "for n in range(150):\n"
        "    store.append(sys.argv[3], {'kind': 'turn', 'prompt': sys.argv[4] + str(n), 'reply': 'r' * 70000})\n"
    )
    args = [str(tmp_path / "project"), str(store.base), conversation]
    writers = [subprocess.Popen([sys.executable, "-c", writer, *args, name]) for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    lines = store.path(conversation).read_text().splitlines()
    assert len(lines) == 300 and all(json.loads(line)["reply"] == "r" * 70000 for line in lines)
    prompts = [json.loads(line)["prompt"] for line in lines]
    for name in ("a", "b"):
        assert [p for p in prompts if p[0] == name] == [f"{name}{n}" for n in range(150)]


def test_the_history_is_rebuilt_as_the_session_built_it():
    entries = [
        turn("one", "reply one"),
        turn("stopped early", "half a", cancelled=True),
        turn("stopped at once", "", cancelled=True),
        turn("broke", "Error: connection refused", error="connection refused"),
    ]
    assert history_from(entries) == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "reply one"},
        {"role": "user", "content": "stopped early"},
        {"role": "assistant", "content": f"half a\n\n{CANCELLED_MARK}"},
        {"role": "user", "content": f"stopped at once\n\n{CANCELLED_EMPTY_MARK}"},  # no empty assistant message
        {"role": "user", "content": "broke"},
        {"role": "assistant", "content": "Error: connection refused"},
    ]


def test_a_compaction_replaces_the_turns_and_the_summary_before_it():
    entries = [turn(f"t{n}") for n in range(5)]
    entries.append({"kind": "compaction", "turns": 3, "summary": "first summary", "at": "x"})
    history = history_from(entries)
    assert history[0]["content"] == f"{SUMMARY_MARK}\n\nfirst summary"
    assert [m["content"] for m in history[1:]] == ["t3", "ok", "t4", "ok"]
    entries += [turn("t5"), {"kind": "compaction", "turns": 2, "summary": "second summary", "at": "y"}]
    history = history_from(entries)
    assert [m["content"] for m in history] == [f"{SUMMARY_MARK}\n\nsecond summary", "t5", "ok"]


def test_a_reset_leaves_out_every_turn_and_summary_before_it():
    entries = [turn("t0"), {"kind": "compaction", "turns": 1, "summary": "s", "at": "x"}, turn("t1"),
               {"kind": "reset", "at": "y"}, turn("t2")]
    assert [m["content"] for m in history_from(entries)] == ["t2", "ok"]
    entries += [{"kind": "compaction", "turns": 1, "summary": "after the reset", "at": "z"}, turn("t3")]
    assert [m["content"] for m in history_from(entries)] == [f"{SUMMARY_MARK}\n\nafter the reset", "t3", "ok"]
