"""Claude on Google Vertex AI: the ``vertex`` provider, built in (no plugin file needed).

Bridges the Anthropic provider to Vertex's ``streamRawPredict`` URL for
``GOOGLE_CLOUD_PROJECT`` in ``GOOGLE_CLOUD_REGION`` (default ``us-east5``): the
model is in the URL, not the body, the body carries ``anthropic_version:
"vertex-2023-10-16"``, and a bearer token comes from google-auth application
default credentials (extra ``vertex``), else from ``gcloud auth
print-access-token``. The body is the Anthropic provider's, prompt-caching breakpoints included.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ...agent.messages import Message, ProviderError, ToolDefinition
from ...agent.wording import shorten
from .anthropic import AnthropicProvider, thinking_budget_from_env
from .http import Transport, env

DEFAULT_REGION = "us-east5"
DEFAULT_MODEL = "claude-sonnet-4-5@20250929"
VERTEX_VERSION = "vertex-2023-10-16"
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
GCLOUD_TOKEN_LIFETIME = 30 * 60.0  # gcloud's tokens last an hour; take a new one well before

TokenSource = Callable[[], Awaitable[str]]


class NoApplicationDefault(Exception):
    """Why application default credentials gave no token."""


class GoogleToken:
    """An access token for Google Cloud, refreshed when it expires."""

    def __init__(self) -> None:
        self.credentials: Any = None
        self.gcloud_token: tuple[str, float] | None = None
        # why application default credentials failed; looking again costs seconds (a GCE probe)
        self.no_adc: str | None = None

    async def __call__(self) -> str:
        if self.no_adc is None:
            try:
                return await self.from_application_default()
            except NoApplicationDefault as why:
                self.no_adc = str(why)
        return await self.from_gcloud(self.no_adc)

    async def from_application_default(self) -> str:
        try:
            import google.auth
            import google.auth.exceptions
            import google.auth.transport.requests
        except ImportError:
            raise NoApplicationDefault("google-auth is not installed") from None
        try:
            if self.credentials is None:
                self.credentials, _ = await asyncio.to_thread(google.auth.default, scopes=SCOPES)
            if not self.credentials.valid:
                await asyncio.to_thread(self.credentials.refresh, google.auth.transport.requests.Request())
        except google.auth.exceptions.GoogleAuthError as error:
            self.credentials = None
            raise NoApplicationDefault(str(error)) from None
        return self.credentials.token

    async def from_gcloud(self, why_not_adc: str) -> str:
        if self.gcloud_token and time.monotonic() < self.gcloud_token[1]:
            return self.gcloud_token[0]
        try:
            process = await asyncio.create_subprocess_exec(
                "gcloud",
                "auth",
                "print-access-token",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError:
            raise ProviderError(
                "no Google credentials for Vertex AI: application default credentials failed "
                f"({shorten(why_not_adc, 200)}) and the gcloud CLI is not installed. "
                "Run `gcloud auth application-default login` or install elelem-lsp[vertex]"
            ) from None
        try:
            out, err = await asyncio.wait_for(process.communicate(), 60)
        except TimeoutError:
            raise ProviderError("gcloud auth print-access-token did not answer in 60 s") from None
        finally:
            if process.returncode is None:
                process.kill()
        token = out.decode().strip()
        if process.returncode != 0 or not token:
            raise ProviderError(f"gcloud auth print-access-token failed: {shorten(err.decode(), 200)}")
        self.gcloud_token = (token, time.monotonic() + GCLOUD_TOKEN_LIFETIME)
        return token


def vertex_base_url(region: str) -> str:
    return "https://aiplatform.googleapis.com" if region == "global" else f"https://{region}-aiplatform.googleapis.com"


class VertexProvider(AnthropicProvider):
    """Claude through Vertex AI's ``streamRawPredict``."""

    def __init__(
        self,
        model: str,
        *,
        project: str | None,
        region: str = DEFAULT_REGION,
        base_url: str | None = None,
        token: TokenSource | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        thinking_budget: int | None = None,
        transport: Transport | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url or vertex_base_url(region),
            temperature=temperature,
            max_tokens=max_tokens,
            thinking_budget=thinking_budget,
            transport=transport,
        )
        self.project = project
        self.region = region
        self.token = token or GoogleToken()

    @property
    def url(self) -> str:
        return (
            f"{self.base_url}/v1/projects/{self.project}/locations/{self.region}"
            f"/publishers/anthropic/models/{self.model}:streamRawPredict"
        )

    async def headers(self) -> dict[str, str]:
        if not self.project:
            raise ProviderError("GOOGLE_CLOUD_PROJECT is not set")
        return {"authorization": f"Bearer {await self.token()}"}

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body = super().request_body(messages, tools)
        del body["model"]
        return {"anthropic_version": VERTEX_VERSION, **body}


def factory(
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    thinking_budget: int | None = None,
    **_: Any,
) -> VertexProvider:
    return VertexProvider(
        model or env("VERTEX_MODEL", DEFAULT_MODEL),
        project=env("GOOGLE_CLOUD_PROJECT"),
        region=env("GOOGLE_CLOUD_REGION", DEFAULT_REGION),
        base_url=env("VERTEX_BASE_URL"),
        temperature=temperature,
        max_tokens=max_tokens,
        thinking_budget=thinking_budget_from_env(thinking_budget),
    )
