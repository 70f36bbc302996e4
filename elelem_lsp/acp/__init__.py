"""The Agent Client Protocol face: ``elelem-lsp acp``, the same folder agents behind ACP's JSON-RPC on stdio.

``agent`` answers the protocol's methods (initialize, authenticate,
session/new|load|resume|list|close|prompt|cancel, config options); ``session`` is one session,
holding its folder's agent; ``prompts`` reads a prompt's content blocks (images too),
``slash_commands`` answers ``/provider`` and the others, ``options`` is the provider and model
options, ``mcp_servers`` the client's MCP servers as settings; ``frontend`` is the host's ports in
ACP terms (files and terminals through the client when it offers them, permission through
``session/request_permission``); ``updates`` turns agent events into ``session/update``s (the
plan and the usage too); ``stdio`` serves it all on stdin/stdout. The schema and the connection
are the ``agent-client-protocol`` package's.
"""
