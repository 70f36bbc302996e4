/** The chat view's pure parts: code blocks, tool rows, context notes, stored conversations, edits, the input. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { withAttachedFiles } from "../../src/args";
import { countLineChanges } from "../../src/lineCounts";
import { PendingRequests } from "../../src/pendingRequests";
import { toContextUsage, toConversations, toProgressValue, toTranscriptResult } from "../../src/protocol";
import { describeTool, renderTurn } from "../../src/render";
import { asTheTurnLeftThem, planUndo } from "../../src/undoPlan";
import { applyProgress, cancelTurn, conversationTitle, describeUsage, newTurn, Turn, turnsFromTranscript } from "../../src/transcript";
import { escapeAnswer, fileQueryAt, PromptHistory, requestFocus, withoutQuery } from "../../src/webview/composer";

function say(turn: Turn, ...events: unknown[]): void {
  const value = toProgressValue({ kind: "report", events });
  assert.ok(value);
  applyProgress(turn, value);
}

function counter(): () => number {
  let id = 0;
  return () => ++id;
}

test("a fenced block is highlighted for its language and carries Copy and Insert buttons", () => {
  const turn = newTurn(1, "Show me");
  say(turn, { type: "saying", text: "Here:\n\n```python\ndef greet():\n    return 'hi'\n```\n" });
  const html = renderTurn(turn);
  assert.match(html, /<pre class="code-block">/);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/, "python keywords are marked");
  assert.match(html, /<code class="hljs language-python">/);
  assert.match(html, /data-action="copy"[^>]*aria-label="Copy code"/);
  assert.match(html, /data-action="insert"[^>]*aria-label="Insert code at cursor"/);
  assert.match(html, /<span class="code-language">python<\/span>/);
});

test("a block in an unknown or no language is escaped, not highlighted, and markup in code stays text", () => {
  const turn = newTurn(2, "x");
  say(turn, { type: "saying", text: "```nosuchlang\n<script>alert(1)</script>\n```\n\n```\n<b>x</b>\n```" });
  const html = renderTurn(turn);
  assert.doesNotMatch(html, /<script>|<b>x/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.doesNotMatch(html, /language-nosuchlang|hljs-/);
  assert.equal((html.match(/data-action="copy"/g) ?? []).length, 2, "every block gets its buttons");
});

test("built-in tools read as sentences, running and done", () => {
  assert.equal(describeTool("read", { path: "src/app.py" }, { ok: true }), "Read src/app.py");
  assert.equal(describeTool("read", { path: "src/app.py" }, undefined), "Reading src/app.py");
  assert.equal(describeTool("write", { path: "new.txt", content: "x" }, { ok: true }), "Wrote new.txt");
  assert.equal(describeTool("edit", { path: "a.py", old: "a", new: "b" }, { ok: false, error: "no match" }), "Edited a.py");
  assert.equal(describeTool("execute", { command: "npm test" }, { ok: true }), "Ran npm test");
  assert.equal(describeTool("list", {}, { ok: true }), "Listed .");
  assert.equal(describeTool("grep", { pattern: "TODO", path: "src" }, undefined), "Searching for TODO in src");
});

test("MCP tools (server__tool) and unknown tools are rows of their name and arguments", () => {
  assert.equal(describeTool("github__create_issue", { title: "Bug" }, { ok: true }), 'github: create_issue title="Bug"');
  assert.equal(describeTool("docs__search", {}, undefined), "docs: search");
  assert.equal(describeTool("frobnicate", { level: 3 }, { ok: true }), "frobnicate level=3");
  // A built-in tool called without the argument its sentence needs falls back to the generic row.
  assert.equal(describeTool("read", { file: "x" }, { ok: true }), 'read file="x"');
});

test("a tool row shows the server's title, as the call runs and once it ran", () => {
  const turn = newTurn(5, "Test it");
  say(turn, { type: "doing", id: "t", name: "bash", arguments: { command: "npm test" }, title: "Run npm test" });
  const row = () => renderTurn(turn).match(/<span class="tool-label">(.*?)<\/span>/)?.[1];
  assert.equal(row(), "Run npm test");
  say(turn, { type: "result", id: "t", name: "bash", ok: true, title: "Ran npm test", summary: "exit 0, 1 line of output" });
  assert.equal(row(), "Ran npm test");
  assert.match(renderTurn(turn), /<span class="outcome"> — exit 0, 1 line of output<\/span>/);
});

test("context and compacted events show the server's text", () => {
  const turn = newTurn(6, "Go on");
  say(
    turn,
    { type: "context", tokens: 31000, budget: 32000, leftOut: 3, shortened: 0, text: "3 earlier turns left out to fit 32,000 tokens" },
    { type: "compacted", turns: 12, tokensBefore: 40000, tokensAfter: 3000, text: "12 turns compacted into a summary (40,000 → 3,000 tokens)" },
  );
  const notes = turn.items.filter((item) => item.kind === "note").map((item) => (item as { text: string }).text);
  assert.deepEqual(notes, ["3 earlier turns left out to fit 32,000 tokens", "12 turns compacted into a summary (40,000 → 3,000 tokens)"]);
});

test("an older server's tool row (no title) shows the summary that says more, and the error of a failed call", () => {
  const turn = newTurn(3, "Test it");
  say(
    turn,
    { type: "doing", id: "t", name: "execute", arguments: { command: "npm test" } },
    { type: "result", id: "t", name: "execute", ok: true, summary: "exit 1, 4 lines of output" },
    { type: "doing", id: "e", name: "edit", arguments: { path: "a.py", old: "x", new: "y" } },
    { type: "result", id: "e", name: "edit", ok: true, summary: "edited" },
    { type: "doing", id: "m", name: "github__get", arguments: { id: 7 } },
    { type: "result", id: "m", name: "github__get", ok: false, error: "HTTP 404" },
  );
  const rows = [...renderTurn(turn).matchAll(/<summary[^>]*>(.*?)<\/summary>/g)].map((match) => match[1].replace(/<[^>]+>/g, "").trim());
  assert.deepEqual(rows, ["Ran npm test — exit 1, 4 lines of output", "Edited a.py", "github: get id=7 — HTTP 404"]);
  assert.match(renderTurn(turn), /class="tool failed" data-key="3-2" data-tool="github__get"/);
});

test("an older server's context and compacted events (no text) are one dim line; nothing left out is no line", () => {
  const turn = newTurn(4, "Go on");
  say(
    turn,
    { type: "context", tokens: 31000, budget: 32000, leftOut: 3, shortened: 0 },
    { type: "context", tokens: 100, budget: 8000, leftOut: 1, shortened: 2 },
    { type: "context", tokens: 100, budget: 8000, leftOut: 0, shortened: 0 },
    { type: "compacted", turns: 12, tokensBefore: 40000, tokensAfter: 3000 },
    { type: "compacted", turns: 1, tokensBefore: 10, tokensAfter: 5 },
  );
  const notes = turn.items.filter((item) => item.kind === "note").map((item) => (item as { text: string }).text);
  assert.deepEqual(notes, [
    "3 earlier turns left out to fit 32,000 tokens",
    "1 earlier turn left out and 2 tool results shortened to fit 8,000 tokens",
    "12 turns compacted into a summary",
    "1 turn compacted into a summary",
  ]);
  assert.match(renderTurn(turn), /<div class="note">3 earlier turns left out to fit 32,000 tokens<\/div>/);
});

test("a stored conversation's compaction, reset and rewind are notes in the server's words; an entry without words is skipped", () => {
  const transcript = toTranscriptResult({
    id: "c1",
    title: "t",
    entries: [
      { kind: "compaction", turns: 5, summary: "s", text: "5 turns compacted into a summary, said by the server" },
      { kind: "reset", at: "", text: "the conversation started over here, said by the server" },
      { kind: "rewind", checkpoint: 3, text: "rewound to before turn 3, said by the server" },
      { kind: "bookmark", label: "a newer server's entry without words" },
      { kind: "reset", text: "" },
    ],
  });
  const turns = turnsFromTranscript(transcript, counter());
  assert.deepEqual(
    turns.map((turn) => [turn.prompt, turn.status, turn.items]),
    [
      ["", "done", [{ kind: "note", text: "5 turns compacted into a summary, said by the server" }]],
      ["", "done", [{ kind: "note", text: "the conversation started over here, said by the server" }]],
      ["", "done", [{ kind: "note", text: "rewound to before turn 3, said by the server" }]],
    ],
  );
  assert.match(renderTurn(turns[1]), /<div class="note">the conversation started over here, said by the server<\/div>/);
});

test("a stored conversation becomes turns: tools, reply, cancelled, error, compaction", () => {
  const transcript = toTranscriptResult({
    id: "c1",
    title: "Rename the greeting",
    entries: [
      { kind: "compaction", turns: 5, summary: "earlier work", at: "2026-01-01T00:00:00Z" },
      {
        kind: "turn",
        prompt: "Rename the greeting\n\nFile: hello.txt",
        reply: "Done: **hello.txt** is updated.",
        provider: "scripted",
        model: null,
        started: "",
        ended: "",
        cancelled: false,
        error: null,
        tools: [{ id: "g", name: "edit", arguments: { path: "hello.txt" }, ok: true, summary: "edited", error: null }],
      },
      { kind: "turn", prompt: "Tell me slowly", reply: "word0 word1", provider: "scripted", model: "m", cancelled: true, error: null, tools: [], text: "cancelled — said by the server" },
      { kind: "turn", prompt: "Fix the problems reported here:\n- line 3: Expected comma\n\nChange the file with the edit tool.\n\nFile: config.json (lines 1-4)\n```\n{}\n```", reply: "Error: boom", provider: "openai", model: null, cancelled: false, error: "boom", tools: [] },
      { kind: "mystery" },
      { kind: "turn" },
      "junk",
    ],
  });
  assert.equal(transcript.title, "Rename the greeting");
  assert.equal(transcript.entries.length, 4, "entries of unknown kinds or without a prompt are skipped");
  const turns = turnsFromTranscript(transcript, counter());
  assert.deepEqual(turns.map((turn) => [turn.id, turn.status]), [[1, "done"], [2, "done"], [3, "cancelled"], [4, "error"]]);
  // an older server's compaction entry, without its words: worded here
  assert.match(renderTurn(turns[0]), /<section class="compaction"[^>]*><div class="note">5 turns compacted into a summary<\/div>/);
  const done = renderTurn(turns[1]);
  assert.match(done, /Edited hello.txt/);
  assert.match(done, /<strong>hello.txt<\/strong>/);
  assert.match(done, /done — scripted/);
  assert.match(renderTurn(turns[2]), /<footer class="status cancelled">cancelled — said by the server<\/footer>/, "the stored turn's footer, as served");
  assert.match(renderTurn(turns[3]), /<div class="error">Error: boom<\/div>/);
  assert.deepEqual([turns[1].prompt, turns[1].where], ["Rename the greeting", "hello.txt"], "the heading is the question, the file its place");
  assert.deepEqual([turns[3].prompt, turns[3].where], ["Fix the problems reported here:\n- line 3: Expected comma", "config.json (lines 1-4)"]);
  assert.deepEqual([turns[2].prompt, turns[2].where], ["Tell me slowly", undefined]);
  assert.doesNotMatch(renderTurn(turns[3]), /class="saying"/, "the error reply is not shown twice");
  assert.deepEqual(toTranscriptResult("nope"), { id: "", title: "", entries: [] });
});

test("the conversation list keeps the server's order and survives odd rows", () => {
  const list = toConversations([
    { id: "b", title: "Newest", created: "", updated: "2026-01-02T00:00:00Z", turns: 3, provider: "anthropic", model: "claude" },
    { id: "a", title: "", turns: "many" },
    7,
  ]);
  assert.deepEqual(list, [
    { id: "b", title: "Newest", updated: "2026-01-02T00:00:00Z", turns: 3, provider: "anthropic", model: "claude" },
    { id: "a", title: "(untitled)", updated: "", turns: 0, provider: null, model: null },
  ]);
  assert.deepEqual(toConversations({ id: "x" }), []);
  assert.equal(conversationTitle("Greet elelem instead of the world File: hello.txt"), "Greet elelem instead of the world");
  assert.equal(conversationTitle("Fix the problems reported here: - line 3: Expected comma Change the file… File: config.json (lines 1-4) ```"), "Fix the problems reported here: - line 3: Expected comma Change the file…");
  assert.equal(conversationTitle("Why is the File: header odd?"), "Why is the File: header odd?");
  assert.equal(conversationTitle("Explain Buffer: untitled:Untitled-1"), "Explain Buffer: untitled:Untitled-1", "no path, kept");
  assert.equal(conversationTitle("Explain"), "Explain");
});

test("a turn lists its changed files with line counts; undo is offered once it ended, and only once", () => {
  const turn = newTurn(5, "Edit");
  turn.edits = [
    { uri: "file:///w/hello.txt", path: "hello.txt", added: 1, removed: 1 },
    { uri: 'file:///w/"odd".txt', path: '"odd".txt', added: 3, removed: 0 },
  ];
  assert.doesNotMatch(renderTurn(turn), /data-action="undo"/, "no undo while the turn still edits");
  turn.status = "done";
  const html = renderTurn(turn);
  assert.match(html, /2 files changed/);
  assert.match(html, /data-action="diff" data-turn="5" data-uri="file:\/\/\/w\/hello.txt"[^>]*>hello.txt<\/button> <span class="added"[^>]*>\+1<\/span> <span class="removed"[^>]*>−1<\/span>/);
  assert.match(html, /data-uri="file:\/\/\/w\/&quot;odd&quot;.txt"/, "a path cannot break out of its attribute");
  assert.match(html, /data-action="undo" data-turn="5"/);
  turn.editsUndone = true;
  assert.doesNotMatch(renderTurn(turn), /data-action="undo"/);
  assert.match(renderTurn(turn), /Edits undone/);
});

test("line counts: unchanged, one line changed, a new file, a line added at the end", () => {
  assert.deepEqual(countLineChanges("a\nb\n", "a\nb\n"), { added: 0, removed: 0 });
  assert.deepEqual(countLineChanges("Hello, world!\nbye\n", "Hello, elelem!\nbye\n"), { added: 1, removed: 1 });
  assert.deepEqual(countLineChanges("", "one\ntwo\nthree\n"), { added: 3, removed: 0 });
  assert.deepEqual(countLineChanges("a\n", "a\nb\n"), { added: 1, removed: 0 });
  assert.deepEqual(countLineChanges("a\nb\nc\n", ""), { added: 0, removed: 3 });
});

test("↑ recalls earlier prompts newest first, ↓ comes back to the draft", () => {
  const history = new PromptHistory(["first"]);
  history.add("second");
  history.add("second");
  assert.deepEqual(history.entries, ["first", "second"], "the same prompt twice in a row is kept once");
  assert.equal(history.previous("my draft"), "second");
  assert.equal(history.previous("second"), "first");
  assert.equal(history.previous("first"), undefined, "nothing before the oldest");
  assert.equal(history.next(), "second");
  assert.equal(history.next(), "my draft");
  assert.equal(history.next(), undefined, "not browsing: ↓ is the textarea's own");
  const empty = new PromptHistory();
  assert.equal(empty.previous(""), undefined);
  const long = new PromptHistory();
  for (let index = 0; index < 60; index++) {
    long.add(`p${index}`);
  }
  assert.equal(long.entries.length, 50);
  assert.equal(long.entries[0], "p10");
});

test("#file queries are found at the caret, not inside words, and leave the text when picked", () => {
  assert.deepEqual(fileQueryAt("look at #src/ap", 15), { start: 8, query: "src/ap" });
  assert.deepEqual(fileQueryAt("#", 1), { start: 0, query: "" });
  assert.equal(fileQueryAt("issue#12", 8), undefined);
  assert.equal(fileQueryAt("look at #src later", 18), undefined, "the caret is past the query");
  assert.deepEqual(fileQueryAt("look at #src later", 12), { start: 8, query: "src" });
  assert.equal(fileQueryAt("a #b c", 6), undefined);
  const query = fileQueryAt("fix #app and more", 8)!;
  assert.deepEqual(withoutQuery("fix #app and more", query, 8), { text: "fix and more", caret: 4 });
});

test("files attached with #file are named after the question, once each", () => {
  assert.equal(withAttachedFiles("Explain", []), "Explain");
  assert.equal(withAttachedFiles("Explain", ["a.py"]), "Explain\n\nAlso look at this file: `a.py`");
  assert.equal(withAttachedFiles("Explain", ["a.py", "b/c.ts", "a.py", ""]), "Explain\n\nAlso look at these files: `a.py`, `b/c.ts`");
  assert.equal(withAttachedFiles("x", ["we`ird.py"]), "x\n\nAlso look at this file: `weird.py`");
});

test("the header's size line comes from elelem.context, and says nothing without a budget", () => {
  assert.equal(describeUsage(toContextUsage({ messages: [], tokens: 1234, budget: 32000 })), "≈1,234 of 32,000 tokens");
  assert.equal(describeUsage(toContextUsage({ tokens: 0, budget: 8000 })), "≈0 of 8,000 tokens");
  assert.equal(describeUsage(toContextUsage({ messages: [] })), "", "a server without the estimate");
  assert.equal(describeUsage(toContextUsage({ tokens: 5, budget: 0 })), "");
  assert.equal(describeUsage(toContextUsage({ tokens: "many", budget: 100 })), "≈0 of 100 tokens");
  assert.equal(describeUsage(toContextUsage(null)), "");
});

test("a permission request never takes the focus onto Allow, nor from someone typing; Escape denies", () => {
  assert.equal(requestFocus("choice", true), "none", "a Space or Enter typed into the input must not answer it");
  assert.equal(requestFocus("text", true), "none", "the next prompt must not land in the human provider's reply");
  assert.equal(requestFocus("choice", false), "request", "the request itself, not its first button (Allow once)");
  assert.equal(requestFocus("text", false), "reply");
  assert.equal(escapeAnswer(["Allow once", "Allow for this session", "Deny"]), "Deny");
  assert.equal(escapeAnswer(["Yes", "No"]), null, "without a Deny, Escape leaves it unanswered (a refusal)");
});

test("a command's row opens to the end of what it printed, as text", () => {
  const turn = newTurn(9, "Run it");
  say(
    turn,
    { type: "doing", id: "c1", name: "execute", arguments: { command: "npm test" } },
    { type: "result", id: "c1", name: "execute", ok: true, summary: "exit 1, 2 lines of output", output: "<b>FAIL</b> app.test.js\n1 failed\n" },
  );
  const html = renderTurn(turn);
  assert.match(html, /Ran npm test<\/span><span class="outcome"> — exit 1, 2 lines of output/);
  assert.match(html, /<pre class="tool-output" aria-label="Output">&lt;b&gt;FAIL&lt;\/b&gt; app.test.js\n1 failed\n<\/pre>/);
  assert.doesNotMatch(html, /<b>FAIL/);
  assert.match(
    html,
    /<summary aria-label="Ran npm test — exit 1, 2 lines of output, done; details"><span class="chevron codicon codicon-chevron-right" aria-hidden="true">/,
    "the focusable row says what it is and that it opens",
  );
  say(turn, { type: "doing", id: "c2", name: "read", arguments: { path: "a.py" } }, { type: "result", id: "c2", name: "read", ok: true, summary: "3 lines" });
  assert.equal((renderTurn(turn).match(/tool-output/g) ?? []).length, 1, "a call without output has no output block");
});

test("a pending request goes once its folder's turn ends (Stop), not when another folder's does", () => {
  const pending = new PendingRequests();
  const answers: Array<[string, string | null]> = [];
  pending.add(1, "file:///a", (answer) => answers.push(["a permission", answer]));
  pending.add(2, "file:///b", (answer) => answers.push(["b input", answer]));
  pending.add(3, undefined, (answer) => answers.push(["no turn", answer]));
  pending.endTurn("file:///a");
  assert.deepEqual(answers, [["a permission", null]]);
  pending.answer(1, "Allow once");
  assert.deepEqual(answers, [["a permission", null]], "a late click on a withdrawn request answers nothing");
  pending.answer(2, "hello");
  pending.answer(2, null);
  pending.endTurn("file:///b");
  assert.deepEqual(answers.slice(1), [["b input", "hello"]], "settled once, by the first answer");
  pending.answer(3, null);
  assert.deepEqual(answers.at(-1), ["no turn", null], "withdrawn by the server");
});

test("undoing a turn's edits puts files back, and names those changed since the turn before overwriting them", () => {
  const untouched = { uri: "file:///w/a.py", before: "a = 1\n", left: "a = 2\n", now: "a = 2\n" };
  const editedSince = { uri: "file:///w/b.py", before: "b\n", left: "b2\n", now: "b2 and the person's work\n" };
  const created = { uri: "file:///w/notes.txt", before: undefined, left: "notes\n", now: "notes\n" };
  const createdThenEdited = { uri: "file:///w/todo.txt", before: undefined, left: "todo\n", now: "todo\nmine\n" };
  const deletedSince = { uri: "file:///w/c.py", before: "c\n", left: "c2\n", now: undefined };
  assert.deepEqual(planUndo([untouched, created]), {
    steps: [{ uri: untouched.uri, restore: "a = 1\n" }, { uri: created.uri, delete: true }],
    changedSince: [],
  });
  const plan = planUndo([untouched, editedSince, createdThenEdited, deletedSince]);
  assert.deepEqual(plan.changedSince, [editedSince.uri, createdThenEdited.uri, deletedSince.uri], "asked about, not overwritten silently");
  assert.deepEqual(plan.steps.map((step) => ("delete" in step ? `delete ${step.uri}` : `restore ${step.uri}`)), [
    `restore ${untouched.uri}`,
    `restore ${editedSince.uri}`,
    `delete ${createdThenEdited.uri}`,
    `restore ${deletedSince.uri}`,
  ]);
  assert.deepEqual(planUndo([{ ...created, now: undefined }]).steps, [], "a created file already gone is left alone");
  assert.equal(asTheTurnLeftThem([untouched, created]), true, "Ctrl+Z of the undo: the edits can be undone again");
  assert.equal(asTheTurnLeftThem([untouched, { ...created, now: undefined }]), false);
});

test("a command the turn was stopped during no longer spins: it did not finish", () => {
  const turn = newTurn(10, "Run it");
  say(turn, { type: "doing", id: "c1", name: "execute", arguments: { command: "sleep 60" } });
  assert.match(renderTurn(turn), /class="tool running"[^]*codicon-loading[^]*Running sleep 60/);
  cancelTurn(turn);
  const html = renderTurn(turn);
  assert.match(html, /class="tool stopped"[^]*codicon-circle-slash[^]*Running sleep 60<\/span><span class="outcome"> — did not finish/);
  assert.doesNotMatch(html, /codicon-loading/);
});
