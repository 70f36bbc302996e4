/**
 * The elelem-lsp wire contract as the extension sees it: the shapes of the `elelem.*` command
 * results, the `$/progress` values of a turn and the agent events inside them, with checks that
 * turn untrusted JSON into those shapes. Pure: no vscode import, so unit tests can load it.
 */

import { CheckedEvent, CheckedItem, toCheckedEvent } from "./checked";
import { PlanEvent, PlanItem, toPlanEvent } from "./plan";
import { toUsageEvent, UsageEvent, UsageItem } from "./usage";

/** A piece of text the model said (`saying`) or thought (`thinking`). */
export interface TextEvent {
  type: "saying" | "thinking";
  text: string;
}

/** A tool call the model asked for; `title` is the call as the server words it ("Run npm test"). */
export interface DoingEvent {
  type: "doing";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  title?: string;
}

/**
 * How a tool call ended, reported after it ran: a short summary on success, the error otherwise,
 * and for a command the end of what it printed.
 */
export interface ResultEvent {
  type: "result";
  id: string;
  name: string;
  ok: boolean;
  /** The call as the server words it once it ran ("Ran npm test"); absent from an older server. */
  title?: string;
  summary?: string;
  error?: string;
  output?: string;
}

/** Sent before a turn's first fetch when earlier turns were left out or tool results shortened. */
export interface ContextEvent {
  type: "context";
  tokens: number;
  budget: number;
  leftOut: number;
  shortened: number;
  /** The line to show ("3 earlier turns left out to fit 32,000 tokens"); absent from an older server. */
  text?: string;
}

/** Sent when older turns were replaced by a summary. */
export interface CompactedEvent {
  type: "compacted";
  turns: number;
  tokensBefore: number;
  tokensAfter: number;
  /** The line to show ("12 turns compacted into a summary (…)"); absent from an older server. */
  text?: string;
}

export type AgentEvent = TextEvent | DoingEvent | ResultEvent | ContextEvent | CompactedEvent | CheckedEvent | PlanEvent | UsageEvent;

/** The result of `elelem.ask` and `elelem.fix`. */
export interface TurnResult {
  reply: string;
  provider?: string;
  model?: string | null;
  steps?: number;
  cancelled?: boolean;
  error?: string | null;
  /** The turn's checkpoint number when it changed files (`elelem.rewind` takes it); null or absent otherwise. */
  checkpoint?: number | null;
  /** The turn's footer in the server's words ("done — scripted · 2 steps"); absent from an older server. */
  text?: string;
}

/** One tool call of a stored turn. */
export interface TranscriptTool {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /** The call and its outcome as the server worded them live ("Run npm test", "Ran npm test"). */
  title?: string;
  outcomeTitle?: string;
  ok: boolean;
  summary: string | null;
  error: string | null;
  /** The check after the step this call ended (the `checked` event as it came live). */
  checked?: CheckedItem;
}

/** One entry of a stored conversation: a turn, or older turns replaced by a summary. */
export type TranscriptEntry =
  | {
      kind: "turn";
      prompt: string;
      reply: string;
      provider: string;
      model: string | null;
      cancelled: boolean;
      error: string | null;
      tools: TranscriptTool[];
      /** The plan as the turn left it. */
      plan?: PlanItem;
      /** The turn's usage row, as the server words it (only when a provider counted tokens). */
      usage?: UsageItem;
      /** The turn's footer in the server's words ("done — scripted · 2 steps"); absent from an older server. */
      text?: string;
    }
  | { kind: "compaction"; turns: number; summary: string; text?: string }
  /** Any other entry the server words (a reset, a rewind, a kind this client does not know): one dim line. */
  | { kind: "note"; text: string };

/** The result of `elelem.transcript` and `elelem.resume`. */
export interface TranscriptResult {
  id: string;
  title: string;
  entries: TranscriptEntry[];
}

