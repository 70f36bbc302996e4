/**
 * Ghost text and next edit, end to end in code-server (run by run.ts). A folder whose provider
 * is `llamacpp` and whose next edit asks `lmstudio`, each a fake model server on this machine
 * (tests/completion/fim_server.py, real HTTP in their wire formats): typing in calc.py shows the
 * server's suggestion as VS Code's ghost text and Tab accepts it; the status bar's "ghost text"
 * item turns it off, after which typing asks nothing; then in rename.py, a parameter renamed brings
 * its other uses as decorations with a status-bar item saying an edit waits, Alt+N jumps to the
 * first, Alt+Y accepts them all, and the saved file is renamed throughout.
 */

import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";

import { Locator, Page } from "playwright-core";

/** What run.ts lends the scenario. */
export interface EditingTools {
  step(message: string): void;
  waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T>;
  openFile(page: Page, name: string): Promise<void>;
  editorLines(page: Page, name: string): Locator;
  /** Starts code-server on `folder` with `env` added; its URL, and how to stop it. */
  launch(folder: string, env: Record<string, string>, log: string): Promise<{ url: string; stop(): void }>;
  /** The Python that runs the language server (the fake model servers are Python too). */
  python: string;
  repo: string;
  output: string;
  /** Where code-server writes its logs, the output channels' included. */
  logs: string;
}

// Zeta's markers, as the next-edit model writes them around the rewritten region.
const EDITABLE_START = "<|editable_region_start|>";
const EDITABLE_END = "<|editable_region_end|>";

const CALC = "def add(a, b):\n    return \n";
const SOURCE =
  "def total(values, scale):\n    result = 0\n    for value in values:\n        result += value * scale\n    return result * scale\n";
const RENAMED = SOURCE.replaceAll("scale", "factor");

interface ModelServer {
  url: string;
  stats(): Promise<{ requests: number }>;
  stop(): void;
}

/** tests/completion/fim_server.py in a process of its own, answering every request with `answer`. */
async function startModelServer(tools: EditingTools, answer: string[]): Promise<ModelServer> {
  const script = path.join(tools.repo, "tests", "completion", "fim_server.py");
  const child: ChildProcess = spawn(tools.python, [script, JSON.stringify(answer)], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`fim_server.py exited with ${code}`)));
  });
  return {
    url,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as { requests: number },
    stop: () => child.kill(),
  };
}

/**
 * How many `elelem.completionAccepted` commands the client has sent the server, as its trace in
 * code-server's log of the elelem output channel says.
 */
function acceptancesSent(dir: string): number {
  if (!fs.existsSync(dir)) {
    return 0;
  }
  const trace = fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => /elelem\.log$/.test(name))
    .map((name) => fs.readFileSync(path.join(dir, name), "utf8"))
    .join("\n");
  return trace.match(/Sending request 'workspace\/executeCommand[^']*'\.\s*Params: \{\s*"command": "elelem\.completionAccepted"/g)?.length ?? 0;
}

function prepareFolder(root: string): string {
  const folder = path.join(root, "editing");
  fs.mkdirSync(path.join(folder, ".vscode"), { recursive: true });
  fs.writeFileSync(path.join(folder, "calc.py"), CALC);
  fs.writeFileSync(path.join(folder, "rename.py"), SOURCE);
  fs.writeFileSync(
    path.join(folder, ".vscode", "settings.json"),
    JSON.stringify({
      "elelem.provider": "llamacpp",
      "elelem.completion": { api: "completions", multiline: "never" },
      "elelem.nextEdit": { provider: "lmstudio", api: "chat" },
      // VS Code's own word suggestions would pop up over what the test reads
      "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
      "editor.suggestOnTriggerCharacters": false,
      // the language client writes each message it sends to the elelem output channel's log
      "elelem.trace.server": "verbose",
    }),
  );
  return folder;
}

/**
 * The active editor's lines as shown, top to bottom: struck-through text in [brackets], and a
 * decoration's text after (VS Code draws it in a ::after, outside the DOM's text) in place.
 */
async function linesWithDecorations(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    const lines = Array.from(editor?.querySelectorAll<HTMLElement>(".view-line") ?? []);
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((line) =>
      Array.from(line.querySelectorAll<HTMLElement>(":scope > span > span"))
        .map((span) => {
          const after = getComputedStyle(span, "::after").content;
          const text = getComputedStyle(span).textDecorationLine.includes("line-through")
            ? `[${span.textContent}]`
            : (span.textContent ?? "");
          return text + (after && after !== "none" && after !== "normal" ? JSON.parse(after) : "");
        })
        .join("")
        .replace(/\u00a0/g, " ")
        .trim(),
    );
  });
}

