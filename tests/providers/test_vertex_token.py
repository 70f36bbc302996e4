"""Where Vertex's bearer token comes from: google-auth's application default credentials, else gcloud.

The credentials are real google-auth credentials whose token endpoint is the
fake server, and a fake ``gcloud`` executable on PATH.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from optional_parts import require_module

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers.remote.vertex import GoogleToken, VertexProvider
from .fake_model_server import FAKE_TOKEN, refreshable_credentials

READ = [{"type": "function", "function": {"name": "read", "description": "Read", "parameters": {"type": "object"}}}]


def fake_gcloud(tmp_path: Path, monkeypatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text("#!/bin/sh\n" + script)
    gcloud.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


async def test_application_default_credentials_refresh_against_the_token_endpoint(fake_server, tmp_path, monkeypatch):
    require_module("google.auth.transport.requests", "vertex", "python3 -m pip install -e '.[vertex]'")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(refreshable_credentials(tmp_path, f"{fake_server.url}/token")))
    provider = VertexProvider("claude-x@1", project="p", region="us-east5", base_url=fake_server.url)
    events: list[dict] = []
    await provider.fetch([{"role": "user", "content": "go"}], READ, events.append)
    assert events[-1]["name"] == "read"
    token_request, model_request = fake_server.requests
    assert token_request.path == "/token" and b"refresh_token=1%2F%2Ffake-refresh" in token_request.body
    assert model_request.path == "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x@1:streamRawPredict"
    assert model_request.headers["authorization"] == f"Bearer {FAKE_TOKEN}"
    await provider.fetch([{"role": "user", "content": "again"}], [], events.append)
    assert [r.path for r in fake_server.requests].count("/token") == 1  # the token is reused while valid


async def test_without_application_default_credentials_gcloud_gives_the_token(tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    fake_gcloud(tmp_path, monkeypatch, 'test "$*" = "auth print-access-token" && echo ya29.from-gcloud\n')
    assert await GoogleToken()() == "ya29.from-gcloud"


async def test_without_google_auth_installed_gcloud_gives_the_token(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.auth", None)  # import fails as if the extra were missing
    fake_gcloud(tmp_path, monkeypatch, "echo ya29.only-gcloud\n")
    assert await GoogleToken()() == "ya29.only-gcloud"


async def test_a_failing_gcloud_is_reported_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    fake_gcloud(tmp_path, monkeypatch, "echo 'ERROR: (gcloud.auth.print-access-token) You do not currently have an active account selected.' >&2\nexit 1\n")
    with pytest.raises(ProviderError, match=r"gcloud auth print-access-token failed: ERROR: \(gcloud.auth.print-access-token\) You do not"):
        await GoogleToken()()


async def test_no_credentials_at_all_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ProviderError, match="no Google credentials for Vertex AI.*gcloud auth application-default login"):
        await GoogleToken()()


async def test_a_rejected_token_is_an_http_401_without_the_token(fake_server):
    async def stale() -> str:
        return "ya29.expired-token"

    provider = VertexProvider("m@1", project="p", base_url=fake_server.url, token=stale)
    with pytest.raises(ProviderError) as caught:
        await provider.fetch([{"role": "user", "content": "go"}], [], lambda e: None)
    assert str(caught.value) == "HTTP 401: Request had invalid authentication credentials."


async def test_vertex_without_a_project_says_which_variable():
    async def token() -> str:
        return "t"

    with pytest.raises(ProviderError, match="^GOOGLE_CLOUD_PROJECT is not set$"):
        await VertexProvider("m@1", project=None, token=token).fetch([{"role": "user", "content": "go"}], [], lambda e: None)


async def test_failed_application_default_credentials_are_not_looked_up_again(tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    fake_gcloud(tmp_path, monkeypatch, "echo ya29.from-gcloud\n")
    source = GoogleToken()
    assert await source() == "ya29.from-gcloud"

    async def looked_again() -> str:
        raise AssertionError("application default credentials were looked up again")

    monkeypatch.setattr(source, "from_application_default", looked_again)
    source.gcloud_token = None  # expired: gcloud is asked again, the credentials lookup is not
    assert await source() == "ya29.from-gcloud"
