/**
 * End-to-end test in a real VS Code: code-server (from the npm registry) in Debian's chromium,
 * driven by playwright-core. Installs the packaged .vsix, opens a copy of test/e2e/workspace
 * (whose .agents/plugins/scripted.py is the provider), and checks what a person would see in
 * the chat view: Ctrl+Alt+I opens it with the active file as a chip; a question typed in its
 * input and sent with Enter streams in and edits the open file; the changed file opens a
 * `vscode.diff`; a code block is highlighted and Insert at Cursor puts it in the editor; "Fix
 * with elelem" from the quick-fix menu streams into the view too; a command's permission is
 * answered with the view's own "Allow once", and VS Code's notification of it goes too; the
 * header says the context once, in the server's words; Stop ends a long turn; the header's provider picker
 * switches to the human provider, whose question is answered in the view (and its input box goes
 * away); "Undo this turn's edits" restores the file in the editor and on disk, and Ctrl+Z takes
 * that back; after a window reload the view shows the folder's conversation and the draft again;
 * New Conversation empties it and Open Conversation… brings the old one back. Screenshots of the
 * view in the dark and light themes. Then, in a second code-server with workspace trust on, an
 * untrusted folder
 * whose .vscode/settings.json sets `elelem.execute: "allow"`, `allowCommands` and a declared
 * provider: the command still waits for "Allow once"/"Deny" (Deny, answered in the notification,
 * takes the question out of the chat view too), the declared provider gets no request,
 * the folder's own plugin never runs; after "Trust" its settings and plugin apply at once.
 * Screenshots go to tests/output/vscode/.
 *
 * Run: npm run e2e (builds the .vsix first). Environment:
 *   ELELEM_CODE_SERVER   code-server entry (default: the one install-e2e.sh puts in the cache)
 *   ELELEM_LSP_COMMAND   JSON array, the server command (default ["elelem-lsp", "serve"])
 *   ELELEM_CHROMIUM      browser binary (default /usr/bin/chromium)
 *   ELELEM_UPDATE_DOCS_SCREENSHOT=1  also copy the chat view's screenshots to docs/ and media/chat.png
 */

import { ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

import { BrowserContext, chromium, Frame, Locator, Page } from "playwright-core";

import { editingScenario } from "./editing";

const EXTENSION_DIR = path.resolve(__dirname, "../../..");
const REPO_DIR = path.resolve(EXTENSION_DIR, "..");
const OUTPUT_DIR = path.join(REPO_DIR, "tests", "output", "vscode");
const DOCS_SCREENSHOT = path.join(REPO_DIR, "vscode-extension", "media", "chat.png");
const DOCS_DIR = path.join(REPO_DIR, "docs");
const VSIX = path.join(EXTENSION_DIR, "elelem-lsp.vsix");
const FIXTURE = path.join(EXTENSION_DIR, "test", "e2e", "workspace");
const CODE_SERVER =
  process.env.ELELEM_CODE_SERVER ??
  path.join(os.homedir(), ".cache/elelem-vscode-e2e/code-server-4.100.3/node_modules/code-server/out/node/entry.js");
const CHROMIUM = process.env.ELELEM_CHROMIUM ?? "/usr/bin/chromium";
const SERVER_COMMAND: string[] = process.env.ELELEM_LSP_COMMAND
  ? JSON.parse(process.env.ELELEM_LSP_COMMAND)
  : ["elelem-lsp", "serve"];
/** Which scenarios run (comma-separated): chat, untrusted, editing; all by default. */
const SCENARIOS = new Set((process.env.ELELEM_E2E_SCENARIOS ?? "chat,untrusted,editing").split(","));

const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-crash-reporter",
];

const started = Date.now();

function step(message: string): void {
  console.log(`[e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) {
        return value;
      }
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ""}`);
}

/** The folders of one run: a copy of the workspace and code-server's own state. */
function prepareFolders() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "elelem-vscode-e2e-"));
  const workspace = path.join(root, "workspace");
  fs.cpSync(FIXTURE, workspace, { recursive: true });
  const userData = path.join(root, "user-data");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify(
      {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "workbench.colorTheme": "Default Dark Modern",
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "extensions.ignoreRecommendations": true,
        "git.enabled": false,
        "json.schemaDownload.enable": false,
        "editor.minimap.enabled": false,
        "chat.commandCenter.enabled": false,
        "elelem.server.command": SERVER_COMMAND,
      },
      null,
      2,
    ),
  );
  const extensions = path.join(root, "extensions");
  const config = path.join(root, "config.yaml");
  fs.writeFileSync(config, "auth: none\ncert: false\n");
  return { root, workspace, userData, extensions, config };
}

type Folders = ReturnType<typeof prepareFolders>;

function codeServerArgs(folders: Folders): string[] {
  return [
    CODE_SERVER,
    "--config",
    folders.config,
    "--user-data-dir",
    folders.userData,
    "--extensions-dir",
    folders.extensions,
  ];
}

function installExtension(folders: Folders): void {
  const result = spawnSync(process.execPath, [...codeServerArgs(folders), "--install-extension", VSIX], {
    encoding: "utf8",
    timeout: 120_000,
  });
  const output = `${result.stdout}${result.stderr}`;
  if (result.status !== 0 || !/was successfully installed/.test(output)) {
    throw new Error(`--install-extension failed (exit ${result.status}):\n${output}`);
  }
}

interface Launch {
  /** The folder to open. */
  folder: string;
  /** Leave VS Code's workspace trust on (the first run turns it off). */
  trust?: boolean;
  /** HOME of code-server and so of the language server (its ~/.agents/plugins). */
  home?: string;
  log?: string;
  /** More environment for code-server, and so for the language server. */
  env?: Record<string, string>;
}

/** Starts code-server in its own process group, logging to the output folder. */
async function startCodeServer(folders: Folders, port: number, launch: Launch): Promise<ChildProcess> {
  const log = fs.openSync(path.join(OUTPUT_DIR, launch.log ?? "code-server.log"), "w");
  const child = spawn(
    process.execPath,
    [
      ...codeServerArgs(folders),
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--disable-telemetry",
      "--disable-update-check",
      ...(launch.trust ? [] : ["--disable-workspace-trust"]),
      "--disable-getting-started-override",
      launch.folder,
    ],
    {
      detached: true,
      stdio: ["ignore", log, log],
      // The server keeps conversations in the state folder: the run's own, not the machine's.
      env: {
        ...process.env,
        XDG_STATE_HOME: path.join(folders.root, "state"),
        ...(launch.home ? { HOME: launch.home } : {}),
        ...launch.env,
      },
    },
  );
  await waitFor(
    "code-server to answer",
    async () => {
      if (child.exitCode !== null) {
        throw new Error(`code-server exited with ${child.exitCode}; see ${OUTPUT_DIR}/code-server.log`);
      }
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      return response.ok ? true : undefined;
    },
    60_000,
  );
  return child;
}

function stopProcessGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) {
    return;
  }
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    try {
      process.kill(-child.pid, 0);
    } catch {
      return;
    }
    spawnSync("sleep", ["0.1"]);
  }
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // gone between the check and the kill
  }
}

/**
 * Opens a quick input with `key`, types `text` and accepts once the focused row shows `row`
 * (accepting earlier takes the previous top row). Retries while the workbench is still
 * registering commands right after it appears, and when the keys went to a webview that kept
 * them: then it clicks into the first editor so the workbench has the focus.
 */
async function pick(page: Page, key: string, text: string, row: string): Promise<void> {
  const input = page.locator(".quick-input-widget input");
  const focusedRow = page.locator(".quick-input-list .monaco-list-row.focused", { hasText: row });
  for (let attempt = 1; ; attempt++) {
    try {
      await page.keyboard.press("Escape");
      await page.keyboard.press(key);
      await input.waitFor({ state: "visible", timeout: 5_000 });
      await input.fill(text, { timeout: 5_000 });
      await focusedRow.waitFor({ state: "visible", timeout: 5_000 });
      await page.keyboard.press("Enter");
      return;
    } catch (error) {
      if (attempt >= 6) {
        throw new Error(`could not pick "${row}" after ${key}: ${error}`);
      }
      step(`retrying "${row}" (${String(error).split("\n")[0]})`);
      await page.keyboard.press("Escape");
      await page.locator(".editor-group-container .monaco-editor .view-lines").first().click().catch(() => undefined);
      await page.waitForTimeout(500);
    }
  }
}

/** Runs a command from the command palette. */
async function runCommand(page: Page, label: string): Promise<void> {
  await pick(page, "F1", `>${label}`, label);
}

/** "elelem: Ask" from the palette, answering its input box with `prompt`. */
async function ask(page: Page, prompt: string): Promise<void> {
  await runCommand(page, "elelem: Ask");
  await page.locator(".quick-input-widget", { hasText: "Ask elelem" }).waitFor({ state: "visible", timeout: 10_000 });
  await answerInputBox(page, prompt);
}

/** Types into the open input box and accepts; `fill` targets the box, so no key is lost under load. */
async function answerInputBox(page: Page, text: string): Promise<void> {
  const input = page.locator(".quick-input-widget input");
  await input.fill(text);
  await input.press("Enter");
}

/** Picks `name` in the "elelem: Select Provider" quick pick and waits for the status bar to show it. */
async function selectProvider(page: Page, name: string, folder = "workspace"): Promise<void> {
  await runCommand(page, "elelem: Select Provider");
  await page.locator(".quick-input-widget", { hasText: `elelem provider for ${folder}` }).waitFor({ state: "visible" });
  await page.locator(".quick-input-widget input").fill(name);
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: name }).waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".statusbar-item", { hasText: name }).first().waitFor({ timeout: 15_000 });
}

/** Opens a file in the first editor group, so the transcript beside it stays in view. */
async function openFile(page: Page, name: string): Promise<void> {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+1");
  await pick(page, "Control+P", name, name);
  await page.locator(`.tabs-container .tab.active`, { hasText: name }).waitFor({ timeout: 10_000 });
}

/** The editor whose tab is `name` (its group's visible text). */
function editorLines(page: Page, name: string): Locator {
  return page
    .locator(".editor-group-container", { has: page.locator(".tab.active", { hasText: name }) })
    .locator(".monaco-editor .view-lines");
}

async function transcriptFrame(page: Page): Promise<Frame> {
  return waitFor(
    "the transcript webview",
    async () => {
      for (const frame of page.frames()) {
        if (await frame.$("[data-elelem-transcript]").catch(() => null)) {
          return frame;
        }
      }
      return undefined;
    },
    30_000,
  );
}

async function transcriptText(frame: Frame, selector: string): Promise<string> {
  return (await frame.locator(selector).innerText()).replace(/\s+/g, " ");
}

function assertIncludes(text: string, expected: string, where: string): void {
  if (!text.includes(expected)) {
    throw new Error(`${where}: expected to see ${JSON.stringify(expected)} in:\n${text}`);
  }
  step(`saw ${JSON.stringify(expected)} in ${where}`);
}

/** The chat view's input: the question typed and sent with Enter. */
async function sendInChat(frame: Frame, question: string): Promise<void> {
  const input = frame.locator("#input");
  await input.click();
  await input.fill(question);
  await input.press("Enter");
  await waitFor("the input to clear after sending", async () => ((await input.inputValue()) === "" ? true : undefined), 5_000);
}

/** The n-th turn of the chat view, once it ended with `status` (a done one once its result named the provider). */
async function endedTurn(frame: Frame, index: number, status = "done"): Promise<Locator> {
  const turn = frame.locator("section.turn").nth(index);
  await turn.and(frame.locator(`.${status}`)).waitFor({ timeout: 30_000 });
  if (status === "done") {
    // the progress's end comes first; the command's result, which names the provider, a moment later
    await turn.locator("footer.status", { hasText: "done — " }).waitFor({ timeout: 10_000 });
  }
  return turn;
}

/** Picks a color theme with Ctrl+K Ctrl+T and waits for the workbench to wear it. */
async function colorTheme(page: Page, theme: string, kind: "vs" | "vs-dark"): Promise<void> {
  await page.keyboard.press("Escape");
  await page.locator(".editor-group-container .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+T");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(theme);
  // The row's label is the theme's short name ("Light Modern"); the full one is its description.
  await page.locator(".quick-input-list .monaco-list-row", { hasText: theme }).first().click();
  await page.waitForFunction(
    (wanted) => document.querySelector(".monaco-workbench")?.classList.contains(wanted) ?? false,
    kind,
    { timeout: 15_000 },
  );
  await page.waitForTimeout(500); // the webview picks up the new theme variables a moment later
}

