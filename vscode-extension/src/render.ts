/**
 * Renders transcript turns to the HTML the chat view shows: the reply as markdown (raw HTML in
 * it is escaped) with syntax-highlighted code blocks that carry Copy and Insert buttons, thinking
 * dimmed in a collapsible block, each tool call as a compact row (`Read src/app.py`,
 * `Ran npm test — exit 1, …`) that opens to its arguments and outcome, the files the turn
 * changed with their line counts, errors in their own block. The webview sanitises it again
 * before showing it. Pure: no vscode import.
 */

import hljs from "highlight.js/lib/common";
import MarkdownIt from "markdown-it";

import { renderChecked } from "./checked";
import { renderPlan } from "./plan";
import { FileChange, ToolOutcome, Turn, TurnItem } from "./transcript";

/** A fenced block: highlighted when its language is known, with its actions above the code. */
function codeBlock(code: string, language: string): string {
  const known = language && hljs.getLanguage(language) ? language : "";
  const body = known ? hljs.highlight(code, { language: known, ignoreIllegals: true }).value : escapeHtml(code);
  const label = known ? `<span class="code-language">${escapeHtml(known)}</span>` : "";
  return (
    `<pre class="code-block"><div class="code-actions">${label}` +
    `<button class="icon-button" data-action="copy" title="Copy" aria-label="Copy code"><span class="codicon codicon-copy"></span></button>` +
    `<button class="icon-button" data-action="insert" title="Insert at Cursor" aria-label="Insert code at cursor"><span class="codicon codicon-insert"></span></button>` +
    `</div><code class="hljs${known ? ` language-${escapeHtml(known)}` : ""}">${body}</code></pre>`
  );
}

const markdown: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: false,
  breaks: false,
  highlight: (code, language) => codeBlock(code, language.trim().split(/\s+/)[0]?.toLowerCase() ?? ""),
});

const ARGUMENT_PREVIEW_CHARS = 48;

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** One line naming a tool call's arguments, each value cut short: `path="a.py", old="x"`. */
export function briefArguments(args: Record<string, unknown>): string {
  return Object.entries(args)
    .map(([key, value]) => {
      let shown = JSON.stringify(value) ?? String(value);
      shown = shown.replace(/\\n/g, "⏎");
      if (shown.length > ARGUMENT_PREVIEW_CHARS) {
        shown = `${shown.slice(0, ARGUMENT_PREVIEW_CHARS - 1)}…`;
      }
      return `${key}=${shown}`;
    })
    .join(", ");
}

/** The value of `key` when it is a non-empty string. */
function stringArgument(args: Record<string, unknown>, key: string): string | undefined {
  const value = args[key];
  return typeof value === "string" && value ? value : undefined;
}

/** Labels of the built-in tools: [while running, once done], given the call's arguments. */
const TOOL_LABELS: Record<string, (args: Record<string, unknown>) => [string, string] | undefined> = {
  read: (args) => pathLabel(args, "Reading", "Read"),
  write: (args) => pathLabel(args, "Writing", "Wrote"),
  edit: (args) => pathLabel(args, "Editing", "Edited"),
  list: (args) => {
    const where = stringArgument(args, "path") ?? ".";
    return [`Listing ${where}`, `Listed ${where}`];
  },
  execute: (args) => {
    const command = stringArgument(args, "command");
    return command ? [`Running ${command}`, `Ran ${command}`] : undefined;
  },
  grep: (args) => {
    const pattern = stringArgument(args, "pattern");
    const where = stringArgument(args, "path");
    const what = pattern && `${pattern}${where ? ` in ${where}` : ""}`;
    return what ? [`Searching for ${what}`, `Searched for ${what}`] : undefined;
  },
};

/** The summaries that only repeat what the label says. */
const PLAIN_SUMMARIES = new Set(["edited", "done"]);

