"""A Home Assistant backup taken while the agent is busy, restored into a fresh configuration
directory: the restored home has everything acknowledged before the backup started.

A real `hass` with the `backup` integration; writers (threads of this process) save
memories, record history, merge a series and talk over HTTP while `backup.create` runs.
The backup is restored the way Home Assistant restores one (a `.HA_RESTORE` file in a new
configuration folder: the next start unpacks the backup and exits to be restarted), a
`hass` starts there, and everything is read back through the services.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
import json
from pathlib import Path
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from ..azure_stub import DEFAULT_KEY
from ..devhome import HomeAssistantClient, ResourceSettings, prepare, wait_until_running
from .examples import DOMAIN, KEPT_ACROSS_RESTART, today
from .harness import (
    START_TIMEOUT,
    HassProcess,
    Home,
    StandIn,
    allow_local_sockets,
    free_port,
    wait_for_agents,
    write_dev_config,
)

pytestmark = [pytest.mark.timeout(600)]
# Home Assistant's exit code asking to be started again (after a restore, here).
RESTART_EXIT_CODE = 100
# Writes before the backup starts, so that it has plenty that was acknowledged just before.
WARM_UP_SECONDS = 3.0


def with_backup(config: Path) -> None:
    """The development configuration, with Home Assistant's backup integration."""
    path = config / "configuration.yaml"
    path.write_text(path.read_text() + "\nbackup:\n")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """A hass with backups, set up as scripts/develop does, against the stand-in."""
    allow_local_sockets()
    config = tmp_path_factory.mktemp("hass")
    port = free_port()
    write_dev_config(config, port)
    with_backup(config)
    with StandIn() as stand_in:
        hass = HassProcess(config, port)
        hass.start()
        try:
            dev = prepare(hass.base_url, config, ResourceSettings(stand_in.endpoint, DEFAULT_KEY))
            yield Home(hass, stand_in, dev, today())
        finally:
            hass.stop()
    log = hass.output()
    assert DEFAULT_KEY not in log
    assert not [line for line in log.splitlines() if "ERROR" in line and DOMAIN in line]


@dataclass
class Writer:
    """One kind of write, in a thread of its own: what was acknowledged, and when each call
    started and ended."""

    name: str
    done: list[Any] = field(default_factory=list)
    calls: list[tuple[float, float]] = field(default_factory=list)


def run_writer(
    writer: Writer, client: HomeAssistantClient, agent_id: str, stop: threading.Event
) -> None:
    number = 0
    while not stop.is_set():
        started = time.monotonic()
        if writer.name == "memories":
            text = f"Crate {number} stands on shelf {number * 7919 % 10007} of row {number % 17}"
            client.service(DOMAIN, "memory_save", {"content": text, "type": "household"})
            done: Any = text
        elif writer.name == "events":
            answer = client.service(
                DOMAIN,
                "history_record",
                {"event_type": "action", "event_data": {"n": number}, "session_id": "busy-notes"},
            )
            done = answer["event"]["event_id"]
        elif writer.name == "series":
            client.service(
                DOMAIN,
                "timeseries_merge",
                {
                    "key": "busy",
                    "entries": [
                        {
                            "id": f"s{number}",
                            "timestamp": f"2025-10-25T{number // 3600 % 24:02}:"
                            f"{number // 60 % 60:02}:{number % 60:02}Z",
                        }  # fmt: skip
                    ],
                },
            )
            done = f"s{number}"
        else:
            client.converse(f"busy turn {number}", agent_id, "busy")
            done = f"busy turn {number}"
        writer.calls.append((started, time.monotonic()))
        writer.done.append(done)
        number += 1


def acknowledged(writer: Writer, before: float) -> list[Any]:
    """What a writer was told was done before `before`."""
    return [
        done for done, (_, ended) in zip(writer.done, writer.calls, strict=True) if ended < before
    ]


def restore(backup: Path, config: Path) -> None:
    """Restore a backup into a new configuration folder as Home Assistant does: the
    backup and a `.HA_RESTORE` file in it, then a start, which unpacks and exits."""
    (config / "backups").mkdir(parents=True)
    copy = config / "backups" / backup.name
    shutil.copy2(backup, copy)
    (config / ".HA_RESTORE").write_text(
        json.dumps(
            {
                "path": str(copy),
                "password": None,
                "remove_after_restore": False,
                "restore_database": True,
                "restore_homeassistant": True,
            }
        )
    )
    hass_bin = Path(sys.executable).parent / "hass"
    with (config / "restore.out").open("wb") as log:
        ended = subprocess.run(
            [str(hass_bin), "--config", str(config), "--skip-pip"],
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=START_TIMEOUT,
            check=False,
        )
    assert ended.returncode == RESTART_EXIT_CODE, (config / "restore.out").read_text()
    result = json.loads((config / ".HA_RESTORE_RESULT").read_text())
    assert result["success"] is True, result


