/**
 * Ghost text in VS Code: the server's `textDocument/inlineCompletion` answers shown as VS Code's
 * own inline suggestions (vscode-languageclient 9.x keeps that feature among its proposed ones,
 * registered here before the client starts), gated by the `elelem.ghostText.enabled` setting that
 * a status-bar item toggles. Accepting (Tab), a word (Ctrl+Right) or a line of it is VS Code's
 * own; on a whole acceptance VS Code runs the item's `elelem.completionAccepted` command.
 */

import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";

const SECTION = "elelem";
const SETTING = "ghostText.enabled";
export const TOGGLE_COMMAND = "elelem-lsp.toggleGhostText";

export class GhostText implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("elelem-lsp.ghostText", vscode.StatusBarAlignment.Right, 99);
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    this.item.name = "elelem ghost text";
    this.item.command = TOGGLE_COMMAND;
    this.render();
    this.item.show();
    this.subscriptions = [
      vscode.commands.registerCommand(TOGGLE_COMMAND, () => this.toggle()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration(`${SECTION}.${SETTING}`)) {
          this.render();
        }
      }),
    ];
  }

  /** Whether elelem's suggestions are asked for and shown. */
  get enabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>(SETTING, true);
  }

  /** Registers inline completion on `client` (before it starts), asked only while enabled. */
  prepare(client: LanguageClient): void {
    client.registerProposedFeatures();
    // The client reads its middleware at each request: the toggle takes effect at once.
    client.middleware.provideInlineCompletionItems = (document, position, context, token, next) =>
      this.enabled ? next(document, position, context, token) : undefined;
  }

  private async toggle(): Promise<void> {
    await vscode.workspace.getConfiguration(SECTION).update(SETTING, !this.enabled, vscode.ConfigurationTarget.Global);
    this.render();
  }

  private render(): void {
    const on = this.enabled;
    this.item.text = on ? "$(sparkle) ghost text" : "$(circle-slash) ghost text";
    this.item.tooltip = on
      ? "elelem ghost text is on: Tab accepts, Ctrl+Right a word. Click to turn it off."
      : "elelem ghost text is off. Click to turn it on.";
  }

  dispose(): void {
    this.item.dispose();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
