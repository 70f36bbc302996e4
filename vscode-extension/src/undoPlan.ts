/**
 * What "Undo this turn's edits" does with each file the turn changed, decided from three texts:
 * before the turn, what the turn left, and now. A file is put back to its text before the turn
 * (a file the turn created is deleted); a file that changed since the turn left it is named, so
 * the person is asked before their later work is overwritten. Pure: no vscode import.
 */

/** A file's texts; undefined where it did not exist (before: the turn created it). */
export interface TurnFile {
  uri: string;
  before: string | undefined;
  left: string | undefined;
  now: string | undefined;
}

export type UndoStep = { uri: string; restore: string } | { uri: string; delete: true };

export function planUndo(files: TurnFile[]): { steps: UndoStep[]; changedSince: string[] } {
  const steps: UndoStep[] = [];
  const changedSince: string[] = [];
  for (const file of files) {
    if (file.now !== file.left) {
      changedSince.push(file.uri);
    }
    if (file.before !== undefined) {
      steps.push({ uri: file.uri, restore: file.before });
    } else if (file.now !== undefined) {
      steps.push({ uri: file.uri, delete: true });
    }
  }
  return { steps, changedSince };
}

/** Whether every file is as the turn left it again (the undo was itself undone). */
export function asTheTurnLeftThem(files: TurnFile[]): boolean {
  return files.length > 0 && files.every((file) => file.now === file.left);
}
