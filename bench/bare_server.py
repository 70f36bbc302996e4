"""Bare pygls for bench/sidebyside.py: a language server with no features, for start-up and memory."""

from pygls.lsp.server import LanguageServer

if __name__ == "__main__":
    LanguageServer("bare", "1").start_io()
