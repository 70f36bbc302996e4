/**
 * Next edit in VS Code: after a change, the related changes elsewhere in the file. Announces
 * `capabilities.experimental.elelem.nextEdit`, asks the server's `elelem/nextEdit` a moment after
 * typing stops (a newer request cancels the older), shows each edit at its place (the old text
 * struck through, the new text after it), says in the status bar that one waits, and offers keys
 * to jump to it and to accept them all as one undoable WorkspaceEdit, after which the acceptance
 * is recorded (`elelem.completionAccepted {id}`) and the change brings the next suggestion.
 */

import * as vscode from "vscode";
import {
  ClientCapabilities,
  ExecuteCommandRequest,
  FeatureState,
  LanguageClient,
  Range as WireRange,
  StaticFeature,
} from "vscode-languageclient/node";

/** How long typing pauses before the server is asked. */
const DEBOUNCE_MS = 300;
const CONTEXT_KEY = "elelem.nextEditWaiting";
export const JUMP_COMMAND = "elelem-lsp.nextEdit.jump";
export const ACCEPT_COMMAND = "elelem-lsp.nextEdit.accept";
export const DISMISS_COMMAND = "elelem-lsp.nextEdit.dismiss";

interface NextEditResult {
  id: string;
  edits: { range: WireRange; newText: string }[];
}

interface Waiting {
  document: vscode.TextDocument;
  version: number;
  id: string;
  edits: vscode.TextEdit[];
}

/** Adds `nextEdit: true` to what the client announces in `capabilities.experimental.elelem`. */
class Announcement implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as { elelem?: object };
    capabilities.experimental = { ...experimental, elelem: { ...experimental.elelem, nextEdit: true } };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: "static" };
  }
  clear(): void {}
}

/** One line of the new text as a decoration shows it: line breaks as ⏎. */
function shown(text: string): string {
  return text.replace(/\r?\n/g, "⏎");
}

