/**
 * The transcript webview: a panel beside the editor that shows every turn as it streams. The
 * extension renders each entry (a turn, a note) to HTML and posts it; the page replaces that entry
 * in place, keeps the thinking/tool blocks the person opened or closed, and follows the bottom.
 */

import * as vscode from "vscode";

import { escapeHtml } from "./render";

const VIEW_TYPE = "elelem-lsp.transcript";

export class TranscriptPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  /** Entry key -> HTML, in the order entries were first added. */
  private readonly entries = new Map<string, string>();
  private notes = 0;

  constructor(private readonly extensionUri: vscode.Uri) {}

  /** Opens the panel beside the editor (or reveals it), leaving focus where it is by default. */
  show(preserveFocus = true): void {
    if (this.panel) {
      this.panel.reveal(undefined, preserveFocus);
      return;
    }
    this.panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      "elelem",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
    );
    this.panel.iconPath = vscode.Uri.joinPath(this.extensionUri, "media", "elelem.svg");
    this.panel.webview.html = this.page(this.panel.webview);
    this.panel.webview.onDidReceiveMessage((message: { type?: string }) => {
      if (message?.type === "ready") {
        for (const [key, html] of this.entries) {
          this.post(key, html);
        }
      }
    });
    this.panel.onDidDispose(() => {
      this.panel = undefined;
    });
  }

  /** Adds or replaces one entry. */
  put(key: string, html: string): void {
    this.entries.set(key, html);
    this.post(key, html);
  }

  /** Adds a one-line note between turns (e.g. "New conversation"). */
  note(text: string): void {
    this.notes += 1;
    this.put(`note-${this.notes}`, `<div class="note">${escapeHtml(text)}</div>`);
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private post(key: string, html: string): void {
    void this.panel?.webview.postMessage({ type: "entry", key, html });
  }

  private page(webview: vscode.Webview): string {
    const nonce = Array.from({ length: 4 }, () => Math.random().toString(36).slice(2)).join("");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>elelem</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main id="log" data-elelem-transcript>
<p class="empty">Ask with <b>elelem: Ask</b> from the Command Palette, or pick <b>Fix with elelem</b> on a problem.</p>
</main>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>`;
  }
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 12px 24px; }
.empty { color: var(--vscode-descriptionForeground); }
.turn { border-bottom: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); padding: 10px 0; }
.prompt { font-weight: 600; white-space: pre-wrap; margin-bottom: 6px; }
.prompt::before { content: "› "; color: var(--vscode-textLink-foreground); }
.where { font-weight: normal; color: var(--vscode-descriptionForeground); margin-left: .8em; font-size: 90%; }
.saying p:first-child { margin-top: 4px; }
.saying code, .tool code { font-family: var(--vscode-editor-font-family); }
.saying pre { background: var(--vscode-textCodeBlock-background); padding: 6px 8px; overflow-x: auto; }
.thinking { opacity: .6; font-style: italic; margin: 4px 0; }
.thinking summary { cursor: pointer; }
.thinking-text { white-space: pre-wrap; padding-left: 1.2em; }
.tool { margin: 4px 0; font-family: var(--vscode-editor-font-family); font-size: 92%; }
.tool summary { cursor: pointer; overflow-wrap: anywhere; }
.tool .tool-name { font-weight: 600; }
.tool .tool-args { color: var(--vscode-descriptionForeground); }
.tool.ok .icon { color: var(--vscode-testing-iconPassed, #3fb950); }
.tool.failed .icon, .tool.failed .outcome { color: var(--vscode-errorForeground); }
.tool.running .icon { color: var(--vscode-descriptionForeground); }
.tool .outcome { margin-left: .6em; }
.tool-arguments { background: var(--vscode-textCodeBlock-background); padding: 6px 8px; white-space: pre-wrap; }
.error { color: var(--vscode-errorForeground); border-left: 3px solid var(--vscode-errorForeground); padding: 2px 8px; margin: 6px 0; white-space: pre-wrap; }
.status { color: var(--vscode-descriptionForeground); font-size: 90%; margin-top: 6px; }
.status.error { color: var(--vscode-errorForeground); }
.note { color: var(--vscode-descriptionForeground); text-align: center; padding: 8px 0; border-bottom: 1px dashed var(--vscode-panel-border, rgba(128,128,128,.35)); }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
const log = document.getElementById("log");
const toggled = new Map();
log.addEventListener("click", (event) => {
  const summary = event.target.closest && event.target.closest("summary");
  const details = summary && summary.parentElement;
  if (!details || !details.dataset.key) return;
  setTimeout(() => toggled.set(details.dataset.key, details.open));
});
window.addEventListener("message", (event) => {
  const message = event.data;
  if (!message || message.type !== "entry") return;
  const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 24;
  const empty = log.querySelector(".empty");
  if (empty) empty.remove();
  let entry = document.getElementById("entry-" + message.key);
  if (!entry) {
    entry = document.createElement("div");
    entry.id = "entry-" + message.key;
    log.appendChild(entry);
  }
  entry.innerHTML = message.html;
  for (const details of entry.querySelectorAll("details[data-key]")) {
    if (toggled.has(details.dataset.key)) details.open = toggled.get(details.dataset.key);
  }
  if (atBottom) window.scrollTo(0, document.body.scrollHeight);
});
vscode.postMessage({ type: "ready" });
`;
