"""The protocol-neutral agent host: folders and their sessions, settings, provider choice,
turns and their cancellation, the permission policy, plugin trust and the plain-client
transcript. It speaks to the person and the editor only through ``frontend.Frontend``,
which each face (the LSP server, the Agent Client Protocol) implements. It imports
neither pygls nor lsprotocol."""
