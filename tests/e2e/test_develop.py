"""scripts/develop then scripts/chat, as a newcomer runs them: one command, then talk.

Ctrl-C stops everything scripts/develop started; a second run reuses the state and
creates nothing twice.
"""

from collections.abc import Iterator
import contextlib
import os
from pathlib import Path
import signal
import subprocess
import time

from homeassistant.const import __version__ as HA_VERSION
import pytest

from ..devhome import HomeAssistantClient
from ..devhome.home import DOMAIN, TOKEN_CLIENT_NAME, TOKEN_FILE, read_token
from .harness import NEEDS_NEW_ENOUGH_PYTHON, REPO, free_port

pytestmark = [
    NEEDS_NEW_ENOUGH_PYTHON,
    pytest.mark.skipif(
        not HA_VERSION.startswith("2025.4."),
        reason=f"scripts/develop runs Home Assistant 2025.4; this run is {HA_VERSION}",
    ),
    pytest.mark.timeout(400),
]


class Develop:
    """One scripts/develop run in its own process group, as a terminal runs it."""

    def __init__(self, config: Path, port: int, stand_in_port: int) -> None:
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AZURE_OPENAI")},
            "DEVELOP_CONFIG": str(config),
            "DEVELOP_PORT": str(port),
            "STAND_IN_PORT": str(stand_in_port),
        }
        self.process = subprocess.Popen(
            [str(REPO / "scripts" / "develop")],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.output: list[str] = []

    def read_until(self, marker: str) -> list[str]:
        """Lines printed until one starting with marker (included)."""
        assert self.process.stdout is not None
        start = len(self.output)
        while line := self.process.stdout.readline():
            self.output.append(line.rstrip("\n"))
            if line.startswith(marker):
                return self.output[start:]
        raise AssertionError("scripts/develop ended:\n" + "\n".join(self.output))

    def ctrl_c(self) -> list[str]:
        """What a terminal's Ctrl-C does: SIGINT to the whole foreground process group."""
        os.killpg(self.process.pid, signal.SIGINT)
        rest, _ = self.process.communicate(timeout=90)
        return rest.splitlines()

    def leftovers(self) -> list[int]:
        """Processes scripts/develop started (hass and the stand-in run in their own sessions)."""
        marks = (self.env["DEVELOP_CONFIG"], f"--port {self.env['STAND_IN_PORT']}")
        return [
            pid
            for pid, command in processes().items()
            if pid != os.getpid() and any(mark in command for mark in marks)
        ]


def processes() -> dict[int, str]:
    """Every process's command line."""
    found = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                found[int(proc.name)] = (
                    (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                )
    return found


def chat(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(REPO / "scripts" / "chat"), *args],
        cwd=REPO,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.fixture
def runs() -> Iterator[list[Develop]]:
    """The runs a test starts; whatever a failed test left running is ended."""
    started: list[Develop] = []
    yield started
    for run in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.process.pid, signal.SIGKILL)
        for pid in run.leftovers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_develop_then_chat_then_ctrl_c_then_again(runs: list[Develop], tmp_path: Path) -> None:
    config, port, stand_in_port = tmp_path / "config", free_port(), free_port()
    first = Develop(config, port, stand_in_port)
    runs.append(first)
    printed = first.read_until("Logs:")
    assert f"Home Assistant is ready at http://127.0.0.1:{port}" in printed
    assert "  user:      dev" in printed
    assert "  password:  dev-password" in printed
    assert "  - created the user 'dev' through onboarding" in printed
    assert f"  - added Azure OpenAI Memory for http://127.0.0.1:{stand_in_port}" in printed

    env = first.env
    assert chat(env, "turn on the kitchen light") == "Turned on the light\n"
    client = HomeAssistantClient(f"http://127.0.0.1:{port}", read_token(config))
    assert client.get("/api/states/light.kitchen_light")["state"] == "on"
    assert chat(env, "what did I just ask?") == (
        "You said: what did I just ask? (I see 3 messages of context)\n"
    )
    # Interactive: two lines, then an empty one ends it.
    talked = chat(env, stdin="Please switch off the kitchen light\nwhat was that?\n\n")
    assert talked.splitlines()[1:] == [
        "you> Turned off the light",
        "you> You said: what was that? (I see 7 messages of context)",
        "you> ",
    ]
    assert client.get("/api/states/light.kitchen_light")["state"] == "off"

    assert first.ctrl_c()[-1] == "Stopped."
    deadline = time.monotonic() + 30
    while first.leftovers():
        assert time.monotonic() < deadline, "scripts/develop left processes behind"
        time.sleep(0.2)

    # A lost token file: onboarding is long over (its views are gone), so it logs in.
    (config / TOKEN_FILE).unlink()
    second = Develop(config, port, stand_in_port)
    runs.append(second)
    printed = second.read_until("Logs:")
    assert [line for line in printed if line.startswith("  - ")] == [
        f"  - wrote a long-lived token to {config / TOKEN_FILE}"
    ], first.output + printed
    assert (config / TOKEN_FILE).stat().st_mode & 0o777 == 0o600
    client = HomeAssistantClient(f"http://127.0.0.1:{port}", read_token(config))
    assert len(client.get(f"/api/config/config_entries/entry?domain={DOMAIN}")) == 1
    areas, tokens, users = client.ws(
        {"type": "config/area_registry/list"},
        {"type": "auth/refresh_tokens"},
        {"type": "config/auth/list"},
    )
    names = [a["name"] for a in areas]
    assert len(names) == len(set(names))
    assert [t["client_name"] for t in tokens].count(TOKEN_CLIENT_NAME) == 1
    assert [u["username"] for u in users if not u["system_generated"]] == ["dev"]
    # The conversation goes on after the restart.
    assert chat(env, "and now?") == "You said: and now? (I see 9 messages of context)\n"
    assert second.ctrl_c()[-1] == "Stopped."
    deadline = time.monotonic() + 30
    while second.leftovers():
        assert time.monotonic() < deadline, "scripts/develop left processes behind"
        time.sleep(0.2)
