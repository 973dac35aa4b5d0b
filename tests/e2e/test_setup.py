"""scripts/setup twice at once (scripts/chat while scripts/develop installs): one installs.

The second waits for the first on `.venv-<version>.lock`, says so, and then reuses the venv the
first finished. Each runs in a copy of the repository's layout whose requirements install
nothing, so a venv is made in seconds; a named pipe among them holds the first install open
until the test lets it finish.
"""

from collections.abc import Iterator
import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
import platform
import shutil
import signal
import subprocess
import sys
from typing import IO

from homeassistant.const import __version__ as HA_VERSION
import pytest

from .harness import REPO

pytestmark = pytest.mark.timeout(180)

# This run's Home Assistant as scripts/setup names it, and the Python it runs on.
HA = ".".join(HA_VERSION.split(".")[:2])
VENV = f".venv-{HA}"
# scripts/setup is told to use this interpreter: PYTHON for 3.13, PYTHON314 for 3.14.
PYTHON_VARIABLE = "PYTHON314" if sys.version_info[:2] == (3, 14) else "PYTHON"


class Repo:
    """scripts/setup with requirements that name no package."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "scripts").mkdir(parents=True)
        for script in ("setup", "python314"):
            shutil.copy2(REPO / "scripts" / script, root / "scripts" / script)
        (root / "requirements").mkdir()
        (root / "requirements_test.txt").write_text("# nothing for the tests\n")
        (root / "requirements" / f"ha-{HA}.txt").write_text("-r gate.txt\n")
        self.gate = root / "requirements" / "gate.txt"
        self.gate.write_text("")
        self.started: list[subprocess.Popen[str]] = []

    def hold_install(self) -> None:
        """pip reading gate.txt blocks until open_gate()."""
        self.gate.unlink()
        os.mkfifo(self.gate)

    def open_gate(self) -> None:
        with self.gate.open("w"):
            pass  # an empty requirements file: the install goes on and ends

    def setup(self, **env: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            ["scripts/setup", "--ha", HA],
            cwd=self.root,
            env={**os.environ, PYTHON_VARIABLE: sys.executable, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.started.append(process)
        return process

    def stamp(self) -> str:
        return (self.root / VENV / ".requirements-stamp").read_text()

    def expected_stamp(self) -> str:
        files = ("requirements_test.txt", f"requirements/ha-{HA}.txt")
        return hashlib.sha256(b"".join((self.root / f).read_bytes() for f in files)).hexdigest()


def next_line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline().rstrip("\n")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    """Whatever a failed test left waiting or installing is ended."""
    made = Repo(tmp_path / "repo")
    yield made
    for process in made.started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)


def test_the_second_waits_for_the_first_then_reuses_its_venv(repo: Repo) -> None:
    repo.hold_install()
    first = repo.setup()
    assert next_line(first.stderr) == (
        f"Creating {VENV} with {sys.executable} (Python {platform.python_version()})"
    )
    line = next_line(first.stderr)
    if line == f"Bringing pip into {VENV} from its wheel":  # no ensurepip (Debian's)
        line = next_line(first.stderr)
    assert line.startswith("Installing requirements_test.txt ")
    # The first now holds the lock, its pip blocked on the gate.

    second = repo.setup()
    assert next_line(second.stderr) == (
        f"waiting for another setup of {VENV} (pid {first.pid}) to finish, at most 1200 s ..."
    )
    assert second.poll() is None
    assert first.poll() is None

    repo.open_gate()
    out, err = first.communicate(timeout=120)
    assert (first.returncode, out, err) == (0, f"{VENV}\n", "")
    out, err = second.communicate(timeout=60)
    # Nothing created or installed a second time.
    assert (second.returncode, out, err) == (0, f"{VENV}\n", "")
    assert repo.stamp() == repo.expected_stamp() + "\n"


def test_the_wait_is_bounded_and_names_the_holder(repo: Repo) -> None:
    """A setup that never ends (here: the test holds the lock) is named, not waited for forever."""
    with (repo.root / f"{VENV}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        (repo.root / f"{VENV}.lock").write_text(f"{os.getpid()}\n")
        waiting = repo.setup(SETUP_LOCK_TIMEOUT="1")
        out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1
    assert out == ""
    assert err.splitlines() == [
        f"waiting for another setup of {VENV} (pid {os.getpid()}) to finish, at most 1 s ...",
        f"Another setup of {VENV} (pid {os.getpid()}) still runs after 1 s; stop it, "
        "or wait longer with SETUP_LOCK_TIMEOUT=<seconds>.",
    ]
    assert not (repo.root / VENV).exists()


def test_a_finished_venv_is_reused_at_once(repo: Repo) -> None:
    """What scripts/test, scripts/develop and scripts/chat rely on: no install the second time."""
    out, err = repo.setup().communicate(timeout=120)
    assert out == f"{VENV}\n"
    assert "Installing" in err
    again = repo.setup()
    out, err = again.communicate(timeout=30)
    assert (again.returncode, out, err) == (0, f"{VENV}\n", "")
    assert repo.stamp() == repo.expected_stamp() + "\n"