export class NextEdits implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private waiting: Waiting | undefined;
  private readonly replaced = vscode.window.createTextEditorDecorationType({
    textDecoration: "line-through",
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
  });
  private readonly inserted = vscode.window.createTextEditorDecorationType({
    after: {
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      color: new vscode.ThemeColor("editor.foreground"),
    },
  });
  private readonly item = vscode.window.createStatusBarItem("elelem-lsp.nextEdit", vscode.StatusBarAlignment.Right, 98);
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    this.item.name = "elelem next edit";
    this.item.command = JUMP_COMMAND;
    this.subscriptions = [
      vscode.commands.registerCommand(JUMP_COMMAND, () => this.jump()),
      vscode.commands.registerCommand(ACCEPT_COMMAND, () => this.accept()),
      vscode.commands.registerCommand(DISMISS_COMMAND, () => this.clear()),
      vscode.workspace.onDidChangeTextDocument((event) => this.changed(event)),
      vscode.window.onDidChangeActiveTextEditor(() => this.clear()),
    ];
  }

  /** Announces next edits on `client` (before it starts); its requests go to it from now on. */
  prepare(client: LanguageClient): void {
    client.registerFeature(new Announcement());
    this.client = client;
  }

  private changed(event: vscode.TextDocumentChangeEvent): void {
    const editor = vscode.window.activeTextEditor;
    if (event.contentChanges.length === 0 || editor?.document !== event.document) {
      return;
    }
    this.clear();
    this.cancel();
    this.timer = setTimeout(() => void this.request(editor), DEBOUNCE_MS);
  }

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending?.cancel(); // the client sends $/cancelRequest; the server closes its model request
    this.pending = undefined;
  }

  private async request(editor: vscode.TextEditor): Promise<void> {
    const client = this.client;
    if (!client?.isRunning() || vscode.window.activeTextEditor !== editor) {
      return;
    }
    this.cancel();
    const source = new vscode.CancellationTokenSource();
    this.pending = source;
    const document = editor.document;
    const version = document.version;
    const c2p = client.code2ProtocolConverter;
    const params = { textDocument: { uri: c2p.asUri(document.uri) }, position: c2p.asPosition(editor.selection.active) };
    let result: NextEditResult | null = null;
    try {
      result = await client.sendRequest<NextEditResult | null>("elelem/nextEdit", params, source.token);
    } catch {
      result = null; // cancelled, or the server failed (it logged why)
    }
    if (this.pending !== source) {
      return;
    }
    this.pending = undefined;
    if (!result || !Array.isArray(result.edits) || result.edits.length === 0 || document.version !== version) {
      return;
    }
    const p2c = client.protocol2CodeConverter;
    const edits = result.edits
      .map((edit) => new vscode.TextEdit(p2c.asRange(edit.range), edit.newText))
      .sort((a, b) => a.range.start.compareTo(b.range.start));
    this.waiting = { document, version, id: result.id, edits };
    this.show();
  }

  private show(): void {
    const waiting = this.waiting;
    const editor = vscode.window.activeTextEditor;
    if (!waiting || editor?.document !== waiting.document) {
      return;
    }
    editor.setDecorations(
      this.replaced,
      waiting.edits.filter((edit) => !edit.range.isEmpty).map((edit) => edit.range),
    );
    editor.setDecorations(
      this.inserted,
      waiting.edits
        .filter((edit) => edit.newText !== "")
        .map((edit) => ({
          range: new vscode.Range(edit.range.end, edit.range.end),
          renderOptions: { after: { contentText: shown(edit.newText) } },
          hoverMessage: "elelem next edit: Alt+N jumps here, Alt+Y accepts, Escape dismisses",
        })),
    );
    const count = waiting.edits.length;
    this.item.text = `$(arrow-right) next edit${count > 1 ? ` (${count})` : ""}: Alt+Y`;
    const edits = count === 1 ? "an edit" : `${count} edits`;
    this.item.tooltip = `elelem suggests ${edits} in this file: Alt+N jumps there, Alt+Y accepts, Escape dismisses. Click to jump.`;
    this.item.show();
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, true);
  }

  /** The suggestion, if it still fits its document. */
  private current(): Waiting | undefined {
    const waiting = this.waiting;
    if (waiting && waiting.document.version !== waiting.version) {
      this.clear();
      return undefined;
    }
    return waiting;
  }

  /** Moves the cursor to the next waiting edit after it, else the first. */
  private jump(): void {
    const waiting = this.current();
    const editor = vscode.window.activeTextEditor;
    if (!waiting || editor?.document !== waiting.document) {
      return;
    }
    const cursor = editor.selection.active;
    const target = waiting.edits.find((edit) => edit.range.start.line > cursor.line) ?? waiting.edits[0];
    editor.selection = new vscode.Selection(target.range.start, target.range.start);
    editor.revealRange(target.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** Applies every waiting edit as one undoable change and records the acceptance. */
  private async accept(): Promise<void> {
    const waiting = this.current();
    const client = this.client;
    if (!waiting || !client) {
      return;
    }
    this.clear();
    const edit = new vscode.WorkspaceEdit();
    edit.set(waiting.document.uri, waiting.edits);
    if (await vscode.workspace.applyEdit(edit)) {
      await client
        .sendRequest(ExecuteCommandRequest.type, { command: "elelem.completionAccepted", arguments: [{ id: waiting.id }] })
        .catch(() => undefined);
    }
  }

  private clear(): void {
    if (!this.waiting) {
      return;
    }
    this.waiting = undefined;
    for (const editor of vscode.window.visibleTextEditors) {
      editor.setDecorations(this.replaced, []);
      editor.setDecorations(this.inserted, []);
    }
    this.item.hide();
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, false);
  }

  dispose(): void {
    this.cancel();
    this.clear();
    this.replaced.dispose();
    this.inserted.dispose();
    this.item.dispose();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