/** Widens the primary sidebar (where the chat view is) by dragging its edge. */
async function widenSidebar(page: Page, by: number): Promise<void> {
  const box = await page.locator("#workbench\\.parts\\.sidebar").boundingBox();
  if (!box) {
    return;
  }
  const x = box.x + box.width;
  const y = box.y + box.height / 2;
  await page.mouse.move(x + 1, y);
  await page.mouse.down();
  await page.mouse.move(x + by, y, { steps: 8 });
  await page.mouse.up();
}

function readFile(folders: Folders, name: string): string {
  return fs.readFileSync(path.join(folders.workspace, name), "utf8");
}

async function scenario(page: Page, folders: Folders, url: string): Promise<void> {
  step(`opening ${url}`);
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await page.locator(".statusbar-item", { hasText: "scripted" }).first().waitFor({ timeout: 60_000 });
  step("workbench up; the status bar shows the folder's provider 'scripted'");

  // --- The chat view: opened with its keybinding, the active file attached as a chip -------------
  await openFile(page, "hello.txt");
  await editorLines(page, "hello.txt").getByText("Hello, world!").waitFor({ timeout: 10_000 });
  await page.keyboard.press("Control+Alt+I");
  let frame = await transcriptFrame(page);
  await frame.locator("#header #provider", { hasText: "scripted" }).waitFor({ timeout: 15_000 });
  assertIncludes(await frame.locator("#header #folder").innerText(), "workspace", "the chat header's folder");
  await frame.locator(".chip", { hasText: "hello.txt" }).waitFor({ timeout: 10_000 });
  step("Ctrl+Alt+I opened the chat view; the header names the folder and provider, hello.txt is a chip");
  await widenSidebar(page, 160);

  // --- A question typed in the input and sent with Enter streams in, and edits the file ----------
  await sendInChat(frame, "Greet elelem instead of the world");
  const firstTurn = frame.locator("section.turn").first();
  await firstTurn.locator(".saying").first().waitFor({ timeout: 30_000 });
  const whileRunning = await firstTurn.getAttribute("class");
  if (whileRunning !== "turn running") {
    throw new Error(`the reply should stream in before the turn ends; the turn was "${whileRunning}" at its first text`);
  }
  await frame.locator("#stop").waitFor({ state: "visible", timeout: 5_000 }).catch(() => undefined);
  step("the reply's first text is visible while the turn is still running");
  await endedTurn(frame, 0);
  const turnText = await transcriptText(frame, "section.turn >> nth=0");
  assertIncludes(turnText, "Greet elelem instead of the world", "the turn's heading");
  assertIncludes(turnText, "I'll change the greeting in hello.txt.", "the streamed reply");
  assertIncludes(turnText, "Edited hello.txt", "the tool call's row");
  assertIncludes(turnText, "Done: hello.txt is updated.", "the final reply");
  assertIncludes(turnText, "1 file changed hello.txt +1 −1", "the turn's changed files");
  assertIncludes(turnText, "done — scripted", "the turn's footer");
  await frame.locator("#announce", { hasText: "elelem: done — scripted" }).waitFor({ timeout: 5_000 });
  await frame.locator("#log[aria-busy=false]").waitFor({ timeout: 5_000 });
  step("a screen reader hears the turn's end from the status region, not every streamed change");
  // the server's words on the conversation: its tokens so far, then the context against the budget
  await frame.locator("#usage", { hasText: /^[\d,]+ in · [\d,]+ out · context [1-9][\d,]* of [1-9][\d,]*$/ }).waitFor({ timeout: 10_000 });
  const header = await frame.locator("#usage").innerText();
  const contextFigures = header.match(/[\d,]+ of [\d,]+/g) ?? [];
  if (contextFigures.length !== 1 || /tokens|≈/.test(header)) {
    throw new Error(`the header should say the context once; it says ${JSON.stringify(header)}`);
  }
  step(`the header gives the conversation's tokens and its context once, in the server's words: ${header}`);
  const bold = await firstTurn.locator(".saying strong").first().innerText();
  if (bold !== "hello.txt") {
    throw new Error(`the reply's markdown was not rendered: <strong> holds ${JSON.stringify(bold)}`);
  }
  const thinking = firstTurn.locator("details.thinking");
  if ((await thinking.getAttribute("open")) !== null) {
    throw new Error("thinking should be collapsed once the turn is done");
  }
  await thinking.locator("summary").click();
  await thinking.locator(".thinking-text", { hasText: "the request wants it to greet elelem" }).waitFor({ timeout: 5_000 });
  step("thinking is collapsed, and opens on a click");
  await firstTurn.locator("details.tool:not(.checked) summary").click();
  await firstTurn.locator(".tool-arguments", { hasText: '"old": "Hello, world"' }).waitFor({ timeout: 5_000 });
  step("the tool row opens to its arguments");
  assertIncludes(await firstTurn.locator("details.checked summary").innerText(), "checked hello.txt: no new problems", "the check after the edit");
  await editorLines(page, "hello.txt").getByText("Hello, elelem!").waitFor({ timeout: 10_000 });
  step("hello.txt in the editor says 'Hello, elelem!'");

  // --- The changed file opens VS Code's diff: before the turn against now --------------------------
  await firstTurn.locator("button[data-action=diff]", { hasText: "hello.txt" }).click();
  await page.locator(".tab.active", { hasText: "before the turn" }).waitFor({ timeout: 10_000 });
  const diff = page.locator(".monaco-diff-editor").first();
  await diff.locator(".editor.original .view-lines").getByText("Hello, world!").waitFor({ timeout: 10_000 });
  await diff.locator(".editor.modified .view-lines").getByText("Hello, elelem!").waitFor({ timeout: 10_000 });
  step("the file's row opened a diff: 'Hello, world!' before the turn, 'Hello, elelem!' now");
  await page.screenshot({ path: path.join(OUTPUT_DIR, "diff.png") });
  await page.keyboard.press("Control+W");

  // --- A code block: highlighted, Insert at Cursor puts it in the editor ------------------------
  await openFile(page, "scratch.py");
  await sendInChat(frame, "Show code for a greeting");
  const codeTurn = await endedTurn(frame, 1);
  const block = codeTurn.locator("pre.code-block");
  await block.locator(".hljs-keyword", { hasText: "def" }).waitFor({ timeout: 5_000 });
  await block.locator("button[aria-label='Copy code']").waitFor();
  step("the reply's code block is highlighted and has Copy and Insert buttons");
  await block.locator("button[aria-label='Insert code at cursor']").click();
  await editorLines(page, "scratch.py").getByText("def greet(name):").waitFor({ timeout: 10_000 });
  step("Insert at Cursor put the code into scratch.py");
  await block.locator("button[aria-label='Copy code']").click();
  await waitFor(
    "the code on the clipboard",
    async () => ((await page.evaluate(() => navigator.clipboard.readText())).includes('return f"Hello, {name}!"') ? true : undefined),
    10_000,
  );
  step("Copy put the code on the clipboard");

  // --- #file completion attaches another file as a chip; its × takes it off again ---------------
  const input = frame.locator("#input");
  await input.click();
  await input.pressSequentially("#hel");
  await frame.locator(".file-row.selected", { hasText: "hello.txt" }).waitFor({ timeout: 10_000 });
  await input.press("Enter");
  await frame.locator(".chip", { hasText: "hello.txt" }).waitFor({ timeout: 5_000 });
  if ((await input.inputValue()) !== "") {
    throw new Error(`the picked #file should leave the input, which holds ${JSON.stringify(await input.inputValue())}`);
  }
  await frame.getByRole("button", { name: "Remove hello.txt from the context" }).click();
  await frame.locator(".chip", { hasText: "hello.txt" }).waitFor({ state: "detached", timeout: 5_000 });
  step("#hel offered hello.txt, Enter attached it as a chip, its × removed it");

  // --- Fix with elelem from the quick-fix menu streams into the chat view too --------------------
  await openFile(page, "config.json");
  const squiggle = page.locator(".editor-group-container .monaco-editor .squiggly-error");
  await squiggle.first().waitFor({ timeout: 30_000 });
  step("config.json shows its JSON problem");
  await editorLines(page, "config.json").click();
  await page.keyboard.press("F8"); // go to the problem
  await page.keyboard.press("Escape");
  const fixAction = page.locator(".action-widget .monaco-list-row", { hasText: "Fix with elelem" }).first();
  await waitFor(
    "the 'Fix with elelem' quick fix",
    async () => {
      await page.keyboard.press("Control+.");
      try {
        await fixAction.waitFor({ state: "visible", timeout: 3_000 });
        return true;
      } catch {
        await page.keyboard.press("Escape"); // "No code actions available" while diagnostics settle
        return undefined;
      }
    },
    30_000,
  );
  await page.keyboard.press("Enter"); // the only quick fix is the focused one
  await endedTurn(frame, 2);
  const fixText = await transcriptText(frame, "section.turn >> nth=2");
  assertIncludes(fixText, "Fix: Expected comma", "the fix turn's heading");
  assertIncludes(fixText, "Adding the missing comma in config.json.", "the fix turn's reply");
  assertIncludes(fixText, "Edited config.json", "the fix turn's tool call");
  await editorLines(page, "config.json").getByText('"name": "demo",').waitFor({ timeout: 10_000 });
  await waitFor("the JSON problem to go away", async () => ((await squiggle.count()) === 0 ? true : undefined), 15_000);
  step("config.json has its comma and no problem left");

  // --- A command's permission, answered in the chat view (the notification shows it too) --------
  await openFile(page, "hello.txt");
  await sendInChat(frame, "Run the greeting script");
  const question = frame.locator(".question", { hasText: "elelem wants to run: echo elelem-ran" });
  await question.waitFor({ timeout: 30_000 });
  await page.locator(".notification-toast", { hasText: "elelem wants to run: echo elelem-ran" }).waitFor({ timeout: 10_000 });
  step("the permission request is in the chat view and in VS Code's notification");
  // Someone typing their next prompt keeps typing: a Space must not press "Allow once".
  await page.keyboard.type("next ");
  if ((await frame.locator("#input").inputValue()) !== "next " || (await question.count()) !== 1) {
    throw new Error("the permission request took the focus from the input");
  }
  await frame.locator("#input").fill("");
  step("the request left the focus in the input: 'next ' was typed there, nothing was allowed");
  const darkShot = path.join(OUTPUT_DIR, "chat-dark.png");
  await page.screenshot({ path: darkShot });
  await question.getByRole("button", { name: "Allow once" }).click();
  await question.waitFor({ state: "detached", timeout: 10_000 });
  // One question, one place to answer it: answered in the view, the notification goes too.
  await page.locator(".notification-toast", { hasText: "elelem wants to run" }).waitFor({ state: "detached", timeout: 10_000 });
  const runTurn = await endedTurn(frame, 3);
  const runText = (await runTurn.innerText()).replace(/\s+/g, " ");
  assertIncludes(runText, "Ran echo elelem-ran — exit 0", "the allowed command");
  assertIncludes(runText, "The command printed elelem-ran.", "the command's output in the reply");
  await runTurn.locator("details.tool summary").click();
  await runTurn.locator(".tool-output", { hasText: "elelem-ran" }).waitFor({ timeout: 5_000 });
  step("the command's row opens to what it printed");

  await runCommand(page, "Notifications: Show Notifications");
  const centre = page.locator(".notifications-center");
  await centre.waitFor({ state: "visible", timeout: 10_000 });
  if ((await centre.locator(".notification-list-item", { hasText: "elelem wants to run" }).count()) !== 0) {
    throw new Error("the permission answered in the view is still in the notification centre");
  }
  await page.keyboard.press("Escape"); // closes the notification centre
  await centre.waitFor({ state: "hidden", timeout: 10_000 });
  step("answered in the view, the permission left VS Code's notifications too (toast and notification centre)");

  // Screenshots for the docs: the dark one above (the question pending), the light one here.
  await colorTheme(page, "Default Light Modern", "vs");
  // the opened row's output at the bottom of the view, as a person who follows the turn sees it
  await frame.locator("#log").evaluate((log) => log.scrollTo(0, log.scrollHeight));
  const lightShot = path.join(OUTPUT_DIR, "chat-light.png");
  await page.screenshot({ path: lightShot });
  await colorTheme(page, "Default Dark Modern", "vs-dark");
  if (process.env.ELELEM_UPDATE_DOCS_SCREENSHOT === "1") {
    fs.mkdirSync(DOCS_DIR, { recursive: true });
    fs.copyFileSync(darkShot, path.join(DOCS_DIR, "vscode-chat-dark.png"));
    fs.copyFileSync(lightShot, path.join(DOCS_DIR, "vscode-chat-light.png"));
    fs.copyFileSync(darkShot, DOCS_SCREENSHOT);
    step(`copied the screenshots to ${DOCS_DIR} and ${DOCS_SCREENSHOT}`);
  }

  // --- Stop a long turn from the chat view ------------------------------------------------------
  await sendInChat(frame, "Tell me slowly about everything");
  const slowTurn = frame.locator("section.turn").nth(4);
  await slowTurn.locator(".saying", { hasText: "word3" }).waitFor({ timeout: 30_000 });
  await frame.locator("#stop").click();
  await endedTurn(frame, 4, "cancelled");
  assertIncludes(await transcriptText(frame, "section.turn >> nth=4"), "cancelled", "the cancelled turn's footer");
  await frame.locator("#send").waitFor({ state: "visible", timeout: 10_000 });
  step("Stop ended the turn: 'cancelled', and Send is back");

  // --- The header's provider picker; the human provider's question answered in the view --------
  // (this turn also shows the cancelled one really stopped: the server runs one turn per folder)
  await frame.locator("#header #provider").click();
  await page.locator(".quick-input-widget", { hasText: "elelem provider for workspace" }).waitFor({ state: "visible" });
  await page.locator(".quick-input-widget input").fill("human");
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "human" }).waitFor();
  await page.keyboard.press("Enter");
  await frame.locator("#header #provider", { hasText: "human" }).waitFor({ timeout: 15_000 });
  const folderSettings = JSON.parse(readFile(folders, path.join(".vscode", "settings.json")));
  if (folderSettings["elelem.provider"] !== "human") {
    throw new Error(`the provider picker should write the folder setting; .vscode/settings.json has ${JSON.stringify(folderSettings)}`);
  }
  step("the header's provider picker switched to 'human' (header and .vscode/settings.json)");
  await sendInChat(frame, "Say hello to the team");
  const humanQuestion = frame.locator(".question", { hasText: "Say hello to the team" });
  await humanQuestion.waitFor({ timeout: 30_000 });
  const inputBox = page.locator(".quick-input-widget", { hasText: "Say hello to the team" });
  await inputBox.waitFor({ state: "visible", timeout: 10_000 });
  step("the human provider's question is in the chat view and in an input box (elelem/input)");
  await humanQuestion.locator("textarea").fill("Hello, team! (typed by a person)");
  await humanQuestion.locator("textarea").press("Enter");
  const humanText = (await (await endedTurn(frame, 5)).innerText()).replace(/\s+/g, " ");
  assertIncludes(humanText, "Hello, team! (typed by a person)", "the human provider's reply");
  assertIncludes(humanText, "done — human", "the human turn's footer");
  await inputBox.waitFor({ state: "hidden", timeout: 10_000 });
  step("answered in the view, the input box went away");
  await selectProvider(page, "scripted");

  // --- Undo a turn that created a file: the file goes ------------------------------------------
  await sendInChat(frame, "Create notes for the team");
  const notesTurn = await endedTurn(frame, 6);
  assertIncludes((await notesTurn.innerText()).replace(/\s+/g, " "), "notes.txt +2 −0", "the created file's row");
  await waitFor("notes.txt on disk", async () => (fs.existsSync(path.join(folders.workspace, "notes.txt")) ? true : undefined), 10_000);
  await notesTurn.locator("button[data-action=undo]").click();
  await notesTurn.locator(".undone").waitFor({ timeout: 10_000 });
  await waitFor("notes.txt to be deleted", async () => (fs.existsSync(path.join(folders.workspace, "notes.txt")) ? undefined : true), 10_000);
  step("undoing the turn that created notes.txt deleted it");

  await frame.locator("#input").fill("a draft kept over the reload");

  // --- Undo a turn's edits: the file goes back, on disk too, and the undo itself can be undone ---
  await openFile(page, "hello.txt");
  await editorLines(page, "hello.txt").click();
  await page.keyboard.press("Control+S");
  await waitFor("hello.txt saved with the agent's edit", async () => (readFile(folders, "hello.txt").includes("Hello, elelem!") ? true : undefined), 10_000);
  await firstTurn.locator("button[data-action=undo]").click();
  await firstTurn.locator(".undone", { hasText: "Edits undone" }).waitFor({ timeout: 10_000 });
  await editorLines(page, "hello.txt").getByText("Hello, world!").waitFor({ timeout: 10_000 });
  await waitFor("hello.txt on disk to say 'Hello, world!'", async () => (readFile(folders, "hello.txt").includes("Hello, world!") ? true : undefined), 10_000);
  step("Undo this turn's edits restored hello.txt in the editor and on disk");
  await editorLines(page, "hello.txt").click();
  await page.keyboard.press("Control+Z");
  await editorLines(page, "hello.txt").getByText("Hello, elelem!").waitFor({ timeout: 10_000 });
  await firstTurn.locator("button[data-action=undo]").waitFor({ timeout: 10_000 });
  step("Ctrl+Z in hello.txt takes the undo back, and the turn offers its undo again");

  // --- A window reload: the draft (typed before the undo above) and the conversation come back ---
  // Reloaded as a person does (Developer: Reload Window), so the workbench saves the views' state
  // before it goes; a browser reload may cut that save short.
  const loaded = page.waitForEvent("load", { timeout: 60_000 });
  await runCommand(page, "Developer: Reload Window");
  await loaded;
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await page.locator(".statusbar-item", { hasText: "scripted" }).first().waitFor({ timeout: 60_000 });
  await page.keyboard.press("Control+Alt+I");
  frame = await transcriptFrame(page);
  await frame.locator("section.turn").nth(5).waitFor({ timeout: 30_000 });
  const reloaded = await transcriptText(frame, "[data-elelem-transcript]");
  for (const prompt of ["Greet elelem instead of the world", "Show code for a greeting", "Run the greeting script", "Say hello to the team"]) {
    assertIncludes(reloaded, prompt, "the conversation after a reload");
  }
  assertIncludes(reloaded, "Ran echo elelem-ran", "the stored tool call after a reload");
  await waitFor("the draft after the reload", async () => ((await frame.locator("#input").inputValue()) === "a draft kept over the reload" ? true : undefined), 10_000);
  step("after a reload the chat view shows the folder's conversation again, and the draft");

  // --- New Conversation, then Open Conversation… brings the old one back -----------------------
  await frame.locator("#header #new").click();
  await frame.locator(".note", { hasText: "New conversation in workspace" }).waitFor({ timeout: 10_000 });
  if ((await frame.locator("section.turn").count()) !== 0) {
    throw new Error("a new conversation should start with an empty view");
  }
  await frame.locator("#header #conversations").click();
  await page.locator(".quick-input-widget", { hasText: "elelem conversations in workspace" }).waitFor({ state: "visible" });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Greet elelem instead of the world" }).first().click();
  await frame.locator("section.turn", { hasText: "Say hello to the team" }).waitFor({ timeout: 10_000 });
  step("New Conversation emptied the view; Open Conversation… brought the earlier one back");

  // --- The header's model picker: the folder's elelem.model, shown in the header ----------------
  await frame.locator("#header #model").click();
  await page.locator(".quick-input-widget", { hasText: "elelem model for scripted in workspace" }).waitFor({ state: "visible" });
  await answerInputBox(page, "tiny-1");
  await frame.locator("#header #model", { hasText: "tiny-1" }).waitFor({ timeout: 15_000 });
  const modelSettings = JSON.parse(readFile(folders, path.join(".vscode", "settings.json")));
  if (modelSettings["elelem.model"] !== "tiny-1") {
    throw new Error(`the model picker should write the folder setting; .vscode/settings.json has ${JSON.stringify(modelSettings)}`);
  }
  step("the header's model picker set 'tiny-1' (header and .vscode/settings.json)");

  // --- The editor's language servers: TypeScript's definition, and its error after the agent's edit ---
  // TypeScript starts with the first .ts file: on a busy machine its first check takes seconds.
  const settingsPath = path.join(folders.workspace, ".vscode", "settings.json");
  const settingsBefore = readFile(folders, path.join(".vscode", "settings.json"));
  fs.writeFileSync(settingsPath, JSON.stringify({ ...JSON.parse(settingsBefore), "elelem.checkWaitMs": 10000 }, null, 2));
  await openFile(page, "app.ts");
  await sendInChat(frame, "Break the types in app.ts");
  const typesTurn = frame.locator("section.turn", { hasText: "Break the types in app.ts" });
  await typesTurn.and(frame.locator(".done")).waitFor({ timeout: 90_000 });
  const typesText = (await typesTurn.innerText()).replace(/\s+/g, " ");
  assertIncludes(typesText, "Definition: lib.ts:1:17 export function add(a: number, b: number): number {", "the definition the model read");
  assertIncludes(typesText, "app.ts:3:14 error: Type 'string' is not assignable to type 'number'. [ts 2322]", "TypeScript's error the model read");
  const checkedRow = typesTurn.locator("details.checked");
  assertIncludes(await checkedRow.locator("summary").innerText(), "checked app.ts: 1 new error", "the checked row");
  await checkedRow.locator("summary").click();
  await checkedRow.locator(".tool-output", { hasText: "Type 'string' is not assignable to type 'number'." }).waitFor({ timeout: 5_000 });
  step("the checked row opens to TypeScript's new error; the model read it and the definition in lib.ts");
  fs.writeFileSync(settingsPath, settingsBefore);

  // --- A planned turn: its plan as a checklist, its tokens in a usage row, and a rewind -----------
  await sendInChat(frame, "Plan the notes in plan.txt");
  const plannedTurn = frame.locator("section.turn", { hasText: "Plan the notes in plan.txt" });
  await plannedTurn.and(frame.locator(".done")).waitFor({ timeout: 30_000 });
  await waitFor("plan.txt on disk", async () => (fs.existsSync(path.join(folders.workspace, "plan.txt")) ? true : undefined), 10_000);
  const planGroup = plannedTurn.locator(".plan");
  if ((await planGroup.count()) !== 1 || (await planGroup.getAttribute("aria-label")) !== "Plan, 2 of 2 done") {
    throw new Error(`one plan, 2 of 2 done, expected; saw ${await planGroup.count()}: ${await planGroup.first().getAttribute("aria-label")}`);
  }
  const ticked = await plannedTurn.locator(".plan-entry.completed").allInnerTexts();
  assertIncludes(ticked.join(" | "), "Write plan.txt", "the plan's ticked entries");
  assertIncludes(ticked.join(" | "), "Say it is written", "the plan's ticked entries");
  const usageRow = await plannedTurn.locator(".usage-row").innerText();
  assertIncludes(usageRow, "1,200 in · 80 out", "the turn's usage row");
  step(`the planned turn shows its plan ticked off (2 of 2 done) and its usage row: ${usageRow}`);
  await plannedTurn.locator("button[data-action=rewind]").click();
  const rewindDialog = page.locator(".monaco-dialog-box", { hasText: "Rewind to before this turn?" });
  await rewindDialog.waitFor({ timeout: 10_000 });
  await rewindDialog.getByRole("button", { name: "Rewind Files and Conversation", exact: true }).click();
  // what the rewind did, in the server's words (the extension's own would be "Rewound, with the conversation")
  await plannedTurn.locator(".undone", { hasText: /^rewound turns? [\d–]+ and the conversation$/ }).waitFor({ timeout: 15_000 });
  await waitFor("plan.txt to be gone", async () => (fs.existsSync(path.join(folders.workspace, "plan.txt")) ? undefined : true), 10_000);
  step(`Rewind to before this turn asked in VS Code's dialog and took plan.txt away: "${await plannedTurn.locator(".undone").innerText()}"`);

  // The folder asks for confirmation of edits from here on (used below, after the server has
  // had the time of the next turn to pull the changed setting).
  const settingsFile = path.join(folders.workspace, ".vscode", "settings.json");
  fs.writeFileSync(settingsFile, JSON.stringify({ ...JSON.parse(readFile(folders, path.join(".vscode", "settings.json"))), "elelem.confirmEdits": true }, null, 2));

  // --- Stop while a permission request is pending: the request leaves the view with the turn ------
  await sendInChat(frame, "Run the greeting script once more");
  const pending = frame.locator(".question", { hasText: "elelem wants to run: echo elelem-ran" });
  await pending.waitFor({ timeout: 30_000 });
  await frame.locator("#stop").click();
  await frame.locator("section.turn", { hasText: "Run the greeting script once more" }).and(frame.locator(".cancelled")).waitFor({ timeout: 30_000 });
  await pending.waitFor({ state: "detached", timeout: 10_000 });
  step("Stop with a permission request pending: the turn is cancelled and the request left the view");

  // --- elelem.confirmEdits: VS Code's Refactor Preview comes first, and Apply applies the edit ------
  await sendInChat(frame, "Create notes once more");
  const apply = page.locator(".monaco-button", { hasText: /^Apply$/ });
  await apply.waitFor({ state: "visible", timeout: 30_000 });
  if (fs.existsSync(path.join(folders.workspace, "notes.txt"))) {
    throw new Error("with elelem.confirmEdits the file must wait for the Refactor Preview's Apply");
  }
  step("with elelem.confirmEdits the edit waits in VS Code's Refactor Preview");
  // VS Code leaves an edit that needs confirmation unticked: Apply alone would apply nothing.
  // Ticking a file ticks its edits too, re-drawing the tree: tick whichever box is still unticked
  // until none is, rather than walking boxes that may change under the click.
  await page.locator(".bulk-edit-panel input.edit-checkbox").first().waitFor({ timeout: 10_000 });
  const unticked = page.locator(".bulk-edit-panel input.edit-checkbox:not(:checked)");
  await waitFor("every edit in the Refactor Preview ticked", async () => {
    if ((await unticked.count()) === 0) return true;
    await unticked.first().click({ timeout: 2_000 });
    return undefined;
  }, 15_000);
  await apply.click();
  const confirmedTurn = frame.locator("section.turn", { hasText: "Create notes once more" });
  await confirmedTurn.and(frame.locator(".done")).waitFor({ timeout: 30_000 });
  assertIncludes((await confirmedTurn.innerText()).replace(/\s+/g, " "), "notes.txt +2 −0", "the confirmed edit's row");
  await waitFor("notes.txt on disk", async () => (fs.existsSync(path.join(folders.workspace, "notes.txt")) ? true : undefined), 10_000);
  step("Apply in the Refactor Preview applied it: notes.txt is there and listed in the turn");

  // --- The conversation drawn again: the rewind above is a note in the server's words -------------
  await frame.locator("#header #new").click();
  await frame.locator(".note", { hasText: "New conversation in workspace" }).waitFor({ timeout: 10_000 });
  await frame.locator("#header #conversations").click();
  await page.locator(".quick-input-widget", { hasText: "elelem conversations in workspace" }).waitFor({ state: "visible" });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Greet elelem instead of the world" }).first().click();
  const rewoundNote = frame.locator("section.compaction .note", { hasText: /^rewound to before turn \d+: the model no longer sees it or the turns after it$/ });
  await rewoundNote.waitFor({ timeout: 10_000 });
  const redrawn = await frame.locator("section[data-turn]").evaluateAll((turns) => turns.map((turn) => turn.textContent ?? ""));
  const rewindAt = redrawn.findIndex((text) => text.includes("rewound to before turn"));
  if (!(rewindAt > 0 && redrawn[rewindAt - 1].includes("Plan the notes in plan.txt"))) {
    throw new Error(`the rewind's note should follow the planned turn it rewound; the turns read:\n${redrawn.join("\n")}`);
  }
  step(`drawn again, the conversation shows the rewind where it happened, in the server's words: "${await rewoundNote.innerText()}"`);
}

