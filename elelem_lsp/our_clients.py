"""The names elelem's own LSP clients announce as ``initializationOptions.client``.

Shared by the clients that announce them and the server that reads them (to say, for
one, ``-p NAME`` to the terminal client where it says a setting to an editor).
"""

OUR_CLIENT_PREFIX = "elelem-"  # every one of ours: a client without it is a plain one
TERMINAL_CLIENT = "elelem-terminal"  # `elelem-lsp ask|chat|providers`
