"""scripts/develop then scripts/chat, as a newcomer runs them: one command, then talk.

Ctrl-C stops everything scripts/develop started; a second run reuses the state and
creates nothing twice. DEVELOP_PORT alone runs a second instance beside the first; a
signal stops it at any moment of its start; a Home Assistant that does not answer in time
is named, with its log, and stopped.
"""

from collections.abc import Iterator
import contextlib
import os
from pathlib import Path
import re
import shutil
import signal
import socket
import subprocess
import time

from homeassistant.const import __version__ as HA_VERSION
import pytest

from ..conftest import ASSIST_CLOCK_NOTES
from ..devhome import HomeAssistantClient
from ..devhome.home import DOMAIN, TOKEN_CLIENT_NAME, TOKEN_FILE, read_token
from .harness import REPO, free_port

# The Home Assistant scripts/develop runs without DEVELOP_HA, and this run's as DEVELOP_HA
# names it: each version's run drives scripts/develop on that version, leaving DEVELOP_HA
# unset where that is the default, as a newcomer runs it.
DEFAULT_HA = re.search(r"DEVELOP_HA:-([0-9.]+)", (REPO / "scripts" / "develop").read_text())[1]
THIS_HA = ".".join(HA_VERSION.split(".")[:2])

# The clock note each request to the model carries, or none where Home Assistant gives the
# model a tool to ask for the time.
CLOCK = len(ASSIST_CLOCK_NOTES)

pytestmark = [
    pytest.mark.timeout(400),
]


