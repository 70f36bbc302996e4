"""MCP servers: a folder's Model Context Protocol servers, as tools its session can call.

This bridges the official ``mcp`` SDK's client (a process over stdio, or streamable HTTP)
and the agent's ``ToolSource``. Servers start when a turn first needs the folder's tools,
in parallel, each within its start timeout; each keeps its SDK session open in a task of
its own until it is stopped. A server's tools are offered as ``NAME__tool`` with the
server's JSON schema as it is; arguments are checked against it (``jsonschema``) and the
person asked (``permission``) before a call goes out, and every call has a timeout. A
server that fails to start, stops mid-call, hangs or sends garbage gives the model an
``ok: false`` result and the person one message naming the server, what happened and
the end of its stderr; a server whose session ended (mid-call or between calls) is
started again on its next use.
Cancelling the turn cancels the call in flight (the SDK sends ``notifications/cancelled``).
"""

from .calls import content_text, outcome, schema_problem
from .connection import Connection
from .errors import describe_error
from .servers import McpServers

__all__ = ["Connection", "McpServers", "content_text", "describe_error", "outcome", "schema_problem"]
