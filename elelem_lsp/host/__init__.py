"""The protocol-neutral agent host: a registry of folder agents, each with its settings,
provider choice, conversation, session, turn and its cancellation, compaction and MCP servers;
the permission policy, plugin trust and the plain-client transcript. It speaks to the person
and the editor only through the small port roles of ``frontend`` (a face implements them all
as one ``Frontend``), in the LSP server's and the Agent Client Protocol's terms. It imports
neither pygls nor lsprotocol, nor any face."""
