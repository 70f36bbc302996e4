/**
 * The transcript's model: each turn as the list of things that happened in it, built from the
 * `$/progress` values of the turn's token and the command's result, or from a stored
 * conversation (`elelem.transcript`). Streaming text arrives in arbitrary pieces, so a piece of
 * the same kind as the previous item extends it; a tool call's `result` event completes the call
 * with the same id; `context`/`compacted` events become a dim note; a `plan` event replaces the
 * turn's plan where it stands; the host's `usage` is a row. Pure: no vscode import.
 */

import { CheckedItem } from "./checked";
import { PlanItem } from "./plan";
import { AgentEvent, ContextUsage, ProgressValue, TranscriptResult, TurnResult } from "./protocol";
import { UsageItem } from "./usage";

export type TurnItem =
  | { kind: "saying" | "thinking"; text: string }
  | { kind: "tool"; id: string; name: string; arguments: Record<string, unknown>; title?: string; outcome?: ToolOutcome }
  | { kind: "error"; text: string }
  | { kind: "note"; text: string }
  | CheckedItem
  | PlanItem
  | UsageItem;

export interface ToolOutcome {
  ok: boolean;
  /** The call as the server words it once it ran. */
  title?: string;
  summary?: string;
  error?: string;
  /** The end of what a command printed (live turns only: stored ones keep no output). */
  output?: string;
}

/** A file the turn's edits changed, with its line counts against the text before the turn. */
export interface FileChange {
  /** The document URI, as VS Code spells it. */
  uri: string;
  /** The workspace-relative path shown. */
  path: string;
  added: number;
  removed: number;
}

export type TurnStatus = "running" | "done" | "cancelled" | "error";

export interface Turn {
  id: number;
  /** What was asked (or, for a code action, what was to be fixed). */
  prompt: string;
  /** Where it was asked: a file or folder name, for the heading. */
  where?: string;
  items: TurnItem[];
  status: TurnStatus;
  /** The status line's rolling tail of the reply, from the last report. */
  tail?: string;
  provider?: string;
  model?: string | null;
  steps?: number;
  /** The footer once the turn ended, in the server's words ("done — scripted · 2 steps"). */
  footer?: string;
  /** The files this turn's edits changed (observed by the extension as they were applied). */
  edits?: FileChange[];
  /** Set once "Undo this turn's edits" (or "Rewind to before this turn") restored them. */
  editsUndone?: boolean;
  /** The turn's checkpoint, when it changed files and the server keeps checkpoints: it can be rewound. */
  checkpoint?: number;
  /** What the rewind did ("Rewound, with the conversation"), once done. */
  rewound?: string;
}

/** "32,000" */
function figure(value: number): string {
  return value.toLocaleString("en-US");
}

function plural(value: number, one: string, many = `${one}s`): string {
  return `${figure(value)} ${value === 1 ? one : many}`;
}

/** The header's line on the conversation's size: "≈1,200 of 32,000 tokens". */
export function describeUsage(usage: ContextUsage | undefined): string {
  return usage ? `≈${figure(usage.tokens)} of ${figure(usage.budget)} tokens` : "";
}

/** An older server's compaction (an event or a stored entry), which came without its words. */
function compactionWords(turns: number): string {
  return `${plural(turns, "turn")} compacted into a summary`;
}

/** The dim line for a `context` or `compacted` event: the server's text, or (an older server's
 * event) the same words made here. */
export function describeContext(event: AgentEvent): string | undefined {
  if ((event.type === "compacted" || event.type === "context") && event.text) {
    return event.text;
  }
  if (event.type === "compacted") {
    return compactionWords(event.turns);
  }
  if (event.type !== "context") {
    return undefined;
  }
  const parts = [
    event.leftOut ? `${plural(event.leftOut, "earlier turn")} left out` : "",
    event.shortened ? `${plural(event.shortened, "tool result")} shortened` : "",
  ].filter(Boolean);
  return parts.length ? `${parts.join(" and ")} to fit ${figure(event.budget)} tokens` : undefined;
}

export function newTurn(id: number, prompt: string, where?: string): Turn {
  return { id, prompt, where, items: [], status: "running" };
}

/** Adds agent events to the turn, in order. */
export function applyEvents(turn: Turn, events: readonly AgentEvent[]): void {
  for (const event of events) {
    const last = turn.items[turn.items.length - 1];
    switch (event.type) {
      case "saying":
      case "thinking":
        if (last && last.kind === event.type) {
          last.text += event.text;
        } else {
          turn.items.push({ kind: event.type, text: event.text });
        }
        break;
      case "doing":
        turn.items.push({
          kind: "tool",
          id: event.id,
          name: event.name,
          arguments: event.arguments,
          ...(event.title ? { title: event.title } : {}),
        });
        break;
      case "result": {
        const call = findOpenCall(turn, event.id, event.name);
        const outcome: ToolOutcome = { ok: event.ok };
        if (event.title) {
          outcome.title = event.title;
        }
        if (event.summary) {
          outcome.summary = event.summary;
        }
        if (event.error) {
          outcome.error = event.error;
        }
        if (event.output) {
          outcome.output = event.output;
        }
        if (call) {
          call.outcome = outcome;
        } else {
          turn.items.push({ kind: "tool", id: event.id, name: event.name, arguments: {}, outcome });
        }
        break;
      }
      case "checked":
      case "usage":
        turn.items.push(event.item);
        break;
      case "plan": {
        const shown = turn.items.findIndex((item) => item.kind === "plan");
        if (shown === -1) {
          turn.items.push(event.item);
        } else {
          turn.items[shown] = event.item;
        }
        break;
      }
      case "context":
      case "compacted": {
        const note = describeContext(event);
        if (note) {
          turn.items.push({ kind: "note", text: note });
        }
        break;
      }
    }
  }
}

