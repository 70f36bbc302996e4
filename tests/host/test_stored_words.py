"""A stored conversation is served in the words its entries had live, so no client composes them:
a compaction, a reset and a rewind carry the `text` of their note, and a tool row stored before
titles were kept gets the titles the agent gives such a call, and a turn the footer its answer
ended with (issue 32: the words of every event
come from the server)."""

from __future__ import annotations

from scaffold import add_plugin, write_script
from stored_transcripts import UNTITLED_TURN

from elelem_lsp.host import stored
from elelem_lsp.host.conversations import ConversationStore

from .test_host_conversations import folder_of, started_host


async def test_compaction_reset_and_rewind_entries_carry_their_note_and_old_tool_rows_their_titles(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "Hi."}]])
    host, _ = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("hello")  # the conversation exists, with one turn stored as it is now
    conversation = (await stored.transcript(folder))["id"]
    store = ConversationStore(project.resolve())
    for entry in [
        {"kind": "compaction", "turns": 12, "summary": "We read files.", "at": "2026-12-01T11:00:00.000Z"},
        {"kind": "reset", "at": "2026-12-01T11:05:00.000Z"},
        {"kind": "rewind", "checkpoint": 3, "at": "2026-12-01T11:10:00.000Z"},
        UNTITLED_TURN,
        {"kind": "compaction", "turns": 1, "summary": "x", "at": "2026-12-01T11:20:00.000Z"},
    ]:
        store.append(conversation, entry)

    entries = (await stored.transcript(folder))["entries"]
    assert [entry.get("text") for entry in entries] == [
        "done — scripted · 1 step",  # a turn: its footer, as its answer said it
        "12 turns compacted into a summary",
        "the conversation started over here: the model no longer sees the turns above",
        "rewound to before turn 3: the model no longer sees it or the turns after it",
        "done — scripted",  # stored before steps were kept, by a provider without a model
        "1 turn compacted into a summary",
    ]
    assert [(call["title"], call["outcomeTitle"]) for call in entries[4]["tools"]] == [
        ("Read a.py", "Read a.py"),
        ("Run make", "Run make"),  # it failed: titled as asked, as a live result is
        ("files: stat path=\"x\"", "files: stat path=\"x\""),
    ]
    # the words are served, not stored: the file keeps the entries as they were written
    assert "text" not in store.entries(conversation)[1]
    assert "title" not in store.entries(conversation)[4]["tools"][0]
    # and elelem.resume serves them alike
    resumed = await stored.resume(folder, conversation)
    assert resumed["entries"][2]["text"] == "the conversation started over here: the model no longer sees the turns above"
