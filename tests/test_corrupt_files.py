"""Every Store file of the integration: a corrupt or unreadable one is moved aside (kept),
a Repairs issue says which and where, and only that part starts empty.

HA's Store itself renames a file that is not JSON (`<key>.corrupt.<time>`) and raises its
own repair; a file that is JSON but cannot be used (no data, another shape, written by a
newer version, a directory) is ours to set aside, under a `corrupt_<key>` issue.
"""

import json
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN

from .azure_stub import AzureStub
from .conftest import MEMORIES_KEY, NO_TOOLS, Restart, ask_again_remembering, call, converse, speech

SERIES_INDEX = f"{DOMAIN}.timeseries"
KEY = "kudos_timeseries"
# The Repairs issue (strings.json "issues") of a file we moved aside.
CORRUPT_FILE_ISSUE = "corrupt_file"


@pytest.fixture
def hass_storage() -> dict[str, Any]:
    """Real files instead of the test plugin's in-memory storage."""
    return {}


@pytest.fixture
def storage(hass: HomeAssistant, tmp_path: Path) -> Path:
    folder = tmp_path / ".storage"
    folder.mkdir(exist_ok=True)
    return folder


async def set_up(hass: HomeAssistant, entry: MockConfigEntry) -> MockConfigEntry:
    """The entry, set up; from a Home Assistant started again, its new object."""
    current = hass.config_entries.async_get_entry(entry.entry_id)
    assert isinstance(current, MockConfigEntry)
    if current.state is not ConfigEntryState.LOADED:
        assert await hass.config_entries.async_setup(current.entry_id)
    await hass.async_block_till_done()
    return current


async def all_memories(hass: HomeAssistant) -> list[str]:
    """The contents of every memory in use."""
    found = await call(hass, "memory_search", {"limit": 50})
    return [memory["content"] for memory in found["memories"]]


def our_issue(hass: HomeAssistant, key: str) -> ir.IssueEntry:
    issue = ir.async_get(hass).async_get_issue(DOMAIN, f"corrupt_{key}")
    assert issue is not None
    assert issue.translation_key == CORRUPT_FILE_ISSUE
    return issue


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    "unusable",
    [
        {"version": 99, "minor_version": 1, "key": MEMORIES_KEY, "data": {"memories": []}},
        {"version": 1, "minor_version": 1, "key": MEMORIES_KEY},
        {"version": 1, "minor_version": 1, "key": MEMORIES_KEY, "data": ["not", "memories"]},
        {"version": 1, "minor_version": 1, "key": MEMORIES_KEY, "data": {"settings": "x"}},
        [1, 2, 3],
    ],
    ids=["newer_version", "no_data", "a_list", "bad_settings", "not_an_object"],
)
async def test_unusable_memories_file_is_set_aside_and_the_rest_loads(
    hass: HomeAssistant,
    storage: Path,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    restart: Restart,
    unusable: Any,
) -> None:
    entry = await set_up(hass, config_entry)
    await converse(hass, entry, "Hello before the crash", "c")
    await call(
        hass,
        "timeseries_merge",
        {"key": KEY, "entries": [{"id": "k1", "timestamp": "2025-10-25T10:00:00Z"}]},
    )
    await call(hass, "memory_save", {"content": "The guest room is Anna's", "type": "household"})
    await hass.async_stop()
    path = storage / MEMORIES_KEY
    assert "The guest room is Anna's" in path.read_text()
    path.write_text(json.dumps(unusable))

    hass = await restart()
    assert await all_memories(hass) == []
    (moved,) = storage.glob(f"{MEMORIES_KEY}.corrupt.*")
    assert json.loads(moved.read_text()) == unusable  # kept, not deleted
    assert not path.exists()
    issue = our_issue(hass, MEMORIES_KEY)
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["file"] == str(path)
    assert issue.translation_placeholders["moved_to"] == str(moved)

    # The other parts load as they were.
    assert [s["key"] for s in (await call(hass, "timeseries_list"))["keys"]] == [KEY]
    entry = await set_up(hass, config_entry)
    await converse(hass, entry, "Still there?", "c")
    sent = azure.calls("/chat/completions")[-1].body["messages"]
    assert sent[1]["content"] == "Hello before the crash"
    # And memories work again from empty, written to a new file.
    saved = await call(
        hass, "memory_save", {"content": "Bins go out on Tuesday", "type": "routine"}
    )
    assert saved["action"] == "created"
    await hass.async_stop()
    assert json.loads(path.read_text())["data"]["memories"][0]["content"] == (
        "Bins go out on Tuesday"
    )


