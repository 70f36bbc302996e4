/**
 * The chat view's page: shows the entries the extension renders (sanitised again with DOMPurify
 * before they reach the DOM), keeps the thinking/tool blocks the person opened or closed, follows
 * the bottom unless the person scrolled up, and turns what the person does into messages to the
 * extension: send (Enter), Stop, the header's pickers, #file completion, removing a chip, Copy /
 * Insert of a code block, a changed file's diff, undoing a turn's edits, answering a request.
 * An image pasted or dropped into the composer (PNG, JPEG, GIF, WebP, 3.75 MiB at most; anything
 * else is refused with a visible error) becomes a chip with a remove button and goes with the next
 * question as `images`.
 * The draft, the prompt history and the scroll position live in the webview state, so they come
 * back after a reload.
 */

import DOMPurify from "dompurify";

import {
  ChatImage,
  escapeAnswer,
  fileQueryAt,
  FileQuery,
  imageFromDataUrl,
  imageProblem,
  PromptHistory,
  requestFocus,
  withoutQuery,
} from "./composer";
import { ChatHeader, ContextChip, ViewQuestion } from "./messages";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface PageState {
  draft: string;
  history: string[];
  scrollTop: number | null;
}

const vscode = acquireVsCodeApi();
const saved = (vscode.getState() ?? {}) as Partial<PageState>;
const state: PageState = {
  draft: typeof saved.draft === "string" ? saved.draft : "",
  history: Array.isArray(saved.history) ? saved.history.filter((entry) => typeof entry === "string") : [],
  scrollTop: typeof saved.scrollTop === "number" ? saved.scrollTop : null,
};
const history = new PromptHistory(state.history);

function element<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

const log = element<HTMLElement>("log");
const input = element<HTMLTextAreaElement>("input");
const sendButton = element<HTMLButtonElement>("send");
const stopButton = element<HTMLButtonElement>("stop");
const chipsBox = element<HTMLElement>("chips");
const filesBox = element<HTMLElement>("files");
const questionsBox = element<HTMLElement>("questions");
const imagesBox = element<HTMLElement>("images");
const imageError = element<HTMLElement>("image-error");
const composer = document.querySelector<HTMLElement>(".composer")!;
/** The images pasted or dropped for the next question, with the name the chip shows. */
let images: { name: string; image: ChatImage }[] = [];
const toggled = new Map<string, boolean>();
let busy = false;
/** Follow new output unless the person scrolled up; a reload restores where they were. */
let followBottom = state.scrollTop === null;
let restoreScroll = state.scrollTop;
let restoreTimer: ReturnType<typeof setTimeout> | undefined;
/** How long after the first replayed entry the saved scroll position is held. */
const RESTORE_MS = 1000;
let files: string[] = [];
let fileQuery: FileQuery | undefined;
let fileIndex = 0;
let fileTimer: ReturnType<typeof setTimeout> | undefined;

function save(): void {
  state.draft = input.value;
  state.history = history.entries;
  vscode.setState(state);
}

function clean(html: string): string {
  return DOMPurify.sanitize(html, { ADD_ATTR: ["open"], FORBID_TAGS: ["style", "form", "input", "img"] });
}

function showEntry(key: string, html: string): void {
  log.querySelector(".empty")?.remove();
  let entry = document.getElementById(`entry-${key}`);
  if (!entry) {
    entry = document.createElement("div");
    entry.id = `entry-${key}`;
    log.appendChild(entry);
  }
  entry.innerHTML = clean(html);
  for (const details of entry.querySelectorAll<HTMLDetailsElement>("details[data-key]")) {
    const open = toggled.get(details.dataset.key ?? "");
    if (open !== undefined) {
      details.open = open;
    }
  }
  if (restoreScroll !== null) {
    log.scrollTop = restoreScroll;
    // The replayed entries arrive together; what streams in later is followed as usual.
    restoreTimer ??= setTimeout(() => (restoreScroll = null), RESTORE_MS);
  } else if (followBottom) {
    log.scrollTop = log.scrollHeight;
  }
}

function reset(): void {
  log.replaceChildren();
  const empty = document.createElement("p");
  empty.className = "empty";
  empty.innerHTML = "Ask below, or pick <b>Fix with elelem</b> on a problem. Type <b>#</b> to attach a file.";
  log.appendChild(empty);
  questionsBox.replaceChildren();
}

