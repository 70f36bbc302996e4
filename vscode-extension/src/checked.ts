/**
 * The `checked` event (what the agent's check after a step that changed files found) as the
 * chat view shows it: a row such as `checked app.ts: 2 new errors` that opens to the new
 * problems, or to what the `checkCommand` printed. Pure: no vscode import.
 */

/** The transcript item of one `checked` event. */
export interface CheckedItem {
  kind: "checked";
  text: string;
  /** `app.ts:3:7 error: …`, one per new problem; or the end of the command's output. */
  details: string[];
  /** New problems were found, or the command failed. */
  bad: boolean;
}

export interface CheckedEvent {
  type: "checked";
  item: CheckedItem;
}

const SHOWN_OUTPUT_LINES = 40;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The event in a `checked` progress event, however much of it is missing. */
export function toCheckedEvent(value: Record<string, unknown>): CheckedEvent {
  const problems = Array.isArray(value.newProblems) ? value.newProblems.filter(isObject) : [];
  const details = problems.map(
    (p) => `${String(p.path ?? "?")}:${String(p.line ?? "?")}:${String(p.column ?? "?")} ${String(p.severity ?? "error")}: ${String(p.message ?? "").replace(/\s+/g, " ")}`,
  );
  if (typeof value.output === "string" && value.output.trim()) {
    details.push(...value.output.trim().split("\n").slice(-SHOWN_OUTPUT_LINES));
  }
  const failed = typeof value.exitCode === "number" && value.exitCode !== 0;
  const text = typeof value.text === "string" && value.text ? value.text : "checked";
  return { type: "checked", item: { kind: "checked", text, details, bad: problems.length > 0 || failed } };
}

/** The row's HTML: its text, opening to the problems. */
export function renderChecked(item: CheckedItem, key: string, escapeHtml: (text: string) => string): string {
  const state = item.bad ? "failed" : "ok";
  const icon = item.bad ? "codicon-warning" : "codicon-check";
  const body = item.details.length
    ? `<pre class="tool-output" aria-label="Problems">${escapeHtml(item.details.join("\n"))}</pre>`
    : "";
  return (
    `<details class="tool checked ${state}" data-key="${key}" data-tool="checked">` +
    `<summary aria-label="${escapeHtml(item.text)}${body ? "; details" : ""}">` +
    `<span class="chevron codicon codicon-chevron-right" aria-hidden="true"></span>` +
    `<span class="icon codicon ${icon}" aria-hidden="true"></span> ` +
    `<span class="tool-label">${escapeHtml(item.text)}</span></summary>${body}</details>`
  );
}
