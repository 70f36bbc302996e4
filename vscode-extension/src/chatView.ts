/**
 * The chat view: a webview view (dockable in the sidebar, panel or secondary sidebar) that shows
 * the current folder's transcript with an input, context chips, a header of pickers, and the
 * permission and input requests of a running turn. This side keeps each folder's rendered
 * entries and replays them when the page (re)loads or the folder changes; the page script
 * (src/webview/main.ts) sanitises and shows them and sends back what the person did.
 */

import * as vscode from "vscode";

import { escapeHtml } from "./render";
import { TranscriptSink } from "./turns";
import { ChatHeader, ContextChip, ViewMessage, ViewQuestion } from "./webview/messages";

export const CHAT_VIEW_ID = "elelem-lsp.chat";

export class ChatView implements vscode.WebviewViewProvider, TranscriptSink, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  /** Folder key -> entry key -> HTML, in the order entries were first added. */
  private readonly entries = new Map<string, Map<string, string>>();
  private folder = "";
  private header: ChatHeader = { folder: "", provider: null, model: null, conversation: "", usage: "", usageDetails: "", multiRoot: false };
  private chips: ContextChip[] = [];
  private busy = false;
  /** Open requests, each with the folder key of the turn that asked (undefined: shown in any). */
  private readonly questions = new Map<number, { question: ViewQuestion; folder: string | undefined }>();
  private notes = 0;
  private readonly received = new vscode.EventEmitter<ViewMessage>();
  private readonly registration: vscode.Disposable;
  /** Fires for every message of the page. */
  readonly onDidReceiveMessage = this.received.event;

  constructor(private readonly extensionUri: vscode.Uri) {
    this.registration = vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this, {
      webviewOptions: { retainContextWhenHidden: true },
    });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.page(view.webview, dist);
    view.webview.onDidReceiveMessage((message: ViewMessage) => {
      if (message?.type === "ready") {
        this.replay();
      }
      this.received.fire(message);
    });
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
      }
    });
  }

  /** Reveals the view; `preserveFocus` false also puts the cursor in its input. */
  show(preserveFocus: boolean): void {
    if (this.view) {
      this.view.show(preserveFocus);
    } else {
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
    if (!preserveFocus) {
      this.post({ type: "focusInput" });
    }
  }

  /** Shows another folder's transcript. */
  switchFolder(folder: string): void {
    if (folder !== this.folder) {
      this.folder = folder;
      this.replay();
    }
  }

  /** Whether the folder's transcript has anything in it (in this window). */
  has(folder: string): boolean {
    return (this.entries.get(folder)?.size ?? 0) > 0;
  }

  put(folder: string, key: string, html: string): void {
    let entries = this.entries.get(folder);
    if (!entries) {
      entries = new Map();
      this.entries.set(folder, entries);
    }
    entries.set(key, html);
    if (folder === this.folder) {
      this.post({ type: "entry", key, html });
    }
  }

  /** Adds a one-line note between turns (e.g. "New conversation"). */
  note(folder: string, text: string): void {
    this.notes += 1;
    this.put(folder, `note-${this.notes}`, `<div class="note">${escapeHtml(text)}</div>`);
  }

  /** Empties a folder's transcript (another conversation is about to be shown). */
  clear(folder: string): void {
    this.entries.delete(folder);
    if (folder === this.folder) {
      this.replay();
    }
  }

  setHeader(header: ChatHeader): void {
    this.header = header;
    this.post({ type: "header", header });
  }

  setChips(chips: ContextChip[]): void {
    this.chips = chips;
    this.post({ type: "chips", chips });
  }

  setBusy(busy: boolean): void {
    this.busy = busy;
    this.post({ type: "busy", busy });
  }

  /** Says `text` to a screen reader (the turn's streaming itself is not read out). */
  announce(text: string): void {
    this.post({ type: "announce", text });
  }

  /** Offers the #file matches for what the person typed after `#`. */
  offerFiles(query: string, files: string[]): void {
    this.post({ type: "files", query, files });
  }

  /** Shows a request of `folder`'s running turn with that folder's transcript until `settle` is called for its id. */
  ask(question: ViewQuestion, folder: string | undefined): void {
    this.questions.set(question.id, { question, folder });
    if (folder === undefined || folder === this.folder) {
      this.post({ type: "question", question });
    }
  }

  /** Takes a request out of the view once it was answered (here or elsewhere). */
  settle(id: number, answer: string | null): void {
    if (this.questions.delete(id)) {
      this.post({ type: "answered", id, answer });
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.received.dispose();
  }

  /** Sends the page everything it shows: header, chips, the folder's entries, open requests. */
  private replay(): void {
    this.post({ type: "reset" });
    this.post({ type: "header", header: this.header });
    this.post({ type: "chips", chips: this.chips });
    this.post({ type: "busy", busy: this.busy });
    for (const [key, html] of this.entries.get(this.folder) ?? []) {
      this.post({ type: "entry", key, html });
    }
    for (const { question, folder } of this.questions.values()) {
      if (folder === undefined || folder === this.folder) {
        this.post({ type: "question", question });
      }
    }
  }

  private post(message: Record<string, unknown>): void {
    void this.view?.webview.postMessage(message);
  }

  private page(webview: vscode.Webview, dist: vscode.Uri): string {
    const nonce = Array.from({ length: 4 }, () => Math.random().toString(36).slice(2)).join("");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; font-src ${webview.cspSource}; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>elelem</title>
</head>
<body>
<header id="header" class="chat-header" role="toolbar" aria-label="Conversation">
  <button id="folder" class="header-button" title="The folder this conversation belongs to" aria-label="Folder"><span class="codicon codicon-folder"></span><span class="label"></span></button>
  <button id="provider" class="header-button" title="Choose the provider" aria-label="Provider"><span class="codicon codicon-hubot"></span><span class="label">provider</span></button>
  <button id="model" class="header-button" title="Choose the model" aria-label="Model"><span class="codicon codicon-symbol-parameter"></span><span class="label">default model</span></button>
  <span class="spacer"></span>
  <button id="conversations" class="icon-button" title="Open Conversation…" aria-label="Open conversation"><span class="codicon codicon-history"></span></button>
  <button id="new" class="icon-button" title="New Conversation" aria-label="New conversation"><span class="codicon codicon-add"></span></button>
</header>
<div class="conversation-title"><span id="conversation-title"></span><span id="usage" title="The conversation's tokens in and out so far, its size as the provider sees it against elelem.contextTokens, and its cost"></span></div>
<main id="log" data-elelem-transcript aria-label="Conversation" aria-busy="false">
<p class="empty">Ask below, or pick <b>Fix with elelem</b> on a problem. Type <b>#</b> to attach a file.</p>
</main>
<div id="announce" class="sr-only" role="status" aria-live="polite"></div>
<div id="questions" aria-live="assertive"></div>
<footer class="composer">
  <div id="chips" class="chips" aria-label="Context"></div>
  <div id="images" class="chips" aria-label="Images"></div>
  <div id="image-error" class="image-error" role="alert" hidden></div>
  <div id="files" class="file-list" role="listbox" aria-label="Files" hidden></div>
  <div class="input-row">
    <textarea id="input" rows="3" aria-label="Ask elelem" placeholder="Ask elelem (Enter to send, Shift+Enter for a new line, ↑ for earlier prompts, # for a file, paste or drop an image)"></textarea>
    <button id="send" class="primary" title="Send (Enter)" aria-label="Send"><span class="codicon codicon-send"></span></button>
    <button id="stop" class="danger" title="Stop the turn" aria-label="Stop" hidden><span class="codicon codicon-debug-stop"></span> Stop</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
