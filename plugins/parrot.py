"""parrot: the smallest provider that uses a tool. It reads README.md, then repeats what the tool said.

Copy to .agents/plugins/ and run: elelem-lsp ask -p parrot "what is in the readme?"
"""

import elelem_lsp


class ParrotProvider:
    def fetch(self, messages, tools, emit):
        last = messages[-1]
        if last["role"] == "tool":
            emit({"type": "saying", "text": f"the tool said: {last['content']}"})
        elif any(tool["function"]["name"] == "read" for tool in tools):
            emit({"type": "thinking", "text": "I should read README.md first."})
            emit({"type": "doing", "id": "parrot-1", "name": "read", "arguments": {"path": "README.md"}})
        else:
            emit({"type": "saying", "text": f"you said: {last['content']}"})


@elelem_lsp.configure
def setup(config):
    config.provider("parrot", lambda **_: ParrotProvider())
