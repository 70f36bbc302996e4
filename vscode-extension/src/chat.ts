/**
 * What the chat view does, on VS Code's side: follows the active editor's folder (or the one
 * picked in its header), keeps the context chips (the active file or selection, and files added
 * with `#file`), sends a question as `elelem.ask` with them, stops the folder's turn, and answers
 * the header's pickers, Copy / Insert at Cursor, a changed file's diff and "Undo this turn's
 * edits". A folder's transcript is drawn from `elelem.transcript` the first time the view shows
 * it in this window (so after a reload too), and again when another conversation is resumed.
 */

import * as vscode from "vscode";

import { withAttachedFiles } from "./args";
import { ChatView } from "./chatView";
import { activeFolder, Commands, errorText, ShownConversation } from "./commands";
import { ServerConnection } from "./connection";
import { ProvidersResult, toContextUsage, toTranscriptResult } from "./protocol";
import { describeStatus } from "./render";
import { conversationTitle, describeUsage, turnsFromTranscript } from "./transcript";
import { TurnRewind } from "./turnRewind";
import { describeHeaderUsage, describeSuggestions, toTurnUsage, TurnUsage, usageOf } from "./usage";
import { TurnEdits } from "./turnEdits";
import { folderKey, TurnRunner } from "./turns";
import type { ChatImage } from "./webview/composer";
import { ContextChip, ViewMessage } from "./webview/messages";

/** The most #file matches offered. */
const FILE_MATCHES = 20;
const FILE_EXCLUDE = "**/{node_modules,.git,__pycache__,.venv,dist,out}/**";

/** Stop and the header's pickers: the command each runs for the view's folder. */
const FOLDER_COMMANDS: Record<string, (commands: Commands, folder: vscode.WorkspaceFolder | undefined) => Promise<void>> = {
  stop: (commands, folder) => commands.cancel(folder),
  pickProvider: (commands, folder) => commands.selectProvider(folder),
  pickModel: (commands, folder) => commands.selectModel(folder),
  pickConversation: (commands, folder) => commands.openConversation(folder),
  newConversation: (commands, folder) => commands.newConversation(folder),
};

/** A file attached to the next question. */
interface Attachment {
  uri: vscode.Uri;
  range?: vscode.Range;
}

export class ChatController implements vscode.Disposable {
  private folder: vscode.WorkspaceFolder | undefined = activeFolder();
  private editor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  /** The active file's chip was removed: not attached until another editor is active. */
  private activeRemoved = false;
  private readonly files = new Map<string, Attachment>();
  /** Folders whose stored transcript was asked for in this window. */
  private readonly loaded = new Set<string>();
  private readonly titles = new Map<string, string>();
  private providers: ProvidersResult = { provider: null, model: null, available: [] };
  private readonly usage = new Map<string, string>();
  /** The conversation's tokens and cost so far, per folder: from the last turn's `usage`, or `elelem.context`. */
  private readonly spent = new Map<string, TurnUsage>();
  /** Inline completion's and next edit's figures per folder, from `elelem.context`, a line each. */
  private readonly suggestions = new Map<string, string>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly rewinder: TurnRewind;

