/**
 * The server's questions to the person during a turn, asked in two places at once: a command's
 * permission (`window/showMessageRequest`: Allow once / Allow for this session / Deny) as VS
 * Code's notification and as buttons in the chat view; the `human` provider's `elelem/input` as
 * an input box and as a text field in the view. Whichever the person uses first answers; the
 * other is withdrawn (a notification cannot be closed by an extension, so its late click is
 * ignored).
 */

import * as vscode from "vscode";
import { MessageActionItem, MessageType, ShowMessageRequestParams } from "vscode-languageclient/node";

import { ChatView } from "./chatView";

export class Questions implements vscode.Disposable {
  private count = 0;
  /** Question id -> what settles it, for answers that come from the view. */
  private readonly waiting = new Map<number, (answer: string | null) => void>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly view: ChatView) {
    this.subscription = view.onDidReceiveMessage((message) => {
      if (message.type === "answer") {
        this.waiting.get(message.id)?.(typeof message.answer === "string" ? message.answer : null);
      }
    });
  }

  /** Answers `window/showMessageRequest`: the action chosen, or null when none was. */
  async askChoice(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
    const actions = params.actions ?? [];
    const show =
      params.type === MessageType.Error
        ? vscode.window.showErrorMessage
        : params.type === MessageType.Warning
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    const answer = await this.race(
      { kind: "choice", message: params.message, options: actions.map((action) => action.title) },
      (settled) => {
        void show(params.message, ...actions.map((action) => action.title)).then((title) => settled(title ?? null));
        return () => undefined;
      },
    );
    return actions.find((action) => action.title === answer) ?? null;
  }

  /** Answers `elelem/input`: `{text}`, or null when the person declined. */
  async askText(prompt: string): Promise<{ text: string } | null> {
    const text = await this.race({ kind: "text", message: prompt, options: [] }, (settled) => {
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
    this.subscription.dispose();
  }

  /**
   * Asks in the view and through `elsewhere` (which returns how to withdraw its own question);
   * resolves with the first answer.
   */
  private race(
    question: { kind: "choice" | "text"; message: string; options: string[] },
    elsewhere: (settled: (answer: string | null) => void) => () => void,
  ): Promise<string | null> {
    const id = ++this.count;
    return new Promise((resolve) => {
      let done = false;
      let withdraw = (): void => undefined;
      const settled = (answer: string | null) => {
        if (done) {
          return;
        }
        done = true;
        this.waiting.delete(id);
        this.view.settle(id, answer);
        withdraw();
        resolve(answer);
      };
      this.waiting.set(id, settled);
      this.view.ask({ id, ...question });
      withdraw = elsewhere(settled);
    });
  }
}
