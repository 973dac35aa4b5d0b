"""Build the openai SDK client for one Azure OpenAI resource and prove it works."""

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
import json
import re
from typing import Any, Protocol
from urllib.parse import urlsplit

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.util.ssl import client_context
from homeassistant.util.ulid import ulid_now
import openai

from ..compat import signature
from ..const import (
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    CONF_API_MODE,
    CONF_CONTEXT_LIMIT,
    CONF_DEPLOYMENT,
    CONF_MAX_TOKENS,
    CONF_PROMPT_CACHE_KEY,
    CONF_REASONING_EFFORT,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOP_P,
    LOGGER,
    PROMPT_CACHE_KEY_AUTO,
    PROMPT_CACHE_KEY_ON,
    REASONING_EFFORT_OFF,
    RECOMMENDED_API_MODE,
    RECOMMENDED_MAX_TOKENS,
    RECOMMENDED_REASONING_EFFORT,
    RECOMMENDED_REQUEST_TIMEOUT,
    RECOMMENDED_TEMPERATURE,
    RECOMMENDED_TOP_P,
    VALIDATION_TIMEOUT,
)
from ..lib.tokens import context_limit_for_model
from .errors import ContentFiltered, MalformedToolArguments, ResponseFailed
from .tools import chat_tool, responses_tool

type SDKClient = openai.AsyncOpenAI

# Dated api-versions from which a feature exists; the v1 API has them all.
STREAM_USAGE_MIN_API_VERSION = "2024-09-01"
JSON_SCHEMA_MIN_API_VERSION = "2024-08-01"

# openai 3.x moved to httpx2; HA's shared client is an httpx client, which 3.x
# accepts only through a cast its authors say may go away.
SDK_TAKES_HTTPX = int(openai.__version__.split(".", 1)[0]) < 3

PROMPT_CACHE_KEY = "prompt_cache_key"
# openai 1.x (Home Assistant 2025.4's pin) has no such parameter: it goes in the body as is.
SDK_TAKES_PROMPT_CACHE_KEY = (
    PROMPT_CACHE_KEY in signature(openai.resources.chat.AsyncCompletions.create).parameters
)
# Azure documents prompt_cache_key from the GPT-5.6 family on.
PROMPT_CACHE_KEY_FROM_FAMILY = (5, 6)
_GPT_FAMILY = re.compile(r"gpt-(\d+)(?:\.(\d+))?", re.IGNORECASE)


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
    # Azure's own paths are added by the client: https://x/openai/v1 is https://x.
    for suffix in ("/openai/v1", "/openai"):
        if path.lower().endswith(suffix):
            path = path[: -len(suffix)]
            break
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
        # the api-key header, so both are sent.
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
    """Create the client with HA's shared httpx client where the SDK takes httpx.

    openai 3.x speaks httpx2: it gets an httpx2 client of its own (closed on unload) that trusts
    what Home Assistant trusts, HA's SSL context, rather than HA's httpx client through a cast
    the SDK calls temporary.
    """
    if SDK_TAKES_HTTPX:
        return await hass.async_add_executor_job(build_client, settings, get_async_client(hass))
    return await hass.async_add_executor_job(_build_client_on_httpx2, settings)


def _build_client_on_httpx2(settings: ResourceSettings) -> openai.AsyncOpenAI:
    """The client of openai 3.x with its own httpx2 client; blocking, run in the executor."""
    make_http_client: Any = getattr(openai, "DefaultAsyncHttpx2Client")  # noqa: B009 - 3.x only
    return build_client(settings, make_http_client(verify=client_context()))


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


@dataclass
class Usage:
    """Tokens the API reported for one request."""

    input_tokens: int = 0
    output_tokens: int = 0
    # Of the input tokens, those Azure read from its prompt cache.
    cached_input_tokens: int = 0


class PromptCacheKey:
    """What routes an agent's requests to the machines that hold its prompt cache.

    One per agent, shared by every request the agent builds: a deployment that refuses
    the parameter is asked once, and never again until the agent is set up anew.
    """

    def __init__(self, value: str) -> None:
        self.value = value
        self.refused = False

    @property
    def sent(self) -> str | None:
        """The key a request carries; none after a refusal."""
        return None if self.refused else self.value


