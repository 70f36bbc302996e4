/**
 * The messages between the chat view's page and the extension, and the shapes they carry: what
 * the header shows, a context chip, a question of the running turn, and what the page sends
 * back. Types only: both sides import them.
 */

import type { ChatImage } from "./composer";

/** What the header shows. */
export interface ChatHeader {
  folder: string;
  provider: string | null;
  model: string | null;
  conversation: string;
  /** The conversation's size against the folder's budget, or "". */
  usage: string;
  /** Inline completion's and next edit's figures in the server's words, a line each, or "": the usage's tooltip. */
  usageDetails: string;
  multiRoot: boolean;
}

/** Context attached to the next question: the active file (or selection) or a #file pick. */
export interface ContextChip {
  id: string;
  label: string;
  title: string;
}

/** A request of the running turn shown in the view: buttons to choose from, or a text input. */
export interface ViewQuestion {
  id: number;
  kind: "choice" | "text";
  message: string;
  options: string[];
}

/** A message from the page. */
export type ViewMessage =
  | { type: "ready" }
  | { type: "send"; text: string; images?: ChatImage[] }
  | { type: "stop" | "pickProvider" | "pickModel" | "pickConversation" | "pickFolder" | "newConversation" }
  | { type: "removeChip"; id: string }
  | { type: "fileQuery"; query: string }
  | { type: "addFile"; path: string }
  | { type: "copy" | "insert"; code: string }
  | { type: "diff"; turn: number; uri: string }
  | { type: "undo"; turn: number }
  | { type: "rewind"; turn: number }
  | { type: "answer"; id: number; answer: string | null };
