/**
 * Builds what the extension sends to elelem-lsp from what VS Code gives it: the one-object
 * arguments of `elelem.ask`/`elelem.fix` (with the extension's own progress token), the `elelem`
 * settings section answered to `workspace/configuration`, and the server's command line.
 * Pure: no vscode import, so unit tests can load it.
 */

import type { ChatImage } from "./webview/composer";

export interface WirePosition {
  line: number;
  character: number;
}

export interface WireRange {
  start: WirePosition;
  end: WirePosition;
}

export interface AskRequest {
  prompt: string;
  /** The document (or folder) the question is about; picks the workspace folder's session. */
  uri?: string;
  /** The selection the question is about. */
  range?: WireRange;
  /** Images pasted or dropped with the question. */
  images?: readonly ChatImage[];
}

/** The single argument object of `elelem.ask`. */
export function askArguments(request: AskRequest, progressToken: string): Record<string, unknown> {
  const prompt = request.prompt.trim();
  if (!prompt) {
    throw new Error("The question is empty.");
  }
  const args: Record<string, unknown> = { prompt };
  if (request.uri) {
    args.uri = request.uri;
  }
  if (request.range) {
    args.range = request.range;
  }
  if (request.images?.length) {
    args.images = request.images.map(({ mimeType, data }) => ({ mimeType, data }));
  }
  args.progressToken = progressToken;
  return args;
}

/**
 * The question with the files attached by `#file` named after it: `elelem.ask` takes one `uri`
 * (the active file or selection), so further files are given to the agent by path, to read
 * with its tools.
 */
export function withAttachedFiles(prompt: string, paths: readonly string[]): string {
  const named = [...new Set(paths.filter(Boolean))];
  if (!named.length) {
    return prompt;
  }
  const list = named.map((path) => `\`${path.replace(/`/g, "")}\``).join(", ");
  return `${prompt}\n\nAlso look at ${named.length === 1 ? "this file" : "these files"}: ${list}`;
}

/**
 * The arguments of a server-made command (a code action's `elelem.fix` or `elelem.ask`) with the
 * extension's progress token added to its one object, so the transcript can follow the turn.
 */
export function withProgressToken(args: readonly unknown[], progressToken: string): unknown[] {
  const [first, ...rest] = args;
  if (typeof first !== "object" || first === null || Array.isArray(first)) {
    throw new Error(`expected one object argument, got ${JSON.stringify(args)}`);
  }
  return [{ ...(first as Record<string, unknown>), progressToken }, ...rest];
}

/** The prompt a server-made command carries, for the transcript's heading. */
export function describeServerCommand(command: string, args: readonly unknown[]): string {
  const first = args[0] as Record<string, unknown> | undefined;
  if (command === "elelem.fix") {
    const diagnostics = Array.isArray(first?.diagnostics) ? first.diagnostics : [];
    const messages = diagnostics
      .map((diagnostic) => (diagnostic as Record<string, unknown> | null)?.message)
      .filter((message): message is string => typeof message === "string");
    return messages.length ? `Fix: ${messages.join("; ")}` : "Fix";
  }
  return typeof first?.prompt === "string" ? first.prompt : command;
}

/** Fresh progress tokens, unique within one extension host. */
export class ProgressTokens {
  private count = 0;

  constructor(private readonly prefix: string) {}

  next(): string {
    this.count += 1;
    return `${this.prefix}-${this.count}`;
  }
}

/**
 * Splits the `elelem.server.command` setting into a program and its arguments. An array is taken
 * as is; a string is split on whitespace, with single or double quotes keeping spaces together.
 */
export function parseServerCommand(setting: unknown): { command: string; args: string[] } {
  let parts: string[];
  if (Array.isArray(setting)) {
    if (!setting.every((part) => typeof part === "string")) {
      throw new Error("elelem.server.command: every item of the array must be a string");
    }
    parts = setting as string[];
  } else if (typeof setting === "string") {
    parts = splitCommandLine(setting);
  } else {
    throw new Error("elelem.server.command must be an array of strings or a string");
  }
  if (parts.length === 0 || !parts[0]) {
    throw new Error("elelem.server.command is empty");
  }
  return { command: parts[0], args: parts.slice(1) };
}

function splitCommandLine(line: string): string[] {
  const parts: string[] = [];
  let current = "";
  let inPart = false;
  let quote: string | undefined;
  for (const character of line) {
    if (quote) {
      if (character === quote) {
        quote = undefined;
      } else {
        current += character;
      }
    } else if (character === '"' || character === "'") {
      quote = character;
      inPart = true;
    } else if (/\s/.test(character)) {
      if (inPart) {
        parts.push(current);
        current = "";
        inPart = false;
      }
    } else {
      current += character;
      inPart = true;
    }
  }
  if (quote) {
    throw new Error(`elelem.server.command has an unclosed ${quote}`);
  }
  if (inPart) {
    parts.push(current);
  }
  return parts;
}

/** The keys of the `elelem` section elelem-lsp reads, as VS Code's settings name them. */
const SERVER_SETTING_KEYS = [
  "provider",
  "model",
  "providers",
  "execute",
  "allowCommands",
  "confirmEdits",
  "maxSteps",
  "temperature",
  "maxTokens",
  "history",
  "contextTokens",
  "prompt",
  "compaction",
  "mcpServers",
  "allowMcpTools",
  "mcp",
  "checkAfterEdits",
  "checkWaitMs",
  "checkCommand",
  "sandbox",
  "sandboxNetwork",
  "sandboxWritable",
  "checkpoints",
  "checkpointTurns",
  "checkpointDays",
  "completion",
  "nextEdit",
] as const;

/**
 * The `elelem` settings section as elelem-lsp expects it, from VS Code's view of the section:
 * only the server's keys (not `server.command`), unset values left out (an empty provider or
 * model means "let the server choose"), `workspacePlugins` true only in a trusted workspace, and
 * `trusted` saying which: the server caps an untrusted folder's settings itself too, so a value
 * VS Code let through (or an older VS Code without restricted settings) still loosens nothing.
 */
export function serverSettings(section: unknown, trusted: boolean): Record<string, unknown> {
  const raw = (typeof section === "object" && section !== null ? section : {}) as Record<string, unknown>;
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = raw[key];
    if (value === undefined || value === null || value === "") {
      continue;
    }
    settings[key] = value;
  }
  settings.workspacePlugins = trusted && raw.workspacePlugins !== false;
  settings.trusted = trusted;
  return settings;
}
