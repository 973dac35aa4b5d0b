"""A real `hass` (2025.4) from a config like scripts/develop's, with the stand-in as Azure.

Onboarding, the config flow, a conversation, service calls with response data, and a
restart that keeps the conversation window: all over HTTP, as a user's browser or an
automation would do it.
"""

from collections.abc import Iterator
import json
import os
from pathlib import Path
import socket
import subprocess
import sys
import time
from typing import Any
import urllib.error
import urllib.parse
import urllib.request

from homeassistant.const import REQUIRED_PYTHON_VER
import pytest

from ..azure_stub import DEFAULT_KEY

REPO = Path(__file__).parents[2]
pytestmark = [
    pytest.mark.skipif(
        sys.version_info[:3] < REQUIRED_PYTHON_VER,
        reason=f"this Home Assistant's hass refuses Python < {REQUIRED_PYTHON_VER}",
    ),
    # A first start on a fresh machine compiles and loads much more than later ones.
    pytest.mark.timeout(300),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Hass:
    """One hass process and a REST client for it."""

    def __init__(self, config: Path, port: int) -> None:
        self.config = config
        self.base = f"http://127.0.0.1:{port}"
        self.token = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.log = config / "hass.log"

    def start(self) -> None:
        hass_bin = Path(sys.executable).parent / "hass"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(hass_bin), "--config", str(self.config), "--skip-pip"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert "Activating recovery mode" not in self.log.read_text(), self.log.read_text()
            try:
                self.request("GET", "/api/onboarding", auth=False, timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError, AssertionError):
                time.sleep(0.3)
        raise AssertionError("hass did not start:\n" + self.log.read_text()[-3000:])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: bool = True,
        form: bool = False,
        timeout: float = 30,
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        data = None
        if form:
            data = urllib.parse.urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            raise AssertionError(f"{method} {path}: {err.code} {err.read()!r}") from err


@pytest.fixture
def stub_port() -> Iterator[int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.azure_stub", "--port", str(port)], cwd=REPO, env=env
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield port
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def hass_process(tmp_path: Path, socket_enabled: None) -> Iterator[Hass]:
    port = free_port()
    (tmp_path / "custom_components").mkdir()
    (tmp_path / "custom_components" / "azure_openai_memory").symlink_to(
        REPO / "custom_components" / "azure_openai_memory"
    )
    dev_config = (REPO / "config" / "configuration.yaml").read_text()
    config = dev_config.replace("server_port: 8123", f"server_port: {port}").replace(
        "frontend:\n", "api:\nonboarding:\n"
    )
    (tmp_path / "configuration.yaml").write_text(config)
    hass = Hass(tmp_path, port)
    hass.start()
    yield hass
    hass.stop()


def test_real_home_assistant(hass_process: Hass, stub_port: int) -> None:
    """Everything a user and an automation do, against a real Home Assistant."""
    hass = hass_process
    client_id = hass.base + "/"
    created = hass.request(
        "POST",
        "/api/onboarding/users",
        {
            "client_id": client_id,
            "name": "Test",
            "username": "test",
            "password": "test-pass-123",
            "language": "en",
        },
        auth=False,
    )
    token = hass.request(
        "POST",
        "/auth/token",
        {"grant_type": "authorization_code", "code": created["auth_code"], "client_id": client_id},
        auth=False,
        form=True,
    )
    hass.token = token["access_token"]

    flow = hass.request(
        "POST", "/api/config/config_entries/flow", {"handler": "azure_openai_memory"}
    )
    assert flow["step_id"] == "user"
    result = hass.request(
        "POST",
        f"/api/config/config_entries/flow/{flow['flow_id']}",
        {
            "endpoint": f"http://127.0.0.1:{stub_port}",
            "api_key": DEFAULT_KEY,
            "api_style": "v1",
            "api_version": "2024-10-21",
            "deployment": "gpt-4o-mini",
        },
    )
    assert result["type"] == "create_entry", result
    entry_id = result["result"]["entry_id"]

    answer = hass.request(
        "POST",
        "/api/conversation/process",
        {
            "text": "Tell me about owls",
            "agent_id": "conversation.azure_openai_agent",
            "conversation_id": "e2e",
        },
    )
    assert answer["response"]["speech"]["plain"]["speech"] == "You said: Tell me about owls"

    merged = hass.request(
        "POST",
        "/api/services/azure_openai_memory/timeseries_merge?return_response",
        {"key": "owls_timeseries", "entries": [{"id": "o1", "timestamp": "2025-10-25T09:30:00Z"}]},
    )
    assert merged["service_response"]["added"] == 1

    def window_stats() -> dict[str, Any]:
        stats = hass.request(
            "POST",
            "/api/services/azure_openai_memory/conversation_stats?return_response",
            {"config_entry_id": entry_id, "conversation_id": "e2e"},
        )["service_response"]
        (agent,) = stats["agents"].values()
        return dict(agent["conversations"]["e2e"])

    assert window_stats()["message_count"] == 2  # the question and its answer

    def history() -> list[str]:
        result = hass.request(
            "POST",
            "/api/services/azure_openai_memory/history_query?return_response",
            {"session_id": "e2e", "ascending": True},
        )["service_response"]
        return [e["event_type"] for e in result["events"]]

    assert history() == ["communication", "decision", "communication"]

    hass.stop()
    hass.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        entries = hass.request("GET", "/api/config/config_entries/entry")
        if any(e["entry_id"] == entry_id and e["state"] == "loaded" for e in entries):
            break
        time.sleep(0.3)
    assert window_stats()["message_count"] == 2  # the window survived the restart
    series = hass.request(
        "POST", "/api/services/azure_openai_memory/timeseries_list?return_response", {}
    )["service_response"]
    assert series["keys"][0]["key"] == "owls_timeseries"
    assert history() == ["communication", "decision", "communication"]  # kept on disk

    log = hass.log.read_text()
    assert DEFAULT_KEY not in log
    assert "custom_components/azure_openai_memory" not in log  # in no traceback
    assert not [
        line for line in log.splitlines() if "ERROR" in line and "azure_openai_memory" in line
    ]