@pytest.fixture(autouse=True, scope="module")
def interruptible() -> Iterator[None]:
    """Ctrl-C reaches scripts/develop as in a terminal, also where these tests run with SIGINT
    ignored (a background job of a shell): a shell cannot trap a signal it starts with
    ignored, and a child inherits only that, not Python's own handler."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class Develop:
    """One scripts/develop run in its own process group, as a terminal runs it.

    Without a config folder, DEVELOP_CONFIG is left unset (and STAND_IN_PORT too, without a
    stand-in port), as a newcomer who only picks a port runs it.
    """

    def __init__(
        self,
        config: Path | None,
        port: int,
        stand_in_port: int | None = None,
        **settings: str,
    ) -> None:
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("AZURE_OPENAI", "DEVELOP_", "STAND_IN_"))
            },
            "DEVELOP_PORT": str(port),
            **settings,
        }
        if THIS_HA != DEFAULT_HA:
            self.env["DEVELOP_HA"] = THIS_HA
        if config is not None:
            self.env["DEVELOP_CONFIG"] = str(config)
        if stand_in_port is not None:
            self.env["STAND_IN_PORT"] = str(stand_in_port)
        self.config = config or Path("config") / f"port-{port}"
        self.stand_in_port = stand_in_port or port + 1
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
        return self.rest()

    def kill_term(self) -> list[str]:
        """What `kill -TERM` of a script that started it in the background does."""
        self.process.send_signal(signal.SIGTERM)
        return self.rest()

    def rest(self, timeout: float = 90) -> list[str]:
        """What it prints until it ends, which must be within timeout seconds."""
        rest, _ = self.process.communicate(timeout=timeout)
        self.output += rest.splitlines()
        return rest.splitlines()

    def leftovers(self) -> list[int]:
        """Processes scripts/develop started (hass and the stand-in run in their own sessions)."""
        marks = (f"--config {self.config}", f"--port {self.stand_in_port}")
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


def free_port_pair() -> int:
    """A port whose next port is free as well: DEVELOP_PORT alone puts the stand-in there."""
    while True:
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port


def hass_of(run: Develop) -> list[int]:
    return [pid for pid, command in processes().items() if f"hass --config {run.config}" in command]


def answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


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
        f"You said: what did I just ask? (I see {4 + CLOCK} messages of context)\n"
    )
    # Interactive: two lines, then an empty one ends it.
    talked = chat(env, stdin="Please switch off the kitchen light\nwhat was that?\n\n")
    assert talked.splitlines()[1:] == [
        "you> Turned off the light",
        f"you> You said: what was that? (I see {8 + CLOCK} messages of context)",
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
    assert chat(env, "and now?") == f"You said: and now? (I see {10 + CLOCK} messages of context)\n"
    assert second.ctrl_c()[-1] == "Stopped."
    deadline = time.monotonic() + 30
    while second.leftovers():
        assert time.monotonic() < deadline, "scripts/develop left processes behind"
        time.sleep(0.2)


@pytest.fixture
def port_alone() -> Iterator[int]:
    """A DEVELOP_PORT given alone; the folder scripts/develop makes for it is removed after."""
    port = free_port_pair()
    yield port
    shutil.rmtree(REPO / "config" / f"port-{port}", ignore_errors=True)


def test_a_port_alone_runs_a_second_instance_in_its_own_folder(
    runs: list[Develop], port_alone: int
) -> None:
    """DEVELOP_PORT=8300 without DEVELOP_CONFIG: hass on 8300, config/port-8300, stand-in 8301."""
    port = port_alone
    run = Develop(None, port)
    runs.append(run)
    printed = run.read_until("Logs:")
    folder = Path("config") / f"port-{port}"
    assert f"Home Assistant is ready at http://127.0.0.1:{port}" in printed, run.output
    assert f"  - added Azure OpenAI Memory for http://127.0.0.1:{port + 1}" in printed
    assert f"  token:     {folder / TOKEN_FILE} (for scripts and curl)" in printed
    assert f"server_port: {port}\n" in (REPO / folder / "configuration.yaml").read_text()
    # The repository's own configuration is left as it is in git.
    assert "server_port: 8123\n" in (REPO / "config" / "configuration.yaml").read_text()

    # scripts/chat finds that instance and its token by the port alone.
    chat_env = {k: v for k, v in run.env.items() if k != "DEVELOP_CONFIG"}
    assert chat(chat_env, "turn on the kitchen light") == "Turned on the light\n"
    client = HomeAssistantClient(f"http://127.0.0.1:{port}", read_token(REPO / folder))
    assert client.get("/api/states/light.kitchen_light")["state"] == "on"

    assert run.kill_term()[-1] == "Stopped."
    assert run.process.returncode == 128 + signal.SIGTERM
    assert run.leftovers() == []


def test_the_repository_folder_on_another_port_is_refused(runs: list[Develop]) -> None:
    """config/configuration.yaml (in git) says 8123: another port there could never answer."""
    run = Develop(Path("config"), free_port(), free_port())
    runs.append(run)
    rest = run.rest(timeout=30)
    assert run.process.returncode == 2
    assert rest == [
        f"config/ runs on port 8123 (its configuration.yaml is in git). For port "
        f"{run.env['DEVELOP_PORT']}, leave DEVELOP_CONFIG unset "
        f"(config/port-{run.env['DEVELOP_PORT']} is used) or set it to another folder."
    ]


@pytest.mark.parametrize(
    ("how", "moment"),
    [
        ("kill -TERM", "starting"),
        ("kill -TERM", "setting up"),
        ("Ctrl-C", "setting up"),
    ],
)
def test_a_signal_during_start_up_stops_everything_at_once(
    runs: list[Develop], tmp_path: Path, how: str, moment: str
) -> None:
    """While hass starts, or answers and is being set up: stopped there, never made ready."""
    config, port, stand_in_port = tmp_path / "config", free_port(), free_port()
    run = Develop(config, port, stand_in_port)
    runs.append(run)
    run.read_until("Starting Home Assistant")
    # "starting": hass runs but does not answer yet; "setting up": it answers.
    deadline = time.monotonic() + 120
    while not (answers(port) if moment == "setting up" else hass_of(run)):
        assert run.process.poll() is None, run.rest()
        assert time.monotonic() < deadline, f"never got to {moment}"
        time.sleep(0.05)
    if moment == "starting":
        assert not answers(port)

    signalled = time.monotonic()
    rest = run.kill_term() if how == "kill -TERM" else run.ctrl_c()
    took = time.monotonic() - signalled

    assert rest[-1:] == ["Stopped."], run.output
    assert not [line for line in rest if "is ready" in line], run.output
    assert not [line for line in rest if "Traceback" in line], run.output
    assert run.process.returncode == (143 if how == "kill -TERM" else 130)
    assert took < 30, f"stopped {took:.1f} s after the signal"
    assert run.leftovers() == []


def test_home_assistant_that_does_not_answer_in_time_is_named_and_stopped(
    runs: list[Develop], tmp_path: Path
) -> None:
    """No wait is endless: past DEVELOP_START_TIMEOUT it says what did not answer, and stops."""
    config, port, stand_in_port = tmp_path / "config", free_port(), free_port()
    # hass takes seconds to import and bind its port: one second is never enough.
    run = Develop(config, port, stand_in_port, DEVELOP_START_TIMEOUT="1")
    runs.append(run)
    rest = run.rest(timeout=60)
    assert (
        f"Home Assistant did not answer on http://127.0.0.1:{port} within 1 s; "
        f"see {config}/home-assistant.log"
    ) in rest, rest
    assert rest[-1] == "Stopped."
    assert run.process.returncode == 1
    assert run.leftovers() == []
