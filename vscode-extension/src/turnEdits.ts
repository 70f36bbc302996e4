/**
 * The agent's edits, turn by turn: applies the server's `workspace/applyEdit` as the language
 * client would (the same version check, VS Code's own refactor preview when an edit needs
 * confirmation) after keeping each file's text from before the turn first touched it. The turn
 * then lists its changed files with line counts; a file opens `vscode.diff` between that text
 * (served under the `elelem-before` scheme) and now; "Undo this turn's edits" puts every file
 * back through one WorkspaceEdit, so the undo is itself undoable. The text each edit left is kept
 * too: a file changed since is not overwritten (nor a created one deleted) without asking, and
 * once Ctrl+Z brings back what the turn left, its edits can be undone again.
 */

import * as vscode from "vscode";
import { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, LanguageClient, TextDocumentEdit } from "vscode-languageclient/node";

import { countLineChanges } from "./lineCounts";
import { Turn } from "./transcript";
import { TurnRunner } from "./turns";
import { asTheTurnLeftThem, planUndo, TurnFile } from "./undoPlan";

export const BEFORE_SCHEME = "elelem-before";

/** A file's text; undefined where it does not exist (before the turn: the turn created it). */
type BeforeText = string | undefined;

/** A file the turn changed: its text before the turn, and what the turn's last edit of it left. */
interface ChangedFile {
  before: BeforeText;
  left: BeforeText;
}

const UNDO_ANYWAY = "Undo Anyway";

/** The documents a workspace edit touches, as the client's URIs. */
function editedUris(client: LanguageClient, params: ApplyWorkspaceEditParams): vscode.Uri[] {
  const wire = new Set<string>(Object.keys(params.edit.changes ?? {}));
  for (const change of params.edit.documentChanges ?? []) {
    if (TextDocumentEdit.is(change)) {
      wire.add(change.textDocument.uri);
    } else if ("uri" in change) {
      wire.add(change.uri);
    }
  }
  return [...wire].map((uri) => client.protocol2CodeConverter.asUri(uri));
}

/** Whether an edit was made for a document version the open document no longer has. */
function versionMismatch(client: LanguageClient, params: ApplyWorkspaceEditParams): boolean {
  const open = new Map(vscode.workspace.textDocuments.map((document) => [document.uri.toString(), document]));
  return (params.edit.documentChanges ?? []).some((change) => {
    if (!TextDocumentEdit.is(change) || typeof change.textDocument.version !== "number" || change.textDocument.version < 0) {
      return false;
    }
    const document = open.get(client.protocol2CodeConverter.asUri(change.textDocument.uri).toString());
    return document !== undefined && document.version !== change.textDocument.version;
  });
}

async function currentText(uri: vscode.Uri): Promise<BeforeText> {
  try {
    return (await vscode.workspace.openTextDocument(uri)).getText();
  } catch {
    return undefined; // not there yet: the edit creates it
  }
}

