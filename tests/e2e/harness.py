"""A real `hass` process and the stand-in, for tests that drive them over HTTP."""

import asyncio
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
from pathlib import Path
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest_socket

from ..azure_stub import AzureStub
from ..azure_stub.server import develop_reply
from ..devhome import DevHome, HomeAssistantClient, HomeAssistantError, wait_until_running
from ..devhome.home import DOMAIN, agents_of
from ..devhome.packages import write_packages

REPO = Path(__file__).parents[2]
# A first start on a fresh machine compiles and loads much more than later ones.
START_TIMEOUT = 180


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def allow_local_sockets() -> None:
    """Module-wide fixtures start before a test's socket_enabled: open the loopback for them."""
    pytest_socket.enable_socket()
    pytest_socket.socket_allow_hosts(["127.0.0.1"])


def write_dev_config(config: Path, port: int, *, frontend: bool = False) -> None:
    """scripts/develop's configuration on another port, with the packages it writes; without
    the frontend's start-up cost unless a test opens pages."""
    config.mkdir(parents=True, exist_ok=True)
    (config / "custom_components").mkdir(exist_ok=True)
    link = config / "custom_components" / "azure_openai_memory"
    if not link.exists():
        link.symlink_to(REPO / "custom_components" / "azure_openai_memory")
    dev_config = (REPO / "config" / "configuration.yaml").read_text()
    dev_config = dev_config.replace("server_port: 8123", f"server_port: {port}")
    if not frontend:
        dev_config = dev_config.replace("frontend:\n", "api:\nonboarding:\n")
    (config / "configuration.yaml").write_text(dev_config)
    write_packages(config)


class HassProcess:
    """One hass process on a config folder; started, stopped, restarted or killed."""

    def __init__(self, config: Path, port: int) -> None:
        self.config = config
        self.base_url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = config / "hass.out"

    def start(self) -> None:
        hass_bin = Path(sys.executable).parent / "hass"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(hass_bin), "--config", str(self.config), "--skip-pip"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            self._wait_until_answering()
        except BaseException:
            # A start that failed must not leave a hass holding the port.
            self.process.kill()
            self.process.wait(timeout=30)
            raise

    def _wait_until_answering(self) -> None:
        assert self.process is not None
        client = HomeAssistantClient(self.base_url)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert "Activating recovery mode" not in self.log.read_text(), self.log.read_text()
            try:
                client.get("/api/", auth=False, timeout=5)
                return
            except HomeAssistantError:
                return  # 401: it answers
            except OSError:
                assert time.monotonic() < deadline, self.log.read_text()[-3000:]
                time.sleep(0.2)

    def stop(self) -> None:
        """A graceful stop, as Ctrl-C or a restart from the UI does."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """kill -9: no final write, no flush."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def restart(self, token: str) -> None:
        """Stop (gracefully) and start again, back to RUNNING."""
        self.stop()
        self.start()
        wait_until_running(HomeAssistantClient(self.base_url, token))

    def output(self) -> str:
        """Every start's output: home-assistant.log is rolled at each start, hass.out is not."""
        return self.log.read_text() if self.log.exists() else ""


class StandIn:
    """The stand-in in develop mode, in a thread of the test process so tests can read it."""

    def __init__(self) -> None:
        self.stub = AzureStub()
        self.stub.responder = develop_reply
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="stand-in")

    def __enter__(self) -> AzureStub:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.stub.start(), self._loop).result(timeout=30)
        return self.stub

    def __exit__(self, *_: object) -> None:
        asyncio.run_coroutine_threadsafe(self.stub.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@contextlib.contextmanager
def running_hass(config: Path, *, frontend: bool = False) -> Iterator[HassProcess]:
    """hass on scripts/develop's configuration; stopped (or left killed) at the end."""
    port = free_port()
    write_dev_config(config, port, frontend=frontend)
    hass = HassProcess(config, port)
    hass.start()
    try:
        yield hass
    finally:
        hass.stop()


@dataclass
class Home:
    """A hass made ready by scripts/develop's set-up, and the stand-in it talks to."""

    hass: HassProcess
    stand_in: AzureStub
    dev: DevHome
    # The day (UTC) before the module's first conversation: what summaries are expected for.
    today: str

    @property
    def client(self) -> HomeAssistantClient:
        return self.dev.client

    def state(self, entity_id: str) -> str:
        return str(self.client.get(f"/api/states/{entity_id}")["state"])

    def llm_requests(self) -> int:
        return len(self.stand_in.calls("/chat/completions"))


def wait_for_agents(home: Home, count: int, timeout: float = 60) -> list[str]:
    """The entry loaded (again) with this many agents."""
    deadline = time.monotonic() + timeout
    while True:
        entries = home.client.get(f"/api/config/config_entries/entry?domain={DOMAIN}")
        agents = agents_of(home.client, home.dev.entry_id)
        if entries[0]["state"] == "loaded" and len(agents) == count:
            return agents
        assert time.monotonic() < deadline, (entries, agents)
        time.sleep(0.2)
