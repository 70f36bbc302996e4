"""elelem-lsp: the elelem agent model as a language server.

A plugin author needs only this surface: ``configure`` to register providers,
and the message and event shapes a provider handles.
"""

from .agent.messages import (
    Doing,
    Emit,
    Event,
    Message,
    Provider,
    ProviderError,
    Saying,
    Thinking,
    ToolCall,
    ToolDefinition,
)
from .agent.registry import Config, configure

__all__ = [
    "Config",
    "Doing",
    "Emit",
    "Event",
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
