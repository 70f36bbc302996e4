/**
 * Entry point: wires the language client, the turn runner, the chat view (with its questions
 * and the turns' edits), the status bar and the commands together when VS Code activates the
 * extension.
 */

import * as vscode from "vscode";

import { ChatController } from "./chat";
import { ChatView } from "./chatView";
import { Commands } from "./commands";
import { ServerConnection } from "./connection";
import { GhostText } from "./ghostText";
import { NextEdits } from "./nextEdit";
import { Questions } from "./questions";
import { StatusBar } from "./statusBar";
import { TurnEdits } from "./turnEdits";
import { TurnRunner } from "./turns";

/** How long after a settings change the status bar asks the server again. */
const SETTINGS_SETTLE_MS = 500;

let connection: ServerConnection | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("elelem");
  const view = new ChatView(context.extensionUri);
  const status = new StatusBar();
  let commands: Commands | undefined;
  let edits: TurnEdits | undefined;
  let questions: Questions | undefined;
  const ghostText = new GhostText();
  const nextEdits = new NextEdits();
  connection = new ServerConnection(output, {
    runTurnCommand: (command, args) => commands!.runServerTurn(command, args),
    applyEdit: (client, params) => edits!.apply(client, params),
    askChoice: (params, token) => questions!.askChoice(params, token),
    askText: (prompt, token) => questions!.askText(prompt, token),
    prepare: (client) => {
      ghostText.prepare(client);
      nextEdits.prepare(client);
    },
  });
  const server = connection;
  const runner = new TurnRunner(() => server.client, view);
  questions = new Questions(view, runner);
  edits = new TurnEdits(runner);
  commands = new Commands(server, runner, view, status);
  const ui = commands;
  const chat = new ChatController(view, ui, runner, edits, server);

  context.subscriptions.push(
    output,
    view,
    questions,
    status,
    ghostText,
    nextEdits,
    runner,
    edits,
    server,
    chat,
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