def integrity(database: Path) -> list[tuple[str]]:
    conn = sqlite3.connect(database)
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()


def test_a_backup_taken_while_busy_restores_everything_acknowledged_before_it(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = home.client
    context = {"entry_id": home.dev.entry_id, "agent_id": home.dev.agent_id, "today": home.today}
    for kept in KEPT_ACROSS_RESTART.values():
        kept.write(client, context)
    # The busy turns continue the window of the table's conversation (one user, within the
    # continuation time): the window is checked through the busy turns instead.
    table = {
        name: row for name, row in KEPT_ACROSS_RESTART.items() if name != "conversation window"
    }
    expected = {name: kept.expected(context) for name, kept in table.items()}

    writers = [Writer(name) for name in ("memories", "events", "series", "turns")]
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=run_writer,
            args=(
                writer,
                HomeAssistantClient(client.base_url, client.token),
                home.dev.agent_id,
                stop,
            ),
        )
        for writer in writers
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(WARM_UP_SECONDS)  # the writers' own pace: not a wait for a task
        backup_started = time.monotonic()
        client.post("/api/services/backup/create", {}, timeout=300)
        backup_ended = time.monotonic()
        time.sleep(1.0)  # writes go on after the backup, as they do at home
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    before = {writer.name: acknowledged(writer, backup_started) for writer in writers}
    # The longest any write waited that was under way while the backup ran.
    longest = max(
        ended - started
        for writer in writers
        for started, ended in writer.calls
        if ended > backup_started and started < backup_ended
    )
    (backup,) = sorted((home.hass.config / "backups").glob("*.tar"))
    home.hass.stop()

    restored = tmp_path / "restored"
    restore(backup, restored)
    database = restored / DOMAIN / "history.db"
    assert integrity(database) == [("ok",)]

    again = HassProcess(restored, int(client.base_url.rsplit(":", 1)[1]))
    again.start()
    try:
        wait_until_running(client)
        restored_home = Home(again, home.stand_in, home.dev, home.today)
        wait_for_agents(restored_home, 1)
        kept = {name: row.read(client, context) for name, row in table.items()}
        (agent,) = client.ws({"type": f"{DOMAIN}/conversations/list"})[0]["agents"]
        where = {
            "type": f"{DOMAIN}/conversations/read",
            "entry_id": agent["entry_id"],
            "subentry_id": agent["subentry_id"],
            "conversation_id": "busy",
        }
        (first,) = client.ws({**where, "limit": 1})
        (window,) = client.ws({**where, "offset": max(0, first["total"] - 100), "limit": 100})
        said = [m["content"] for m in window["messages"] if m["role"] == "user"]
        memories = {m["content"] for m in client.service(DOMAIN, "memory_export", {})["memories"]}
        events = {
            e["event_id"]
            for e in client.service(
                DOMAIN, "history_query", {"session_id": "busy-notes", "limit": 10000}
            )["events"]
        }
        questions = {
            e["event_data"]["text"]
            for e in client.service(
                DOMAIN, "history_query", {"session_id": "busy", "limit": 10000}
            )["events"]
            if e["event_type"] == "communication" and e["event_data"]["direction"] == "in"
        }
        series = {
            e["id"]
            for e in client.service(
                DOMAIN,
                "timeseries_query",
                {
                    "key": "busy",
                    "start_time": "2025-10-25T00:00:00Z",
                    "end_time": "2025-10-26T00:00:00Z",
                },
            )["entries"]
        }
    finally:
        again.stop()
    assert kept == expected
    found = {
        "memories": [m for m in before["memories"] if m in memories],
        "events": [e for e in before["events"] if e in events],
        "series": [s for s in before["series"] if s in series],
        "turns": [t for t in before["turns"] if t in questions],
    }
    assert found == before
    # The window keeps the latest turns (the oldest leave it as it fills): the last one
    # acknowledged before the backup is in the restored window.
    assert before["turns"][-1] in said
    with capsys.disabled():
        print(
            f"\nBackup while busy, restored: memories acknowledged before it "
            f"{len(before['memories'])}, found after the restore {len(found['memories'])}; "
            f"events {len(before['events'])}, found {len(found['events'])}; series entries "
            f"{len(before['series'])}, found {len(found['series'])}; turns "
            f"{len(before['turns'])}, found {len(found['turns'])}. The backup took {backup_ended - backup_started:.2f} s; "
            f"the longest write under way during it took {longest:.3f} s"
        )
