"""The Agent Client Protocol face: ``elelem-lsp acp``, the same host behind ACP's JSON-RPC on stdio.

``agent`` answers the protocol's methods (initialize, session/new|load|prompt|cancel,
config options, slash commands); ``frontend`` is the host's Frontend port in ACP terms
(files and terminals through the client when it offers them, permission through
``session/request_permission``); ``updates`` turns agent events into ``session/update``s.
The schema and the connection are the ``agent-client-protocol`` package's.
"""