/** A loopback model server speaking OpenAI's streamed chat completions; it counts its requests. */
async function startModelServer(reply: string): Promise<{ url: string; requests: string[]; close(): void }> {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    request.on("end", () => {
      const chunk = { choices: [{ index: 0, delta: { role: "assistant", content: reply }, finish_reason: "stop" }] };
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => server.close() };
}

/**
 * An untrusted folder cannot loosen anything through its own settings. The folder declares a
 * provider and makes it the folder's choice, allows every command, and carries a plugin that
 * leaves a mark when imported; the person picks their own provider (`scripted`, from
 * ~/.agents/plugins) with Select Provider.
 */
async function untrustedScenario(page: Page, folders: Folders): Promise<void> {
  const office = await startModelServer("Hello from the office model.");
  const untrusted = path.join(folders.root, "untrusted");
  const home = path.join(folders.root, "home");
  fs.mkdirSync(path.join(untrusted, ".vscode"), { recursive: true });
  fs.mkdirSync(path.join(untrusted, ".agents", "plugins"), { recursive: true });
  fs.mkdirSync(path.join(home, ".agents", "plugins"), { recursive: true });
  fs.copyFileSync(path.join(FIXTURE, "hello.txt"), path.join(untrusted, "hello.txt"));
  fs.copyFileSync(path.join(FIXTURE, ".agents", "plugins", "scripted.py"), path.join(home, ".agents", "plugins", "scripted.py"));
  const mark = path.join(untrusted, "plugin-ran");
  fs.writeFileSync(
    path.join(untrusted, ".agents", "plugins", "mark.py"),
    `open(${JSON.stringify(mark)}, "w").write("the folder's plugin ran")\n`,
  );
  fs.writeFileSync(
    path.join(untrusted, ".vscode", "settings.json"),
    JSON.stringify({
      "elelem.execute": "allow",
      "elelem.allowCommands": ["echo"],
      "elelem.provider": "office",
      "elelem.providers": [{ name: "office", type: "openai-chat", model: "m", endpoint: `${office.url}/v1/chat/completions` }],
    }),
  );
  const port = await freePort();
  const codeServer = await startCodeServer(folders, port, { folder: untrusted, trust: true, home, log: "code-server-untrusted.log" });
  try {
    step(`code-server with workspace trust on 127.0.0.1:${port}; opening the untrusted folder`);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(untrusted)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    const dialog = page.locator(".monaco-dialog-box", { hasText: "Do you trust the authors of the files in this folder?" });
    await dialog.waitFor({ timeout: 30_000 });
    await dialog.getByRole("button", { name: "No, I don't trust the authors" }).click();
    await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ timeout: 15_000 });
    step("VS Code asked about trust; the folder is in Restricted Mode");
    await page.locator(".statusbar-item", { hasText: "stub" }).first().waitFor({ timeout: 60_000 });
    if ((await page.locator(".statusbar-item", { hasText: "office" }).count()) !== 0) {
      throw new Error("the untrusted folder's own provider choice was used");
    }
    step("the status bar shows the environment's provider 'stub', not the folder's 'office'");
    await runCommand(page, "elelem: Select Provider");
    await page.locator(".quick-input-widget", { hasText: "elelem provider for untrusted" }).waitFor({ state: "visible" });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "stub" }).first().waitFor();
    await page.locator(".quick-input-widget input").fill("office");
    await page.waitForTimeout(500);
    const offered = await page.locator(".quick-input-list .monaco-list-row:visible").allInnerTexts();
    if (offered.length !== 0) {
      throw new Error(`the untrusted folder's declared provider was offered: ${offered.join(", ")}`);
    }
    await page.keyboard.press("Escape");
    await selectProvider(page, "scripted", "untrusted");
    step("Select Provider offers no 'office' but the person's own plugin 'scripted', and it is selected");

    await openFile(page, "hello.txt");
    await ask(page, "Run the greeting script");
    const toast = page.locator(".notification-toast", { hasText: "elelem wants to run: echo elelem-ran" });
    await toast.waitFor({ timeout: 30_000 });
    step("the command waits for permission although the folder says elelem.execute: allow");
    const frame = await transcriptFrame(page);
    const viewQuestion = frame.locator(".question", { hasText: "elelem wants to run: echo elelem-ran" });
    await viewQuestion.waitFor({ timeout: 10_000 });
    await toast.getByRole("link", { name: "Deny" }).click();
    await toast.waitFor({ state: "detached", timeout: 10_000 });
    await viewQuestion.waitFor({ state: "detached", timeout: 10_000 });
    step("answered in the notification (its Deny link), the question left the notification and the chat view");
    await endedTurn(frame, 0);
    const runText = await transcriptText(frame, "section.turn >> nth=0");
    assertIncludes(runText, "Run echo elelem-ran", "the denied command"); // a failed call is titled as asked
    assertIncludes(runText, "the person denied it", "the denied command's outcome");
    assertIncludes(runText, "done — scripted", "the turn's footer");
    if (office.requests.length !== 0) {
      throw new Error(`the declared provider was asked: ${office.requests.join(", ")}`);
    }
    if (fs.existsSync(mark)) {
      throw new Error("the untrusted folder's .agents/plugins/mark.py ran");
    }
    step("the declared provider got no request and the folder's plugin never ran");
    await page.screenshot({ path: path.join(OUTPUT_DIR, "untrusted.png") });

    // --- Trust granted: the folder's settings apply without a restart ------------------------------
    await runCommand(page, "Workspaces: Manage Workspace Trust");
    await page.getByRole("button", { name: "Trust", exact: true }).first().click();
    await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ state: "hidden", timeout: 15_000 });
    step("trusted the folder from Manage Workspace Trust");
    await openFile(page, "hello.txt");
    await ask(page, "Run the greeting script again");
    await endedTurn(frame, 1);
    const trustedText = await transcriptText(frame, "section.turn >> nth=1");
    assertIncludes(trustedText, "Ran echo elelem-ran — exit 0", "the command run without asking once trusted");
    assertIncludes(trustedText, "The command printed elelem-ran.", "the trusted command's output");
    if (!fs.existsSync(mark)) {
      throw new Error("once trusted, the folder's own plugins should load");
    }
    step("once trusted, the folder's elelem.execute: allow and its plugin apply, without a restart");
  } finally {
    stopProcessGroup(codeServer);
    office.close();
  }
}

