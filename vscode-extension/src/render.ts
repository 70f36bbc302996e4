/**
 * Renders transcript turns to the HTML the transcript webview shows: the reply as markdown
 * (raw HTML in it is escaped), thinking dimmed in a collapsible block, each tool call with its
 * arguments and outcome, errors in their own block. Pure: no vscode import.
 */

import MarkdownIt from "markdown-it";

import { Turn, TurnItem } from "./transcript";

const markdown = new MarkdownIt({ html: false, linkify: false, breaks: false });

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
      const state = item.outcome ? (item.outcome.ok ? "ok" : "failed") : "running";
      const icon = { ok: "✓", failed: "✗", running: "…" }[state];
      const outcome = item.outcome
        ? item.outcome.ok
          ? "ok"
          : escapeHtml(item.outcome.error ?? "failed")
        : "running";
      return (
        `<details class="tool ${state}" data-key="${key}">` +
        `<summary><span class="icon">${icon}</span> <code class="tool-name">${escapeHtml(item.name)}</code>` +
        `(<span class="tool-args">${escapeHtml(briefArguments(item.arguments))}</span>)` +
        ` <span class="outcome">${outcome}</span></summary>` +
        `<pre class="tool-arguments">${escapeHtml(JSON.stringify(item.arguments, null, 2))}</pre></details>`
      );
    }
    case "error":
      return `<div class="error">${escapeHtml(item.text)}</div>`;
  }
}

function renderFooter(turn: Turn): string {
  const about = [turn.provider, turn.model].filter(Boolean).join(" · ");
  const steps = turn.steps !== undefined ? `${turn.steps} step${turn.steps === 1 ? "" : "s"}` : "";
  const label = {
    running: "working…",
    done: "done",
    cancelled: "cancelled",
    error: "failed",
  }[turn.status];
  const details = [about, steps].filter(Boolean).join(" · ");
  return `<footer class="status ${turn.status}">${label}${details ? ` — ${escapeHtml(details)}` : ""}</footer>`;
}

/** The HTML of one turn, replaced as a whole on every update. */
export function renderTurn(turn: Turn): string {
  const where = turn.where ? `<span class="where">${escapeHtml(turn.where)}</span>` : "";
  const items = turn.items.map((item, index) => renderItem(turn, item, index)).join("");
  return (
    `<section class="turn ${turn.status}" data-turn="${turn.id}">` +
    `<header class="prompt">${escapeHtml(turn.prompt)}${where}</header>` +
    items +
    renderFooter(turn) +
    `</section>`
  );
}
