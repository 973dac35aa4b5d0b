"""A small client for Home Assistant's REST and WebSocket APIs (standard library + aiohttp)."""

import asyncio
from collections.abc import Iterable
import itertools
import json
from typing import Any
import urllib.error
import urllib.parse
import urllib.request

import aiohttp


class HomeAssistantError(Exception):
    """Home Assistant refused a request; the message names it and says why."""

    def __init__(
        self, message: str, status: int | None = None, error: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        # A WebSocket command's error object: code, message, translation_key, ...
        self.error = error or {}


class HomeAssistantClient:
    """REST calls are synchronous; WebSocket commands run in one short-lived connection."""

    def __init__(self, base_url: str, token: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        auth: bool = True,
        form: bool = False,
        timeout: float = 60,
    ) -> Any:
        """One REST call; the JSON answer, or HomeAssistantError with the status."""
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        data = None
        if form:
            data = urllib.parse.urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            raise HomeAssistantError(
                f"{method} {path}: {err.code} {err.read().decode(errors='replace')}", err.code
            ) from err

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, body, **kwargs)

    def service(self, domain: str, service: str, data: dict[str, Any] | None = None) -> Any:
        """Call a service and return its response data."""
        answer = self.post(f"/api/services/{domain}/{service}?return_response", data or {})
        return answer["service_response"]

    def ws(self, *commands: dict[str, Any]) -> list[Any]:
        """Send WebSocket commands in order; their results, or the first error raised."""
        return asyncio.run(self._async_ws(commands))

    async def _async_ws(self, commands: Iterable[dict[str, Any]]) -> list[Any]:
        url = self.base_url.replace("http", "ws", 1) + "/api/websocket"
        results = []
        ids = itertools.count(1)
        timeout = aiohttp.ClientTimeout(total=120)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.ws_connect(url, max_msg_size=0) as socket,
        ):
            await socket.receive_json()  # auth_required
            await socket.send_json({"type": "auth", "access_token": self.token})
            if (auth := await socket.receive_json())["type"] != "auth_ok":
                raise HomeAssistantError(f"WebSocket auth: {auth}", 401)
            for command in commands:
                message_id = next(ids)
                await socket.send_json({**command, "id": message_id})
                while (answer := await socket.receive_json())["id"] != message_id:
                    pass
                if not answer["success"]:
                    raise HomeAssistantError(
                        f"{command['type']}: {answer['error']}", error=answer["error"]
                    )
                results.append(answer["result"])
        return results

    def converse(
        self, text: str, agent_id: str, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """One turn through /api/conversation/process."""
        body: dict[str, Any] = {"text": text, "agent_id": agent_id, "language": "en"}
        if conversation_id:
            body["conversation_id"] = conversation_id
        return dict(self.post("/api/conversation/process", body))


def spoken(answer: dict[str, Any]) -> str:
    """What an answer of /api/conversation/process says."""
    return str(answer["response"]["speech"]["plain"]["speech"])
