/**
 * What VS Code's language servers know, for elelem-lsp: the client announces
 * `capabilities.experimental.elelem` and answers the server's `elelem/diagnostics` from
 * `vscode.languages.getDiagnostics` (waiting, when asked, until the diagnostics of the files
 * the agent changed have changed and been quiet a moment), and `elelem/definition`,
 * `elelem/references` and `elelem/symbols` with VS Code's `vscode.execute…Provider` commands,
 * which ask every language extension (elelem itself answers none of them). The wire:
 * docs/contract.md, "The editor's language servers".
 */

import * as vscode from "vscode";
import { ClientCapabilities, FeatureState, LanguageClient, StaticFeature } from "vscode-languageclient/node";

/** Diagnostics quiet this long count as settled (TypeScript sends syntax, then semantic errors). */
const SETTLE_MS = 200;
const POLL_MS = 25;

interface Position {
  line: number;
  character: number;
}

/** Announces, in `initialize`, which of the elelem requests this client answers. */
class Announcement implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = {
      ...(capabilities.experimental as object | undefined),
      elelem: { diagnostics: true, definition: true, references: true, symbols: true },
    };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: "static" };
  }
  clear(): void {}
}

/** Counts VS Code's diagnostics changes, per document, so a wait knows what is newer. */
export class DiagnosticsWatch implements vscode.Disposable {
  generation = 0;
  private readonly changed = new Map<string, { generation: number; at: number }>();
  private readonly subscription = vscode.languages.onDidChangeDiagnostics((event) => {
    this.generation += 1;
    for (const uri of event.uris) {
      this.changed.set(uri.toString(), { generation: this.generation, at: Date.now() });
    }
  });

  /** Resolves once every one of `uris` has changed since `since` and been quiet, or at `waitMs`. */
  async settle(uris: vscode.Uri[], since: number, waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const seen = uris.map((uri) => this.changed.get(uri.toString()));
      if (seen.every((change) => change && change.generation > since)) {
        const last = Math.max(...seen.map((change) => change!.at));
        if (Date.now() - last >= SETTLE_MS) {
          return;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function toPosition(value: unknown): vscode.Position {
  const position = isObject(value) ? (value as Partial<Position>) : {};
  return new vscode.Position(Number(position.line) || 0, Number(position.character) || 0);
}

/** Registers the announcement and the request handlers on `client` (before it starts). */
export function answerInsight(client: LanguageClient, watch: DiagnosticsWatch): void {
  client.registerFeature(new Announcement());
  const c2p = client.code2ProtocolConverter;
  const asUri = (value: unknown) => client.protocol2CodeConverter.asUri(String(value));
  const location = (uri: vscode.Uri, range: vscode.Range) => ({ uri: c2p.asUri(uri), range: c2p.asRange(range) });
  const locations = (found: (vscode.Location | vscode.LocationLink)[] | undefined) =>
    (found ?? []).map((item) =>
      "targetUri" in item
        ? location(item.targetUri, item.targetSelectionRange ?? item.targetRange)
        : location(item.uri, item.range),
    );
  /** A document the providers can answer for: opened (not shown) if it was not yet. */
  const opened = async (uri: vscode.Uri) => {
    await vscode.workspace.openTextDocument(uri);
    return uri;
  };

  client.onRequest("elelem/diagnostics", async (params: { uris?: unknown; waitMs?: unknown; since?: unknown }) => {
    const uris = Array.isArray(params?.uris) ? params.uris.map(asUri) : undefined;
    const waitMs = typeof params?.waitMs === "number" ? params.waitMs : 0;
    if (uris && waitMs > 0) {
      await watch.settle(uris, typeof params.since === "number" ? params.since : watch.generation, waitMs);
    }
    const found: [vscode.Uri, readonly vscode.Diagnostic[]][] = uris
      ? uris.map((uri) => [uri, vscode.languages.getDiagnostics(uri)])
      : vscode.languages.getDiagnostics().filter(([uri]) => uri.scheme === "file");
    const items = await Promise.all(
      found.map(async ([uri, diagnostics]) => ({ uri: c2p.asUri(uri), diagnostics: await c2p.asDiagnostics([...diagnostics]) })),
    );
    return { items, generation: watch.generation };
  });

  client.onRequest("elelem/definition", async (params: { uri?: unknown; position?: unknown }) => {
    const uri = await opened(asUri(params?.uri));
    const found = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(
      "vscode.executeDefinitionProvider",
      uri,
      toPosition(params?.position),
    );
    return locations(found);
  });

  client.onRequest("elelem/references", async (params: { uri?: unknown; position?: unknown; includeDeclaration?: unknown }) => {
    const uri = await opened(asUri(params?.uri));
    const position = toPosition(params?.position);
    const found = await vscode.commands.executeCommand<vscode.Location[]>("vscode.executeReferenceProvider", uri, position);
    // VS Code's command always counts the declaration: leave out the one at the place asked about
    const kept = params?.includeDeclaration === false ? (found ?? []).filter((l) => !(l.uri.toString() === uri.toString() && l.range.contains(position))) : found;
    return locations(kept);
  });

  client.onRequest("elelem/symbols", async (params: { uri?: unknown; query?: unknown }) => {
    if (typeof params?.uri === "string") {
      const uri = await opened(asUri(params.uri));
      const found = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>(
        "vscode.executeDocumentSymbolProvider",
        uri,
      );
      return (found ?? []).map((symbol) => asSymbol(symbol, c2p.asUri.bind(c2p), c2p.asRange.bind(c2p)));
    }
    const found = await vscode.commands.executeCommand<vscode.SymbolInformation[]>(
      "vscode.executeWorkspaceSymbolProvider",
      typeof params?.query === "string" ? params.query : "",
    );
    return (found ?? []).map((symbol) => asSymbol(symbol, c2p.asUri.bind(c2p), c2p.asRange.bind(c2p)));
  });
}

/** A DocumentSymbol (with its children) or a SymbolInformation in the protocol's shape (kinds count from 1 there). */
function asSymbol(
  symbol: vscode.DocumentSymbol | vscode.SymbolInformation,
  asUri: (uri: vscode.Uri) => string,
  asRange: (range: vscode.Range) => unknown,
): Record<string, unknown> {
  if ("location" in symbol) {
    return {
      name: symbol.name,
      kind: symbol.kind + 1,
      containerName: symbol.containerName || undefined,
      location: { uri: asUri(symbol.location.uri), range: asRange(symbol.location.range) },
    };
  }
  return {
    name: symbol.name,
    kind: symbol.kind + 1,
    range: asRange(symbol.range),
    selectionRange: asRange(symbol.selectionRange),
    children: symbol.children.map((child) => asSymbol(child, asUri, asRange)),
  };
}
