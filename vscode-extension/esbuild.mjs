// Bundles the extension (with vscode-languageclient, markdown-it, highlight.js, jsdiff) into
// dist/extension.js, and the chat view's page (with DOMPurify) and its stylesheet (with the
// codicon font) into dist/webview.js and dist/webview.css: the webview loads nothing else.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "info" };
const builds = [
  {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    format: "cjs",
    platform: "node",
    target: "node20",
  },
  {
    ...common,
    entryPoints: { webview: "src/webview/main.ts" },
    outdir: "dist",
    format: "iife",
    platform: "browser",
    target: "es2022",
  },
  {
    ...common,
    sourcemap: false,
    entryPoints: { webview: "src/webview/chat.css" },
    outdir: "dist",
    loader: { ".ttf": "file" },
    assetNames: "[name]",
  },
];

if (watch) {
  for (const options of builds) {
    const context = await esbuild.context(options);
    await context.watch();
  }
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
