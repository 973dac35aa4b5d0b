"""Home Assistant backups taken while the agent is busy: each succeeds and holds everything
acknowledged before it started, with a whole history database.

Real files and the real `backup` integration (its `backup.create` service, as an automation
makes the nightly backup); writers keep saving memories, recording history, merging a
series and talking while every backup is taken.
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
import json
from pathlib import Path
import sqlite3
import tarfile
import time
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.backup import (
    HOLD_AT_MOST,
    async_pre_backup,
)
from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.data import history_of

from .conftest import NO_TOOLS, call, converse

try:
    # Until 2026.x Home Assistant's start-up prepares the backup integration's data first.
    from homeassistant.helpers.backup import async_initialize_backup
except ImportError:
    async_initialize_backup = None

BACKUPS_IN_A_ROW = 20
SERIES_KEY = "backup_burst"
T0 = 1_761_300_000


def note(number: int) -> str:
    """A memory of its own words (no two alike enough to be merged)."""
    return f"Parcel {number} waits in locker {number * 7919 % 10007} since {T0 + number}"


@dataclass
class Writers:
    """What the writers were told was done, in order, and the longest any call took."""

    memories: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    series: list[str] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    longest: float = 0.0
    # Set once two rounds with a turn are done: something of each kind is written.
    warmed_up: asyncio.Event = field(default_factory=asyncio.Event)

    def acknowledged(self) -> dict[str, list[str]]:
        """Everything acknowledged so far."""
        return {
            "memories": list(self.memories),
            "events": list(self.events),
            "series": list(self.series),
            "turns": list(self.turns),
        }


async def write_until(
    hass: HomeAssistant, entry: MockConfigEntry, writers: Writers, stop: asyncio.Event
) -> None:
    """Save, record, merge and talk, one after another, until told to stop."""
    number = 0
    while not stop.is_set():
        started = time.monotonic()
        await call(hass, "memory_save", {"content": note(number), "type": "household"})
        writers.memories.append(note(number))
        recorded = await call(
            hass,
            "history_record",
            {"event_type": "action", "event_data": {"n": number}, "session_id": "busy"},
        )
        writers.events.append(recorded["event"]["event_id"])
        # Read back at once, also while a backup copies the files.
        read = await call(
            hass, "history_query", {"session_id": "busy", "event_type": "action", "limit": 1}
        )
        assert read["total"] == len(writers.events)
        await call(
            hass,
            "timeseries_merge",
            {"key": SERIES_KEY, "entries": [{"id": f"b{number}", "timestamp": T0 + number}]},
        )
        writers.series.append(f"b{number}")
        if number % 5 == 0:
            await converse(hass, entry, f"busy turn {number}", "busy")
            writers.turns.append(f"busy turn {number}")
            if len(writers.turns) == 2:
                writers.warmed_up.set()
        writers.longest = max(writers.longest, time.monotonic() - started)
        number += 1


@dataclass
class BackupContents:
    """What one backup holds of ours."""

    memories: list[str]
    events: set[str]
    integrity: list[tuple[str]]
    series: list[str]
    window: str
    wal_size: int


def unpack(tar: Path, into: Path, entry_id: str) -> BackupContents:
    """Unpack a backup (no password: the inner archive is a plain tar.gz) and read ours."""
    with tarfile.open(tar) as outer:
        (inner,) = [m for m in outer.getmembers() if m.name.endswith("homeassistant.tar.gz")]
        packed = outer.extractfile(inner)
        assert packed is not None
        with packed, tarfile.open(fileobj=packed, mode="r:gz") as core:
            core.extractall(into, filter="tar")
    data = into / "data"
    storage = data / ".storage"
    memories = json.loads((storage / f"{DOMAIN}.memories").read_text())["data"]["memories"]
    series = json.loads((storage / f"{DOMAIN}.timeseries.{SERIES_KEY}").read_text())["data"]
    # Read before SQLite opens the database (which may replay a log into it).
    wal_size = (data / DOMAIN / "history.db-wal").stat().st_size
    conn = sqlite3.connect(data / DOMAIN / "history.db")
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        events = {row[0] for row in conn.execute("SELECT event_id FROM agent_history_events")}
    finally:
        conn.close()
    return BackupContents(
        memories=[m["content"] for m in memories],
        events=events,
        integrity=integrity,
        series=[json.loads(entry)["id"] for entry in series["entries"]],
        window=(storage / windows_key_of(entry_id)).read_text(),
        wal_size=wal_size,
    )


def events_on_disk(hass: HomeAssistant, session_id: str) -> int:
    """A session's events in the history database's files, read beside the store."""
    conn = sqlite3.connect(hass.config.path(DOMAIN, "history.db"))
    try:
        found: int = conn.execute(
            "SELECT COUNT(*) FROM agent_history_events WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
    finally:
        conn.close()
    return found


def windows_key_of(entry_id: str) -> str:
    return f"{DOMAIN}.windows.{entry_id}"


def new_backup(folder: Path, known: set[Path]) -> Path:
    """The one backup file in folder that is not among known."""
    (made,) = set(folder.glob("*.tar")) - known
    return made


class TestBackupsWhileBusy:
    """Real files: a backup copies what is on disk."""

    @pytest.fixture
    def hass_storage(self) -> dict[str, Any]:
        """Real files instead of the test plugin's storage."""
        return {}

    @pytest.fixture
    async def busy(
        self, hass: HomeAssistant, config_entry: MockConfigEntry
    ) -> AsyncIterator[Writers]:
        """The entry loaded, the backup integration set up, and the writers at work."""
        Path(hass.config.path(".storage")).mkdir(exist_ok=True)
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        if async_initialize_backup is not None:
            async_initialize_backup(hass)
        assert await async_setup_component(hass, "backup", {})
        await hass.async_block_till_done()
        writers = Writers()
        stop = asyncio.Event()
        task = hass.async_create_task(write_until(hass, config_entry, writers, stop))
        await writers.warmed_up.wait()
        yield writers
        stop.set()
        await task

    @pytest.mark.timeout(600)
    @pytest.mark.parametrize("agent_options", [NO_TOOLS])
    async def test_twenty_backups_in_a_row_each_hold_everything_acknowledged(
        self,
        hass: HomeAssistant,
        config_entry: MockConfigEntry,
        busy: Writers,
        tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Each backup succeeds; each holds every memory, event, series entry and turn
        acknowledged before it started, and a history database whose check says ok."""
        folder = Path(hass.config.path("backups"))
        known: set[Path] = set()
        for _ in range(BACKUPS_IN_A_ROW):
            before = busy.acknowledged()
            await hass.services.async_call("backup", "create", blocking=True)
            made = await hass.async_add_executor_job(new_backup, folder, known)
            known.add(made)
            # Unpacked outside the configuration folder: the next backup copies that folder.
            held = await hass.async_add_executor_job(
                unpack, made, tmp_path_factory.mktemp("unpacked"), config_entry.entry_id
            )
            assert held.integrity == [("ok",)]
            # The log was copied into the database before the copy: nothing is left in it.
            assert held.wal_size == 0
            assert [m for m in before["memories"] if m not in held.memories] == []
            assert [e for e in before["events"] if e not in held.events] == []
            assert [s for s in before["series"] if s not in held.series] == []
            # The window keeps the latest turns (older ones leave it as it fills).
            assert f'"{before["turns"][-1]}"' in held.window
        # What was saved during the backups was written after them: nothing was lost.
        exported = await call(hass, "memory_export", {})
        assert sorted(m["content"] for m in exported["memories"]) == sorted(busy.memories)
        with capsys.disabled():
            print(
                f"\n{BACKUPS_IN_A_ROW} backups while busy: {len(busy.memories)} memories, "
                f"{len(busy.events)} events; the longest round of writes took "
                f"{busy.longest:.3f} s"
            )


class TestAHoldThatNeverEnds:
    """A backup that starts and never ends (its post_backup never comes)."""

    @pytest.fixture
    def hass_storage(self) -> dict[str, Any]:
        """Real files instead of the test plugin's storage."""
        return {}

    @pytest.mark.parametrize("agent_options", [NO_TOOLS])
    async def test_reads_answer_writes_wait_and_the_bound_ends_the_hold(
        self, hass: HomeAssistant, config_entry: MockConfigEntry
    ) -> None:
        """While held, saves are answered and read back, history reads answer, a history
        write waits; HOLD_AT_MOST after the start everything goes on and is written."""
        Path(hass.config.path(".storage")).mkdir(exist_ok=True)
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        record = {"event_type": "action", "event_data": {"n": 0}, "session_id": "held"}
        first = (await call(hass, "history_record", record))["event"]["event_id"]

        await async_pre_backup(hass)  # as the backup integration calls it
        await call(
            hass, "memory_save", {"content": "The ladder is in the shed", "type": "household"}
        )
        found = await call(hass, "memory_search", {"query": "ladder"})
        assert [m["content"] for m in found["memories"]] == ["The ladder is in the shed"]
        second = hass.loop.create_task(
            call(hass, "history_record", {**record, "event_data": {"n": 1}})
        )
        store = history_of(hass).store
        for _ in range(1000):  # until the record is queued behind the hold
            if store.waiting_jobs == 1:
                break
            await asyncio.sleep(0.01)
        assert store.waiting_jobs == 1
        read = await call(hass, "history_query", {"session_id": "held"})
        assert [e["event_id"] for e in read["events"]] == [first]
        assert not second.done()
        # A turn during the copy: its events are read back (and counted), though none of
        # them is in the database file yet.
        await converse(hass, config_entry, "Where is the ladder?", "held-talk")
        talk = await call(hass, "history_query", {"session_id": "held-talk", "ascending": True})
        question, decision, answer = talk["events"]
        assert question["event_data"]["text"] == "Where is the ladder?"
        assert (decision["event_type"], answer["event_type"]) == ("decision", "communication")
        assert talk["total"] == 3
        # Counted too, with the memory saved during the copy.
        everything = await call(hass, "history_query", {"ascending": True})
        assert [(e["event_type"], e["event_data"].get("action")) for e in everything["events"]][
            :2
        ] == [("action", None), ("state_change", "created")]
        assert everything["total"] == 5
        assert (await call(hass, "history_statistics", {}))["total_events"] == 5
        assert await hass.async_add_executor_job(events_on_disk, hass, "held-talk") == 0

        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=HOLD_AT_MOST))
        recorded = (await second)["event"]["event_id"]
        await hass.async_block_till_done()
        read = await call(hass, "history_query", {"session_id": "held", "ascending": True})
        assert [e["event_id"] for e in read["events"]] == [first, recorded]
        after = await call(hass, "history_query", {"session_id": "held-talk", "ascending": True})
        assert after["events"] == talk["events"]
        assert await hass.async_add_executor_job(events_on_disk, hass, "held-talk") == 3
        memories = Path(hass.config.path(".storage", f"{DOMAIN}.memories"))
        assert "The ladder is in the shed" in await hass.async_add_executor_job(memories.read_text)