function setLabel(id: string, text: string, title: string): void {
  const button = element<HTMLButtonElement>(id);
  button.querySelector(".label")!.textContent = text;
  button.title = title;
  button.setAttribute("aria-label", title);
}

function showHeader(header: ChatHeader): void {
  setLabel("folder", header.folder || "no folder", header.multiRoot ? `Folder ${header.folder}: choose another` : `Folder ${header.folder}`);
  element<HTMLButtonElement>("folder").disabled = !header.multiRoot;
  setLabel("provider", header.provider ?? "no provider", `Provider ${header.provider ?? "(none)"}: choose another`);
  setLabel("model", header.model || "default model", `Model ${header.model || "(the provider's default)"}: choose another`);
  element<HTMLElement>("conversation-title").textContent = header.conversation;
  const usage = element<HTMLElement>("usage");
  usage.textContent = header.usage;
  usage.dataset.title ??= usage.title; // the page's own words on the figures, then the suggestions'
  usage.title = [usage.dataset.title, header.usageDetails].filter(Boolean).join("\n\n");
}

function showChips(chips: ContextChip[]): void {
  chipsBox.replaceChildren(
    ...chips.map((chip) => {
      const item = document.createElement("span");
      item.className = "chip";
      item.title = chip.title;
      item.dataset.chip = chip.id;
      const icon = document.createElement("span");
      icon.className = "codicon codicon-file";
      const label = document.createElement("span");
      label.textContent = chip.label;
      const remove = document.createElement("button");
      remove.className = "icon-button";
      remove.setAttribute("aria-label", `Remove ${chip.label} from the context`);
      remove.title = "Remove";
      remove.innerHTML = '<span class="codicon codicon-close"></span>';
      remove.addEventListener("click", () => vscode.postMessage({ type: "removeChip", id: chip.id }));
      item.append(icon, label, remove);
      return item;
    }),
  );
}

function showBusy(running: boolean): void {
  busy = running;
  // While a turn streams its entries are replaced on every event: a screen reader waits for the end.
  log.setAttribute("aria-busy", String(running));
  const stopHadFocus = document.activeElement === stopButton;
  stopButton.hidden = !running;
  sendButton.hidden = running;
  if (stopHadFocus && !running) {
    input.focus();
  }
}

function showQuestion(question: ViewQuestion): void {
  document.getElementById(`question-${question.id}`)?.remove();
  const box = document.createElement("div");
  box.className = "question";
  box.id = `question-${question.id}`;
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", question.message);
  const message = document.createElement("div");
  message.className = "question-message";
  message.textContent = question.message;
  box.appendChild(message);
  const answer = (value: string | null) => vscode.postMessage({ type: "answer", id: question.id, answer: value });
  const active = document.activeElement;
  const typingElsewhere = !document.hasFocus() || active instanceof HTMLTextAreaElement || active instanceof HTMLInputElement;
  const focus = requestFocus(question.kind, typingElsewhere);
  if (question.kind === "choice") {
    const buttons = document.createElement("div");
    buttons.className = "question-buttons";
    question.options.forEach((option, index) => {
      const button = document.createElement("button");
      button.className = index === 0 ? "primary" : "secondary";
      button.textContent = option;
      button.addEventListener("click", () => answer(option));
      buttons.appendChild(button);
    });
    box.appendChild(buttons);
    box.tabIndex = -1;
    box.title = "Escape denies";
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        answer(escapeAnswer(question.options));
      }
    });
    questionsBox.appendChild(box);
    if (focus === "request") {
      box.focus();
    }
  } else {
    const row = document.createElement("div");
    row.className = "input-row";
    const text = document.createElement("textarea");
    text.rows = 2;
    text.setAttribute("aria-label", question.message);
    text.placeholder = "Type the reply (Enter to send, Escape to decline)";
    const send = document.createElement("button");
    send.className = "primary";
    send.textContent = "Reply";
    send.addEventListener("click", () => answer(text.value));
    text.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        answer(text.value);
      } else if (event.key === "Escape") {
        answer(null);
      }
    });
    row.append(text, send);
    box.appendChild(row);
    questionsBox.appendChild(box);
    if (focus === "reply") {
      text.focus();
    }
  }
  log.scrollTop = log.scrollHeight;
}