def model_takes_prompt_cache_key(deployment: str) -> bool:
    """A deployment named after a model whose documentation takes prompt_cache_key."""
    if (family := _GPT_FAMILY.match(deployment.strip())) is None:
        return False
    return (int(family[1]), int(family[2] or 0)) >= PROMPT_CACHE_KEY_FROM_FAMILY


@dataclass(frozen=True)
class JsonFormat:
    """Ask for an answer that is one JSON object following `schema`.

    Where the API version cannot take a schema, the request asks for any JSON object
    instead (JSON mode), which needs the word "JSON" in the messages: say it there, and
    validate the answer either way.
    """

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class RequestOptions:
    """What one agent sends with every request."""

    deployment: str
    api_mode: str
    temperature: float
    top_p: float
    max_tokens: int
    reasoning_effort: str
    timeout: float
    include_stream_usage: bool = True
    json_schema_supported: bool = True
    response_format: JsonFormat | None = None
    prompt_cache_key: PromptCacheKey | None = None

    @property
    def is_reasoning(self) -> bool:
        """Reasoning models refuse temperature, top_p and max_tokens (HTTP 400)."""
        return self.reasoning_effort != REASONING_EFFORT_OFF

    def chat_response_format(self) -> dict[str, Any] | None:
        """`response_format` of a Chat Completions request."""
        if (wanted := self.response_format) is None:
            return None
        if not self.json_schema_supported:
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": wanted.name, "schema": wanted.schema, "strict": True},
        }

    def responses_text_format(self) -> dict[str, Any] | None:
        """`text.format` of a Responses request."""
        if (wanted := self.response_format) is None:
            return None
        if not self.json_schema_supported:
            return {"type": "json_object"}
        return {"type": "json_schema", "name": wanted.name, "schema": wanted.schema, "strict": True}


def _supports(settings: ResourceSettings, min_api_version: str) -> bool:
    return (
        settings.api_style != API_STYLE_DEPLOYMENT or settings.api_version[:10] >= min_api_version
    )


def sends_prompt_cache_key(agent: Mapping[str, Any]) -> bool:
    """The agent's choice, or by default whether its deployment's model takes the key."""
    choice = agent.get(CONF_PROMPT_CACHE_KEY) or PROMPT_CACHE_KEY_AUTO
    if choice == PROMPT_CACHE_KEY_AUTO:
        return model_takes_prompt_cache_key(agent[CONF_DEPLOYMENT])
    return bool(choice == PROMPT_CACHE_KEY_ON)


def request_options(
    settings: ResourceSettings,
    agent: Mapping[str, Any],
    cache_key: PromptCacheKey | None = None,
) -> RequestOptions:
    """The request options of one agent (subentry data) on one resource."""
    return RequestOptions(
        deployment=agent[CONF_DEPLOYMENT],
        api_mode=agent.get(CONF_API_MODE, RECOMMENDED_API_MODE),
        temperature=float(agent.get(CONF_TEMPERATURE, RECOMMENDED_TEMPERATURE)),
        top_p=float(agent.get(CONF_TOP_P, RECOMMENDED_TOP_P)),
        max_tokens=int(agent.get(CONF_MAX_TOKENS, RECOMMENDED_MAX_TOKENS)),
        reasoning_effort=agent.get(CONF_REASONING_EFFORT, RECOMMENDED_REASONING_EFFORT),
        timeout=float(agent.get(CONF_REQUEST_TIMEOUT, RECOMMENDED_REQUEST_TIMEOUT)),
        include_stream_usage=_supports(settings, STREAM_USAGE_MIN_API_VERSION),
        json_schema_supported=_supports(settings, JSON_SCHEMA_MIN_API_VERSION),
        prompt_cache_key=cache_key if sends_prompt_cache_key(agent) else None,
    )


def context_limit(agent: Mapping[str, Any]) -> int:
    """Tokens one request of an agent may carry: its option, else its deployment's window."""
    return int(agent.get(CONF_CONTEXT_LIMIT) or context_limit_for_model(agent[CONF_DEPLOYMENT]))


async def async_release_client(client: SDKClient) -> None:
    """Close the connections of an SDK client built with its own HTTP client.

    HA's shared client (what the SDK gets while it takes httpx) is never closed here.
    """
    if not SDK_TAKES_HTTPX:
        await client.close()


