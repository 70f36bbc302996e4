/**
 * The extension's own commands (ids `elelem-lsp.*`; the server's `elelem.*` ids belong to the
 * language client): Ask, Ask about Selection, Select Provider, Cancel, New Conversation, Show
 * Transcript, Restart Server. Each turns VS Code's state (active editor, selection, folder) into
 * a server command and shows what came of it.
 */

import * as vscode from "vscode";

import { askArguments, describeServerCommand, withProgressToken } from "./args";
import { ServerConnection } from "./connection";
import { toProvidersResult } from "./protocol";
import { StatusBar } from "./statusBar";
import { TranscriptPanel } from "./transcriptPanel";
import { describeLocation, TurnRunner } from "./turns";

/** The folder the person is working in: the active editor's, else the first one. */
export function activeFolder(): vscode.WorkspaceFolder | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return (uri && vscode.workspace.getWorkspaceFolder(uri)) || vscode.workspace.workspaceFolders?.[0];
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class Commands {
  constructor(
    private readonly connection: ServerConnection,
    private readonly runner: TurnRunner,
    private readonly panel: TranscriptPanel,
    private readonly status: StatusBar,
  ) {}

  register(): vscode.Disposable[] {
    return [
      vscode.commands.registerCommand("elelem-lsp.ask", (prompt?: unknown) => this.ask(prompt)),
      vscode.commands.registerCommand("elelem-lsp.askSelection", (prompt?: unknown) => this.askSelection(prompt)),
      vscode.commands.registerCommand("elelem-lsp.selectProvider", () => this.selectProvider()),
      vscode.commands.registerCommand("elelem-lsp.cancel", () => this.cancel()),
      vscode.commands.registerCommand("elelem-lsp.newConversation", () => this.newConversation()),
      vscode.commands.registerCommand("elelem-lsp.showTranscript", () => this.panel.show(false)),
      vscode.commands.registerCommand("elelem-lsp.restartServer", () => this.connection.restart()),
    ];
  }

  /** Asks about the active file (or folder); `prompt` lets keybindings and scripts skip the box. */
  async ask(prompt?: unknown): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const uri = editor && editor.document.uri.scheme === "file" ? editor.document.uri : activeFolder()?.uri;
    const text = await this.promptFor(prompt, uri ? `About ${describeLocation(uri)}` : undefined);
    if (text === undefined) {
      return;
    }
    await this.runner.run({
      command: "elelem.ask",
      heading: text,
      uri,
      build: (token) => [askArguments({ prompt: text, uri: uri && this.connection.wireUri(uri) }, token)],
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
    const range = {
      start: { line: selection.start.line, character: selection.start.character },
      end: { line: selection.end.line, character: selection.end.character },
    };
    await this.runner.run({
      command: "elelem.ask",
      heading: text,
      uri,
      build: (token) => [askArguments({ prompt: text, uri: this.connection.wireUri(uri), range }, token)],
    });
    this.refreshStatus();
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
  async selectProvider(): Promise<void> {
    const folder = activeFolder();
    const uriArgument = folder ? { uri: this.connection.wireUri(folder.uri) } : {};
    let providers;
    try {
      providers = toProvidersResult(await this.connection.execute("elelem.providers", uriArgument));
    } catch (error) {
      void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`);
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
    try {
      await this.connection.execute("elelem.selectProvider", { name: picked.label, ...uriArgument });
    } catch (error) {
      void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`);
      return;
    }
    const settings = vscode.workspace.getConfiguration("elelem", folder?.uri);
    const target = folder ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Global;
    await settings.update("provider", picked.label, target);
    if (picked.label !== providers.provider && settings.inspect("model")?.workspaceFolderValue) {
      // A model named for the previous provider rarely fits the new one.
      await settings.update("model", undefined, target);
    }
    this.refreshStatus();
  }

  async cancel(): Promise<void> {
    const folder = activeFolder();
    if (this.runner.cancel(folder)) {
      return;
    }
    try {
      await this.connection.execute("elelem.cancel", folder ? { uri: this.connection.wireUri(folder.uri) } : {});
    } catch (error) {
      void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`);
    }
  }

  async newConversation(): Promise<void> {
    const folder = activeFolder();
    try {
      await this.connection.execute("elelem.reset", folder ? { uri: this.connection.wireUri(folder.uri) } : {});
    } catch (error) {
      void vscode.window.showErrorMessage(`elelem: ${errorText(error)}`);
      return;
    }
    this.panel.note(folder ? `New conversation in ${folder.name}` : "New conversation");
  }

  /** Shows the active folder's provider and model in the status bar (unless a turn runs). */
  refreshStatus(): void {
    if (this.runner.busy) {
      return;
    }
    const folder = activeFolder();
    this.connection
      .execute("elelem.providers", folder ? { uri: this.connection.wireUri(folder.uri) } : {})
      .then(
        (raw) => {
          if (!this.runner.busy) {
            const providers = toProvidersResult(raw);
            this.status.showProvider(providers.provider, providers.model, folder?.name);
          }
        },
        (error) => this.status.showProblem(errorText(error)),
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
