// elelem-lsp acp driven by the official ACP TypeScript SDK as its client (tests/acp/test_acp_typescript.py).
//
// node drive.mjs SDK_FOLDER PROJECT OUT session IMAGE_BASE64: starts `python -m elelem_lsp acp --trust`
// in PROJECT, then initialize, authenticate, session/new, a prompt with an image block, session/close,
// a prompt to the closed session (refused), session/resume and a prompt that goes on.
// node drive.mjs SDK_FOLDER PROJECT OUT permission: initialize, session/new and one prompt, each
// session/request_permission answered with its first option (allow once) and kept.
// Every message both ways, what each step answered and the permission requests are written to OUT as
// JSON for the test to check against the schema.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkFolder, project, out, scenario, image] = process.argv.slice(2);
const sdkPath = createRequire(`${sdkFolder}/`).resolve("@agentclientprotocol/sdk");
const acp = await import(pathToFileURL(sdkPath).href);

const agent = spawn(process.env.PYTHON || "python3", ["-m", "elelem_lsp", "acp", "--trust"], {
  cwd: project,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => agent.on("exit", (code) => resolve(code)));

const messages = [];
const record = (from) => (message) => messages.push({ from, message: JSON.parse(JSON.stringify(message)) });
const wire = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const toAgent = record("client");
const fromAgent = record("agent");
const stream = {
  writable: new WritableStream({
    async write(message) {
      toAgent(message);
      const writer = wire.writable.getWriter();
      try {
        await writer.write(message);
      } finally {
        writer.releaseLock();
      }
    },
    close: () => wire.writable.close(),
    abort: (reason) => wire.writable.abort(reason),
  }),
  readable: wire.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        fromAgent(message);
        controller.enqueue(message);
      },
    }),
  ),
};

const updates = [];
const permissions = [];
const app = acp
  .client({ name: "elelem-ts-test" })
  .onNotification("session/update", (ctx) => {
    updates.push(ctx.params.update);
  })
  .onRequest("session/request_permission", (ctx) => {
    permissions.push(ctx.params);
    return { outcome: { outcome: "selected", optionId: ctx.params.options[0].optionId } };
  });

const steps = {};
const refused = async (promise) => {
  try {
    await promise;
    return null;
  } catch (error) {
    return { code: error.code, message: error.message };
  }
};

await app.connectWith(stream, async (ctx) => {
  steps.initialize = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "elelem-ts-test", version: "1.0.0" },
  });
  steps.authenticate = await ctx.request("authenticate", { methodId: steps.initialize.authMethods[0].id });
  const session = await ctx.request("session/new", { cwd: project, mcpServers: [] });
  steps.sessionId = session.sessionId;
  if (scenario === "permission") {
    steps.prompt = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "run it" }],
    });
    return;
  }
  steps.prompt = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [
      { type: "text", text: "what is in this picture?" },
      { type: "image", mimeType: "image/png", data: image },
    ],
  });
  steps.close = await ctx.request("session/close", { sessionId: session.sessionId });
  steps.closedPrompt = await refused(
    ctx.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: "hello?" }] }),
  );
  const updatesBeforeResume = updates.length;
  steps.resume = await ctx.request("session/resume", { sessionId: session.sessionId, cwd: project, mcpServers: [] });
  steps.replayed = updates
    .slice(updatesBeforeResume)
    .filter((u) => u.sessionUpdate.endsWith("_message_chunk") || u.sessionUpdate.startsWith("tool_call")).length;
  steps.resumedPrompt = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "and now?" }],
  });
});
agent.stdin.end();
steps.exitCode = await exited;
writeFileSync(out, JSON.stringify({ steps, updates, permissions, messages }, null, 1));
