"""echo: says the last user message back, prefixed by the model name when one is given.

Copy to .agents/plugins/ and run: elelem-lsp ask -p echo --model parrot "hello there"
"""

import elelem_lsp


class EchoProvider:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def fetch(self, messages, tools, emit):
        last = next(m for m in reversed(messages) if m["role"] == "user")
        emit({"type": "saying", "text": f"{self.prefix}{last['content']}"})


@elelem_lsp.configure
def setup(config):
    config.provider("echo", lambda model=None, **_: EchoProvider(f"{model}: " if model else ""))
