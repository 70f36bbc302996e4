/** The `checked` row: what the agent's check after a change found, as the chat view shows it. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { toProgressValue } from "../../src/protocol";
import { renderTurn } from "../../src/render";
import { applyProgress, newTurn } from "../../src/transcript";

const CHECKED = {
  type: "checked",
  files: ["app.ts"],
  text: "checked app.ts: 1 new error",
  newProblems: [{ path: "app.ts", line: 2, column: 5, severity: "error", message: "Type 'string' is not\nassignable to type 'number'.", source: "ts" }],
};

function rendered(...events: unknown[]): string {
  const turn = newTurn(1, "Break the types");
  const value = toProgressValue({ kind: "report", message: "…", events });
  assert.ok(value);
  applyProgress(turn, value);
  return renderTurn(turn);
}

test("a check that found new problems is a warning row that opens to them", () => {
  const html = rendered(CHECKED);
  assert.match(html, /<details class="tool checked failed"[^>]*><summary[^>]*>.*codicon-warning.*checked app\.ts: 1 new error<\/span><\/summary>/);
  assert.match(html, /<pre class="tool-output" aria-label="Problems">app\.ts:2:5 error: Type &#39;string&#39; is not assignable to type &#39;number&#39;\.<\/pre>/);
});

test("a clean check is a passed row; a check command's output is what it opens to", () => {
  assert.match(rendered({ ...CHECKED, text: "checked app.ts: no new problems", newProblems: [] }), /class="tool checked ok".*codicon-check.*no new problems<\/span><\/summary><\/details>/);
  const html = rendered({ type: "checked", files: ["a.py"], text: "checked a.py: ruff check a.py (exit 1)", exitCode: 1, output: "a.py:1:1: F821 Undefined name `x`\nFound 1 error.\n", newProblems: [] });
  assert.match(html, /class="tool checked failed"/);
  assert.match(html, /aria-label="Problems">a\.py:1:1: F821 Undefined name `x`\nFound 1 error\.<\/pre>/);
});
