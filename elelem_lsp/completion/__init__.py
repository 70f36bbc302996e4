"""Inline completion: ghost text from the folder's own providers (issue 30).

A room beside ``agent``: it uses the providers and the open documents, not the turn loop. One
module a stage, in the order a request goes through them: ``settings`` (the ``completion``
object), ``privacy`` (files never sent), ``context`` (prefix, suffix and snippets sized in
tokens), ``multiline`` (one line or a block), ``templates`` (FIM token formats and the
hole-filling chat prompt), ``routes``, ``local_routes`` and ``chat_routes`` (one way of asking a
provider each) and ``routing`` (which one, found on first use), ``filters`` (the stream cut and
cleaned), ``cache`` (typing along, the answer cache), ``counts`` (shown, accepted, latency, cost)
and ``engine``, which ties them together with cancellation. It knows nothing of LSP: the
LSP face's ``server/completion.py`` speaks for it.
"""
