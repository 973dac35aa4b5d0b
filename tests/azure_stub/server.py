"""An aiohttp server on 127.0.0.1 that speaks Azure OpenAI's wire format.

It lets the real openai SDK run end to end in tests and in scripts/develop.
Shapes and quirks follow what Azure OpenAI sends: deployment and v1 URLs,
api-version and api-key checks, Azure's error bodies, the empty-choices first
stream chunk, content-filter annotations (also after the finish chunk), the
usage-only last chunk, 429 with Retry-After, a stream cut mid-way, and the 400 for a
request argument the resource does not know. With `prompt_caching` on, the usage counts
each prompt's own tokens and the part Azure would have read from its cache (caching.py).
"""

import asyncio
import base64
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
import json
import re
import time
from typing import Any
import uuid

from aiohttp import web
import numpy as np

from . import develop
from .caching import PromptCache, prompt_tokens
from .embeddings import hashed_embedder

DEFAULT_KEY = "stub-key-0123456789"
DEFAULT_DEPLOYMENTS = ("gpt-4o-mini", "o4-mini")
_API_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")
_RESPONSES_MIN_VERSION = "2025-03-01-preview"
_FILTER_OK = {
    name: {"filtered": False, "severity": "safe"}
    for name in ("hate", "self_harm", "sexual", "violence")
}


@dataclass
class ToolCall:
    """A function call the scripted model makes; arguments may be malformed JSON text."""

    name: str
    arguments: dict[str, Any] | str


@dataclass
class Reply:
    """One scripted answer; the queue of these drives a test."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    cut_after_chunks: int | None = None
    finish_reason: str | None = None
    late_filter_annotation: bool = True
    usage: tuple[int, int] = (12, 7)
    # Held back until the test sets this event (after `delay`, if any): a test decides when
    # the answer arrives instead of guessing how long the other side takes.
    gate: asyncio.Event | None = None
    # Set when the request this reply answers has arrived.
    arrived: asyncio.Event | None = None
    # Of the usage's prompt tokens, those read from the prompt cache.
    cached_tokens: int = 0
    # OpenAI-compatible servers (not Azure) may send tool calls without ids.
    omit_tool_call_ids: bool = False
    # Responses API only: end the stream with "failed", "incomplete" or an "error" event
    # instead of response.completed; or announce arguments for an item never added.
    responses_ending: str | None = None
    unknown_item_id: bool = False

    @classmethod
    def failure(cls, status: int, code: str, message: str, **kwargs: Any) -> "Reply":
        """An Azure error body with this status."""
        return cls(status=status, error={"code": code, "message": message}, **kwargs)

    @classmethod
    def rate_limited(cls, retry_after: str = "1") -> "Reply":
        """Azure's 429, with the Retry-After header the SDK honours."""
        return cls.failure(
            429,
            "429",
            "Requests to the ChatCompletions_Create Operation have exceeded token "
            "rate limit of your current OpenAI S0 pricing tier. Please retry after "
            f"{retry_after} seconds.",
            headers={"Retry-After": retry_after},
        )

    @classmethod
    def prompt_filtered(cls) -> "Reply":
        """The 400 content_filter error Azure sends for a filtered prompt."""
        return cls(
            status=400,
            error={
                "message": "The response was filtered due to the prompt triggering "
                "Azure OpenAI's content management policy.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        **_FILTER_OK,
                        "violence": {"filtered": True, "severity": "medium"},
                    },
                },
            },
        )


