/**
 * "Rewind to before this turn" in the chat view: asks whether the conversation goes back too,
 * calls `elelem.rewind` with the turn's checkpoint (the server puts the files back through one
 * WorkspaceEdit, undoable in the editor), and when files changed since the turn lists them with
 * Rewind Anyway / Cancel. A turn without a checkpoint (an older server) is undone by the
 * extension's own "Undo this turn's edits" path.
 */

import * as vscode from "vscode";

import { ServerConnection } from "./connection";
import { conflictQuestion, describeRewind, rewindArguments, toRewindAnswer } from "./rewindAnswer";
import { TurnEdits } from "./turnEdits";
import { TurnRunner } from "./turns";

const FILES_ONLY = "Rewind Files";
const WITH_CONVERSATION = "Rewind Files and Conversation";
const REWIND_ANYWAY = "Rewind Anyway";

export class TurnRewind {
  constructor(
    private readonly runner: TurnRunner,
    private readonly edits: TurnEdits,
    private readonly connection: ServerConnection,
  ) {}

  /** Rewinds to before turn `turnId`; true when something was put back. */
  async rewind(turnId: number, folder: vscode.WorkspaceFolder | undefined): Promise<boolean> {
    const found = this.runner.find(turnId);
    const checkpoint = found?.turn.checkpoint;
    if (!found || checkpoint === undefined) {
      return this.edits.undo(turnId);
    }
    const choice = await vscode.window.showWarningMessage(
      "Rewind to before this turn? The files it and every later turn changed go back; " +
        "the conversation too if you choose (the model forgets those turns).",
      { modal: true },
      FILES_ONLY,
      WITH_CONVERSATION,
    );
    if (!choice) {
      return false;
    }
    const base = { conversation: choice === WITH_CONVERSATION, uri: folder ? this.connection.wireUri(folder.uri) : undefined };
    let answer = toRewindAnswer(await this.connection.execute("elelem.rewind", rewindArguments(checkpoint, base)));
    if (!answer.rewound && answer.conflicts.length) {
      const force = await vscode.window.showWarningMessage(conflictQuestion(answer.conflicts), { modal: true }, REWIND_ANYWAY);
      if (force !== REWIND_ANYWAY) {
        return false;
      }
      answer = toRewindAnswer(await this.connection.execute("elelem.rewind", rewindArguments(checkpoint, { ...base, force: true })));
    }
    if (!answer.rewound) {
      void vscode.window.showWarningMessage("elelem: nothing was rewound.");
      return false;
    }
    found.turn.editsUndone = true;
    found.turn.rewound = describeRewind(answer);
    this.runner.refresh(found.turn);
    return true;
  }
}
