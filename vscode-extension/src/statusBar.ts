/**
 * The status bar item: the active folder's provider and model while idle (click to open the chat
 * view), a spinner with the reply's rolling tail while a turn runs (click to cancel).
 */

import * as vscode from "vscode";

const TAIL_CHARS = 40;

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("elelem-lsp.status", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "elelem";
    this.showProblem("starting…");
    this.item.show();
  }

  showProvider(provider: string | null, model: string | null, folder: string | undefined): void {
    const label = provider ? [provider, model].filter(Boolean).join(" · ") : "no provider";
    this.item.text = `$(hubot) ${label}`;
    this.item.tooltip = `elelem${folder ? ` in ${folder}` : ""}: ${label}. Click to open the chat.`;
    this.item.command = "elelem-lsp.showTranscript";
    this.item.backgroundColor = undefined;
  }

  showBusy(tail: string | undefined): void {
    let text = (tail ?? "").replace(/\s+/g, " ").trim();
    if (text.length > TAIL_CHARS) {
      text = `…${text.slice(-TAIL_CHARS)}`;
    }
    this.item.text = `$(loading~spin) elelem${text ? `: ${text}` : ""}`;
    this.item.tooltip = "elelem is working. Click to cancel.";
    this.item.command = "elelem-lsp.cancel";
  }

  showProblem(message: string): void {
    this.item.text = "$(hubot) elelem";
    this.item.tooltip = `elelem: ${message}`;
    this.item.command = "elelem-lsp.showTranscript";
  }

  dispose(): void {
    this.item.dispose();
  }
}