type Delta = conversation.AssistantContentDeltaDict


class LLMClient(Protocol):
    """One round trip to the model, streamed as Home Assistant delta dicts."""

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], usage: Usage
    ) -> AsyncIterator[Delta]:
        """Yield {'role'}, {'content'} and {'tool_calls'} deltas; fill usage at the end."""
        ...


def _tool_input(call_id: str, name: str, arguments: str) -> llm.ToolInput:
    """A tool call for Home Assistant; a call the server sent without an id gets one.

    OpenAI-compatible servers may omit ids; the result must still be matched to its call.
    """
    call_id = call_id or f"call_{ulid_now()}"
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as err:
        raise MalformedToolArguments(name) from err
    if not isinstance(args, dict):
        raise MalformedToolArguments(name)
    return llm.ToolInput(id=call_id, tool_name=name, tool_args=args)


class _StreamingClient:
    """What both API clients share: the SDK with the agent's timeout, and its options."""

    def __init__(self, sdk: SDKClient, options: RequestOptions) -> None:
        self._sdk = sdk.with_options(timeout=options.timeout)
        self._options = options

    def _add_prompt_cache_key(self, args: dict[str, Any]) -> None:
        if (key := self._options.prompt_cache_key) is None or key.sent is None:
            return
        if SDK_TAKES_PROMPT_CACHE_KEY:
            args[PROMPT_CACHE_KEY] = key.sent
        else:
            args["extra_body"][PROMPT_CACHE_KEY] = key.sent

    def _prompt_cache_key_refused(self, args: dict[str, Any], err: openai.BadRequestError) -> bool:
        """A 400 that names the key this request sent: it goes again without it, as later ones.

        Azure names an argument a model does not take in the error's param or its message.
        A turn running alongside may have heard the refusal first: its request still had the
        key, and is sent again all the same.
        """
        key = self._options.prompt_cache_key
        if key is None or PROMPT_CACHE_KEY not in {*args, *args["extra_body"]}:
            return False
        if err.param != PROMPT_CACHE_KEY and PROMPT_CACHE_KEY not in err.message:
            return False
        if not key.refused:
            key.refused = True
            LOGGER.debug(
                "Deployment %s refused %s; its requests go without it",
                self._options.deployment,
                PROMPT_CACHE_KEY,
            )
        return True


class ChatCompletionsClient(_StreamingClient):
    """Chat Completions, streamed, tolerant of Azure's chunk quirks (empty choices,
    content-filter results, usage in a chunk of its own)."""

    def _arguments(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        options = self._options
        # The SDK's typed `messages` and `tools` are walked against its TypedDicts on every
        # request, in the event loop: 44 ms (openai 1.68) / 21 ms (2.15) for 100 messages
        # and 20 tools. Ours are plain JSON already, so they travel as extra_body, which
        # the SDK sends as given; every other parameter is typed.
        args: dict[str, Any] = {
            "model": options.deployment,
            "messages": [],
            "stream": True,
            "extra_body": {"messages": messages},
        }
        if options.include_stream_usage:
            args["stream_options"] = {"include_usage": True}
        if options.is_reasoning:
            args["max_completion_tokens"] = options.max_tokens
            args["reasoning_effort"] = options.reasoning_effort
        else:
            args["max_tokens"] = options.max_tokens
            args["temperature"] = options.temperature
            args["top_p"] = options.top_p
        if tools:
            args["extra_body"]["tools"] = [chat_tool(spec) for spec in tools]
        if (response_format := options.chat_response_format()) is not None:
            args["extra_body"]["response_format"] = response_format
        self._add_prompt_cache_key(args)
        return args

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], usage: Usage
    ) -> AsyncIterator[Delta]:
        """One request; tool calls are assembled from their deltas and yielded at the end."""
        create = self._sdk.chat.completions.create
        args = self._arguments(messages, tools)
        try:
            result = await create(**args)
        except openai.BadRequestError as err:
            if not self._prompt_cache_key_refused(args, err):
                raise
            result = await create(**self._arguments(messages, tools))
        calls: dict[int, dict[str, str]] = {}
        yield {"role": "assistant"}
        async for chunk in result:
            if chunk.usage is not None:
                usage.input_tokens += chunk.usage.prompt_tokens
                usage.output_tokens += chunk.usage.completion_tokens
                if (details := chunk.usage.prompt_tokens_details) is not None:
                    usage.cached_input_tokens += details.cached_tokens or 0
            # The first chunk has no choices; annotation-only choices have no delta.
            for choice in chunk.choices:
                if choice.finish_reason == "content_filter":
                    raise ContentFiltered
                delta = choice.delta
                if delta is None:
                    continue
                if delta.content:
                    yield {"content": delta.content}
                for tool_call in delta.tool_calls or ():
                    call = calls.setdefault(tool_call.index, {"id": "", "name": "", "args": ""})
                    if tool_call.id:
                        call["id"] = tool_call.id
                    if tool_call.function is not None:
                        call["name"] += tool_call.function.name or ""
                        call["args"] += tool_call.function.arguments or ""
        if calls:
            yield {
                "tool_calls": [
                    _tool_input(c["id"], c["name"], c["args"]) for _, c in sorted(calls.items())
                ]
            }