async def test_memories_file_that_is_not_json(
    hass: HomeAssistant, storage: Path, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    """HA's Store renames it and raises its own repair; memories start empty and work."""
    path = storage / MEMORIES_KEY
    path.write_text('{"version": 1, "data": {"memories": [')
    await set_up(hass, config_entry)
    assert await all_memories(hass) == []
    (moved,) = storage.glob(f"{MEMORIES_KEY}.corrupt.*")
    assert moved.read_text() == '{"version": 1, "data": {"memories": ['
    assert any(
        issue_id.startswith(f"storage_corruption_{MEMORIES_KEY}")
        for _domain, issue_id in ir.async_get(hass).issues
    )
    saved = await call(hass, "memory_save", {"content": "Dinner is at seven", "type": "routine"})
    assert saved["action"] == "created"
    assert await all_memories(hass) == ["Dinner is at seven"]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_unusable_windows_file(
    hass: HomeAssistant, storage: Path, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    key = f"{DOMAIN}.windows.{config_entry.entry_id}"
    path = storage / key
    path.write_text(json.dumps({"version": 2, "key": key}))
    await set_up(hass, config_entry)
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == {"version": 2, "key": key}
    our_issue(hass, key)
    result = await converse(hass, config_entry, "Still there?", "c")
    assert speech(result) == "You said: Still there?"


async def test_unusable_series_files(
    hass: HomeAssistant, storage: Path, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    """An index that is a directory, and a series written by a newer version."""
    (storage / SERIES_INDEX).mkdir()
    series_key = f"{SERIES_INDEX}.{KEY}"
    (storage / series_key).write_text(
        json.dumps({"version": 99, "minor_version": 1, "key": series_key, "data": {}})
    )
    await set_up(hass, config_entry)
    assert await call(hass, "timeseries_list") == {"keys": []}
    assert len(list(storage.glob(f"{SERIES_INDEX}.corrupt.*"))) == 1
    our_issue(hass, SERIES_INDEX)
    merged = await call(
        hass,
        "timeseries_merge",
        {"key": KEY, "entries": [{"id": "k1", "timestamp": "2025-10-25T10:00:00Z"}]},
    )
    assert (merged["added"], merged["total_count"]) == (1, 1)  # the key started empty
    assert len(list(storage.glob(f"{series_key}.corrupt.*"))) == 1
    our_issue(hass, series_key)


@pytest.mark.parametrize(
    "unusable",
    [
        {"summaries": "not a list"},
        {"summaries": [{"group_id": "kitchen"}]},
        {"profiles": [1, 2]},
    ],
)
async def test_unusable_summaries_file_is_set_aside(
    hass: HomeAssistant,
    storage: Path,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    unusable: dict[str, Any],
) -> None:
    """JSON of the right version but not summaries: kept aside, never overwritten."""
    key = f"{DOMAIN}.summaries"
    stored = {"version": 1, "minor_version": 1, "key": key, "data": unusable}
    (storage / key).write_text(json.dumps(stored))
    await set_up(hass, config_entry)
    assert await call(hass, "summary_get", {"limit": 1000}) == {"summaries": []}
    assert (await call(hass, "summary_groups"))["groups"] == []
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    assert not (storage / key).exists()
    our_issue(hass, key)


# -- JSON of the right version, but another shape -----------------------------------------


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize("agents", [[], "oops", "agent: 1", "agent: windows"])
async def test_windows_file_of_another_shape_is_set_aside(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    storage: Path,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    agents: Any,
) -> None:
    """The entry loads (not SETUP_ERROR), the file is kept aside, the agent answers."""
    key = f"{DOMAIN}.windows.{config_entry.entry_id}"
    agent = next(iter(config_entry.subentries))
    if agents == "agent: 1":
        agents = {agent: 1}
    elif agents == "agent: windows":
        agents = {agent: {"conversations": {"c": {"max_tokens": 10}}}}
    stored = {"version": 2, "minor_version": 1, "key": key, "data": {"agents": agents}}
    (storage / key).write_text(json.dumps(stored))
    await set_up(hass, config_entry)
    assert config_entry.state is ConfigEntryState.LOADED
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    our_issue(hass, key)
    result = await converse(hass, config_entry, "Still there?", "c")
    assert speech(result) == "You said: Still there?"
    await ask_again_remembering(hass, config_entry, azure)


@pytest.mark.parametrize("entries", ["x", [1], ['{"no_id": 1}']], ids=["text", "number", "no_id"])
async def test_series_file_of_another_shape_is_set_aside(
    hass: HomeAssistant,
    storage: Path,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    restart: Restart,
    entries: Any,
) -> None:
    """Every call for the key works again at once (it raised an untranslated error)."""
    await set_up(hass, config_entry)
    await call(
        hass,
        "timeseries_merge",
        {"key": KEY, "entries": [{"id": "k1", "timestamp": "2025-10-25T10:00:00Z"}]},
    )
    await hass.async_stop()
    series_key = f"{SERIES_INDEX}.{KEY}"
    path = storage / series_key
    stored = json.loads(path.read_text())
    stored["data"]["entries"] = entries
    path.write_text(json.dumps(stored))

    hass = await restart()
    found = await call(
        hass,
        "timeseries_query",
        {"key": KEY, "start_time": "2025-10-01T00:00:00Z", "end_time": "2025-11-01T00:00:00Z"},
    )
    assert found["count"] == 0
    (moved,) = storage.glob(f"{series_key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    our_issue(hass, series_key)
    merged = await call(
        hass,
        "timeseries_merge",
        {"key": KEY, "entries": [{"id": "k2", "timestamp": "2025-10-26T10:00:00Z"}]},
    )
    assert merged["added"] == 1
    await hass.async_stop()
    assert len(json.loads(path.read_text())["data"]["entries"]) == 1


async def guest_room_saved_and_stopped(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """The entry set up, one memory saved, and Home Assistant stopped: the file written."""
    await set_up(hass, entry)
    await call(
        hass,
        "memory_save",
        {"content": "The guest room is Anna's", "type": "household", "tags": ["person:anna"]},
    )
    await hass.async_stop()


async def test_unreadable_memory_records_keep_a_copy_of_the_file(
    hass: HomeAssistant,
    storage: Path,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    restart: Restart,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Skipped records would be gone after the next save: the whole file is copied first."""
    await guest_room_saved_and_stopped(hass, config_entry)
    path = storage / MEMORIES_KEY
    stored = json.loads(path.read_text())
    data = stored["data"]
    data["memories"].append({"id": "mem_broken", "content": "no type"})
    data["memories"].append("not a record")
    data["archived"] = [{"memory": 3}]
    path.write_text(json.dumps(stored))

    hass = await restart()
    assert await all_memories(hass) == ["The guest room is Anna's"]
    (copy,) = storage.glob(f"{MEMORIES_KEY}.corrupt.*")
    assert json.loads(copy.read_text()) == stored
    assert json.loads(path.read_text()) == stored  # still the file in use
    assert "3 memory records could not be read and were left out" in caplog.text
    assert str(copy) in caplog.text
    saved = await call(
        hass, "memory_save", {"content": "Bins go out on Tuesday", "type": "routine"}
    )
    assert saved["action"] == "created"
    await hass.async_stop()
    assert len(json.loads(path.read_text())["data"]["memories"]) == 2


async def test_readable_memories_make_no_copy(
    hass: HomeAssistant,
    storage: Path,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    restart: Restart,
) -> None:
    await guest_room_saved_and_stopped(hass, config_entry)
    hass = await restart()
    assert await all_memories(hass) == ["The guest room is Anna's"]
    assert list(storage.glob(f"{MEMORIES_KEY}.corrupt.*")) == []
