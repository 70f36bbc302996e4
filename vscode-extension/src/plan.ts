/**
 * The `plan` event (the agent's plan for the turn, the whole of it each time it changes) as the
 * chat view shows it: one checklist per turn, replaced in place by each newer plan event, each
 * entry with a codicon for its status and a label a screen reader says. Pure: no vscode import.
 */

export type PlanStatus = "pending" | "in_progress" | "completed";

export interface PlanEntry {
  content: string;
  status: PlanStatus;
  priority?: string;
}

/** The transcript item of a turn's plan. */
export interface PlanItem {
  kind: "plan";
  entries: PlanEntry[];
}

export interface PlanEvent {
  type: "plan";
  item: PlanItem;
}

const STATUSES: readonly string[] = ["pending", "in_progress", "completed"];

/** The event in a `plan` progress event: entries without text are dropped, an unknown status is pending. */
export function toPlanEvent(value: Record<string, unknown>): PlanEvent {
  const rows = Array.isArray(value.entries) ? value.entries : [];
  const entries: PlanEntry[] = [];
  for (const row of rows) {
    if (typeof row !== "object" || row === null || typeof (row as Record<string, unknown>).content !== "string") {
      continue;
    }
    const { content, status, priority } = row as Record<string, unknown>;
    const entry: PlanEntry = { content: content as string, status: STATUSES.includes(status as string) ? (status as PlanStatus) : "pending" };
    if (typeof priority === "string" && priority) {
      entry.priority = priority;
    }
    entries.push(entry);
  }
  return { type: "plan", item: { kind: "plan", entries } };
}

const LOOK: Record<PlanStatus, { icon: string; spoken: string }> = {
  completed: { icon: "codicon-pass-filled", spoken: "done" },
  in_progress: { icon: "codicon-loading codicon-modifier-spin", spoken: "in progress" },
  pending: { icon: "codicon-circle-large-outline", spoken: "to do" },
};

/** The checklist's HTML: "Plan, 1 of 3 done" and one row per entry. */
export function renderPlan(item: PlanItem, escapeHtml: (text: string) => string): string {
  const done = item.entries.filter((entry) => entry.status === "completed").length;
  const rows = item.entries.map((entry) => {
    const look = LOOK[entry.status];
    return (
      `<li class="plan-entry ${entry.status}" aria-label="${escapeHtml(`${entry.content}, ${look.spoken}`)}">` +
      `<span class="icon codicon ${look.icon}" aria-hidden="true"></span> ${escapeHtml(entry.content)}</li>`
    );
  });
  return (
    `<div class="plan" role="group" aria-label="Plan, ${done} of ${item.entries.length} done">` +
    `<div class="plan-title">Plan</div><ul class="plan-entries">${rows.join("")}</ul></div>`
  );
}
