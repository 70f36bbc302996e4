/** The `plan` checklist and the host's `usage` row and header line, as the chat view shows them;
 * a stored turn's plan and checks drawn again from `elelem.transcript`. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { toAgentEvent, toProgressValue, toTranscriptResult } from "../../src/protocol";
import { renderTurn } from "../../src/render";
import { applyProgress, newTurn, Turn, turnsFromTranscript } from "../../src/transcript";
import { describeConversationUsage, describeHeaderUsage, describeSuggestions, toTurnUsage, usageOf } from "../../src/usage";

const USAGE = {
  type: "usage",
  inputTokens: 1234,
  outputTokens: 567,
  conversationInputTokens: 12345,
  conversationOutputTokens: 2345,
  contextTokens: 3000,
  contextWindow: 128000,
  cost: 0.1234,
  currency: "USD",
  text: "1,234 in · 567 out · $0.01",
};

function report(turn: Turn, ...events: unknown[]): void {
  const value = toProgressValue({ kind: "report", message: "…", events });
  assert.ok(value);
  applyProgress(turn, value);
}

function plan(...statuses: string[]) {
  return { type: "plan", entries: statuses.map((status, index) => ({ content: `Step <${index + 1}>`, status })) };
}

test("a plan is a checklist with a status icon and a spoken label per entry", () => {
  const turn = newTurn(1, "Fix it");
  report(turn, plan("completed", "in_progress", "pending"));
  const html = renderTurn(turn);
  assert.match(html, /<div class="plan" role="group" aria-label="Plan, 1 of 3 done">/);
  assert.match(html, /aria-label="Step &lt;1&gt;, done"><span class="icon codicon codicon-pass-filled" aria-hidden="true"><\/span> Step &lt;1&gt;<\/li>/);
  assert.match(html, /aria-label="Step &lt;2&gt;, in progress"><span class="icon codicon codicon-loading codicon-modifier-spin"/);
  assert.match(html, /aria-label="Step &lt;3&gt;, to do"><span class="icon codicon codicon-circle-large-outline"/);
});

test("each plan event replaces the turn's plan where it stands", () => {
  const turn = newTurn(1, "Fix it");
  report(turn, { type: "saying", text: "Planning." }, plan("in_progress", "pending"), { type: "saying", text: " Working." });
  report(turn, plan("completed", "in_progress", "pending"));
  assert.deepEqual(turn.items.map((item) => item.kind), ["saying", "plan", "saying"]);
  const shown = turn.items[1];
  assert.ok(shown.kind === "plan");
  assert.deepEqual(shown.entries.map((entry) => entry.status), ["completed", "in_progress", "pending"]);
  assert.match(renderTurn(turn), /Plan, 1 of 3 done/);
});

test("a malformed plan keeps what it can: entries without text dropped, an unknown status pending", () => {
  const event = toAgentEvent({ type: "plan", entries: [{ content: "Read", status: "blocked", priority: "high" }, { status: "completed" }, "x", null] });
  assert.deepEqual(event, { type: "plan", item: { kind: "plan", entries: [{ content: "Read", status: "pending", priority: "high" }] } });
  assert.deepEqual(toAgentEvent({ type: "plan" }), { type: "plan", item: { kind: "plan", entries: [] } });
});

test("the host's usage is a small row at the turn's end; a provider's usage (no text) is not shown", () => {
  const turn = newTurn(1, "Fix it");
  report(turn, { type: "usage", inputTokens: 10, outputTokens: 2 }, { type: "saying", text: "Done." }, USAGE);
  assert.deepEqual(turn.items.map((item) => item.kind), ["saying", "usage"]);
  assert.match(renderTurn(turn), /<div class="usage-row" aria-label="This turn used 1,234 in · 567 out · \$0\.01">1,234 in · 567 out · \$0\.01<\/div>/);
  assert.equal(usageOf(turn.items)?.conversationInputTokens, 12345);
});

test("the header says the context once: the server's words, else (an older server) the size, the totals and the cost", () => {
  const usage = toTurnUsage(USAGE);
  assert.ok(usage);
  assert.equal(describeConversationUsage(usage), "12,345 in · 2,345 out · $0.1234");
  const unpriced = toTurnUsage({ ...USAGE, cost: undefined, contextWindow: undefined });
  assert.ok(unpriced);
  assert.equal(describeConversationUsage(unpriced), "12,345 in · 2,345 out");
  const euros = toTurnUsage({ ...USAGE, cost: 0.5, currency: "EUR" });
  assert.ok(euros);
  assert.match(describeConversationUsage(euros), /€0\.50$/);
  const header = describeHeaderUsage("≈3,000 of 32,000 tokens", usage);
  assert.equal(header, "≈3,000 of 32,000 tokens · 12,345 in · 2,345 out · $0.1234");
  assert.equal(header.match(/\d[\d,]* of [\d,]+/g)?.length, 1, header);
  assert.equal(describeHeaderUsage("≈3,000 of 32,000 tokens", undefined), "≈3,000 of 32,000 tokens");
  // the server's words, when it sends them, are the header as they are: the context said once
  const worded = toTurnUsage({ ...USAGE, conversationText: "12,345 in (10,000 cached) · 2,345 out · context 3,000 of 32,000 · $0.12" });
  assert.equal(describeHeaderUsage("≈3,000 of 32,000 tokens", worded), "12,345 in (10,000 cached) · 2,345 out · context 3,000 of 32,000 · $0.12");
  // an older server's, not yet measured: the context the last request held stands in for the size
  assert.equal(describeHeaderUsage("", usage), "context 3,000 of 128,000 · 12,345 in · 2,345 out · $0.1234");
  assert.equal(describeHeaderUsage("", unpriced), "context 3,000 · 12,345 in · 2,345 out");
});

test("usage figures that are not counts are read as 0; an unknown currency is written after the figure", () => {
  const usage = toTurnUsage({ ...USAGE, conversationInputTokens: "many", conversationOutputTokens: -3, currency: "not a code" });
  assert.ok(usage);
  assert.match(describeConversationUsage(usage), /^0 in · 0 out · 0\.1234 not a code$/);
  assert.equal(toTurnUsage({ inputTokens: 1 }), undefined);
});

test("a stored turn is drawn again with each step's check after its call and the plan it left", () => {
  const checked = { type: "checked", files: ["a.ts"], text: "checked a.ts: 1 new error", newProblems: [
    { path: "a.ts", line: 3, column: 7, severity: "error", message: "bad" }] };
  const transcript = toTranscriptResult({ id: "c", title: "t", entries: [{
    kind: "turn", prompt: "Fix it", reply: "Done.", provider: "scripted", model: null, cancelled: false, error: null,
    tools: [
      { id: "w", name: "write", arguments: { path: "a.ts" }, ok: true, summary: "wrote", error: null, checked },
      { id: "r", name: "read", arguments: { path: "a.ts" }, ok: true, summary: "read", error: null, checked: "odd" },
    ],
    plan: plan("completed", "in_progress").entries,
  }] });
  const [turn] = turnsFromTranscript(transcript, () => 1);
  assert.deepEqual(turn.items.map((item) => item.kind), ["tool", "checked", "tool", "plan", "saying"]);
  const live = newTurn(2, "Fix it");
  report(live, checked, plan("completed", "in_progress"));
  assert.deepEqual(turn.items[1], live.items[0], "the check is drawn as it was live");
  assert.deepEqual(turn.items[3], live.items[1], "the plan is drawn as it was live");
  assert.match(renderTurn(turn), /checked a.ts: 1 new error/);
  assert.match(renderTurn(turn), /Plan, 1 of 2 done/);
});

test("a stored turn's tool rows and usage row use the server's words, as they did live", () => {
  const stored = (usage: unknown) =>
    turnsFromTranscript(toTranscriptResult({ id: "c", title: "t", entries: [{
      kind: "turn", prompt: "Test it", reply: "Passed.", provider: "scripted", model: "m1", cancelled: false, error: null,
      tools: [
        { id: "b", name: "bash", arguments: { command: "npm test" }, title: "Run npm test", outcomeTitle: "Ran npm test",
          ok: true, summary: "exit 0", error: null },
        { id: "r", name: "read", arguments: { path: "a.ts" }, ok: true, summary: "read", error: null },
      ],
      usage,
    }] }), () => 1)[0];
  const turn = stored({ inputTokens: 1234, outputTokens: 567, cost: 0.0123, text: "1,234 in · 567 out · $0.01" });
  assert.deepEqual(turn.items.map((item) => item.kind), ["tool", "tool", "saying", "usage"]);
  const live = newTurn(2, "Test it");
  report(live,
    { type: "doing", id: "b", name: "bash", arguments: { command: "npm test" }, title: "Run npm test" },
    { type: "result", id: "b", name: "bash", ok: true, title: "Ran npm test", summary: "exit 0" });
  assert.deepEqual(turn.items[0], live.items[0], "the titled call and its outcome are drawn as they were live");
  assert.match(renderTurn(turn), /<div class="usage-row" [^>]*>1,234 in · 567 out · \$0\.01<\/div>/);
  assert.match(renderTurn(turn), /read/, "a call stored without titles keeps its name");
  for (const uncounted of [{ inputTokens: 0, outputTokens: 0, text: "0 in · 0 out" }, { inputTokens: 5 }, "odd"]) {
    assert.ok(!stored(uncounted).items.some((item) => item.kind === "usage"), JSON.stringify(uncounted));
  }
});

test("the header's tooltip gives inline completion's and next edit's figures in the server's words, only when they did anything", () => {
  const context = {
    usage: USAGE,
    completion: { shown: 12, accepted: 3, charsAccepted: 141, requests: 9, text: "3 of 12 accepted, said by the server" },
    nextEdit: { shown: 0, accepted: 0, charsAccepted: 0, requests: 0, text: "0 of 0 accepted" },
  };
  assert.deepEqual(describeSuggestions(context), ["inline completion: 3 of 12 accepted, said by the server"]);
  assert.deepEqual(describeSuggestions({ ...context, nextEdit: { shown: 2, requests: 2, text: "1 of 2, said by the server" } }), [
    "inline completion: 3 of 12 accepted, said by the server",
    "next edit: 1 of 2, said by the server",
  ]);
  assert.deepEqual(describeSuggestions({ usage: USAGE }), [], "an older server's context: nothing to add");
});
