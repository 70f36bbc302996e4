"""compat: any server that speaks OpenAI's chat completions, without streaming.

Settings from the environment: COMPAT_BASE_URL (default http://localhost:8080/v1),
COMPAT_MODEL (default "default", overridden by --model), COMPAT_API_KEY (optional).
Copy to .agents/plugins/ and run: COMPAT_BASE_URL=... elelem-lsp chat -p compat
"""

import json
import os

import httpx

import elelem_lsp


class CompatProvider:
    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key

    def fetch(self, messages, tools, emit):
        body = {"model": self.model, "messages": [normalize(m) for m in messages]}
        if tools:
            body["tools"] = tools
        message = self.post(body)["choices"][0]["message"]
        text = message.get("content") or ""
        if text:
            emit({"type": "saying", "text": text})
        for call in message.get("tool_calls") or []:
            emit(
                {
                    "type": "doing",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": json.loads(call["function"].get("arguments") or "{}"),
                }
            )

    def post(self, body):
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        response = httpx.post(self.url, json=body, headers=headers, timeout=httpx.Timeout(600, connect=10))
        if response.status_code >= 300:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:500]}")
        return response.json()


def normalize(message):
    """elelem's tool calls carry arguments as a dict; OpenAI wants a JSON string under function."""
    if not message.get("tool_calls"):
        return message
    calls = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for c in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


@elelem_lsp.configure
def setup(config):
    config.provider(
        "compat",
        lambda model=None, **_: CompatProvider(
            os.environ.get("COMPAT_BASE_URL", "http://localhost:8080/v1"),
            model or os.environ.get("COMPAT_MODEL", "default"),
            os.environ.get("COMPAT_API_KEY"),
        ),
    )
