/**
 * The server's words as VS Code's notifications show them. A notification turns
 * `[label](command:…)` in its message into a link that runs the command, so words from the
 * server (which may hold a model's) are made `inert`. A choice the server asks
 * (`window/showMessageRequest`) is the question, then each answer as a command link of ours: a
 * notification with buttons cannot be closed by an extension, so one answered in the chat view
 * would stay standing; a notification showing progress closes when its task ends, but takes no
 * buttons of its own, only links in its message. Pure: no vscode import.
 */

/** The command a notification's answer link runs, with the question's id and the answer's index. */
export const ANSWER_COMMAND = "elelem-lsp.answerQuestion";

/**
 * `text` with no link a notification would make clickable: VS Code turns `[label](command:…)`
 * in a message into a link that runs the command, so a `](` is split with a zero-width space.
 * A command the model wrote can then neither pose as an answer nor run a VS Code command.
 */
export function inert(text: string): string {
  return text.replace(/\]\(/g, "]\u200b(");
}

/** The link of answer `index` to question `id`: its label without brackets, which would end the link. */
function answerLink(id: number, index: number, title: string): string {
  const label = title.replace(/[[\]]/g, "").trim() || `answer ${index + 1}`;
  return `[${label}](command:${ANSWER_COMMAND}?${encodeURIComponent(JSON.stringify([id, index]))})`;
}

/** "elelem wants to run: npm test — [Allow once](command:…) · [Allow for this session](…) · [Deny](…)" */
export function noticeText(id: number, message: string, options: readonly string[]): string {
  const links = options.map((title, index) => answerLink(id, index, title));
  return links.length ? `${inert(message)} — ${links.join(" · ")}` : inert(message);
}

/** The question id and answer index a link's command was run with, or undefined for anything else. */
export function linkAnswer(id: unknown, index: unknown): { id: number; index: number } | undefined {
  return Number.isInteger(id) && Number.isInteger(index) ? { id: id as number, index: index as number } : undefined;
}
