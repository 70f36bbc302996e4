/**
 * The server's questions to the person during a turn, asked in two places at once: a command's
 * permission (`window/showMessageRequest`: Allow once / Allow for this session / Deny) as VS
 * Code's notification and as buttons in the chat view; the `human` provider's `elelem/input` as
 * an input box and as a text field in the view. Whichever the person uses first answers; the
 * other goes away. (A notification with buttons cannot be closed by an extension, so the choice
 * is a notification showing progress, which closes when its task ends, with the answers as
 * links: `notices`.) A question belongs to the folder whose turn asked: it goes
 * unanswered when the server withdraws it or that turn ends (Stop, an error), and the view shows
 * it with that folder's conversation only.
 */

import * as vscode from "vscode";
import { MessageActionItem, ShowMessageRequestParams } from "vscode-languageclient/node";

import { ChatView } from "./chatView";
import { PendingRequests } from "./pendingRequests";
import { ANSWER_COMMAND, linkAnswer, noticeText } from "./notices";
import { TurnRunner } from "./turns";

export class Questions implements vscode.Disposable {
  private count = 0;
  private readonly pending = new PendingRequests();
  /** The answers of each choice standing in a notification, by question id (its links give the index). */
  private readonly noticed = new Map<number, readonly string[]>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly view: ChatView,
    private readonly runner: TurnRunner,
  ) {
    this.subscriptions = [
      view.onDidReceiveMessage((message) => {
        if (message.type === "answer") {
          this.pending.answer(message.id, typeof message.answer === "string" ? message.answer : null);
        }
      }),
      vscode.commands.registerCommand(ANSWER_COMMAND, (id: unknown, index: unknown) => {
        const link = linkAnswer(id, index);
        const title = link && this.noticed.get(link.id)?.[link.index];
        if (link && title !== undefined) {
          this.pending.answer(link.id, title);
        }
      }),
      runner.onDidChangeTurn((turn) => {
        const folder = runner.find(turn.id)?.folder;
        if (turn.status !== "running" && folder !== undefined && !runner.busyIn(folder)) {
          this.pending.endTurn(folder);
        }
      }),
    ];
  }

  /** Answers `window/showMessageRequest`: the action chosen, or null when none was. */
  async askChoice(params: ShowMessageRequestParams, token: vscode.CancellationToken): Promise<MessageActionItem | null> {
    const actions = params.actions ?? [];
    const titles = actions.map((action) => action.title);
    const answer = await this.race({ kind: "choice", message: params.message, options: titles }, token, (settled, id) => {
      let answered = false;
      let close = (): void => {
        answered = true; // before the notification's task began: it ends at once
      };
      this.noticed.set(id, titles);
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: noticeText(id, params.message, titles), cancellable: true },
        (_progress, cancelled) =>
          new Promise<void>((closed) => {
            if (answered) {
              return closed();
            }
            close = closed;
            cancelled.onCancellationRequested(() => settled(null));
          }),
      );
      return () => {
        this.noticed.delete(id);
        close();
      };
    });
    return actions.find((action) => action.title === answer) ?? null;
  }

  /** Answers `elelem/input`: `{text}`, or null when the person declined. */
  async askText(prompt: string, token: vscode.CancellationToken): Promise<{ text: string } | null> {
    const text = await this.race({ kind: "text", message: prompt, options: [] }, token, (settled) => {
      const box = vscode.window.createInputBox();
      box.title = "elelem";
      box.prompt = prompt;
      box.ignoreFocusOut = true;
      let accepted = false;
      box.onDidAccept(() => {
        accepted = true;
        settled(box.value);
        box.hide();
      });
      box.onDidHide(() => {
        if (!accepted) {
          settled(null);
        }
        box.dispose();
      });
      box.show();
      return () => box.hide();
    });
    return text === null ? null : { text };
  }

  dispose(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }

  /**
   * Asks in the view and through `elsewhere` (which returns how to withdraw its own question);
   * resolves with the first answer, or null once the server withdraws the request or the turn
   * that asked ends.
   */
  private race(
    question: { kind: "choice" | "text"; message: string; options: string[] },
    token: vscode.CancellationToken,
    elsewhere: (settled: (answer: string | null) => void, id: number) => () => void,
  ): Promise<string | null> {
    const id = ++this.count;
    const folder = this.runner.newestRunningFolder();
    return new Promise((resolve) => {
      let withdraw = (): void => undefined;
      const cancelled = token.onCancellationRequested(() => this.pending.answer(id, null));
      this.pending.add(id, folder, (answer) => {
        cancelled.dispose();
        this.view.settle(id, answer);
        withdraw();
        resolve(answer);
      });
      this.view.ask({ id, ...question }, folder);
      withdraw = elsewhere((answer) => this.pending.answer(id, answer), id);
    });
  }
}
