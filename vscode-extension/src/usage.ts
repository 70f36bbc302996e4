/**
 * The host's `usage` event at a turn's end (its tokens, the conversation's so far, the context and
 * the cost where the model's price is known) and the same figures in an `elelem.context` result:
 * the turn's `text` is a small row at the end of the turn, the conversation's `conversationText`
 * is the chat view's header. A provider's own `usage` event (no `text`) is not shown. Pure: no vscode import.
 */

export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  conversationInputTokens: number;
  conversationOutputTokens: number;
  contextTokens: number;
  contextWindow?: number;
  cost?: number;
  currency?: string;
  /** The turn's figures in one line, as the server words them ("1,234 in · 567 out · $0.01"). */
  text: string;
  /** The conversation's figures and the context in one line, as the server words them
   * ("12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12"); absent from an older server. */
  conversationText?: string;
}

/** The transcript item: the turn's usage row. */
export interface UsageItem {
  kind: "usage";
  text: string;
  usage: TurnUsage;
}

export interface UsageEvent {
  type: "usage";
  item: UsageItem;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** The figures in `value` (a `usage` event or `elelem.context`'s `usage`); undefined without the host's `text`. */
export function toTurnUsage(value: unknown): TurnUsage | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const raw = value as Record<string, unknown>;
  if (typeof raw.text !== "string") {
    return undefined;
  }
  const usage: TurnUsage = {
    inputTokens: count(raw.inputTokens),
    outputTokens: count(raw.outputTokens),
    conversationInputTokens: count(raw.conversationInputTokens),
    conversationOutputTokens: count(raw.conversationOutputTokens),
    contextTokens: count(raw.contextTokens),
    text: raw.text,
  };
  if (count(raw.contextWindow) > 0) {
    usage.contextWindow = count(raw.contextWindow);
  }
  if (typeof raw.conversationText === "string" && raw.conversationText) {
    usage.conversationText = raw.conversationText;
  }
  if (typeof raw.cost === "number" && Number.isFinite(raw.cost)) {
    usage.cost = raw.cost;
    usage.currency = typeof raw.currency === "string" && raw.currency ? raw.currency : "USD";
  }
  return usage;
}

/** The event in a `usage` progress event, or undefined for a provider's (which has no `text`) and for a
 * turn no provider counted (the stub, a failed request: nothing worth a row). */
export function toUsageEvent(value: Record<string, unknown>): UsageEvent | undefined {
  const usage = toTurnUsage(value);
  if (!usage || usage.inputTokens + usage.outputTokens === 0) {
    return undefined;
  }
  return { type: "usage", item: { kind: "usage", text: usage.text, usage } };
}

function figure(value: number): string {
  return value.toLocaleString("en-US");
}

/** The header's words on what the conversation spent: "12,345 in · 2,345 out · $0.12". */
export function describeConversationUsage(usage: TurnUsage): string {
  const parts = [`${figure(usage.conversationInputTokens)} in`, `${figure(usage.conversationOutputTokens)} out`];
  if (usage.cost !== undefined) {
    parts.push(describeCost(usage.cost, usage.currency ?? "USD"));
  }
  return parts.join(" · ");
}

/** What the last request held, for a header not yet told the conversation's size: "context 3,000 of 128,000". */
function describeContextHeld(usage: TurnUsage): string {
  return usage.contextWindow ? `context ${figure(usage.contextTokens)} of ${figure(usage.contextWindow)}` : `context ${figure(usage.contextTokens)}`;
}

/** "$0.12"; a currency code Intl does not know is written after the figure ("0.12 XBT"). */
function describeCost(cost: number, currency: string): string {
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency, maximumFractionDigits: 4 }).format(cost);
  } catch {
    return `${cost.toFixed(4)} ${currency}`;
  }
}

/** The turn's own figures (its last `usage` row), which carry the conversation's totals so far. */
export function usageOf(items: readonly { kind: string }[]): TurnUsage | undefined {
  const rows = items.filter((item): item is UsageItem => item.kind === "usage");
  return rows[rows.length - 1]?.usage;
}

/** The header's line: the server's words on the conversation (its tokens, the context, the
 * cost); from an older server, its size against the budget (said once: `size` from
 * `elelem.context`, else what the last request held), then its tokens and cost. */
export function describeHeaderUsage(size: string, spent: TurnUsage | undefined): string {
  if (spent?.conversationText) {
    return spent.conversationText;
  }
  const context = size || (spent ? describeContextHeld(spent) : "");
  return [context, spent ? describeConversationUsage(spent) : ""].filter(Boolean).join(" · ");
}

/** The figures of `elelem.context` besides the conversation's, each under its name. */
const SUGGESTIONS: readonly [string, string][] = [
  ["completion", "inline completion"],
  ["nextEdit", "next edit"],
];

/** Inline completion's and next edit's figures in an `elelem.context` result, in the server's words
 * ("inline completion: 3 of 12 suggestions accepted · 141 chars"), each only when it showed or asked for anything. */
export function describeSuggestions(context: unknown): string[] {
  if (typeof context !== "object" || context === null) {
    return [];
  }
  const lines: string[] = [];
  for (const [key, name] of SUGGESTIONS) {
    const figures = (context as Record<string, unknown>)[key];
    if (typeof figures !== "object" || figures === null) {
      continue;
    }
    const raw = figures as Record<string, unknown>;
    if ((count(raw.shown) > 0 || count(raw.requests) > 0) && typeof raw.text === "string" && raw.text) {
      lines.push(`${name}: ${raw.text}`);
    }
  }
  return lines;
}