/** Takes an answered request away; focus that was in it goes back to the input. */
function removeQuestion(id: number): void {
  const box = document.getElementById(`question-${id}`);
  const hadFocus = box?.contains(document.activeElement) === true;
  box?.remove();
  if (hadFocus) {
    input.focus();
  }
}

// -- #file completion --------------------------------------------------------------------------

function closeFiles(): void {
  filesBox.hidden = true;
  fileQuery = undefined;
  files = [];
}

function showFiles(query: string, matches: string[]): void {
  if (!fileQuery || fileQuery.query !== query) {
    return; // an answer to an older query
  }
  files = matches;
  fileIndex = 0;
  renderFiles();
}

function renderFiles(): void {
  filesBox.hidden = false;
  if (!files.length) {
    const none = document.createElement("div");
    none.className = "file-none";
    none.textContent = "No matching file";
    filesBox.replaceChildren(none);
    return;
  }
  filesBox.replaceChildren(
    ...files.map((file, index) => {
      const row = document.createElement("div");
      row.className = `file-row${index === fileIndex ? " selected" : ""}`;
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(index === fileIndex));
      row.textContent = file;
      row.addEventListener("mousedown", (event) => {
        event.preventDefault();
        pickFile(index);
      });
      return row;
    }),
  );
}

function pickFile(index: number): void {
  const file = files[index];
  if (!file || !fileQuery) {
    return;
  }
  const rest = withoutQuery(input.value, fileQuery, input.selectionStart);
  input.value = rest.text;
  input.setSelectionRange(rest.caret, rest.caret);
  vscode.postMessage({ type: "addFile", path: file });
  closeFiles();
  save();
}

function updateFileQuery(): void {
  const found = fileQueryAt(input.value, input.selectionStart);
  if (!found) {
    closeFiles();
    return;
  }
  fileQuery = found;
  clearTimeout(fileTimer);
  fileTimer = setTimeout(() => vscode.postMessage({ type: "fileQuery", query: found.query }), 80);
}

// -- images ------------------------------------------------------------------------------------

function showImages(): void {
  imagesBox.replaceChildren(
    ...images.map(({ name, image }, index) => {
      const item = document.createElement("span");
      item.className = "chip image-chip";
      item.title = name;
      const preview = document.createElement("img");
      preview.src = `data:${image.mimeType};base64,${image.data}`;
      preview.alt = "";
      const label = document.createElement("span");
      label.textContent = name;
      const remove = document.createElement("button");
      remove.className = "icon-button";
      remove.setAttribute("aria-label", `Remove the image ${name}`);
      remove.title = "Remove";
      remove.innerHTML = '<span class="codicon codicon-close"></span>';
      remove.addEventListener("click", () => {
        images.splice(index, 1);
        showImages();
        input.focus();
      });
      item.append(preview, label, remove);
      return item;
    }),
  );
}

function showImageError(text: string): void {
  imageError.textContent = text;
  imageError.hidden = !text;
}

/** Reads the pasted or dropped files that are images into chips; a refused one is said under the input. */
function addImages(files: File[]): void {
  const problems: string[] = [];
  for (const file of files) {
    const name = file.name || `pasted ${file.type.replace("image/", "")}`;
    const problem = imageProblem(name, file.type, file.size);
    if (problem) {
      problems.push(problem);
      continue;
    }
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      try {
        images.push({ name, image: imageFromDataUrl(name, String(reader.result)) });
        showImages();
      } catch (error) {
        showImageError(error instanceof Error ? error.message : String(error));
      }
    });
    reader.addEventListener("error", () => showImageError(`${name} could not be read`));
    reader.readAsDataURL(file);
  }
  showImageError(problems.join("; "));
}

input.addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files ?? [])];
  if (files.length) {
    event.preventDefault(); // the image, not its file name as text
    addImages(files);
  }
});
composer.addEventListener("dragover", (event) => {
  if (event.dataTransfer?.types.includes("Files")) {
    event.preventDefault();
    composer.classList.add("dropping");
  }
});
composer.addEventListener("dragleave", () => composer.classList.remove("dropping"));
composer.addEventListener("drop", (event) => {
  composer.classList.remove("dropping");
  const files = [...(event.dataTransfer?.files ?? [])];
  if (files.length) {
    event.preventDefault();
    addImages(files);
  }
});