@dataclass
class RecordedRequest:
    """What the stand-in received, for tests to assert on."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any] | None
    # time.perf_counter() when the whole request had arrived, for latency benchmarks.
    received: float = field(default_factory=time.perf_counter)
    # The client's port: requests sent over one kept-alive connection share it.
    peer_port: int = 0
    # The usage the answer reported: prompt, completion and cached prompt tokens.
    usage: tuple[int, int, int] | None = None


class AzureStub:
    """The stand-in: start it, script it, read what it received."""

    def __init__(
        self,
        api_key: str = DEFAULT_KEY,
        deployments: tuple[str, ...] = DEFAULT_DEPLOYMENTS,
    ) -> None:
        self.api_key = api_key
        self.deployments = set(deployments)
        self.replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.models_delay = 0.0
        # Well-formed api-versions this resource does not know (Azure answers 400).
        self.refused_api_versions: set[str] = set()
        # Seconds between streamed words, so time to the first word can be measured.
        self.word_delay = 0.0
        # Answers computed from the request (its JSON body) once the scripted queue is empty:
        # for tests that make more requests than it is sensible to script one by one.
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        # Client ports of the connections open now, and who waits for one to close.
        self._connections: dict[Any, int] = {}
        self._open_ports: set[int] = set()
        self._closed_waiters: dict[int, list[asyncio.Future[None]]] = {}
        # Embeddings: vectors from `embedder` (replace it to serve a real model); failures
        # are scripted in their own queue, so chat replies stay in order.
        self.embedder: Callable[[list[str]], list[list[float]]] = hashed_embedder
        # A deployment's own embedder, instead of `embedder`.
        self.deployment_embedders: dict[str, Callable[[list[str]], list[list[float]]]] = {}
        self.embedding_replies: deque[Reply] = deque()
        self.embedding_deployments = {"text-embedding-3-small"}
        # Deployments that cannot shorten their vectors (ada-002): `dimensions` is a 400.
        self.fixed_size_embeddings: set[str] = set()
        # Request arguments this resource does not know: a request carrying one is a 400.
        self.unknown_arguments: set[str] = set()
        # Usage counts each prompt (not the scripted figure) and what of it was cached.
        self.prompt_caching = False
        self.prompt_caches: dict[str, PromptCache] = {}

    @property
    def endpoint(self) -> str:
        """The resource endpoint, as a user would type it."""
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        """Script the next answers, in order."""
        self.replies.extend(replies)

    def queue_embeddings(self, *replies: Reply) -> None:
        """Script the next embeddings answers (failures, delays), in order."""
        self.embedding_replies.extend(replies)

    def calls(self, suffix: str) -> list[RecordedRequest]:
        """The recorded requests whose path ends with suffix."""
        return [r for r in self.requests if r.path.endswith(suffix)]

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start serving; returns the endpoint."""
        app = web.Application()
        app.router.add_get("/openai/models", self._models)
        app.router.add_get("/openai/v1/models", self._models)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_post("/openai/v1/chat/completions", self._chat)
        app.router.add_post("/openai/deployments/{deployment}/embeddings", self._embeddings)
        app.router.add_post("/openai/v1/embeddings", self._embeddings)
        app.router.add_post("/openai/responses", self._responses)
        app.router.add_post("/openai/v1/responses", self._responses)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self._watch_connections(self._runner.server)
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self.endpoint

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _watch_connections(self, server: web.Server | None) -> None:
        """Note the client port of each connection while it is open."""
        assert server is not None
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.Transport) -> None:
            made(handler, transport)
            if (peer := transport.get_extra_info("peername")) is not None:
                self._connections[handler] = peer[1]
                self._open_ports.add(peer[1])

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            lost(handler, exc)
            if (port := self._connections.pop(handler, None)) is None:
                return
            self._open_ports.discard(port)
            for waiter in self._closed_waiters.pop(port, []):
                if not waiter.done():
                    waiter.set_result(None)

        # aiohttp's server calls these for every connection; the stand-in listens in.
        setattr(server, "connection_made", connection_made)  # noqa: B010
        setattr(server, "connection_lost", connection_lost)  # noqa: B010

    async def connection_closed(self, peer_port: int) -> None:
        """Return once the client has closed its connection from this port."""
        if peer_port not in self._open_ports:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._closed_waiters.setdefault(peer_port, []).append(waiter)
        await waiter

    # -- request handling -------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        body = None
        if request.can_read_body:
            body = await request.json()
        peer = request.transport.get_extra_info("peername") if request.transport else None
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            peer_port=peer[1] if peer else 0,
        )
        self.requests.append(recorded)
        return recorded

    def _check(self, recorded: RecordedRequest, dated: bool) -> web.Response | None:
        """Azure's gatekeeping: key, then api-version."""
        key_ok = recorded.headers.get("api-key") == self.api_key or (
            recorded.headers.get("authorization") == f"Bearer {self.api_key}"
        )
        if not key_ok:
            return _error(
                401,
                {
                    "code": "401",
                    "message": "Access denied due to invalid subscription key or "
                    "wrong API endpoint. Make sure to provide a valid key for an "
                    "active subscription and use a correct regional API endpoint "
                    "for your resource.",
                },
            )
        if dated:
            version = recorded.query.get("api-version")
            if version is None:
                return _error(404, {"code": "404", "message": "Resource not found"})
            if not _API_VERSION.match(version) or version in self.refused_api_versions:
                return _error(
                    400,
                    {
                        "code": "BadRequest",
                        "message": f"API version not supported: {version}",
                    },
                )
        return None

    def _unknown_deployment(self, deployment: str) -> web.Response | None:
        if deployment in self.deployments:
            return None
        return _error(
            404,
            {
                "code": "DeploymentNotFound",
                "message": "The API deployment for this resource does not exist. If "
                "you created the deployment within the last 5 minutes, please wait a "
                "moment and try again.",
            },
        )

    def _unknown_argument(self, body: dict[str, Any]) -> web.Response | None:
        """Azure's answer to an argument it does not know: a 400 that names it."""
        unknown = sorted(self.unknown_arguments & body.keys())
        if not unknown:
            return None
        return _error(
            400,
            {
                "message": f"Unrecognized request argument supplied: {unknown[0]}",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            },
        )

    def _cached(self, reply: Reply, deployment: str, body: dict[str, Any]) -> Reply:
        """The reply with the usage Azure reports for this prompt: its tokens, and the cached."""
        if not self.prompt_caching:
            return reply
        prompt = prompt_tokens(body)
        cache = self.prompt_caches.setdefault(deployment, PromptCache())
        return replace(
            reply,
            usage=(len(prompt), reply.usage[1]),
            cached_tokens=cache.cached_tokens(prompt),
        )

    async def _next_reply(self, body: dict[str, Any] | None = None) -> Reply | web.Response:
        if self.replies:
            reply = self.replies.popleft()
        elif self.responder is not None:
            reply = self.responder(body or {})
        else:
            reply = Reply()
        if reply.arrived is not None:
            reply.arrived.set()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.gate is not None:
            await reply.gate.wait()
        if reply.error is not None:
            return _error(reply.status, reply.error, reply.headers)
        return reply

    async def _models(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        await asyncio.sleep(self.models_delay)
        if (denied := self._check(recorded, "/v1/" not in request.path)) is not None:
            return denied
        data = [
            {
                "id": name,
                "object": "model",
                "created_at": 1715000000,
                "capabilities": {"chat_completion": True},
                "lifecycle_status": "generally-available",
            }
            for name in sorted(self.deployments)
        ]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        dated = "/v1/" not in request.path
        if (denied := self._check(recorded, dated)) is not None:
            return denied
        body = recorded.body or {}
        deployment = request.match_info.get("deployment") or body.get("model", "")
        if (missing := self._unknown_deployment(deployment)) is not None:
            return missing
        if (unknown := self._unknown_argument(body)) is not None:
            return unknown
        reply = await self._next_reply(body)
        if isinstance(reply, web.Response):
            return reply
        reply = self._cached(reply, deployment, body)
        recorded.usage = (*reply.usage, reply.cached_tokens)
        text = _reply_text(reply, body.get("messages", []))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(
                request, reply, _chat_chunks(reply, text, deployment, include_usage)
            )
        return web.json_response(_chat_completion(reply, text, deployment))

    async def _embeddings(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        if (denied := self._check(recorded, "/v1/" not in request.path)) is not None:
            return denied
        body = recorded.body or {}
        deployment = request.match_info.get("deployment") or body.get("model", "")
        if deployment not in self.embedding_deployments:
            return _error(
                404,
                {"code": "DeploymentNotFound", "message": "The API deployment does not exist."},
            )
        if self.embedding_replies:
            reply = self.embedding_replies.popleft()
            if reply.arrived is not None:
                reply.arrived.set()
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.gate is not None:
                await reply.gate.wait()
            if reply.error is not None:
                return _error(reply.status, reply.error, reply.headers)
        if deployment in self.fixed_size_embeddings and "dimensions" in body:
            return _error(
                400,
                {
                    "code": "OperationNotSupported",
                    "message": "This model does not support specifying dimensions.",
                },
            )
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        embedder = self.deployment_embedders.get(deployment, self.embedder)
        vectors = embedder([str(text) for text in texts])
        dimensions = body.get("dimensions")
        data = []
        for index, values in enumerate(vectors):
            vector = np.asarray(values, dtype=np.float32)
            if isinstance(dimensions, int) and 0 < dimensions < vector.size:
                vector = vector[:dimensions]
                vector /= float(np.linalg.norm(vector)) or 1.0
            embedding: Any = vector.tolist()
            if body.get("encoding_format") == "base64":
                embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(str(text).split()) for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": deployment,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        dated = "/v1/" not in request.path
        if (denied := self._check(recorded, dated)) is not None:
            return denied
        if dated and recorded.query.get("api-version", "") < _RESPONSES_MIN_VERSION:
            return _error(404, {"code": "404", "message": "Resource not found"})
        body = recorded.body or {}
        deployment = body.get("model", "")
        if (missing := self._unknown_deployment(deployment)) is not None:
            return missing
        if (unknown := self._unknown_argument(body)) is not None:
            return unknown
        reply = await self._next_reply(body)
        if isinstance(reply, web.Response):
            return reply
        reply = self._cached(reply, deployment, body)
        recorded.usage = (*reply.usage, reply.cached_tokens)
        text = _reply_text(reply, _responses_user_texts(body.get("input")))
        if body.get("stream"):
            return await self._stream(request, reply, _response_events(reply, text, deployment))
        return web.json_response(_response_object(reply, text, deployment))

    async def _stream(
        self, request: web.Request, reply: Reply, chunks: list[dict[str, Any]]
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            if reply.cut_after_chunks is not None and index >= reply.cut_after_chunks:
                # Drop the connection without ending the chunked body.
                assert request.transport is not None
                request.transport.close()
                return response
            if self.word_delay and _is_text(chunk):
                await asyncio.sleep(self.word_delay)
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _error(
    status: int, error: dict[str, Any], headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(
        {"error": error},
        status=status,
        headers={"apim-request-id": str(uuid.uuid4()), **(headers or {})},
    )


def _is_text(chunk: dict[str, Any]) -> bool:
    """A streamed piece of the answer's text (either API)."""
    if chunk.get("type") == "response.output_text.delta":
        return True
    return any((choice.get("delta") or {}).get("content") for choice in chunk.get("choices") or ())


def _reply_text(reply: Reply, messages: list[Any]) -> str | None:
    """The scripted text, or an echo of the last user message when nothing is scripted."""
    if reply.text is not None or reply.tool_calls:
        return reply.text
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(
                    part.get("text", "") for part in content if isinstance(part, dict)
                )
            return f"You said: {content}"
    return "Hello from the Azure stand-in."


def develop_reply(body: dict[str, Any]) -> Reply:
    """scripts/develop's answer to an unscripted request (a `responder`), for either API."""
    if "messages" in body:
        messages = develop.chat_messages(body)
    else:
        messages = develop.responses_messages(body)
    if (schema := develop.requested_schema(body)) is not None:
        return Reply(text=develop.json_answer(schema, messages))
    said = develop.answer(messages, develop.tool_names(body))
    if said.tool is not None:
        return Reply(tool_calls=[ToolCall(said.tool, said.arguments or {})])
    return Reply(text=said.text)


def _responses_user_texts(items: Any) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [i for i in items or [] if isinstance(i, dict) and i.get("role") == "user"]


def _arguments(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _usage(reply: Reply) -> dict[str, Any]:
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _finish_reason(reply: Reply) -> str:
    if reply.finish_reason:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _chat_completion(reply: Reply, text: str | None, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": None if reply.omit_tool_call_ids else f"call_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _FILTER_OK}],
        "choices": [
            {
                "index": 0,
                "finish_reason": _finish_reason(reply),
                "message": message,
                "content_filter_results": _FILTER_OK,
            }
        ],
        "usage": _usage(reply),
    }


def _chat_chunks(
    reply: Reply, text: str | None, model: str, include_usage: bool
) -> list[dict[str, Any]]:
    chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }

    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return chunk(
            [
                {
                    "index": 0,
                    "delta": d,
                    "finish_reason": finish,
                    "content_filter_results": _FILTER_OK if "content" in d else {},
                }
            ]
        )

    chunks: list[dict[str, Any]] = [
        # Azure's first chunk: prompt annotations and no choices at all.
        {
            "id": "",
            "object": "",
            "created": 0,
            "model": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _FILTER_OK}],
            "choices": [],
            "usage": None,
        },
        delta({"role": "assistant", "content": ""}),
    ]
    if text:
        words = text.split(" ")
        chunks.extend(
            delta({"content": word if i == 0 else f" {word}"}) for i, word in enumerate(words)
        )
    for i, call in enumerate(reply.tool_calls):
        arguments = _arguments(call)
        half = len(arguments) // 2
        chunks.append(
            delta(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": None if reply.omit_tool_call_ids else f"call_{i}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in (arguments[:half], arguments[half:]):
            chunks.append(delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    chunks.append(delta({}, _finish_reason(reply)))
    if reply.late_filter_annotation:
        # Asynchronous filter mode: a delta-less annotation after the finish chunk.
        chunks.append(
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "content_filter_results": _FILTER_OK,
                        "content_filter_offsets": {
                            "check_offset": 0,
                            "start_offset": 0,
                            "end_offset": len(text or ""),
                        },
                    }
                ],
            }
        )
    if include_usage:
        chunks.append(chunk([], usage=_usage(reply)))
    return chunks


