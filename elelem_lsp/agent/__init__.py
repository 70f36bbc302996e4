"""The editor-agnostic core: provider contract, registry, session, toolbox and tools.
It imports neither pygls nor lsprotocol."""
