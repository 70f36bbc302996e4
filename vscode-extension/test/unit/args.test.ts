/** Argument building: what the extension sends to elelem-lsp for a turn, a setting, a command line. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { askArguments, describeServerCommand, parseServerCommand, ProgressTokens, serverSettings, withProgressToken } from "../../src/args";

test("ask arguments carry the trimmed prompt, the document, the selection and the progress token", () => {
  const range = { start: { line: 2, character: 0 }, end: { line: 4, character: 7 } };
  assert.deepEqual(askArguments({ prompt: "  explain this \n", uri: "file:///w/a.py", range }, "tok-1"), {
    prompt: "explain this",
    uri: "file:///w/a.py",
    range,
    progressToken: "tok-1",
  });
});

test("ask arguments leave out a missing document and selection", () => {
  assert.deepEqual(askArguments({ prompt: "hi" }, "tok-2"), { prompt: "hi", progressToken: "tok-2" });
});

test("an empty question is refused before anything is sent", () => {
  assert.throws(() => askArguments({ prompt: "   " }, "tok"), /empty/);
});

test("a code action's fix gets the extension's progress token and keeps its own fields", () => {
  const diagnostics = [{ message: "Expected comma", range: { start: { line: 0, character: 5 }, end: { line: 0, character: 6 } } }];
  const original = [{ uri: "file:///w/c.json", range: diagnostics[0].range, diagnostics }];
  const sent = withProgressToken(original, "tok-9");
  assert.deepEqual(sent, [{ ...original[0], progressToken: "tok-9" }]);
  assert.equal("progressToken" in original[0], false, "the code action's own arguments stay untouched");
  assert.equal(describeServerCommand("elelem.fix", original), "Fix: Expected comma");
  assert.equal(describeServerCommand("elelem.ask", [{ prompt: "Explain", uri: "file:///w/a" }]), "Explain");
});

test("a server command without an object argument is refused", () => {
  assert.throws(() => withProgressToken(["file:///w/a"], "tok"), /one object argument/);
  assert.throws(() => withProgressToken([], "tok"), /one object argument/);
});

test("progress tokens differ from turn to turn", () => {
  const tokens = new ProgressTokens("elelem-x");
  const seen = new Set([tokens.next(), tokens.next(), tokens.next()]);
  assert.equal(seen.size, 3);
  for (const token of seen) {
    assert.match(token, /^elelem-x-\d+$/);
  }
});

test("the server command is an array as given, or a string split on spaces with quotes kept", () => {
  assert.deepEqual(parseServerCommand(["elelem-lsp", "serve"]), { command: "elelem-lsp", args: ["serve"] });
  assert.deepEqual(parseServerCommand("  /opt/my env/bin/python -m elelem_lsp serve"), {
    command: "/opt/my",
    args: ["env/bin/python", "-m", "elelem_lsp", "serve"],
  });
  assert.deepEqual(parseServerCommand(`"/opt/my env/bin/elelem-lsp" serve --log 'a b'`), {
    command: "/opt/my env/bin/elelem-lsp",
    args: ["serve", "--log", "a b"],
  });
  assert.deepEqual(parseServerCommand(`elelem-lsp ""`), { command: "elelem-lsp", args: [""] });
});

test("a broken server command names the setting", () => {
  assert.throws(() => parseServerCommand([]), /elelem.server.command is empty/);
  assert.throws(() => parseServerCommand("   "), /elelem.server.command is empty/);
  assert.throws(() => parseServerCommand(["elelem-lsp", 3]), /must be a string/);
  assert.throws(() => parseServerCommand(`"elelem-lsp serve`), /unclosed "/);
  assert.throws(() => parseServerCommand(undefined), /array of strings or a string/);
});

test("settings sent to the server keep its keys, drop unset ones and follow workspace trust", () => {
  const vscodeView = {
    provider: "local",
    model: "",
    providers: [{ name: "local", type: "openai-chat", endpoint: "http://127.0.0.1:8080/v1" }],
    execute: "ask",
    allowCommands: ["pytest"],
    confirmEdits: false,
    maxSteps: null,
    temperature: 0.2,
    maxTokens: null,
    history: false,
    contextTokens: 16000,
    compaction: "summarize",
    server: { command: ["elelem-lsp", "serve"] },
  };
  assert.deepEqual(serverSettings(vscodeView, true), {
    provider: "local",
    providers: vscodeView.providers,
    execute: "ask",
    allowCommands: ["pytest"],
    confirmEdits: false,
    temperature: 0.2,
    history: false,
    contextTokens: 16000,
    compaction: "summarize",
    workspacePlugins: true,
    trusted: true,
  });
  assert.deepEqual(serverSettings(undefined, false), { workspacePlugins: false, trusted: false });
});

test("an untrusted workspace never loads its plugins and says it is untrusted, whatever the section says", () => {
  const loose = { execute: "allow", workspacePlugins: true, trusted: true, provider: "office" };
  const sent = serverSettings(loose, false);
  assert.equal(sent.workspacePlugins, false);
  assert.equal(sent.trusted, false, "a folder setting named trusted cannot claim trust");
  assert.equal(sent.execute, "allow", "the server caps it: it knows the folder is untrusted");
});

test("MCP servers and their permission settings reach the server as written", () => {
  const mcpServers = { fs: { command: "npx", args: ["-y", "server"] }, web: { url: "https://example.test/mcp", headers: { A: "b" } } };
  const sent = serverSettings({ mcpServers, allowMcpTools: ["fs", "web__search"], mcp: "deny" }, true);
  assert.deepEqual(sent.mcpServers, mcpServers);
  assert.deepEqual(sent.allowMcpTools, ["fs", "web__search"]);
  assert.equal(sent.mcp, "deny");
  assert.equal(serverSettings({ mcpServers }, false).trusted, false, "the server ignores them in an untrusted folder");
});

test("the sandbox settings reach the server as written", () => {
  const sent = serverSettings({ sandbox: "required", sandboxNetwork: true, sandboxWritable: ["~/.cache/pip"] }, true);
  assert.deepEqual([sent.sandbox, sent.sandboxNetwork, sent.sandboxWritable], ["required", true, ["~/.cache/pip"]]);
});

test("a trusted workspace can still turn its plugins off", () => {
  assert.equal(serverSettings({ workspacePlugins: false }, true).workspacePlugins, false);
  assert.equal(serverSettings({ workspacePlugins: true }, true).workspacePlugins, true);
  assert.equal(serverSettings({}, true).workspacePlugins, true);
});

test("the checkpoint settings reach the server, checkpoints off included, and are not restricted", () => {
  assert.deepEqual(serverSettings({ checkpoints: false, checkpointTurns: 20, checkpointDays: 7 }, false), {
    checkpoints: false,
    checkpointTurns: 20,
    checkpointDays: 7,
    workspacePlugins: false,
    trusted: false,
  });
  // out/test/unit/ -> the extension's package.json
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8"));
  const settings = manifest.contributes.configuration.properties;
  assert.deepEqual([settings["elelem.checkpoints"].default, settings["elelem.checkpointTurns"].default, settings["elelem.checkpointDays"].default], [true, 50, 30]);
  assert.ok(!manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes("elelem.checkpoints"));
});

test("ghost text's and next edit's folder settings reach the server as they are", () => {
  const completion = { enabled: true, provider: "ollama", model: "qwen2.5-coder:1.5b", multiline: "never" };
  const sent = serverSettings({ completion, nextEdit: { enabled: false }, ghostText: { enabled: false } }, true);
  assert.deepEqual(sent.completion, completion);
  assert.deepEqual(sent.nextEdit, { enabled: false });
  assert.equal("ghostText" in sent, false, "the client's own toggle is not a server setting");
});