function pathLabel(args: Record<string, unknown>, running: string, done: string): [string, string] | undefined {
  const path = stringArgument(args, "path");
  return path ? [`${running} ${path}`, `${done} ${path}`] : undefined;
}

/**
 * The one-line label of a tool call: a sentence for a built-in tool, "server: tool" and its
 * arguments for an MCP tool (`server__tool`), the name and arguments for any other.
 */
export function describeTool(name: string, args: Record<string, unknown>, outcome: ToolOutcome | undefined): string {
  const known = TOOL_LABELS[name]?.(args);
  if (known) {
    return outcome ? known[1] : known[0];
  }
  const split = name.indexOf("__");
  const title = split > 0 ? `${name.slice(0, split)}: ${name.slice(split + 2)}` : name;
  const brief = briefArguments(args);
  return brief ? `${title} ${brief}` : title;
}

/** What follows the label: the error of a failed call, the summary of one that says more. */
function describeOutcome(outcome: ToolOutcome | undefined): string {
  if (!outcome) {
    return "";
  }
  if (!outcome.ok) {
    return outcome.error ?? "failed";
  }
  return outcome.summary && !PLAIN_SUMMARIES.has(outcome.summary) ? outcome.summary : "";
}

function renderItem(turn: Turn, item: TurnItem, index: number): string {
  const key = `${turn.id}-${index}`;
  switch (item.kind) {
    case "saying":
      return `<div class="saying">${markdown.render(item.text)}</div>`;
    case "thinking": {
      const streaming = turn.status === "running" && index === turn.items.length - 1;
      return (
        `<details class="thinking" data-key="${key}"${streaming ? " open" : ""}>` +
        `<summary>Thinking</summary><div class="thinking-text">${escapeHtml(item.text)}</div></details>`
      );
    }
    case "tool": {
      // A call the turn ended without (Stop, an error) is not running any more.
      const state = item.outcome ? (item.outcome.ok ? "ok" : "failed") : turn.status === "running" ? "running" : "stopped";
      const icon = {
        ok: "codicon-check",
        failed: "codicon-error",
        running: "codicon-loading codicon-modifier-spin",
        stopped: "codicon-circle-slash",
      }[state];
      const outcome = state === "stopped" ? "did not finish" : describeOutcome(item.outcome);
      // The server's words for the call (as it ran, once it ran); an older server's calls are worded here.
      const label = (item.outcome ? item.outcome.title : item.title) ?? describeTool(item.name, item.arguments, item.outcome);
      // What a screen reader says on the (focusable) row: the call, how it ended, and that it opens.
      const spoken = `${label}${outcome ? ` — ${outcome}` : ""}, ${{ ok: "done", failed: "failed", running: "running", stopped: "stopped" }[state]}; details`;
      const details = item.outcome
        ? `<div class="tool-outcome">${escapeHtml(item.outcome.ok ? item.outcome.summary ?? "ok" : item.outcome.error ?? "failed")}</div>` +
          (item.outcome.output ? `<pre class="tool-output" aria-label="Output">${escapeHtml(item.outcome.output)}</pre>` : "")
        : "";
      return (
        `<details class="tool ${state}" data-key="${key}" data-tool="${escapeHtml(item.name)}">` +
        `<summary aria-label="${escapeHtml(spoken)}"><span class="chevron codicon codicon-chevron-right" aria-hidden="true"></span>` +
        `<span class="icon codicon ${icon}" aria-hidden="true"></span> ` +
        `<span class="tool-label">${escapeHtml(label)}</span>` +
        (outcome ? `<span class="outcome"> — ${escapeHtml(outcome)}</span>` : "") +
        `</summary><pre class="tool-arguments">${escapeHtml(JSON.stringify(item.arguments, null, 2))}</pre>${details}</details>`
      );
    }
    case "error":
      return `<div class="error">${escapeHtml(item.text)}</div>`;
    case "note":
      return `<div class="note">${escapeHtml(item.text)}</div>`;
    case "checked":
      return renderChecked(item, key, escapeHtml);
    case "plan":
      return renderPlan(item, escapeHtml);
    case "usage":
      return `<div class="usage-row" aria-label="${escapeHtml(`This turn used ${item.text}`)}">${escapeHtml(item.text)}</div>`;
  }
}

