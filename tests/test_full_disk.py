"""A full disk loses nothing acknowledged: a real small file system that fills up.

`.storage` is a tmpfs of its own, filled to the last byte by a filler file: every write of a
file there fails as it would on a full disk (ENOSPC), from the operating system itself.
What was saved stays readable; a Repairs issue names the file and the error; the file is
written as soon as there is room again (the issue goes), and a stop that finds the disk
still full says in the log what could not be written.
"""

from collections.abc import Iterator
from datetime import timedelta
import errno
import logging
from pathlib import Path
import subprocess
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import DOMAIN

from .conftest import NO_TOOLS, call, converse, saves_fall_due

# Room for Home Assistant's own small files, none for ours once the filler is written.
DISK_SIZE = "8m"
SERIES_KEY = "full_disk"
# Ours, each with what a write stored in it (see write_everything).
FILES = {
    f"{DOMAIN}.memories": "The spare key hangs behind the bird feeder",
    f"{DOMAIN}.timeseries.{SERIES_KEY}": "d1",
    f"{DOMAIN}.timeseries": SERIES_KEY,
    f"{DOMAIN}.summaries": "daily",
}
# Longer than the longest back-off between two attempts.
PAST_ANY_RETRY = timedelta(minutes=6)


def fill(folder: Path) -> Path:
    """Write a file until the file system is full; the filler."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC
    return filler


@pytest.fixture
def hass_storage() -> dict[str, Any]:
    """Real files instead of the test plugin's storage."""
    return {}


@pytest.fixture
def small_disk(hass: HomeAssistant, tmp_path: Path) -> Iterator[Path]:
    """`.storage` on a small file system of its own (tmpfs; mounting it needs root)."""
    storage = tmp_path / ".storage"
    storage.mkdir(exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(storage)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"a small file system cannot be mounted here: {mounted.stderr.decode()}")
    try:
        yield storage
    finally:
        subprocess.run(["umount", "-l", str(storage)], check=True)


def write_failures(hass: HomeAssistant) -> dict[str, dict[str, str | None]]:
    """Our Repairs issues about files that cannot be written, by file name."""
    return {
        Path(str((issue.translation_placeholders or {})["file"])).name: dict(
            issue.translation_placeholders or {}
        )
        for issue in ir.async_get(hass).issues.values()
        if issue.domain == DOMAIN and issue.translation_key == "store_write_failed"
    }


async def write_everything(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """A memory, a series entry, a turn and today's summary: one change in each file."""
    await call(hass, "memory_save", {"content": FILES[f"{DOMAIN}.memories"], "type": "household"})
    await call(
        hass,
        "timeseries_merge",
        {"key": SERIES_KEY, "entries": [{"id": "d1", "timestamp": "2025-10-25T09:30:00Z"}]},
    )
    await converse(hass, entry, "The disk is full", "full")
    await call(hass, "summary_aggregate", {"day": dt_util.now().date().isoformat()})


def on_disk(storage: Path, name: str) -> str:
    path = storage / name
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_a_full_disk_keeps_everything_and_writes_it_once_there_is_room(
    hass: HomeAssistant, small_disk: Path, config_entry: MockConfigEntry
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    expected = {**FILES, f"{DOMAIN}.windows.{config_entry.entry_id}": "The disk is full"}
    filler = await hass.async_add_executor_job(fill, small_disk)

    await write_everything(hass, config_entry)
    await saves_fall_due(hass)
    # Nothing could be written: each file is named in Repairs with the system's error.
    failures = write_failures(hass)
    assert sorted(failures) == sorted(expected)
    assert {f["error"] for f in failures.values()} == {"[Errno 28] No space left on device"}
    assert [name for name, text in expected.items() if text in on_disk(small_disk, name)] == []
    # Everything is still there for every reader.
    exported = await call(hass, "memory_export", {})
    assert [m["content"] for m in exported["memories"]] == [FILES[f"{DOMAIN}.memories"]]
    stats = await call(
        hass,
        "conversation_stats",
        {"config_entry_id": config_entry.entry_id, "conversation_id": "full"},
    )
    (agent,) = stats["agents"].values()
    assert agent["conversations"]["full"]["message_count"] == 2
    # The attempts go on, with the issues, while the disk stays full.
    async_fire_time_changed(hass, dt_util.utcnow() + PAST_ANY_RETRY)
    await hass.async_block_till_done()
    assert sorted(write_failures(hass)) == sorted(expected)

    await hass.async_add_executor_job(filler.unlink)
    async_fire_time_changed(hass, dt_util.utcnow() + 2 * PAST_ANY_RETRY)
    await hass.async_block_till_done()
    assert write_failures(hass) == {}
    assert [name for name, text in expected.items() if text not in on_disk(small_disk, name)] == []


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_stopping_on_a_full_disk_tries_once_more_and_logs_what_is_lost(
    hass: HomeAssistant,
    small_disk: Path,
    config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    await hass.async_add_executor_job(fill, small_disk)
    await call(
        hass, "memory_save", {"content": "The boiler is serviced in May", "type": "household"}
    )
    memories = small_disk / f"{DOMAIN}.memories"
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        await hass.async_stop()
    lost = [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("custom_components") and str(memories) in record.getMessage()
    ]
    assert lost == [
        f"{memories} could not be written as it closed ([Errno 28] No space left on device); "
        "what changed in it since it was last written is lost"
    ]
    assert not memories.exists()
