"""parrot: the smallest provider that uses a tool. It reads README.md, then says what it found.

Copy to ~/.agents/plugins/ (or a trusted folder's .agents/plugins/) and run: elelem-lsp ask -p parrot "what is in the readme?"
"""

import json

import elelem_lsp


class ParrotProvider:
    def fetch(self, messages, tools, emit):
        last = messages[-1]
        if last["role"] == "tool":
            emit({"type": "saying", "text": describe(json.loads(last["content"]))})
        elif any(tool["function"]["name"] == "read" for tool in tools):
            emit({"type": "thinking", "text": "I should read README.md first."})
            emit({"type": "doing", "id": "parrot-1", "name": "read", "arguments": {"path": "README.md"}})
        else:
            emit({"type": "saying", "text": f"you said: {last['content']}"})


def describe(result):
    """A tool result (a dict with ``ok``) in one sentence."""
    if not result["ok"]:
        return f"the tool failed: {result['error']}"
    lines = [line.partition("\t")[2] for line in result["content"].splitlines()]  # read shows "12\ttext"
    first = next((line for line in lines if line.strip()), "")
    total = result["total_lines"]
    count = f"{total} line" + ("" if total == 1 else "s")
    return f"{result['path']} has {count}; it starts: {first}"


@elelem_lsp.configure
def setup(config):
    config.provider("parrot", lambda **_: ParrotProvider())