/** One row of `elelem.conversations`. */
export interface ConversationSummary {
  id: string;
  title: string;
  updated: string;
  turns: number;
  provider: string | null;
  model: string | null;
}

/** What `elelem.context` says of the conversation's size against the folder's budget. */
export interface ContextUsage {
  tokens: number;
  budget: number;
}

/** The result of `elelem.providers`. */
export interface ProvidersResult {
  provider: string | null;
  model: string | null;
  available: string[];
}

/** A `$/progress` value on a turn's token. */
export type ProgressValue =
  | { kind: "begin"; title?: string; message?: string }
  | { kind: "report"; message?: string; events: AgentEvent[] }
  | { kind: "end"; message?: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value ? value : undefined;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** `event` with the words the server gave it (`title` or `text`), when it gave them. */
function withWords<T extends AgentEvent>(event: T, key: "title" | "text", value: Record<string, unknown>): T {
  const words = text(value[key]);
  return words ? { ...event, [key]: words } : event;
}

/** The agent event in `value`, or undefined for anything this extension does not render. */
export function toAgentEvent(value: unknown): AgentEvent | undefined {
  if (!isObject(value)) {
    return undefined;
  }
  switch (value.type) {
    case "saying":
    case "thinking":
      return typeof value.text === "string" ? { type: value.type, text: value.text } : undefined;
    case "doing":
      return withWords<DoingEvent>(
        {
          type: "doing",
          id: String(value.id ?? ""),
          name: String(value.name ?? "?"),
          arguments: isObject(value.arguments) ? value.arguments : {},
        },
        "title",
        value,
      );
    case "result": {
      const result: ResultEvent = {
        type: "result",
        id: String(value.id ?? ""),
        name: String(value.name ?? "?"),
        ok: value.ok === true,
      };
      const title = text(value.title);
      if (title) {
        result.title = title;
      }
      const summary = text(value.summary);
      const error = text(value.error);
      const output = text(value.output);
      if (summary) {
        result.summary = summary;
      }
      if (error) {
        result.error = error;
      }
      if (output) {
        result.output = output;
      }
      return result;
    }
    case "context":
      return withWords<ContextEvent>(
        {
          type: "context",
          tokens: count(value.tokens),
          budget: count(value.budget),
          leftOut: count(value.leftOut),
          shortened: count(value.shortened),
        },
        "text",
        value,
      );
    case "compacted":
      return withWords<CompactedEvent>(
        {
          type: "compacted",
          turns: count(value.turns),
          tokensBefore: count(value.tokensBefore),
          tokensAfter: count(value.tokensAfter),
        },
        "text",
        value,
      );
    case "checked":
      return toCheckedEvent(value);
    case "plan":
      return toPlanEvent(value);
    case "usage":
      return toUsageEvent(value);
    default:
      return undefined;
  }
}

/** The progress value in `value`, or undefined when it is not one of begin/report/end. */
export function toProgressValue(value: unknown): ProgressValue | undefined {
  if (!isObject(value)) {
    return undefined;
  }
  const message = typeof value.message === "string" ? value.message : undefined;
  switch (value.kind) {
    case "begin":
      return { kind: "begin", title: typeof value.title === "string" ? value.title : undefined, message };
    case "report": {
      const raw = Array.isArray(value.events) ? value.events : [];
      const events = raw.map(toAgentEvent).filter((event): event is AgentEvent => event !== undefined);
      return { kind: "report", message, events };
    }
    case "end":
      return { kind: "end", message };
    default:
      return undefined;
  }
}

/** The turn result in `value`; a missing or odd reply becomes "". */
export function toTurnResult(value: unknown): TurnResult {
  if (!isObject(value)) {
    return { reply: "" };
  }
  return {
    reply: typeof value.reply === "string" ? value.reply : "",
    provider: typeof value.provider === "string" ? value.provider : undefined,
    model: typeof value.model === "string" ? value.model : null,
    steps: typeof value.steps === "number" ? value.steps : undefined,
    cancelled: value.cancelled === true,
    error: typeof value.error === "string" && value.error ? value.error : null,
    checkpoint: typeof value.checkpoint === "number" && Number.isInteger(value.checkpoint) ? value.checkpoint : null,
    ...(text(value.text) ? { text: text(value.text) } : {}),
  };
}

/** The providers result in `value`. */
export function toProvidersResult(value: unknown): ProvidersResult {
  if (!isObject(value)) {
    return { provider: null, model: null, available: [] };
  }
  return {
    provider: typeof value.provider === "string" ? value.provider : null,
    model: typeof value.model === "string" ? value.model : null,
    available: Array.isArray(value.available) ? value.available.map(String) : [],
  };
}

function toTranscriptEntry(value: unknown): TranscriptEntry | undefined {
  if (!isObject(value)) {
    return undefined;
  }
  const words = text(value.text);
  if (value.kind === "compaction") {
    const summary = typeof value.summary === "string" ? value.summary : "";
    return { kind: "compaction", turns: count(value.turns), summary, ...(words ? { text: words } : {}) };
  }
  if (value.kind !== "turn") {
    return words ? { kind: "note", text: words } : undefined;
  }
  if (typeof value.prompt !== "string") {
    return undefined;
  }
  const usage = isObject(value.usage) ? toUsageEvent(value.usage) : undefined;
  const tools = (Array.isArray(value.tools) ? value.tools : []).filter(isObject).map(
    (tool): TranscriptTool => ({
      id: String(tool.id ?? ""),
      name: String(tool.name ?? "?"),
      arguments: isObject(tool.arguments) ? tool.arguments : {},
      ...(text(tool.title) ? { title: text(tool.title) } : {}),
      ...(text(tool.outcomeTitle) ? { outcomeTitle: text(tool.outcomeTitle) } : {}),
      ok: tool.ok === true,
      summary: text(tool.summary) ?? null,
      error: text(tool.error) ?? null,
      ...(isObject(tool.checked) ? { checked: toCheckedEvent(tool.checked).item } : {}),
    }),
  );
  return {
    kind: "turn",
    prompt: value.prompt,
    reply: typeof value.reply === "string" ? value.reply : "",
    provider: typeof value.provider === "string" ? value.provider : "",
    model: text(value.model) ?? null,
    cancelled: value.cancelled === true,
    error: text(value.error) ?? null,
    tools,
    ...(Array.isArray(value.plan) ? { plan: toPlanEvent({ entries: value.plan }).item } : {}),
    ...(usage ? { usage: usage.item } : {}),
    ...(words ? { text: words } : {}),
  };
}

/** The transcript in `value`; entries of a kind this extension does not know are skipped. */
export function toTranscriptResult(value: unknown): TranscriptResult {
  if (!isObject(value)) {
    return { id: "", title: "", entries: [] };
  }
  const entries = (Array.isArray(value.entries) ? value.entries : [])
    .map(toTranscriptEntry)
    .filter((entry): entry is TranscriptEntry => entry !== undefined);
  return { id: String(value.id ?? ""), title: typeof value.title === "string" ? value.title : "", entries };
}

/** The conversations in `value`, as the server listed them (newest first). */
export function toConversations(value: unknown): ConversationSummary[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter(isObject).map((row) => ({
    id: String(row.id ?? ""),
    title: typeof row.title === "string" && row.title ? row.title : "(untitled)",
    updated: typeof row.updated === "string" ? row.updated : "",
    turns: count(row.turns),
    provider: text(row.provider) ?? null,
    model: text(row.model) ?? null,
  }));
}

/** The token estimate and budget in an `elelem.context` result; undefined when it has no budget. */
export function toContextUsage(value: unknown): ContextUsage | undefined {
  if (!isObject(value) || !(count(value.budget) > 0)) {
    return undefined;
  }
  return { tokens: count(value.tokens), budget: count(value.budget) };
}
