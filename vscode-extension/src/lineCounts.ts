/**
 * Lines added and removed between two texts, as a changed-file row shows them (`+3 −1`), from
 * jsdiff's line diff. Pure: no vscode import.
 */

import { diffLines } from "diff";

export function countLineChanges(before: string, after: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const part of diffLines(before, after)) {
    if (part.added) {
      added += part.count ?? 0;
    } else if (part.removed) {
      removed += part.count ?? 0;
    }
  }
  return { added, removed };
}
