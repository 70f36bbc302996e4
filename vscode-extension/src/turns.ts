/**
 * Runs agent turns (`elelem.ask`, `elelem.fix`) against the language server and keeps the
 * transcript in step: each turn gets the extension's own progress token, its `$/progress` values
 * feed the turn's model, and the rendered turn goes to the transcript panel on every change.
 * Cancel sends `$/cancelRequest` through the request's cancellation token and, if the turn is
 * still running shortly after, `elelem.cancel` for its folder.
 */

import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, LSPErrorCodes, ResponseError, WorkDoneProgress } from "vscode-languageclient/node";

import { ProgressTokens } from "./args";
import { toProgressValue, toTurnResult, TurnResult } from "./protocol";
import { renderTurn } from "./render";
import { applyProgress, cancelTurn, failTurn, finishTurn, newTurn, Turn } from "./transcript";
import { TranscriptPanel } from "./transcriptPanel";

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
  private readonly tokens = new ProgressTokens(`elelem-vscode-${Date.now().toString(36)}`);
  private readonly changed = new vscode.EventEmitter<Turn>();
  /** Fires whenever a turn changes (streamed events, end); `turn.status` says whether it runs. */
  readonly onDidChangeTurn = this.changed.event;

  constructor(
    private readonly client: () => LanguageClient | undefined,
    private readonly panel: TranscriptPanel,
  ) {}

  /** Runs one turn to its end; resolves to the result, or undefined when cancelled or failed. */
  async run(request: TurnRequest): Promise<TurnResult | undefined> {
    const where = request.uri ? describeLocation(request.uri) : undefined;
    const turn = newTurn(++this.turnCount, request.heading, where);
    const client = this.client();
    this.panel.show(true);
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
    const inFolder = this.running.filter(
      (running) => folder && running.uri && vscode.workspace.getWorkspaceFolder(running.uri)?.uri.toString() === folder.uri.toString(),
    );
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
    this.panel.put(`turn-${turn.id}`, renderTurn(turn));
    this.changed.fire(turn);
  }
}
