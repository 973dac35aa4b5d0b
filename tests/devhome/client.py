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


def add_person(client: HomeAssistantClient, name: str, username: str, password: str) -> str:
    """A user who is not an administrator, who logs in with a password, and the person
    linked to them (as Settings → People makes them); the person's entity id."""
    (user,) = client.ws({"type": "config/auth/create", "name": name, "group_ids": ["system-users"]})
    client.ws(
        {
            "type": "config/auth_provider/homeassistant/create",
            "user_id": user["user"]["id"],
            "username": username,
            "password": password,
        }
    )
    (person,) = client.ws({"type": "person/create", "name": name, "user_id": user["user"]["id"]})
    return f"person.{person['id']}"


def log_in(base_url: str, username: str, password: str) -> dict[str, str]:
    """A user's login as the frontend makes it: the login flow, then the token endpoint;
    the access and refresh tokens."""
    client = HomeAssistantClient(base_url)
    client_id = base_url.rstrip("/") + "/"
    flow = client.post(
        "/auth/login_flow",
        {"client_id": client_id, "handler": ["homeassistant", None], "redirect_uri": client_id},
        auth=False,
    )
    done = client.post(
        f"/auth/login_flow/{flow['flow_id']}",
        {"client_id": client_id, "username": username, "password": password},
        auth=False,
    )
    if done.get("type") != "create_entry":
        raise HomeAssistantError(f"{username!r} cannot log in: {done.get('errors')}")
    tokens = client.post(
        "/auth/token",
        {"grant_type": "authorization_code", "code": done["result"], "client_id": client_id},
        auth=False,
        form=True,
    )
    return {"access_token": tokens["access_token"], "refresh_token": tokens["refresh_token"]}
