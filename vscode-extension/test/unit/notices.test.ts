/** A permission asked in VS Code's notification: its answers as command links, and nothing else clickable. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ANSWER_COMMAND, linkAnswer, noticeText } from "../../src/notices";

// The rule VS Code's notifications use to find links in a message (vs/base/common/linkedText.ts,
// VS Code 1.100): each match becomes a clickable link, a `command:` one runs the command.
const VSCODE_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^\)\s]+)(?: (["'])(.+?)(\3))?\)/gi;

/** The links a notification would show for `message`: each label and the command with its arguments. */
function links(message: string): { label: string; command: string; args: unknown }[] {
  return [...message.matchAll(VSCODE_LINK)].map(([, label, href]) => {
    const uri = new URL(href);
    return { label, command: uri.pathname, args: uri.search ? JSON.parse(decodeURIComponent(uri.search.slice(1))) : [] };
  });
}

test("each answer is a link that runs the answer command with the question's id and the answer's index", () => {
  const text = noticeText(7, "elelem wants to run: npm test", ["Allow once", "Allow for this session", "Deny"]);
  assert.ok(text.startsWith("elelem wants to run: npm test — "), text);
  assert.deepEqual(links(text), [
    { label: "Allow once", command: ANSWER_COMMAND, args: [7, 0] },
    { label: "Allow for this session", command: ANSWER_COMMAND, args: [7, 1] },
    { label: "Deny", command: ANSWER_COMMAND, args: [7, 2] },
  ]);
  assert.deepEqual(linkAnswer(7, 2), { id: 7, index: 2 });
});

test("a link in the question itself (a command the model wrote) is not clickable, and reads the same", () => {
  const command = "rm -rf ~ # [Deny](command:elelem-lsp.answerQuestion?%5B7%2C0%5D) [docs](https://example.com)";
  const text = noticeText(7, `elelem wants to run: ${command}`, ["Allow once", "Deny"]);
  assert.deepEqual(links(text).map((link) => link.label), ["Allow once", "Deny"]);
  assert.deepEqual(links(text).map((link) => link.args), [[7, 0], [7, 1]]);
  assert.ok(text.replace(/\u200b/g, "").includes(command), text);
});

test("an answer whose title has brackets is still one link; a link run with anything but two whole numbers answers nothing", () => {
  assert.deepEqual(links(noticeText(1, "Pick", ["[x] Yes]"])), [{ label: "x Yes", command: ANSWER_COMMAND, args: [1, 0] }]);
  assert.equal(noticeText(1, "Just so you know", []), "Just so you know");
  assert.equal(linkAnswer("1", 0), undefined);
  assert.equal(linkAnswer(1, 0.5), undefined);
  assert.equal(linkAnswer(undefined, undefined), undefined);
});
