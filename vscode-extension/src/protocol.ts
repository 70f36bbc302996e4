/**
 * The elelem-lsp wire contract as the extension sees it: the shapes of the `elelem.*` command
 * results, the `$/progress` values of a turn and the agent events inside them, with checks that
 * turn untrusted JSON into those shapes. Pure: no vscode import, so unit tests can load it.
 */

/** A piece of text the model said (`saying`) or thought (`thinking`). */
export interface TextEvent {
  type: "saying" | "thinking";
  text: string;
}

/** A tool call the model asked for. */
export interface DoingEvent {
  type: "doing";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** How a tool call ended, reported after it ran. */
export interface ResultEvent {
  type: "result";
  id: string;
  name: string;
  ok: boolean;
  error?: string;
}

export type AgentEvent = TextEvent | DoingEvent | ResultEvent;

/** The result of `elelem.ask` and `elelem.fix`. */
export interface TurnResult {
  reply: string;
  provider?: string;
  model?: string | null;
  steps?: number;
  cancelled?: boolean;
  error?: string | null;
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
      return {
        type: "doing",
        id: String(value.id ?? ""),
        name: String(value.name ?? "?"),
        arguments: isObject(value.arguments) ? value.arguments : {},
      };
    case "result": {
      const result: ResultEvent = {
        type: "result",
        id: String(value.id ?? ""),
        name: String(value.name ?? "?"),
        ok: value.ok === true,
      };
      if (typeof value.error === "string" && value.error) {
        result.error = value.error;
      }
      return result;
    }
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