async function main(): Promise<void> {
  for (const [what, file] of [
    ["the .vsix (npm run package)", VSIX],
    ["code-server (scripts/install-e2e.sh)", CODE_SERVER],
    ["chromium (apt-get install chromium)", CHROMIUM],
  ]) {
    if (!fs.existsSync(file)) {
      throw new Error(`missing ${what}: ${file}`);
    }
  }
  fs.mkdirSync(OUTPUT_DIR, { recursive: true });
  for (const stale of ["failure.png", "code-server-logs"]) {
    fs.rmSync(path.join(OUTPUT_DIR, stale), { recursive: true, force: true });
  }
  const folders = prepareFolders();
  let codeServer: ChildProcess | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  let failed = false;
  const stopOnSignal = (signal: NodeJS.Signals) => {
    console.error(`[e2e] ${signal}: stopping chromium and code-server`);
    void Promise.race([context?.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]).finally(() => {
      stopProcessGroup(codeServer);
      fs.rmSync(folders.root, { recursive: true, force: true });
      process.exit(1);
    });
  };
  process.once("SIGTERM", stopOnSignal);
  process.once("SIGINT", stopOnSignal);
  try {
    installExtension(folders);
    step("installed the .vsix with --install-extension");
    context = await chromium.launchPersistentContext(path.join(folders.root, "chromium-profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1440, height: 860 },
      permissions: ["clipboard-read", "clipboard-write"], // to check the code blocks' Copy
    });
    if (SCENARIOS.has("chat")) {
      const port = await freePort();
      codeServer = await startCodeServer(folders, port, { folder: folders.workspace });
      step(`code-server listening on 127.0.0.1:${port}`);
      page = context.pages()[0] ?? (await context.newPage());
      page.setDefaultTimeout(30_000);
      await scenario(page, folders, `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folders.workspace)}`);
      stopProcessGroup(codeServer);
      await page.close();
    }
    if (SCENARIOS.has("untrusted")) {
      page = await context.newPage();
      page.setDefaultTimeout(30_000);
      await untrustedScenario(page, folders);
      await page.close();
    }
    if (SCENARIOS.has("editing")) {
      page = await context.newPage();
      page.setDefaultTimeout(30_000);
      await editingScenario(page, folders.root, {
        step,
        waitFor,
        openFile,
        editorLines,
        launch: async (folder, env, log) => {
          const port = await freePort();
          const child = await startCodeServer(folders, port, { folder, env, log });
          codeServer = child; // a signal stops it too
          return { url: `http://127.0.0.1:${port}`, stop: () => stopProcessGroup(child) };
        },
        python: SERVER_COMMAND[0].includes("python") ? SERVER_COMMAND[0] : "python3",
        repo: REPO_DIR,
        output: OUTPUT_DIR,
        logs: path.join(folders.userData, "logs"),
      });
    }
    step("PASS");
  } catch (error) {
    failed = true;
    console.error(`[e2e] FAIL: ${error instanceof Error ? error.stack : error}`);
    await page?.screenshot({ path: path.join(OUTPUT_DIR, "failure.png") }).catch(() => undefined);
    const serverLogs = path.join(folders.userData, "logs");
    if (fs.existsSync(serverLogs)) {
      fs.cpSync(serverLogs, path.join(OUTPUT_DIR, "code-server-logs"), { recursive: true });
    }
  } finally {
    await context?.close().catch(() => undefined);
    stopProcessGroup(codeServer);
    if (!failed) {
      fs.rmSync(folders.root, { recursive: true, force: true });
    } else {
      console.error(`[e2e] kept ${folders.root}; logs and failure.png in ${OUTPUT_DIR}`);
    }
  }
  process.exitCode = failed ? 1 : 0;
}

void main();
