/**
 * The extension's own commands (ids `elelem-lsp.*`; the server's `elelem.*` ids belong to the
 * language client): Ask, Ask about Selection, Select Provider, Select Model, Cancel, New
 * Conversation, Open Conversation…, Show Transcript (the chat view), Restart Server. Each turns
 * VS Code's state (active editor, selection, folder) into a server command and shows what came
 * of it; the chat view calls the same methods with its own folder.
 */

import * as vscode from "vscode";

import { askArguments, describeServerCommand, withProgressToken } from "./args";
import { ChatView } from "./chatView";
import { ServerConnection } from "./connection";
import { inert } from "./notices";
import { ProvidersResult, toConversations, toProvidersResult, toTranscriptResult, TranscriptResult } from "./protocol";
import { StatusBar } from "./statusBar";
import { conversationTitle } from "./transcript";
import { describeLocation, TurnRunner } from "./turns";
import type { ChatImage } from "./webview/composer";

/** The folder the person is working in: the active editor's, else the first one. */
export function activeFolder(): vscode.WorkspaceFolder | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return (uri && vscode.workspace.getWorkspaceFolder(uri)) || vscode.workspace.workspaceFolders?.[0];
}

/** An error's words (often the server's), fit for a notification: no link in them runs a command. */
export function errorText(error: unknown): string {
  return inert(error instanceof Error ? error.message : String(error));
}

/** The `{uri}` argument naming a folder, or none. */
function folderArgument(connection: ServerConnection, folder: vscode.WorkspaceFolder | undefined): Record<string, unknown> {
  return folder ? { uri: connection.wireUri(folder.uri) } : {};
}

/** A conversation's shown transcript, for the chat view to redraw. */
export interface ShownConversation {
  folder: vscode.WorkspaceFolder | undefined;
  transcript: TranscriptResult;
  /** True for a new, empty conversation. */
  fresh: boolean;
}

export class Commands {
  private readonly refreshed = new vscode.EventEmitter<{ folder: vscode.WorkspaceFolder | undefined; providers: ProvidersResult }>();
  private readonly switched = new vscode.EventEmitter<ShownConversation>();
  /** Fires with a folder's provider and model each time they were asked for. */
  readonly onDidRefresh = this.refreshed.event;
  /** Fires when a folder's current conversation changed (new, or another resumed). */
  readonly onDidSwitchConversation = this.switched.event;

  constructor(
    private readonly connection: ServerConnection,
    private readonly runner: TurnRunner,
    private readonly view: ChatView,
    private readonly status: StatusBar,
  ) {}

  register(): vscode.Disposable[] {
    return [
      this.refreshed,
      this.switched,
      vscode.commands.registerCommand("elelem-lsp.ask", (prompt?: unknown) => this.ask(prompt)),
      vscode.commands.registerCommand("elelem-lsp.askSelection", (prompt?: unknown) => this.askSelection(prompt)),
      vscode.commands.registerCommand("elelem-lsp.selectProvider", () => this.selectProvider()),
      vscode.commands.registerCommand("elelem-lsp.selectModel", () => this.selectModel()),
      vscode.commands.registerCommand("elelem-lsp.cancel", () => this.cancel()),
      vscode.commands.registerCommand("elelem-lsp.newConversation", () => this.newConversation()),
      vscode.commands.registerCommand("elelem-lsp.openConversation", () => this.openConversation()),
      vscode.commands.registerCommand("elelem-lsp.showTranscript", () => this.view.show(false)),
      vscode.commands.registerCommand("elelem-lsp.restartServer", () => this.connection.restart()),
    ];
  }