def _response_output(reply: Reply, text: str | None) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": "" if reply.omit_tool_call_ids else f"call_{i}",
            "name": call.name,
            "arguments": _arguments(call),
            "status": "completed",
        }
        for i, call in enumerate(reply.tool_calls)
    )
    return output


def _response_object(
    reply: Reply, text: str | None, model: str, status: str = "completed"
) -> dict[str, Any]:
    prompt, completion = reply.usage
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": _response_output(reply, text) if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        "error": None,
        "incomplete_details": None,
    }


def _response_events(reply: Reply, text: str | None, model: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    def add(event_type: str, **fields: Any) -> None:
        events.append({"type": event_type, "sequence_number": len(events), **fields})

    add("response.created", response=_response_object(reply, None, model, "in_progress"))
    for index, item in enumerate(_response_output(reply, text)):
        if item["type"] == "message":
            add(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            for word_index, word in enumerate((text or "").split(" ")):
                add(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=word if word_index == 0 else f" {word}",
                )
            add(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        else:
            add(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            item_id = "fc_unknown" if reply.unknown_item_id else item["id"]
            add(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=item["arguments"],
            )
            add(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=item["arguments"],
            )
        add("response.output_item.done", output_index=index, item=item)
    if reply.responses_ending == "error":
        # The shape Azure sends when it kills a stream.
        add("error", error={"code": "server_error", "message": "The server had an error."})
    elif reply.responses_ending == "failed":
        failed = _response_object(reply, text, model, "failed")
        failed["error"] = {"code": "server_error", "message": "The model failed."}
        add("response.failed", response=failed)
    elif reply.responses_ending == "incomplete":
        incomplete = _response_object(reply, text, model, "incomplete")
        incomplete["incomplete_details"] = {"reason": "max_output_tokens"}
        add("response.incomplete", response=incomplete)
    else:
        add("response.completed", response=_response_object(reply, text, model))
    return events


async def serve_forever(host: str, port: int, api_key: str, develop_mode: bool = True) -> None:
    """Run the stand-in until cancelled (scripts/develop uses this)."""
    stub = AzureStub(api_key=api_key)
    stub.prompt_caching = True
    if develop_mode:
        stub.responder = develop_reply
    endpoint = await stub.start(host, port)
    print(f"Azure OpenAI stand-in listening on {endpoint} (key: {api_key})", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await stub.stop()
