/**
 * The extension's one LanguageClient to elelem-lsp: starts the configured server command over
 * stdio for all workspace folders, answers `workspace/configuration` for the `elelem` section in
 * the server's shape (with `workspacePlugins` following workspace trust), tells the server when
 * settings or trust change, shows the server's messages (with no link in them that runs a
 * command), and hands the requests a turn makes of the person (a command's
 * permission, `elelem/input`) and its edits (`workspace/applyEdit`) to the extension's hooks, so
 * the chat view shows them; it routes the server's own `elelem.ask`/`elelem.fix` commands (code
 * actions) through the turn runner so they stream into the chat view too.
 */

import * as vscode from "vscode";
import {
  ApplyWorkspaceEditParams,
  ApplyWorkspaceEditRequest,
  ApplyWorkspaceEditResult,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageActionItem,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageRequest,
  ShowMessageRequestParams,
  TransportKind,
} from "vscode-languageclient/node";

import { parseServerCommand, serverSettings } from "./args";
import { answerInsight, DiagnosticsWatch } from "./insight";
import { inert } from "./notices";

/** The server commands that run a turn; the extension runs them itself to follow the stream. */
export const TURN_COMMANDS = new Set(["elelem.ask", "elelem.fix"]);

export interface ConnectionHooks {
  /** Runs a server-made turn command (from a code action) with the transcript following it. */
  runTurnCommand(command: string, args: unknown[]): Promise<unknown>;
  /** Applies the server's edit (the language client's own handling, plus what the turn keeps). */
  applyEdit(client: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult>;
  /** Answers `window/showMessageRequest` (a command's permission). */
  askChoice(params: ShowMessageRequestParams, token: vscode.CancellationToken): Promise<MessageActionItem | null>;
  /** Answers `elelem/input` (the human provider): `{text}`, or null when declined. */
  askText(prompt: string, token: vscode.CancellationToken): Promise<{ text: string } | null>;
  /** Registers the editing features (ghost text, next edit) on a new client, before it starts. */
  prepare(client: LanguageClient): void;
}

export class ServerConnection implements vscode.Disposable {
  client: LanguageClient | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly started = new vscode.EventEmitter<void>();
  private readonly diagnostics = new DiagnosticsWatch();
  private readonly failed = new vscode.EventEmitter<string>();
  /** Fires each time the server has started (again). */
  readonly onDidStart = this.started.event;
  /** Fires with the reason when the server could not be started. */
  readonly onDidFail = this.failed.event;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly hooks: ConnectionHooks,
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("elelem.server")) {
          void this.restart();
        } else if (event.affectsConfiguration("elelem")) {
          this.notifySettingsChanged();
        }
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.notifySettingsChanged()),
    );
  }

  async start(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    let serverOptions: ServerOptions;
    try {
      const { command, args } = parseServerCommand(
        vscode.workspace.getConfiguration("elelem", folder?.uri).get("server.command"),
      );
      serverOptions = { command, args, transport: TransportKind.stdio, options: { cwd: folder?.uri.fsPath } };
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
      return;
    }
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.output,
      // `client` tells the server this client renders $/progress itself (no plain-client popups).
      initializationOptions: {
        ...serverSettings(vscode.workspace.getConfiguration("elelem", folder?.uri), vscode.workspace.isTrusted),
        client: "elelem-vscode",
      },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const values = await next(params, token);
            if (!Array.isArray(values)) {
              return values;
            }
            return values.map((value, index) =>
              params.items[index]?.section === "elelem" ? serverSettings(value, vscode.workspace.isTrusted) : value,
            );
          },
        },
        executeCommand: (command, args, next) =>
          TURN_COMMANDS.has(command) ? this.hooks.runTurnCommand(command, args) : next(command, args),
      },
    };
    const client = new LanguageClient("elelem", "elelem", serverOptions, clientOptions);
    // Registered before start, these replace the client's built-in handlers of the same requests.
    client.onRequest("elelem/input", (params: { prompt?: unknown }, token) =>
      this.hooks.askText(typeof params?.prompt === "string" ? params.prompt : "The agent asks for input", token),
    );
    client.onRequest(ShowMessageRequest.type, (params, token) => this.hooks.askChoice(params, token));
    client.onNotification(ShowMessageNotification.type, ({ type, message }) => {
      // as the client's own handler shows it, but no link in it runs a command (`inert`)
      const show =
        type === MessageType.Error
          ? vscode.window.showErrorMessage
          : type === MessageType.Warning
            ? vscode.window.showWarningMessage
            : vscode.window.showInformationMessage;
      void show(inert(message));
    });
    client.onRequest(ApplyWorkspaceEditRequest.type, (params) => this.hooks.applyEdit(client, params));
    answerInsight(client, this.diagnostics); // elelem/diagnostics, definition, references, symbols
    this.hooks.prepare(client);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.fail(
        `could not start the language server (${serverOptions.command}): ${message}. ` +
          "Install it with `pip install elelem-lsp` or set elelem.server.command.",
      );
      return;
    }
    this.started.fire();
  }

  /** Reports a server that cannot start, without holding up activation on the message. */
  private fail(message: string): void {
    this.failed.fire(message);
    void vscode.window.showErrorMessage(`elelem: ${message}`, "Open Settings").then((choice) => {
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "elelem.server.command");
      }
    });
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client?.isRunning()) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Runs a server command with its one object argument; rejects when the server is not running. */
  async execute(command: string, argument: Record<string, unknown>): Promise<unknown> {
    const client = this.client;
    if (!client?.isRunning()) {
      throw new Error("the elelem-lsp server is not running");
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] });
  }

  /** Writes a line to the elelem output channel. */
  log(message: string): void {
    this.output.appendLine(message);
  }

  /** The wire form of a document or folder URI, spelled as the client spells it elsewhere. */
  wireUri(uri: vscode.Uri): string {
    return this.client ? this.client.code2ProtocolConverter.asUri(uri) : uri.toString();
  }

  dispose(): void {
    void this.stop();
    this.started.dispose();
    this.failed.dispose();
    this.diagnostics.dispose();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }

  /**
   * Tells the server its settings changed (or trust was granted). The notification carries no
   * settings: the server pulls each folder's `elelem` section through workspace/configuration.
   */
  private notifySettingsChanged(): void {
    const client = this.client;
    if (client?.isRunning()) {
      void client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    }
  }
}
