"""The example plugins in plugins/, copied into a workspace as a person would."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scaffold import add_plugin
from test_cli import ask


@pytest.fixture
def chat_completions():
    """A loopback server that answers OpenAI chat completions: a read call, then a reply."""
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            requests.append({"path": self.path, "auth": self.headers.get("authorization"), "body": body})
            if body["messages"][-1]["role"] == "tool":
                message = {"role": "assistant", "content": "the readme says hello"}
            else:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "README.md"}'}}]}
            data = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    server.shutdown()


def test_compat_does_a_tool_round_trip_over_http(project, chat_completions):
    base_url, requests = chat_completions
    add_plugin(project, "compat")
    run = ask(project, "-p", "compat", "--model", "tiny", "what is in the readme?",
              env={"COMPAT_BASE_URL": base_url, "COMPAT_API_KEY": "sk-test"})
    assert run.returncode == 0, run.stderr
    assert run.stdout == "the readme says hello\n"
    first, second = requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "tiny" and first["body"]["tools"][0]["type"] == "function"
    assistant, tool = second["body"]["messages"][-2:]
    assert assistant["tool_calls"] == [{"id": "call_1", "type": "function",
                                        "function": {"name": "read", "arguments": '{"path": "README.md"}'}}]
    assert tool["tool_call_id"] == "call_1" and json.loads(tool["content"])["content"] == "1\t# hello"


def test_compat_reports_http_errors(project):
    add_plugin(project, "compat")
    run = ask(project, "-p", "compat", "hi", env={"COMPAT_BASE_URL": "http://127.0.0.1:9/v1"})
    assert run.returncode == 1 and run.stdout == "" and run.stderr.startswith("Error: ")