  /** Runs a server command and reads its result with `read`; a failure is shown and gives undefined. */
  private async request<T>(command: string, argument: Record<string, unknown>, read: (value: unknown) => T): Promise<T | undefined> {
    try {
      return read(await this.connection.execute(command, argument));
    } catch (error) {
      void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`);
      return undefined;
    }
  }

  /** Asks about the active file (or folder); `prompt` lets keybindings and scripts skip the box. */
  async ask(prompt?: unknown): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const uri = editor && editor.document.uri.scheme === "file" ? editor.document.uri : activeFolder()?.uri;
    const text = await this.promptFor(prompt, uri ? `About ${describeLocation(uri)}` : undefined);
    if (text === undefined) {
      return;
    }
    await this.askAbout(text, text, uri);
  }

  /** Runs one `elelem.ask` about `uri` (and `range` in it) with `images`; `heading` is what the transcript shows. */
  async askAbout(
    heading: string,
    prompt: string,
    uri: vscode.Uri | undefined,
    range?: vscode.Range,
    images: readonly ChatImage[] = [],
  ): Promise<void> {
    const wireRange = range && {
      start: { line: range.start.line, character: range.start.character },
      end: { line: range.end.line, character: range.end.character },
    };
    await this.runner.run({
      command: "elelem.ask",
      heading,
      uri,
      build: (token) => [askArguments({ prompt, uri: uri && this.connection.wireUri(uri), range: wireRange, images }, token)],
    });
    this.refreshStatus();
  }

  /** Asks about the selected text of the active editor. */
  async askSelection(prompt?: unknown): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showInformationMessage("elelem: select some text first.");
      return;
    }
    const { uri } = editor.document;
    const selection = editor.selection;
    const lines = `${vscode.workspace.asRelativePath(uri)}:${selection.start.line + 1}-${selection.end.line + 1}`;
    const text = await this.promptFor(prompt, `About the selection in ${lines}`);
    if (text === undefined) {
      return;
    }
    await this.askAbout(text, text, uri, selection);
  }

  /** Runs a code action's `elelem.fix`/`elelem.ask` with the transcript following it. */
  async runServerTurn(command: string, args: unknown[]): Promise<unknown> {
    const first = args[0] as { uri?: unknown } | undefined;
    const uri = typeof first?.uri === "string" ? vscode.Uri.parse(first.uri) : undefined;
    const result = await this.runner.run({
      command: command === "elelem.fix" ? "elelem.fix" : "elelem.ask",
      heading: describeServerCommand(command, args),
      uri,
      build: (token) => withProgressToken(args, token),
    });
    this.refreshStatus();
    return result;
  }

  /** A quick pick of the server's providers; the choice is written to the folder's settings. */
  async selectProvider(folder = activeFolder()): Promise<void> {
    const uriArgument = folderArgument(this.connection, folder);
    const providers = await this.request("elelem.providers", uriArgument, toProvidersResult);
    if (!providers) {
      return;
    }
    const items = providers.available.map((name) => ({
      label: name,
      description: name === providers.provider ? `current${providers.model ? ` · ${providers.model}` : ""}` : undefined,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: folder ? `elelem provider for ${folder.name}` : "elelem provider",
      placeHolder: "Choose the provider the agent uses",
    });
    if (!picked) {
      return;
    }
    if (!(await this.request("elelem.selectProvider", { name: picked.label, ...uriArgument }, () => true))) {
      return;
    }
    const settings = vscode.workspace.getConfiguration("elelem", folder?.uri);
    const target = folder ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Global;
    await settings.update("provider", picked.label, target);
    if (picked.label !== providers.provider && settings.inspect("model")?.workspaceFolderValue) {
      // A model named for the previous provider rarely fits the new one.
      await settings.update("model", undefined, target);
    }
    this.refreshStatus(folder);
  }

  /**
   * Asks for the model of the folder's provider (empty: the provider's default); it is given to
   * the server with `elelem.selectProvider` and written to the folder's `elelem.model`.
   */
  async selectModel(folder = activeFolder()): Promise<void> {
    const uriArgument = folderArgument(this.connection, folder);
    const providers = await this.request("elelem.providers", uriArgument, toProvidersResult);
    if (!providers) {
      return;
    }
    if (!providers.provider) {
      void vscode.window.showInformationMessage("elelem: select a provider first.");
      return;
    }
    const model = await vscode.window.showInputBox({
      title: `elelem model for ${providers.provider}${folder ? ` in ${folder.name}` : ""}`,
      prompt: "The model name the provider should use; empty for the provider's default",
      value: providers.model ?? "",
      ignoreFocusOut: true,
    });
    if (model === undefined) {
      return;
    }
    const named = { name: providers.provider, model: model.trim() || null, ...uriArgument };
    if (!(await this.request("elelem.selectProvider", named, () => true))) {
      return;
    }
    const target = folder ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration("elelem", folder?.uri).update("model", model.trim() || undefined, target);
    this.refreshStatus(folder);
  }

  async cancel(folder = activeFolder()): Promise<void> {
    if (this.runner.cancel(folder)) {
      return;
    }
    await this.request("elelem.cancel", folderArgument(this.connection, folder), () => true);
  }

  /** Starts a new conversation in the folder (the old one stays stored). */
  async newConversation(folder = activeFolder()): Promise<void> {
    if (!(await this.request("elelem.reset", folderArgument(this.connection, folder), () => true))) {
      return;
    }
    this.switched.fire({ folder, transcript: { id: "", title: "", entries: [] }, fresh: true });
  }

  /** A quick pick of the folder's stored conversations (`elelem.conversations`); the pick is resumed. */
  async openConversation(folder = activeFolder()): Promise<void> {
    const uriArgument = folderArgument(this.connection, folder);
    const conversations = await this.request("elelem.conversations", uriArgument, toConversations);
    if (!conversations?.length) {
      if (conversations) {
        void vscode.window.showInformationMessage(`elelem: no stored conversations${folder ? ` in ${folder.name}` : ""} yet.`);
      }
      return;
    }
    const picked = await vscode.window.showQuickPick(
      conversations.map((conversation) => ({
        label: conversationTitle(conversation.title),
        description: `${conversation.turns} turn${conversation.turns === 1 ? "" : "s"}${conversation.provider ? ` · ${conversation.provider}` : ""}`,
        detail: conversation.updated ? new Date(conversation.updated).toLocaleString() : undefined,
        id: conversation.id,
      })),
      { title: folder ? `elelem conversations in ${folder.name}` : "elelem conversations", placeHolder: "Open a conversation" },
    );
    if (!picked) {
      return;
    }
    const transcript = await this.request("elelem.resume", { id: picked.id, ...uriArgument }, toTranscriptResult);
    if (transcript) {
      this.switched.fire({ folder, transcript, fresh: false });
    }
  }

  /**
   * Asks the server for the folder's provider and model: the status bar shows them (unless a
   * turn runs), and the chat view's header hears of them through onDidRefresh.
   */
  refreshStatus(folder = activeFolder()): void {
    this.connection.execute("elelem.providers", folderArgument(this.connection, folder)).then(
      (raw) => {
        const providers = toProvidersResult(raw);
        this.refreshed.fire({ folder, providers });
        if (!this.runner.busy && folder?.uri.toString() === activeFolder()?.uri.toString()) {
          this.status.showProvider(providers.provider, providers.model, folder?.name);
        }
      },
      (error) => {
        if (!this.runner.busy) {
          this.status.showProblem(errorText(error));
        }
      },
    );
  }

  private async promptFor(given: unknown, prompt: string | undefined): Promise<string | undefined> {
    const text =
      typeof given === "string"
        ? given
        : await vscode.window.showInputBox({
            title: "Ask elelem",
            prompt,
            placeHolder: "What should the agent do?",
            ignoreFocusOut: true,
          });
    return text && text.trim() ? text.trim() : undefined;
  }
}
