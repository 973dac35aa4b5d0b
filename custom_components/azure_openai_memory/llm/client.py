"""Build the openai SDK client for one Azure OpenAI resource and prove it works."""

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from homeassistant.core import HomeAssistant
from homeassistant.helpers.httpx_client import get_async_client
import openai

from ..const import (
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    REASONING_EFFORT_OFF,
    VALIDATION_TIMEOUT,
)

type SDKClient = openai.AsyncOpenAI

# openai 3.x moved to httpx2; HA's shared client is an httpx client, which 3.x
# accepts only through a cast its authors say may go away (AZURE_WIRE.md 3).
SDK_TAKES_HTTPX = int(openai.__version__.split(".", 1)[0]) < 3


class InvalidEndpoint(ValueError):
    """The endpoint is not an http(s) URL with a host."""


@dataclass(frozen=True)
class ResourceSettings:
    """How to reach one Azure OpenAI resource (or OpenAI-compatible server)."""

    endpoint: str
    api_key: str = field(repr=False)
    api_style: str
    api_version: str


def normalize_endpoint(endpoint: str) -> str:
    """Return the endpoint in one canonical form, or raise InvalidEndpoint."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidEndpoint(endpoint)
    try:
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as err:
        raise InvalidEndpoint(endpoint) from err
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc.lower()}{path}"


def v1_base_url(endpoint: str) -> str:
    """Return the v1 base URL: Azure's /openai/v1/, or a compatible server's own path."""
    if urlsplit(endpoint).path in ("", "/"):
        return f"{endpoint.rstrip('/')}/openai/v1/"
    return f"{endpoint.rstrip('/')}/"


def build_client(settings: ResourceSettings, http_client: Any) -> openai.AsyncOpenAI:
    """Build the SDK client; blocking (platform facts, certificates), so run in the executor."""
    client: openai.AsyncOpenAI
    if settings.api_style == API_STYLE_DEPLOYMENT:
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=settings.endpoint,
            api_key=settings.api_key,
            api_version=settings.api_version,
            http_client=http_client,
        )
    else:
        # Azure's v1 API takes the key as a Bearer token; some keys still need
        # the api-key header, so both are sent (AZURE_WIRE.md section 2).
        client = openai.AsyncOpenAI(
            base_url=v1_base_url(settings.endpoint),
            api_key=settings.api_key,
            default_headers={"api-key": settings.api_key},
            http_client=http_client,
        )
    client.platform_headers()
    return client


async def async_create_client(
    hass: HomeAssistant, settings: ResourceSettings
) -> openai.AsyncOpenAI:
    """Create the client with HA's shared httpx client where the SDK accepts it."""
    http_client = get_async_client(hass) if SDK_TAKES_HTTPX else None
    return await hass.async_add_executor_job(build_client, settings, http_client)


async def async_check_resource(client: openai.AsyncOpenAI) -> None:
    """Prove endpoint and key with the cheapest request there is: list models."""
    await client.with_options(timeout=VALIDATION_TIMEOUT, max_retries=0).models.list()


async def async_check_deployment(
    client: openai.AsyncOpenAI, deployment: str, api_mode: str, reasoning_effort: str
) -> None:
    """Prove a deployment answers, with the smallest request its API mode allows."""
    quick = client.with_options(timeout=VALIDATION_TIMEOUT, max_retries=0)
    if api_mode == API_MODE_RESPONSES:
        await quick.responses.create(
            model=deployment, input="ping", max_output_tokens=16, store=False
        )
    elif reasoning_effort == REASONING_EFFORT_OFF:
        await quick.chat.completions.create(
            model=deployment,
            messages=[{"role": "user", "content": "ping"}],
            max_tokens=1,
        )
    else:
        await quick.chat.completions.create(
            model=deployment,
            messages=[{"role": "user", "content": "ping"}],
            max_completion_tokens=16,
        )
