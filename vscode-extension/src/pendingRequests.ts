/**
 * The server's requests waiting for the person, each tied to the folder whose turn asked: one is
 * settled by its answer, by the server withdrawing it, or unanswered when that folder's turn
 * ends (Stop, an error, the end of the turn), so no stale request stays in the chat view.
 * Pure: no vscode import.
 */

interface Waiting {
  /** The folder key of the turn that asked; undefined when no turn of this window runs. */
  folder: string | undefined;
  settle(answer: string | null): void;
}

export class PendingRequests {
  private readonly waiting = new Map<number, Waiting>();

  /** Waits for request `id` of `folder`'s turn; `settle` runs once, with the answer or null. */
  add(id: number, folder: string | undefined, settle: (answer: string | null) => void): void {
    let settled = false;
    this.waiting.set(id, {
      folder,
      settle: (answer) => {
        if (!settled) {
          settled = true;
          this.waiting.delete(id);
          settle(answer);
        }
      },
    });
  }

  /** Answers request `id`; a request already settled ignores it. */
  answer(id: number, answer: string | null): void {
    this.waiting.get(id)?.settle(answer);
  }

  /** Settles every request of `folder`'s turn unanswered: the turn is over. */
  endTurn(folder: string): void {
    for (const waiting of [...this.waiting.values()]) {
      if (waiting.folder === folder) {
        waiting.settle(null);
      }
    }
  }
}
