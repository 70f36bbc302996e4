/**
 * The agent's edits, turn by turn: applies the server's `workspace/applyEdit` as the language
 * client would (the same version check, VS Code's own refactor preview when an edit needs
 * confirmation) after keeping each file's text from before the turn first touched it. The turn
 * then lists its changed files with line counts; a file opens `vscode.diff` between that text
 * (served under the `elelem-before` scheme) and now; "Undo this turn's edits" puts every file
 * back through one WorkspaceEdit, so the undo is itself undoable.
 */

import * as vscode from "vscode";
import { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, LanguageClient, TextDocumentEdit } from "vscode-languageclient/node";

import { countLineChanges } from "./lineCounts";
import { Turn } from "./transcript";
import { TurnRunner } from "./turns";

export const BEFORE_SCHEME = "elelem-before";

/** A file's text before the turn; undefined when the turn created it. */
type BeforeText = string | undefined;

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
  /** Turn id -> document URI -> its text before the turn. */
  private readonly before = new Map<number, Map<string, BeforeText>>();
  private readonly registration: vscode.Disposable;

  constructor(private readonly runner: TurnRunner) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this);
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
      for (const [uri, text] of snapshot) {
        known.set(uri, text);
      }
      await this.count(turn, known);
    }
    return { applied };
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    return this.before.get(Number(query.get("turn")))?.get(query.get("uri") ?? "") ?? "";
  }

  /** Opens the diff of one file: its text before the turn on the left, the file now on the right. */
  async openDiff(turnId: number, uri: string): Promise<void> {
    if (!this.before.get(turnId)?.has(uri)) {
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
   * Puts back every file the turn changed (a file it created is deleted) in one WorkspaceEdit.
   * A file that was saved before the undo is saved again, so the disk matches what is shown.
   */
  async undo(turnId: number): Promise<boolean> {
    const files = this.before.get(turnId);
    const found = this.runner.find(turnId);
    if (!files || !found || found.turn.editsUndone) {
      return false;
    }
    const edit = new vscode.WorkspaceEdit();
    const save: vscode.TextDocument[] = [];
    for (const [key, text] of files) {
      const uri = vscode.Uri.parse(key);
      if (text === undefined) {
        edit.deleteFile(uri, { ignoreIfNotExists: true });
        continue;
      }
      const document = await vscode.workspace.openTextDocument(uri);
      if (!document.isDirty) {
        save.push(document);
      }
      edit.replace(uri, new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length)), text);
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
    this.registration.dispose();
  }

  private filesOf(turn: Turn): Map<string, BeforeText> {
    let files = this.before.get(turn.id);
    if (!files) {
      files = new Map();
      this.before.set(turn.id, files);
    }
    return files;
  }

  /** The turn's changed files, counted against the documents as they are now. */
  private async count(turn: Turn, files: Map<string, BeforeText>): Promise<void> {
    turn.edits = [];
    for (const [key, text] of files) {
      const uri = vscode.Uri.parse(key);
      const now = (await currentText(uri)) ?? "";
      turn.edits.push({ uri: key, path: vscode.workspace.asRelativePath(uri), ...countLineChanges(text ?? "", now) });
    }
    this.runner.refresh(turn);
  }
}