function findOpenCall(turn: Turn, id: string, name: string) {
  for (let index = turn.items.length - 1; index >= 0; index--) {
    const item = turn.items[index];
    if (item.kind === "tool" && !item.outcome && (item.id === id || (!id && item.name === name))) {
      return item;
    }
  }
  return undefined;
}

/** Applies one `$/progress` value of the turn's token. */
export function applyProgress(turn: Turn, value: ProgressValue): void {
  switch (value.kind) {
    case "begin":
      break;
    case "report":
      if (value.message !== undefined) {
        turn.tail = value.message;
      }
      applyEvents(turn, value.events);
      break;
    case "end":
      endTurn(turn, value.message);
      break;
  }
}

function endTurn(turn: Turn, message: string | undefined): void {
  if (turn.status !== "running") {
    return;
  }
  if (message === "cancelled") {
    turn.status = "cancelled";
  } else if (message && message.startsWith("Error")) {
    fail(turn, message);
  } else {
    turn.status = "done";
  }
}

/** Completes the turn with the command's result; the result wins over what progress said. */
export function finishTurn(turn: Turn, result: TurnResult): void {
  turn.provider = result.provider;
  turn.model = result.model;
  turn.steps = result.steps;
  turn.footer = result.text;
  if (typeof result.checkpoint === "number") {
    turn.checkpoint = result.checkpoint;
  }
  if (result.reply && !result.error && !turn.items.some((item) => item.kind === "saying")) {
    turn.items.push({ kind: "saying", text: result.reply });
  }
  if (result.cancelled) {
    turn.status = "cancelled";
  } else if (result.error) {
    fail(turn, result.error.startsWith("Error") ? result.error : `Error: ${result.error}`);
  } else if (turn.status === "running") {
    turn.status = "done";
  }
}

/** Ends the turn with an error (a failed request, a server that went away). */
export function failTurn(turn: Turn, message: string): void {
  fail(turn, message);
}

/** Marks the turn cancelled when the request was cancelled before any end arrived. */
export function cancelTurn(turn: Turn): void {
  if (turn.status === "running") {
    turn.status = "cancelled";
  }
}

function fail(turn: Turn, message: string): void {
  const already = turn.items.some((item) => item.kind === "error" && item.text === message);
  if (!already) {
    turn.items.push({ kind: "error", text: message });
  }
  turn.status = "error";
}

/**
 * A stored prompt as the heading and place a live turn shows: the server stores what the agent
 * was sent, the question followed by blank-line separated context (`File: hello.txt`, a fix's
 * instructions and code), so the heading is the first paragraph and the place the `File:` line
 * (`Buffer:` for an unsaved one).
 */
export function splitStoredPrompt(prompt: string): [string, string | undefined] {
  const [heading, ...rest] = prompt.split(/\n\s*\n/);
  const file = rest.join("\n").match(/^(?:File|Buffer): (.+)$/m)?.[1];
  return [heading.trim() || prompt.trim(), file];
}

/**
 * A conversation's title without the context the server appended to its first prompt: the
 * server's title is that prompt on one line (`Greet elelem File: hello.txt`); a `File:` that is
 * not followed by a path stays.
 */
export function conversationTitle(title: string): string {
  return splitStoredPrompt(title)[0].replace(/\s+(?:File|Buffer): \S*[./]\S*.*$/s, "") || title;
}

/**
 * The turns of a stored conversation, each numbered by `nextId`: a turn's tool calls (each step's
 * check after its last call), its plan as the turn left it, then its reply (a stored turn keeps no
 * order between them); a compaction, a reset or a rewind becomes a prompt-less note in the
 * server's words.
 */
export function turnsFromTranscript(transcript: TranscriptResult, nextId: () => number): Turn[] {
  const turns: Turn[] = [];
  for (const entry of transcript.entries) {
    const turn = entry.kind === "turn" ? newTurn(nextId(), ...splitStoredPrompt(entry.prompt)) : newTurn(nextId(), "");
    if (entry.kind !== "turn") {
      turn.items.push({ kind: "note", text: entry.text ?? (entry.kind === "compaction" ? compactionWords(entry.turns) : "") });
      turn.status = "done";
      turns.push(turn);
      continue;
    }
    for (const tool of entry.tools) {
      const outcome: ToolOutcome = { ok: tool.ok };
      if (tool.outcomeTitle ?? tool.title) {
        outcome.title = tool.outcomeTitle ?? tool.title;
      }
      if (tool.summary) {
        outcome.summary = tool.summary;
      }
      if (tool.error) {
        outcome.error = tool.error;
      }
      turn.items.push({ kind: "tool", id: tool.id, name: tool.name, arguments: tool.arguments, ...(tool.title ? { title: tool.title } : {}), outcome });
      if (tool.checked) {
        turn.items.push(tool.checked);
      }
    }
    if (entry.plan) {
      turn.items.push(entry.plan);
    }
    turn.provider = entry.provider || undefined;
    turn.model = entry.model;
    turn.footer = entry.text;
    if (entry.reply && !entry.error) {
      turn.items.push({ kind: "saying", text: entry.reply });
    }
    if (entry.usage) {
      turn.items.push(entry.usage);
    }
    if (entry.error) {
      fail(turn, entry.error.startsWith("Error") ? entry.error : `Error: ${entry.error}`);
    } else {
      turn.status = entry.cancelled ? "cancelled" : "done";
    }
    turns.push(turn);
  }
  return turns;
}
