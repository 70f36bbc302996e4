/**
 * The chat input's logic, apart from the page: recalling earlier prompts with ↑/↓ the way a
 * shell does (the draft kept while browsing), finding the `#file` query the caret is in, and
 * checking a pasted or dropped image (type and size) as the server will.
 * Pure: no DOM, so unit tests can load it.
 */

/** The most prompts kept for ↑. */
const HISTORY_LIMIT = 50;

export class PromptHistory {
  /** Where ↑/↓ are: prompts.length is "not browsing". */
  private position: number;
  private draft = "";

  constructor(private readonly prompts: string[] = []) {
    this.position = prompts.length;
  }

  /** The prompts, oldest first (kept in the page's state). */
  get entries(): string[] {
    return [...this.prompts];
  }

  /** Records a sent prompt (not twice in a row) and stops browsing. */
  add(prompt: string): void {
    if (prompt && this.prompts.at(-1) !== prompt) {
      this.prompts.push(prompt);
      this.prompts.splice(0, Math.max(0, this.prompts.length - HISTORY_LIMIT));
    }
    this.position = this.prompts.length;
  }

  /** The earlier prompt to show for ↑ with `current` in the input, or undefined at the oldest. */
  previous(current: string): string | undefined {
    if (this.position === 0) {
      return undefined;
    }
    if (this.position === this.prompts.length) {
      this.draft = current;
    }
    this.position -= 1;
    return this.prompts[this.position];
  }

  /** The later prompt for ↓ (the draft after the newest), or undefined when not browsing. */
  next(): string | undefined {
    if (this.position >= this.prompts.length) {
      return undefined;
    }
    this.position += 1;
    return this.position === this.prompts.length ? this.draft : this.prompts[this.position];
  }
}

/** A `#query` being typed: where it starts in the text and what follows the `#`. */
export interface FileQuery {
  start: number;
  query: string;
}

/**
 * The `#file` query that ends at the caret: a `#` at the start or after a space, then path
 * characters. `issue #12` right after a word is not one.
 */
export function fileQueryAt(text: string, caret: number): FileQuery | undefined {
  const match = /(^|\s)#([\w./-]*)$/.exec(text.slice(0, caret));
  if (!match) {
    return undefined;
  }
  return { start: match.index + match[1].length, query: match[2] };
}

/** The text with the `#query` at `query` taken out (the file became a chip). */
export function withoutQuery(text: string, query: FileQuery, caret: number): { text: string; caret: number } {
  const rest = text.slice(caret).replace(/^ /, "");
  const before = text.slice(0, query.start);
  return { text: before + rest, caret: before.length };
}

/**
 * Where a request that just arrived puts the focus. Never on one of its buttons, and nowhere
 * while the person is typing elsewhere (or the view is not focused): a Space or Enter meant for
 * their text would otherwise answer it unseen. Else the reply field of a text request, or the
 * request itself (so Escape reaches it and a screen reader reads it).
 */
export function requestFocus(kind: "choice" | "text", typingElsewhere: boolean): "none" | "request" | "reply" {
  if (typingElsewhere) {
    return "none";
  }
  return kind === "text" ? "reply" : "request";
}

/** What Escape answers a permission request: its "Deny" option, else no answer (also a refusal). */
export function escapeAnswer(options: string[]): string | null {
  return options.find((option) => option.toLowerCase() === "deny") ?? null;
}

/** An image pasted or dropped into the input, as `elelem.ask`'s `images` take it. */
export interface ChatImage {
  mimeType: string;
  /** The bytes, base64. */
  data: string;
}

/** The image types every provider that takes images reads. */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** The largest image a provider takes: 5 MiB of base64 (Anthropic's limit, the smallest), 3.75 MiB of file. */
export const MAX_IMAGE_BYTES = ((5 * 1024 * 1024) / 4) * 3;

function mebibytes(size: number): string {
  return `${(size / (1024 * 1024)).toFixed(2)} MiB`;
}

/** Why a pasted or dropped file cannot go with the question (its type or size), or undefined when it can. */
export function imageProblem(name: string, type: string, size: number): string | undefined {
  if (!IMAGE_TYPES.includes(type)) {
    return `${name || "the pasted item"} is not a PNG, JPEG, GIF or WebP image`;
  }
  if (size > MAX_IMAGE_BYTES) {
    return `${name || "the pasted image"} is ${mebibytes(size)}, more than the ${mebibytes(MAX_IMAGE_BYTES)} a provider takes`;
  }
  return undefined;
}

/** The image a `data:` URL (a FileReader's) holds; an Error saying why when it is not one a provider takes. */
export function imageFromDataUrl(name: string, url: string): ChatImage {
  const match = /^data:([\w.+-]+\/[\w.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/.exec(url);
  if (!match) {
    throw new Error(`${name || "the pasted item"} could not be read as an image`);
  }
  const [, mimeType, data] = match;
  const size = Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  const problem = imageProblem(name, mimeType, size);
  if (problem) {
    throw new Error(problem);
  }
  return { mimeType, data };
}