def _responses_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-format messages as Responses API input items."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
            continue
        if message.get("content"):
            items.append(
                {
                    "type": "message",
                    "role": "developer" if role == "system" else role,
                    "content": message["content"],
                }
            )
        items.extend(
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
            }
            for call in message.get("tool_calls", ())
        )
    return items


class ResponsesClient(_StreamingClient):
    """The Responses API, streamed; nothing stored on the service side."""

    def _arguments(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        options = self._options
        args: dict[str, Any] = {
            "model": options.deployment,
            "input": [],
            "max_output_tokens": options.max_tokens,
            "store": False,
            "stream": True,
            "extra_body": {"input": _responses_input(messages)},
        }
        if options.is_reasoning:
            args["reasoning"] = {"effort": options.reasoning_effort}
        else:
            args["temperature"] = options.temperature
            args["top_p"] = options.top_p
        if tools:
            args["extra_body"]["tools"] = [responses_tool(spec) for spec in tools]
        if (text_format := options.responses_text_format()) is not None:
            args["extra_body"]["text"] = {"format": text_format}
        self._add_prompt_cache_key(args)
        return args

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], usage: Usage
    ) -> AsyncIterator[Delta]:
        """One request; events are matched by type name, which every SDK version shares."""
        create = self._sdk.responses.create
        args = self._arguments(messages, tools)
        try:
            result = await create(**args)
        except openai.BadRequestError as err:
            if not self._prompt_cache_key_refused(args, err):
                raise
            result = await create(**self._arguments(messages, tools))
        names: dict[str, tuple[str, str]] = {}
        calls: list[llm.ToolInput] = []
        yield {"role": "assistant"}
        async for event in result:
            kind = event.type
            if kind == "response.output_text.delta":
                yield {"content": event.delta}
            elif kind == "response.output_item.added" and event.item.type == "function_call":
                names[event.item.id or ""] = (event.item.call_id, event.item.name)
            elif kind == "response.function_call_arguments.done":
                if (known := names.get(event.item_id)) is None:
                    raise ResponseFailed(f"arguments for unknown item {event.item_id}")
                calls.append(_tool_input(*known, event.arguments))
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                if (reported := event.response.usage) is not None:
                    usage.input_tokens += reported.input_tokens
                    usage.output_tokens += reported.output_tokens
                    # OpenAI-compatible servers may leave the details out.
                    details = getattr(reported, "input_tokens_details", None)
                    usage.cached_input_tokens += getattr(details, "cached_tokens", 0) or 0
                if kind == "response.incomplete":
                    details = event.response.incomplete_details
                    if details is not None and details.reason == "content_filter":
                        raise ContentFiltered
                    raise ResponseFailed(details.reason if details else "incomplete")
                if kind == "response.failed":
                    raise ResponseFailed("failed")
            elif kind == "error":
                raise ResponseFailed(getattr(event, "code", None) or "error")
        if calls:
            yield {"tool_calls": calls}


def create_llm_client(sdk: SDKClient, options: RequestOptions) -> LLMClient:
    """The client for the agent's API mode."""
    if options.api_mode == API_MODE_RESPONSES:
        return ResponsesClient(sdk, options)
    return ChatCompletionsClient(sdk, options)