  constructor(
    private readonly view: ChatView,
    private readonly commands: Commands,
    private readonly runner: TurnRunner,
    private readonly edits: TurnEdits,
    private readonly connection: ServerConnection,
  ) {
    this.rewinder = new TurnRewind(runner, edits, connection);
    this.subscriptions.push(
      view.onDidReceiveMessage((message) =>
        this.receive(message).catch((error) => void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`)),
      ),
      vscode.window.onDidChangeActiveTextEditor((editor) => this.follow(editor)),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor === this.editor) {
          this.showChips();
        }
      }),
      commands.onDidRefresh(({ folder, providers }) => {
        if (folder?.uri.toString() === this.folder?.uri.toString()) {
          this.providers = providers;
          this.showHeader();
        }
      }),
      commands.onDidSwitchConversation((shown) => this.showConversation(shown)),
      runner.onDidChangeTurn((turn) => {
        view.setBusy(this.runner.busyIn(this.key));
        if (turn.status !== "running") {
          const spent = usageOf(turn.items);
          const folder = runner.find(turn.id)?.folder;
          if (spent && folder !== undefined) {
            this.spent.set(folder, spent);
          }
          void this.measure();
          if (runner.find(turn.id)?.folder === this.key) {
            view.announce(`elelem: ${describeStatus(turn)}`);
          }
        }
      }),
      connection.onDidStart(() => {
        this.loaded.clear();
        void this.load();
      }),
    );
    view.switchFolder(this.key);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }

  private get key(): string {
    return this.folder ? this.folder.uri.toString() : folderKey(undefined);
  }

  private async receive(message: ViewMessage): Promise<void> {
    switch (message.type) {
      case "ready":
        this.showHeader();
        this.showChips();
        this.commands.refreshStatus(this.folder);
        await this.load();
        break;
      case "send":
        await this.send(message.text, message.images ?? []);
        break;
      case "stop":
      case "pickProvider":
      case "pickModel":
      case "pickConversation":
      case "newConversation":
        await FOLDER_COMMANDS[message.type](this.commands, this.folder);
        break;
      case "pickFolder":
        await this.pickFolder();
        break;
      case "removeChip":
        if (message.id === "active") {
          this.activeRemoved = true;
        } else {
          this.files.delete(message.id);
        }
        this.showChips();
        break;
      case "fileQuery":
        await this.offerFiles(message.query);
        break;
      case "addFile":
        this.addFile(message.path);
        break;
      case "copy":
        await vscode.env.clipboard.writeText(message.code);
        vscode.window.setStatusBarMessage("elelem: code copied", 3000);
        break;
      case "insert":
        await this.insert(message.code);
        break;
      case "diff":
        await this.edits.openDiff(message.turn, message.uri);
        break;
      case "undo":
        await this.edits.undo(message.turn);
        break;
      case "rewind":
        await this.rewinder.rewind(message.turn, this.folder);
        break;
    }
  }

  /** The view follows the folder of the editor the person works in. */
  private follow(editor: vscode.TextEditor | undefined): void {
    if (!editor || !["file", "untitled"].includes(editor.document.uri.scheme)) {
      return; // a diff's left side, an output channel: keep the context as it was
    }
    if (editor !== this.editor) {
      this.activeRemoved = false;
    }
    this.editor = editor;
    const folder = vscode.workspace.getWorkspaceFolder(editor.document.uri);
    if (folder && folder.uri.toString() !== this.folder?.uri.toString()) {
      this.switchTo(folder);
    }
    this.showChips();
  }

  private switchTo(folder: vscode.WorkspaceFolder): void {
    this.folder = folder;
    this.files.clear();
    this.view.switchFolder(this.key);
    this.view.setBusy(this.runner.busyIn(this.key));
    this.showHeader();
    this.commands.refreshStatus(folder);
    void this.load();
    void this.measure();
  }

  private async pickFolder(): Promise<void> {
    const folder = await vscode.window.showWorkspaceFolderPick({ placeHolder: "The folder to talk about" });
    if (folder) {
      this.switchTo(folder);
      this.showChips();
    }
  }

  /** The active file's attachment: the selection when there is one, else the file. */
  private activeAttachment(): Attachment | undefined {
    const editor = this.editor;
    if (!editor || this.activeRemoved || editor.document.uri.scheme !== "file") {
      return undefined;
    }
    if (this.folder && vscode.workspace.getWorkspaceFolder(editor.document.uri)?.uri.toString() !== this.folder.uri.toString()) {
      return undefined;
    }
    return { uri: editor.document.uri, range: editor.selection.isEmpty ? undefined : editor.selection };
  }

  private showChips(): void {
    const chips: ContextChip[] = [];
    const active = this.activeAttachment();
    if (active) {
      const path = vscode.workspace.asRelativePath(active.uri);
      const lines = active.range && `:${active.range.start.line + 1}-${active.range.end.line + 1}`;
      chips.push({
        id: "active",
        label: `${path.split("/").pop()}${lines ?? ""}`,
        title: active.range ? `The selection in ${path} (lines ${lines!.slice(1)})` : `The active file, ${path}`,
      });
    }
    for (const [id, file] of this.files) {
      chips.push({ id, label: vscode.workspace.asRelativePath(file.uri), title: `Attached with #file: ${vscode.workspace.asRelativePath(file.uri)}` });
    }
    this.view.setChips(chips);
  }

  private showHeader(): void {
    this.view.setHeader({
      folder: this.folder?.name ?? "",
      provider: this.providers.provider,
      model: this.providers.model,
      conversation: this.titles.get(this.key) ?? "",
      usage: describeHeaderUsage(this.usage.get(this.key) ?? "", this.spent.get(this.key)),
      usageDetails: this.suggestions.get(this.key) ?? "",
      multiRoot: (vscode.workspace.workspaceFolders?.length ?? 0) > 1,
    });
  }

  private async offerFiles(query: string): Promise<void> {
    const folder = this.folder;
    if (!folder) {
      this.view.offerFiles(query, []);
      return;
    }
    // Glob characters in what was typed would change the pattern's meaning.
    const safe = query.replace(/[^\w./-]/g, "");
    const found = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, safe ? `**/*${safe}*` : "**/*"), FILE_EXCLUDE, FILE_MATCHES);
    const paths = found.map((uri) => vscode.workspace.asRelativePath(uri, false)).sort((a, b) => a.length - b.length || a.localeCompare(b));
    this.view.offerFiles(query, paths);
  }

