"""elelem-lsp: the elelem agent model as a language server.

A plugin author needs only this surface: ``configure`` to register providers,
and the message and event shapes a provider handles.
"""

from .agent.events import Doing, Event, FetchUsage, Saying, Thinking
from .agent.messages import Emit, Message, Provider, ProviderError, ToolCall, ToolDefinition
from .agent.registry import Config, configure

__all__ = [
    "Config",
    "Doing",
    "Emit",
    "Event",
    "FetchUsage",
    "Message",
    "Provider",
    "ProviderError",
    "Saying",
    "Thinking",
    "ToolCall",
    "ToolDefinition",
    "configure",
]
__version__ = "0.1.0"
