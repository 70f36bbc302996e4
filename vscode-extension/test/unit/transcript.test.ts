/** Event-to-transcript: how streamed progress values and results become what the panel shows. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { toProgressValue, toTurnResult } from "../../src/protocol";
import { briefArguments, renderTurn } from "../../src/render";
import { applyProgress, cancelTurn, failTurn, finishTurn, newTurn, Turn } from "../../src/transcript";

function feed(turn: Turn, ...values: unknown[]): void {
  for (const value of values) {
    const parsed = toProgressValue(value);
    assert.ok(parsed, `not a progress value: ${JSON.stringify(value)}`);
    applyProgress(turn, parsed);
  }
}

/** The visible text of rendered HTML, tags stripped and entities decoded. */
function visibleText(html: string): string {
  return html
    .replace(/<[^>]+>/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")
    .trim();
}

const EDIT_CALL = { type: "doing", id: "c1", name: "edit", arguments: { path: "hello.txt", old: "Hello, world", new: "Hello, elelem" } };

test("a streamed turn becomes thinking, reply text, and a tool call with its outcome, in order", () => {
  const turn = newTurn(1, "Rename the greeting", "hello.txt");
  feed(
    turn,
    { kind: "begin", title: "elelem", cancellable: true, message: "thinking" },
    { kind: "report", message: "…", events: [{ type: "thinking", text: "The file has " }] },
  );
  assert.match(renderTurn(turn), /<details class="thinking"[^>]* open>/, "the thinking being streamed is open");
  feed(
    turn,
    { kind: "report", message: "…", events: [{ type: "thinking", text: "one greeting." }, { type: "saying", text: "I'll change **hello.txt**." }] },
    { kind: "report", message: "…", events: [EDIT_CALL] },
  );
  assert.deepEqual(
    turn.items.map((item) => item.kind),
    ["thinking", "saying", "tool"],
  );
  assert.equal(turn.items[0].kind === "thinking" && turn.items[0].text, "The file has one greeting.");
  const running = renderTurn(turn);
  assert.doesNotMatch(running, /<details class="thinking"[^>]* open>/, "thinking closes once the reply starts");
  assert.match(running, /class="tool running"/);

  feed(
    turn,
    { kind: "report", message: "…", events: [{ type: "result", id: "c1", name: "edit", ok: true }, { type: "saying", text: "Done: the greeting now says hello to elelem." }] },
    { kind: "end", message: "done" },
  );
  finishTurn(turn, toTurnResult({ reply: "Done: the greeting now says hello to elelem.", provider: "scripted", model: null, steps: 2, cancelled: false, error: null }));

  assert.equal(turn.status, "done");
  assert.deepEqual(
    turn.items.map((item) => item.kind),
    ["thinking", "saying", "tool", "saying"],
    "the reply is not added twice when it was streamed",
  );
  const html = renderTurn(turn);
  assert.match(html, /<strong>hello.txt<\/strong>/, "the reply is rendered as markdown");
  assert.doesNotMatch(html, /<details class="thinking"[^>]* open>/, "finished thinking is collapsed");
  assert.match(html, /class="tool ok"/);
  const text = visibleText(html);
  const row = html.match(/<details class="tool[^>]*><summary[^>]*>.*?<\/summary>/)?.[0] ?? "";
  assert.equal(visibleText(row), "Edited hello.txt", "the tool call is one compact row");
  assert.ok(text.includes('{ "path": "hello.txt", "old": "Hello, world", "new": "Hello, elelem" } ok'), text);
  assert.ok(text.includes("done — scripted · 2 steps"), text);
  assert.ok(text.indexOf("The file has one greeting.") < text.indexOf("I'll change hello.txt"));
});

test("a turn ends with the server's footer as it is; an older server's result is worded here", () => {
  const worded = newTurn(1, "Hi");
  finishTurn(worded, toTurnResult({ reply: "Hi.", provider: "scripted", steps: 2, text: "done — said by the server" }));
  assert.match(renderTurn(worded), /<footer class="status done">done — said by the server<\/footer>/, "not composed from its steps");
  const cancelled = newTurn(2, "Wait");
  finishTurn(cancelled, toTurnResult({ reply: "", provider: "scripted", steps: 1, cancelled: true, text: "cancelled — scripted · 1 step" }));
  assert.match(renderTurn(cancelled), /<footer class="status cancelled">cancelled — scripted · 1 step<\/footer>/);
  const older = newTurn(3, "Hi");
  finishTurn(older, toTurnResult({ reply: "Hi.", provider: "scripted", steps: 2 }));
  assert.match(renderTurn(older), /<footer class="status done">done — scripted · 2 steps<\/footer>/);
});

test("a failed tool call shows its error next to the call", () => {
  const turn = newTurn(2, "Fix it");
  feed(turn, {
    kind: "report",
    events: [
      { type: "doing", id: "c7", name: "execute", arguments: { command: "rm -rf build" } },
      { type: "result", id: "c7", name: "execute", ok: false, error: "denied by the person" },
    ],
  });
  const html = renderTurn(turn);
  assert.match(html, /class="tool failed"/);
  assert.ok(visibleText(html).includes("Ran rm -rf build — denied by the person"), visibleText(html));
});

test("parallel tool calls get their own outcomes by id", () => {
  const turn = newTurn(3, "Read both");
  feed(turn, {
    kind: "report",
    events: [
      { type: "doing", id: "a", name: "read", arguments: { path: "a.txt" } },
      { type: "doing", id: "b", name: "read", arguments: { path: "b.txt" } },
      { type: "result", id: "b", name: "read", ok: false, error: "no such file: b.txt" },
      { type: "result", id: "a", name: "read", ok: true },
    ],
  });
  const outcomes = turn.items.map((item) => item.kind === "tool" && item.outcome);
  assert.deepEqual(outcomes, [{ ok: true }, { ok: false, error: "no such file: b.txt" }]);
});

test("a provider error ends the turn with the error visible", () => {
  const turn = newTurn(4, "Hello");
  feed(turn, { kind: "report", events: [{ type: "thinking", text: "hm" }] }, { kind: "end", message: "Error: connection refused" });
  finishTurn(turn, toTurnResult({ reply: "Error: connection refused", provider: "openai", cancelled: false, error: "connection refused" }));
  assert.equal(turn.status, "error");
  const errors = turn.items.filter((item) => item.kind === "error");
  assert.equal(errors.length, 1, "the error is shown once");
  assert.match(renderTurn(turn), /<div class="error">Error: connection refused<\/div>/);
  assert.doesNotMatch(renderTurn(turn), /class="saying"/, "the error reply is not also shown as a reply");
});

test("a request that fails (server gone) and a cancel before any end are visible", () => {
  const failed = newTurn(5, "x");
  failTurn(failed, "Error: the server went away");
  assert.equal(failed.status, "error");
  assert.match(renderTurn(failed), /Error: the server went away/);

  const cancelled = newTurn(6, "y");
  feed(cancelled, { kind: "report", events: [{ type: "saying", text: "Partial" }] });
  cancelTurn(cancelled);
  assert.equal(cancelled.status, "cancelled");
  assert.match(renderTurn(cancelled), /<footer class="status cancelled">cancelled/);
  assert.match(renderTurn(cancelled), /Partial/, "what streamed before the cancel stays");
});

test("a cancelled end wins over a later plain result", () => {
  const turn = newTurn(7, "z");
  feed(turn, { kind: "end", message: "cancelled" });
  finishTurn(turn, toTurnResult({ reply: "", cancelled: true }));
  assert.equal(turn.status, "cancelled");
});

test("a reply that was never streamed (a plain server) is shown from the result", () => {
  const turn = newTurn(8, "Hi");
  finishTurn(turn, toTurnResult({ reply: "Hello *there*", provider: "stub", steps: 1 }));
  assert.match(renderTurn(turn), /<em>there<\/em>/);
});

test("model text cannot inject markup into the transcript", () => {
  const turn = newTurn(9, "<img src=x onerror=alert(1)>");
  feed(turn, {
    kind: "report",
    events: [
      { type: "saying", text: "<script>alert(1)</script> ok" },
      { type: "thinking", text: "<b>bold</b>" },
      { type: "doing", id: "c", name: "<i>x</i>", arguments: { path: "<svg onload=1>" } },
    ],
  });
  const html = renderTurn(turn);
  assert.doesNotMatch(html, /<script>|<img|<svg|<b>bold|<i>x/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt; ok/);
});

test("unknown event types and malformed values are skipped, not fatal", () => {
  assert.equal(toProgressValue({ kind: "weird" }), undefined);
  assert.equal(toProgressValue(null), undefined);
  const parsed = toProgressValue({ kind: "report", events: [{ type: "usage", tokens: 3 }, { type: "saying" }, 5, { type: "saying", text: "kept" }] });
  assert.deepEqual(parsed, { kind: "report", message: undefined, events: [{ type: "saying", text: "kept" }] });
});

test("long or multi-line tool arguments are cut short in the one-line preview", () => {
  const brief = briefArguments({ path: "a.py", content: "line one\nline two\n" + "x".repeat(200) });
  assert.match(brief, /^path="a.py", content="line one⏎line two⏎x+…$/);
  assert.ok(brief.length < 80, brief);
});
