/**
 * Runs agent turns (`elelem.ask`, `elelem.fix`) against the language server and keeps the
 * chat view in step: each turn gets the extension's own progress token, its `$/progress` values
 * feed the turn's model, and the rendered turn goes to its folder's transcript on every change.
 * Cancel sends `$/cancelRequest` through the request's cancellation token and, if the turn is
 * still running shortly after, `elelem.cancel` for its folder.
 */

import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, LSPErrorCodes, ResponseError, WorkDoneProgress } from "vscode-languageclient/node";

import { ProgressTokens } from "./args";
import { toProgressValue, toTurnResult, TurnResult } from "./protocol";
import { renderTurn } from "./render";
import { applyProgress, cancelTurn, failTurn, finishTurn, newTurn, Turn } from "./transcript";

/** How long a cancelled request may keep running before `elelem.cancel` is sent too. */
const CANCEL_FALLBACK_MS = 1500;

export interface TurnRequest {
  command: "elelem.ask" | "elelem.fix";
  /** The transcript's heading for the turn. */
  heading: string;
  /** The document or folder the turn is about (its workspace folder picks the session). */
  uri?: vscode.Uri;
  /** The command's arguments, given the progress token the turn streams on. */
  build(progressToken: string): unknown[];
}

interface RunningTurn {
  turn: Turn;
  cancellation: vscode.CancellationTokenSource;
  uri?: vscode.Uri;
}

/** Where turns are shown: one transcript per workspace folder (keyed by `folderKey`). */
export interface TranscriptSink {
  /** Brings the transcript into view, leaving focus where it is by default. */
  show(preserveFocus: boolean): void;
  /** Adds or replaces one entry of a folder's transcript. */
  put(folder: string, key: string, html: string): void;
}

/** The key of the workspace folder `uri` belongs to (the first folder's without one, "" with none). */
export function folderKey(uri: vscode.Uri | undefined): string {
  const folder = (uri && vscode.workspace.getWorkspaceFolder(uri)) || vscode.workspace.workspaceFolders?.[0];
  return folder ? folder.uri.toString() : "";
}

/** A file as its workspace-relative path; a workspace folder as its name. */
export function describeLocation(uri: vscode.Uri): string {
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  if (folder && folder.uri.toString() === uri.toString()) {
    return folder.name;
  }
  return vscode.workspace.asRelativePath(uri);
}

export class TurnRunner implements vscode.Disposable {
  private turnCount = 0;
  private readonly running: RunningTurn[] = [];
  /** Every turn of this window, by id, with its folder's key. */
  private readonly turns = new Map<number, { turn: Turn; folder: string }>();
  private readonly tokens = new ProgressTokens(`elelem-vscode-${Date.now().toString(36)}`);
  private readonly changed = new vscode.EventEmitter<Turn>();
  /** Fires whenever a turn changes (streamed events, end); `turn.status` says whether it runs. */
  readonly onDidChangeTurn = this.changed.event;

  constructor(
    private readonly client: () => LanguageClient | undefined,
    private readonly sink: TranscriptSink,
  ) {}

  /** A fresh turn id (also for turns redrawn from a stored conversation). */
  nextId(): number {
    return ++this.turnCount;
  }

  /** The turn with `id`, and its folder's key. */
  find(id: number): { turn: Turn; folder: string } | undefined {
    return this.turns.get(id);
  }

  /** The running turn an edit of `uri` belongs to: the newest in its folder, else the newest. */
  runningFor(uri: vscode.Uri): Turn | undefined {
    const key = folderKey(uri);
    const inFolder = this.running.filter((running) => folderKey(running.uri) === key);
    return (inFolder.length ? inFolder : this.running).at(-1)?.turn;
  }

  /** The folder key of the newest running turn (whose turn a request of the server is for). */
  newestRunningFolder(): string | undefined {
    const newest = this.running.at(-1);
    return newest && folderKey(newest.uri);
  }

  /** Whether a turn runs in the folder with `key`. */
  busyIn(key: string): boolean {
    return this.running.some((running) => folderKey(running.uri) === key);
  }

  /** Shows a turn that is not run here (a stored one) in its folder's transcript. */
  show(turn: Turn, folder: string): void {
    this.turns.set(turn.id, { turn, folder });
    this.sink.put(folder, `turn-${turn.id}`, renderTurn(turn));
  }

  /** Renders the turn again after something outside the stream changed it (its edits). */
  refresh(turn: Turn): void {
    const known = this.turns.get(turn.id);
    if (known) {
      this.sink.put(known.folder, `turn-${turn.id}`, renderTurn(turn));
    }
  }

  /** Runs one turn to its end; resolves to the result, or undefined when cancelled or failed. */
  async run(request: TurnRequest): Promise<TurnResult | undefined> {
    const where = request.uri ? describeLocation(request.uri) : undefined;
    const turn = newTurn(this.nextId(), request.heading, where);
    this.turns.set(turn.id, { turn, folder: folderKey(request.uri) });
    const client = this.client();
    this.sink.show(true);
    if (!client || !client.isRunning()) {
      failTurn(turn, "Error: the elelem-lsp server is not running (see the elelem output channel)");
      this.update(turn);
      return undefined;
    }
    const progressToken = this.tokens.next();
    const running: RunningTurn = { turn, cancellation: new vscode.CancellationTokenSource(), uri: request.uri };
    this.running.push(running);
    this.update(turn);
    const progress = client.onProgress(WorkDoneProgress.type, progressToken, (value) => {
      const parsed = toProgressValue(value);
      if (parsed) {
        applyProgress(turn, parsed);
        this.update(turn);
      }
    });
    try {
      const raw = await client.sendRequest(
        ExecuteCommandRequest.type,
        { command: request.command, arguments: request.build(progressToken) },
        running.cancellation.token,
      );
      const result = toTurnResult(raw);
      finishTurn(turn, result);
      return result;
    } catch (error) {
      if (error instanceof ResponseError && error.code === LSPErrorCodes.RequestCancelled) {
        cancelTurn(turn);
      } else {
        failTurn(turn, `Error: ${error instanceof Error ? error.message : String(error)}`);
      }
      return undefined;
    } finally {
      progress.dispose();
      running.cancellation.dispose();
      this.running.splice(this.running.indexOf(running), 1);
      this.update(turn);
    }
  }

  /** Whether any turn is running. */
  get busy(): boolean {
    return this.running.length > 0;
  }

  /**
   * Cancels the newest running turn in `folder` (or the newest of all when none runs there).
   * Returns false when no turn of this window runs.
   */
  cancel(folder: vscode.WorkspaceFolder | undefined): boolean {
    const inFolder = this.running.filter((running) => folder && folderKey(running.uri) === folder.uri.toString());
    const target = (inFolder.length ? inFolder : this.running).at(-1);
    if (!target) {
      return false;
    }
    target.cancellation.cancel();
    setTimeout(() => {
      const client = this.client();
      if (this.running.includes(target) && client?.isRunning()) {
        const uri = target.uri ? client.code2ProtocolConverter.asUri(target.uri) : undefined;
        void client.sendRequest(ExecuteCommandRequest.type, { command: "elelem.cancel", arguments: [uri ? { uri } : {}] });
      }
    }, CANCEL_FALLBACK_MS);
    return true;
  }

  dispose(): void {
    for (const running of this.running) {
      running.cancellation.cancel();
    }
    this.changed.dispose();
  }

  private update(turn: Turn): void {
    this.refresh(turn);
    this.changed.fire(turn);
  }
}
