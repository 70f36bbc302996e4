/**
 * `elelem.rewind`'s answer as the chat view reads it: rewound, or the files that changed since the
 * turn (nothing was rewound then, and the person is asked whether to overwrite them), and the
 * question worded for them. Pure: no vscode import.
 */

export interface RewindConflict {
  path: string;
  /** "changed since the turn", "has unsaved changes in the editor", ... */
  reason: string;
}

export interface RewindAnswer {
  rewound: boolean;
  /** The kept turns put back (the one asked for and every later one). */
  turns: number[];
  conversation: boolean;
  files: { path: string; action: string }[];
  conflicts: RewindConflict[];
  /** What the rewind did in the server's words ("rewound turn 3 and the conversation"); absent from an older server. */
  text?: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The answer in `value`; anything unreadable is "not rewound, no conflicts". */
export function toRewindAnswer(value: unknown): RewindAnswer {
  const raw = isObject(value) ? value : {};
  const list = (field: unknown) => (Array.isArray(field) ? field.filter(isObject) : []);
  return {
    rewound: raw.rewound === true,
    turns: Array.isArray(raw.turns) ? raw.turns.filter((turn): turn is number => typeof turn === "number") : [],
    conversation: raw.conversation === true,
    files: list(raw.files).map((file) => ({ path: String(file.path ?? "?"), action: String(file.action ?? "write") })),
    conflicts: list(raw.conflicts).map((conflict) => ({ path: String(conflict.path ?? "?"), reason: String(conflict.reason ?? "changed since the turn") })),
    ...(typeof raw.text === "string" && raw.text ? { text: raw.text } : {}),
  };
}

/** The arguments of `elelem.rewind` for a turn's checkpoint. */
export function rewindArguments(checkpoint: number, options: { conversation: boolean; force?: boolean; uri?: string }): Record<string, unknown> {
  return {
    turn: checkpoint,
    ...(options.conversation ? { conversation: true } : {}),
    ...(options.force ? { force: true } : {}),
    ...(options.uri ? { uri: options.uri } : {}),
  };
}

/** The conflict dialog's message: each file with why it is one. */
export function conflictQuestion(conflicts: readonly RewindConflict[]): string {
  const lines = conflicts.map((conflict) => `${conflict.path}: ${conflict.reason}`);
  const files = conflicts.length === 1 ? "A file has" : `${conflicts.length} files have`;
  return `${files} changed since the turn, so nothing was rewound:\n${lines.join("\n")}\nRewind anyway? Those changes would be lost.`;
}

/** What the turn shows once rewound: the server's words; from an older server "Rewound" and, when
 * it went back too, "with the conversation". */
export function describeRewind(answer: RewindAnswer): string {
  if (answer.text) {
    return answer.text;
  }
  return answer.conversation ? "Rewound, with the conversation" : "Rewound";
}