export async function editingScenario(page: Page, root: string, tools: EditingTools): Promise<void> {
  const { step, waitFor, openFile, editorLines } = tools;
  const ghost = await startModelServer(tools, [" + b"]);
  const region = RENAMED.replace(/\n$/, "");
  const zeta = await startModelServer(tools, ["```rename.py\n", `${EDITABLE_START}\n`, region, `\n${EDITABLE_END}`, "\n```"]);
  const folder = prepareFolder(root);
  const codeServer = await tools.launch(
    folder,
    { LLAMACPP_BASE_URL: `${ghost.url}/v1`, LMSTUDIO_BASE_URL: `${zeta.url}/v1` },
    "code-server-editing.log",
  );
  try {
    step(`code-server on the editing folder; the model servers at ${ghost.url} and ${zeta.url}`);
    await page.goto(`${codeServer.url}/?folder=${encodeURIComponent(folder)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await page.locator(".statusbar-item", { hasText: "llamacpp" }).first().waitFor({ timeout: 60_000 });
    const toggle = page.locator(".statusbar-item", { hasText: "ghost text" }).first();
    await toggle.waitFor({ timeout: 10_000 });

    // --- Ghost text: typing shows the server's suggestion, Tab accepts it ---------------------------
    await openFile(page, "calc.py");
    const calc = editorLines(page, "calc.py");
    await calc.getByText("return").waitFor({ timeout: 10_000 });
    await calc.getByText("return").click();
    await page.keyboard.press("End");
    await page.keyboard.type("a");
    const ghostText = page.locator(".monaco-editor .ghost-text-decoration");
    const shown = await waitFor(
      "the ghost text",
      async () => (await ghostText.allInnerTexts()).join("").replace(/\s+/g, " ").trim() || undefined,
      30_000,
    );
    if (shown !== "+ b" || fs.readFileSync(path.join(folder, "calc.py"), "utf8") !== CALC) {
      throw new Error(`the ghost text reads ${JSON.stringify(shown)}, expected "+ b" (shown, not yet in the file)`);
    }
    step(`typing 'a' after 'return ' shows the ghost text "${shown}"`);
    await page.keyboard.press("Tab");
    await ghostText.first().waitFor({ state: "detached", timeout: 10_000 });
    await calc.getByText("return a + b").waitFor({ timeout: 10_000 });
    await page.keyboard.press("Control+S");
    await waitFor(
      "calc.py saved with the suggestion",
      async () => (fs.readFileSync(path.join(folder, "calc.py"), "utf8") === "def add(a, b):\n    return a + b\n" ? true : undefined),
      10_000,
    );
    await waitFor(
      "the acceptance command sent to the server",
      async () => (acceptancesSent(tools.logs) === 1 ? true : undefined),
      10_000,
    );
    step("Tab accepted it: calc.py reads 'return a + b', and VS Code ran the item's elelem.completionAccepted");

    // --- The status bar's toggle: off, typing asks nothing ---------------------------------------------
    await toggle.click();
    await page.locator(".statusbar-item", { hasText: "ghost text" }).locator(".codicon-circle-slash").waitFor({ timeout: 10_000 });
    const asked = (await ghost.stats()).requests;
    await calc.getByText("return a + b").click(); // the focus back in the editor, off the status bar
    await page.keyboard.press("End");
    await page.keyboard.type("x");
    await calc.getByText("return a + bx").waitFor({ timeout: 10_000 });
    await page.waitForTimeout(1_500); // what would be a request's time: none may come
    if ((await ghost.stats()).requests !== asked || (await ghostText.count()) !== 0) {
      throw new Error("with ghost text turned off, typing still asked the model or showed a suggestion");
    }
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Control+S");
    step("the status bar's ghost text item turned it off: typing asked nothing (it stays off, out of next edit's way)");

    // --- Next edit: a renamed parameter, its other uses suggested, Alt+N and Alt+Y ---------------------
    await openFile(page, "rename.py");
    const rename = editorLines(page, "rename.py");
    await rename.getByText("def total(values, scale):").click();
    await page.keyboard.press("End");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("Control+Shift+ArrowLeft");
    await page.keyboard.type("factor");
    await rename.getByText("def total(values, factor):").waitFor({ timeout: 10_000 });
    const waiting = page.locator(".statusbar-item", { hasText: "next edit (2)" });
    await waiting.waitFor({ timeout: 30_000 });
    const decorated = await waitFor(
      "the suggested text after the old uses",
      async () => {
        const lines = await linesWithDecorations(page);
        return lines.includes("result += value * [scale]factor") ? lines : undefined;
      },
      10_000,
    );
    if (!decorated.includes("return result * [scale]factor")) {
      throw new Error(`the second use is not shown as suggested:\n${decorated.join("\n")}`);
    }
    step("renaming 'scale' shows both other uses with 'factor' after them; the status bar says 2 edits wait");
    await page.screenshot({ path: path.join(tools.output, "next-edit.png") });
    await page.keyboard.press("Alt+N");
    await page.locator(".statusbar-item", { hasText: "Ln 4," }).waitFor({ timeout: 10_000 });
    step("Alt+N jumped to the first of them (line 4)");
    await page.keyboard.press("Alt+Y");
    await rename.getByText("return result * factor").waitFor({ timeout: 10_000 });
    await waiting.waitFor({ state: "hidden", timeout: 10_000 });
    await page.keyboard.press("Control+S");
    await waitFor(
      "rename.py saved renamed throughout",
      async () => (fs.readFileSync(path.join(folder, "rename.py"), "utf8") === RENAMED ? true : undefined),
      10_000,
    );
    await waitFor("the next edit's acceptance sent", async () => (acceptancesSent(tools.logs) === 2 ? true : undefined), 10_000);
    step("Alt+Y accepted them: rename.py is renamed throughout, and the acceptance was sent");
    await page.keyboard.press("Control+Z");
    await rename.getByText("return result * scale").waitFor({ timeout: 10_000 });
    await rename.getByText("def total(values, factor):").waitFor({ timeout: 10_000 });
    step("one Ctrl+Z takes the accepted edits back, the typed rename stays");
  } finally {
    codeServer.stop();
    ghost.stop();
    zeta.stop();
  }
}
