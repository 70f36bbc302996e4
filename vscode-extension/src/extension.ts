/**
 * Entry point: wires the language client, the turn runner, the transcript panel, the status bar
 * and the commands together when VS Code activates the extension.
 */

import * as vscode from "vscode";

import { Commands } from "./commands";
import { ServerConnection } from "./connection";
import { StatusBar } from "./statusBar";
import { TranscriptPanel } from "./transcriptPanel";
import { TurnRunner } from "./turns";

/** How long after a settings change the status bar asks the server again. */
const SETTINGS_SETTLE_MS = 500;

let connection: ServerConnection | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("elelem");
  const panel = new TranscriptPanel(context.extensionUri);
  const status = new StatusBar();
  let commands: Commands | undefined;
  connection = new ServerConnection(output, {
    runTurnCommand: (command, args) => commands!.runServerTurn(command, args),
  });
  const server = connection;
  const runner = new TurnRunner(() => server.client, panel);
  commands = new Commands(server, runner, panel, status);
  const ui = commands;

  context.subscriptions.push(
    output,
    panel,
    status,
    runner,
    server,
    ...ui.register(),
    runner.onDidChangeTurn((turn) => {
      if (turn.status === "running") {
        status.showBusy(turn.tail);
      } else if (!runner.busy) {
        ui.refreshStatus();
      }
    }),
    server.onDidStart(() => ui.refreshStatus()),
    server.onDidFail((message) => status.showProblem(message)),
    vscode.window.onDidChangeActiveTextEditor(() => ui.refreshStatus()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("elelem")) {
        // Give the server a moment to pull the changed settings first.
        setTimeout(() => ui.refreshStatus(), SETTINGS_SETTLE_MS);
      }
    }),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
}