export class TurnEdits implements vscode.TextDocumentContentProvider, vscode.Disposable {
  /** Turn id -> document URI -> its texts. */
  private readonly changed = new Map<number, Map<string, ChangedFile>>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly runner: TurnRunner) {
    this.subscriptions = [
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.reason === vscode.TextDocumentChangeReason.Undo || event.reason === vscode.TextDocumentChangeReason.Redo) {
          void this.offerUndoAgain(event.document.uri.toString());
        }
      }),
    ];
  }

  /** Answers the server's `workspace/applyEdit`, recording the before-text for the running turn. */
  async apply(client: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
    const edit = await client.protocol2CodeConverter.asWorkspaceEdit(params.edit);
    if (versionMismatch(client, params)) {
      return { applied: false };
    }
    const uris = editedUris(client, params);
    const turn = uris.length ? this.runner.runningFor(uris[0]) : undefined;
    const known = turn ? this.filesOf(turn) : undefined;
    const snapshot = new Map<string, BeforeText>();
    for (const uri of uris) {
      if (known && !known.has(uri.toString())) {
        snapshot.set(uri.toString(), await currentText(uri));
      }
    }
    const applied = await vscode.workspace.applyEdit(edit);
    if (applied && turn && known) {
      for (const uri of uris) {
        const key = uri.toString();
        const before = snapshot.has(key) ? snapshot.get(key) : known.get(key)?.before;
        known.set(key, { before, left: await currentText(uri) });
      }
      await this.count(turn, known);
    }
    return { applied };
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    return this.changed.get(Number(query.get("turn")))?.get(query.get("uri") ?? "")?.before ?? "";
  }

  /** Opens the diff of one file: its text before the turn on the left, the file now on the right. */
  async openDiff(turnId: number, uri: string): Promise<void> {
    if (!this.changed.get(turnId)?.has(uri)) {
      return;
    }
    const file = vscode.Uri.parse(uri);
    const left = vscode.Uri.from({
      scheme: BEFORE_SCHEME,
      path: file.path,
      query: new URLSearchParams({ turn: String(turnId), uri }).toString(),
    });
    const title = `${vscode.workspace.asRelativePath(file)} (before the turn ↔ now)`;
    await vscode.commands.executeCommand("vscode.diff", left, file, title, { preview: true });
  }

  /**
   * Puts back every file the turn changed (a file it created is deleted) in one WorkspaceEdit,
   * after asking when a file changed since the turn left it. A file that was saved before the
   * undo is saved again, so the disk matches what is shown.
   */
  async undo(turnId: number): Promise<boolean> {
    const files = this.changed.get(turnId);
    const found = this.runner.find(turnId);
    if (!files || !found || found.turn.editsUndone) {
      return false;
    }
    const texts = await this.texts(files);
    const { steps, changedSince } = planUndo(texts);
    if (changedSince.length) {
      const names = changedSince.map((uri) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri))).join(", ");
      const choice = await vscode.window.showWarningMessage(
        `${names} changed since this turn; undo anyway? The later changes there would be lost.`,
        { modal: true },
        UNDO_ANYWAY,
      );
      if (choice !== UNDO_ANYWAY) {
        return false;
      }
    }
    const gone = new Set(texts.filter((file) => file.now === undefined).map((file) => file.uri));
    const edit = new vscode.WorkspaceEdit();
    const save: vscode.TextDocument[] = [];
    for (const step of steps) {
      const uri = vscode.Uri.parse(step.uri);
      if ("delete" in step) {
        edit.deleteFile(uri, { ignoreIfNotExists: true });
      } else if (gone.has(step.uri)) {
        // deleted since the turn: bring it back with its text from before the turn
        edit.createFile(uri, { ignoreIfExists: true });
        edit.insert(uri, new vscode.Position(0, 0), step.restore);
      } else {
        const document = await vscode.workspace.openTextDocument(uri);
        if (!document.isDirty) {
          save.push(document);
        }
        edit.replace(uri, new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length)), step.restore);
      }
    }
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showWarningMessage("elelem: the turn's edits could not be undone.");
      return false;
    }
    await Promise.all(save.map((document) => document.save()));
    found.turn.editsUndone = true;
    this.runner.refresh(found.turn);
    return true;
  }

  dispose(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }

  /** After an undo or redo in `uri`: a turn whose files are all as it left them again can be undone again. */
  private async offerUndoAgain(uri: string): Promise<void> {
    for (const [turnId, files] of this.changed) {
      const found = this.runner.find(turnId);
      if (found?.turn.editsUndone && files.has(uri) && asTheTurnLeftThem(await this.texts(files))) {
        found.turn.editsUndone = false;
        this.runner.refresh(found.turn);
      }
    }
  }

  /** The turn's files with their text now. */
  private async texts(files: Map<string, ChangedFile>): Promise<TurnFile[]> {
    const texts: TurnFile[] = [];
    for (const [uri, file] of files) {
      texts.push({ uri, ...file, now: await currentText(vscode.Uri.parse(uri)) });
    }
    return texts;
  }

  private filesOf(turn: Turn): Map<string, ChangedFile> {
    let files = this.changed.get(turn.id);
    if (!files) {
      files = new Map();
      this.changed.set(turn.id, files);
    }
    return files;
  }

  /** The turn's changed files, counted against the documents as they are now. */
  private async count(turn: Turn, files: Map<string, ChangedFile>): Promise<void> {
    turn.edits = [];
    for (const [key, file] of files) {
      const uri = vscode.Uri.parse(key);
      const now = (await currentText(uri)) ?? "";
      turn.edits.push({ uri: key, path: vscode.workspace.asRelativePath(uri), ...countLineChanges(file.before ?? "", now) });
    }
    this.runner.refresh(turn);
  }
}