// -- sending -----------------------------------------------------------------------------------

function send(): void {
  const text = input.value.trim();
  if (!text || busy) {
    return;
  }
  history.add(text);
  vscode.postMessage({ type: "send", text, images: images.map(({ image }) => image) });
  images = [];
  showImages();
  showImageError("");
  input.value = "";
  followBottom = true;
  restoreScroll = null;
  save();
}

input.value = state.draft;
input.addEventListener("input", () => {
  save();
  updateFileQuery();
});
input.addEventListener("keydown", (event) => {
  const listOpen = !filesBox.hidden && files.length > 0;
  if (listOpen && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
    event.preventDefault();
    fileIndex = (fileIndex + (event.key === "ArrowDown" ? 1 : files.length - 1)) % files.length;
    renderFiles();
    return;
  }
  if (listOpen && (event.key === "Enter" || event.key === "Tab")) {
    event.preventDefault();
    pickFile(fileIndex);
    return;
  }
  if (event.key === "Escape" && !filesBox.hidden) {
    event.preventDefault();
    closeFiles();
    return;
  }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
    return;
  }
  const beforeCaret = input.value.slice(0, input.selectionStart);
  if (event.key === "ArrowUp" && !beforeCaret.includes("\n")) {
    const earlier = history.previous(input.value);
    if (earlier !== undefined) {
      event.preventDefault();
      input.value = earlier;
      save();
    }
  } else if (event.key === "ArrowDown" && !input.value.slice(input.selectionEnd).includes("\n")) {
    const later = history.next();
    if (later !== undefined) {
      event.preventDefault();
      input.value = later;
      save();
    }
  }
});
input.addEventListener("blur", () => setTimeout(closeFiles, 150));
sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
for (const [id, type] of [
  ["folder", "pickFolder"],
  ["provider", "pickProvider"],
  ["model", "pickModel"],
  ["conversations", "pickConversation"],
  ["new", "newConversation"],
] as const) {
  element<HTMLButtonElement>(id).addEventListener("click", () => vscode.postMessage({ type }));
}

log.addEventListener("scroll", () => {
  followBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 24;
  state.scrollTop = followBottom ? null : log.scrollTop;
  vscode.setState(state);
});
// A person who scrolls (or the page settling after a reload) ends the restore.
log.addEventListener("wheel", () => (restoreScroll = null));
log.addEventListener("click", (event) => {
  const target = event.target as HTMLElement;
  const summary = target.closest("summary");
  const details = summary?.parentElement as HTMLDetailsElement | null | undefined;
  if (details?.dataset.key) {
    setTimeout(() => toggled.set(details.dataset.key!, details.open));
    return;
  }
  const action = target.closest<HTMLElement>("[data-action]");
  if (!action) {
    return;
  }
  const code = action.closest("pre")?.querySelector("code")?.textContent ?? "";
  switch (action.dataset.action) {
    case "copy":
    case "insert":
      vscode.postMessage({ type: action.dataset.action, code });
      break;
    case "diff":
      vscode.postMessage({ type: "diff", turn: Number(action.dataset.turn), uri: action.dataset.uri });
      break;
    case "undo":
    case "rewind":
      vscode.postMessage({ type: action.dataset.action, turn: Number(action.dataset.turn) });
      break;
  }
});

window.addEventListener("message", (event: MessageEvent) => {
  const message = event.data;
  switch (message?.type) {
    case "reset":
      reset();
      break;
    case "entry":
      showEntry(String(message.key), String(message.html));
      break;
    case "header":
      showHeader(message.header as ChatHeader);
      break;
    case "chips":
      showChips(message.chips as ContextChip[]);
      break;
    case "busy":
      showBusy(message.busy === true);
      break;
    case "files":
      showFiles(String(message.query), message.files as string[]);
      break;
    case "question":
      showQuestion(message.question as ViewQuestion);
      break;
    case "answered":
      removeQuestion(Number(message.id));
      break;
    case "announce":
      element<HTMLElement>("announce").textContent = String(message.text);
      break;
    case "focusInput":
      input.focus();
      break;
  }
});

vscode.postMessage({ type: "ready" });