function renderChange(turn: Turn, change: FileChange): string {
  return (
    `<li><button class="link" data-action="diff" data-turn="${turn.id}" data-uri="${escapeHtml(change.uri)}" ` +
    `title="Show what this turn changed in ${escapeHtml(change.path)}">${escapeHtml(change.path)}</button>` +
    ` <span class="added" aria-label="${change.added} lines added">+${change.added}</span>` +
    ` <span class="removed" aria-label="${change.removed} lines removed">−${change.removed}</span></li>`
  );
}

/** The files the turn changed, each opening its diff, and the buttons that put them back: "Undo this
 * turn's edits" (the edits it made through the editor) and, when the server kept the turn's
 * checkpoint, "Rewind to before this turn" (every file it and later turns changed, commands' too). */
function renderEdits(turn: Turn): string {
  const rewindable = turn.checkpoint !== undefined;
  if (!turn.edits?.length && !rewindable) {
    return "";
  }
  const count = turn.edits?.length ?? 0;
  const files = count === 1 ? "1 file changed" : count ? `${count} files changed` : "Files changed";
  const rewind = rewindable
    ? `<button class="secondary" data-action="rewind" data-turn="${turn.id}" title="Put back the files this turn and later turns changed, and optionally the conversation"><span class="codicon codicon-history"></span> Rewind to before this turn</button>`
    : "";
  const undoEdits = turn.edits?.length
    ? `<button class="secondary" data-action="undo" data-turn="${turn.id}"><span class="codicon codicon-discard"></span> Undo this turn's edits</button>`
    : "";
  const button = undoEdits + rewind;
  const undo = turn.editsUndone
    ? `<span class="undone">${escapeHtml(turn.rewound ?? "Edits undone")}</span>`
    : turn.status === "running"
      ? ""
      : button;
  return (
    `<div class="edits"><div class="edits-title">${files}</div>` +
    `<ul>${(turn.edits ?? []).map((change) => renderChange(turn, change)).join("")}</ul>${undo}</div>`
  );
}

/** The turn's status line: once it ended, the server's footer (`done — scripted · 2 steps`); while
 * it runs, or from an older server, worded here alike. */
export function describeStatus(turn: Turn): string {
  if (turn.footer && turn.status !== "running") {
    return turn.footer;
  }
  const about = [turn.provider, turn.model].filter(Boolean).join(" · ");
  const steps = turn.steps !== undefined ? `${turn.steps} step${turn.steps === 1 ? "" : "s"}` : "";
  const label = {
    running: "working…",
    done: "done",
    cancelled: "cancelled",
    error: "failed",
  }[turn.status];
  const details = [about, steps].filter(Boolean).join(" · ");
  return `${label}${details ? ` — ${details}` : ""}`;
}

function renderFooter(turn: Turn): string {
  return `<footer class="status ${turn.status}">${escapeHtml(describeStatus(turn))}</footer>`;
}

/** The HTML of one turn, replaced as a whole on every update. */
export function renderTurn(turn: Turn): string {
  const items = turn.items.map((item, index) => renderItem(turn, item, index)).join("");
  if (!turn.prompt) {
    // A stored compaction, reset or rewind: only its note.
    return `<section class="compaction" data-turn="${turn.id}">${items}</section>`;
  }
  const where = turn.where ? `<span class="where">${escapeHtml(turn.where)}</span>` : "";
  return (
    `<section class="turn ${turn.status}" data-turn="${turn.id}">` +
    `<header class="prompt">${escapeHtml(turn.prompt)}${where}</header>` +
    items +
    renderEdits(turn) +
    renderFooter(turn) +
    `</section>`
  );
}