  private addFile(path: string): void {
    if (!this.folder || path.split("/").includes("..")) {
      return;
    }
    const uri = vscode.Uri.joinPath(this.folder.uri, path);
    this.files.set(uri.toString(), { uri });
    this.showChips();
  }

  /** Sends the question about the chips (the first is `uri`/`range`, the others named by path) with the images pasted or dropped. */
  private async send(text: string, images: readonly ChatImage[]): Promise<void> {
    const question = text.trim();
    if (!question) {
      return;
    }
    if (this.runner.busyIn(this.key)) {
      void vscode.window.showInformationMessage("elelem: a turn is running in this folder; stop it first.");
      return;
    }
    const attached = [this.activeAttachment(), ...this.files.values()].filter((file): file is Attachment => file !== undefined);
    const [first, ...others] = attached;
    const prompt = withAttachedFiles(question, others.map((file) => vscode.workspace.asRelativePath(file.uri, false)));
    this.files.clear();
    this.showChips();
    await this.commands.askAbout(question, prompt, first?.uri ?? this.folder?.uri, first?.range, images);
  }

  private async insert(code: string): Promise<void> {
    const editor = this.editor;
    if (!editor || editor.document.isClosed) {
      void vscode.window.showInformationMessage("elelem: open a file to insert the code into.");
      return;
    }
    // The editor shown may be a new one for the same document (the old one closed): edit that.
    const shown = await vscode.window.showTextDocument(editor.document, editor.viewColumn);
    await shown.edit((builder) => {
      for (const selection of shown.selections) {
        builder.replace(selection, code);
      }
    });
  }

  /** Asks the server how big the folder's conversation is against its budget, for the header. */
  private async measure(): Promise<void> {
    const key = this.key;
    const folder = this.folder;
    if (!this.connection.client?.isRunning()) {
      return;
    }
    try {
      const raw = await this.connection.execute("elelem.context", folder ? { uri: this.connection.wireUri(folder.uri) } : {});
      this.usage.set(key, describeUsage(toContextUsage(raw)));
      this.suggestions.set(key, describeSuggestions(raw).join("\n"));
      const spent = toTurnUsage(typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>).usage : undefined);
      if (spent) {
        this.spent.set(key, spent);
      }
    } catch (error) {
      this.usage.delete(key);
      this.connection.log(`elelem.context: ${errorText(error)}`);
    }
    if (key === this.key) {
      this.showHeader();
    }
  }

  /** Draws the folder's stored conversation the first time the view shows it in this window. */
  private async load(): Promise<void> {
    const key = this.key;
    const folder = this.folder;
    if (this.loaded.has(key) || this.view.has(key) || !this.connection.client?.isRunning()) {
      return;
    }
    this.loaded.add(key);
    try {
      const raw = await this.connection.execute("elelem.transcript", folder ? { uri: this.connection.wireUri(folder.uri) } : {});
      if (!this.view.has(key)) {
        this.showConversation({ folder, transcript: toTranscriptResult(raw), fresh: false });
      }
    } catch (error) {
      // A server without stored conversations: the view starts empty.
      this.connection.log(`elelem.transcript: ${errorText(error)}`);
    }
  }

  private showConversation({ folder, transcript, fresh }: ShownConversation): void {
    const key = folder ? folder.uri.toString() : folderKey(undefined);
    this.titles.set(key, conversationTitle(transcript.title));
    this.spent.delete(key);
    this.view.clear(key);
    if (fresh) {
      this.view.note(key, folder ? `New conversation in ${folder.name}` : "New conversation");
    }
    for (const turn of turnsFromTranscript(transcript, () => this.runner.nextId())) {
      this.runner.show(turn, key);
    }
    if (key === this.key) {
      this.showHeader();
    }
    void this.measure();
  }
}
