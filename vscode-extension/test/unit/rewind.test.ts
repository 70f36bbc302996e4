/** "Rewind to before this turn": the turn's checkpoint from its result, the button, `elelem.rewind`'s arguments and answer, the conflict question. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { toTurnResult } from "../../src/protocol";
import { renderTurn } from "../../src/render";
import { conflictQuestion, describeRewind, rewindArguments, toRewindAnswer } from "../../src/rewindAnswer";
import { finishTurn, newTurn } from "../../src/transcript";

const EDITS = [{ uri: "file:///w/app.py", path: "app.py", added: 2, removed: 1 }];

test("a turn whose result carries a checkpoint offers Rewind to before this turn once it ended", () => {
  const turn = newTurn(7, "Fix it");
  turn.edits = EDITS;
  assert.doesNotMatch(renderTurn(turn), /data-action="(undo|rewind)"/, "nothing to rewind while it runs");
  finishTurn(turn, toTurnResult({ reply: "Fixed.", provider: "scripted", steps: 2, checkpoint: 3 }));
  assert.equal(turn.checkpoint, 3);
  const html = renderTurn(turn);
  assert.match(html, /<button class="secondary" data-action="rewind" data-turn="7"[^>]*><span class="codicon codicon-history"><\/span> Rewind to before this turn<\/button>/);
  assert.match(html, /data-action="undo" data-turn="7"[^>]*>.*Undo this turn's edits/, "the editor's own undo stays beside it");
  turn.editsUndone = true;
  turn.rewound = describeRewind(toRewindAnswer({ rewound: true, turns: [3], conversation: true, files: [], conflicts: [] }));
  assert.match(renderTurn(turn), /<span class="undone">Rewound, with the conversation<\/span>/);
  assert.doesNotMatch(renderTurn(turn), /data-action="(undo|rewind)"/);
});

test("files only a command changed are rewindable too: the block shows without observed edits", () => {
  const turn = newTurn(8, "Run the formatter");
  finishTurn(turn, toTurnResult({ reply: "Done.", checkpoint: 4 }));
  assert.match(renderTurn(turn), /Files changed<\/div><ul><\/ul><button[^>]*>.*Rewind to before this turn/);
});

test("without a checkpoint (an older server, or nothing changed) the turn keeps today's undo", () => {
  for (const checkpoint of [null, undefined, "3", 2.5]) {
    const turn = newTurn(9, "Edit");
    turn.edits = EDITS;
    finishTurn(turn, toTurnResult({ reply: "Done.", checkpoint }));
    assert.equal(turn.checkpoint, undefined, String(checkpoint));
    assert.match(renderTurn(turn), /Undo this turn's edits/);
  }
  const quiet = newTurn(10, "Explain");
  finishTurn(quiet, toTurnResult({ reply: "It adds.", checkpoint: null }));
  assert.doesNotMatch(renderTurn(quiet), /data-action="undo"/, "a turn that changed nothing offers nothing");
});

test("elelem.rewind is called with the checkpoint, the conversation choice, force and the folder", () => {
  assert.deepEqual(rewindArguments(3, { conversation: false }), { turn: 3 });
  assert.deepEqual(rewindArguments(3, { conversation: true, uri: "file:///w" }), { turn: 3, conversation: true, uri: "file:///w" });
  assert.deepEqual(rewindArguments(3, { conversation: true, force: true, uri: "file:///w" }), { turn: 3, conversation: true, force: true, uri: "file:///w" });
});

test("an answer with conflicts is not rewound, and the question lists each file with its reason", () => {
  const answer = toRewindAnswer({
    rewound: false,
    turn: 3,
    turns: [3, 4],
    conversation: false,
    undo: null,
    files: [],
    conflicts: [
      { path: "src/app.py", reason: "has unsaved changes in the editor" },
      { path: "new.txt", reason: "created again since the turn" },
    ],
  });
  assert.equal(answer.rewound, false);
  assert.deepEqual(answer.turns, [3, 4]);
  assert.equal(
    conflictQuestion(answer.conflicts),
    "2 files have changed since the turn, so nothing was rewound:\nsrc/app.py: has unsaved changes in the editor\nnew.txt: created again since the turn\nRewind anyway? Those changes would be lost.",
  );
  assert.match(conflictQuestion(answer.conflicts.slice(0, 1)), /^A file has changed since the turn/);
});

test("a rewound answer is read whole; a malformed one is not rewound", () => {
  assert.deepEqual(
    toRewindAnswer({ rewound: true, turn: 3, turns: [3, "4"], conversation: false, undo: 5, files: [{ path: "src/app.py", action: "write" }, 7], conflicts: [] }),
    { rewound: true, turns: [3], conversation: false, files: [{ path: "src/app.py", action: "write" }], conflicts: [] },
  );
  assert.deepEqual(toRewindAnswer("yes"), { rewound: false, turns: [], conversation: false, files: [], conflicts: [] });
  assert.equal(describeRewind(toRewindAnswer({ rewound: true })), "Rewound");  // an older server's answer
  assert.equal(describeRewind(toRewindAnswer({ rewound: true, turns: [3], conversation: true, text: "rewound turn 3, said by the server" })),
    "rewound turn 3, said by the server");
});
