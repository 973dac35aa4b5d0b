"""Every Store file of the integration: a corrupt or unreadable one is moved aside (kept),
a Repairs issue says which and where, and only that part starts empty.

HA's Store itself renames a file that is not JSON (`<key>.corrupt.<time>`) and raises its
own repair; a file that is JSON but cannot be used (no data, another shape, written by a
newer version, a directory) is ours to set aside, under a `corrupt_<key>` issue.
"""

import json
from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.data import DATA_HISTORY, DATA_MEMORIES, DATA_TIMESERIES
from custom_components.azure_openai_memory.memories.services import async_register_memory_services
from custom_components.azure_openai_memory.memories.store import STORAGE_KEY, Memories
from custom_components.azure_openai_memory.memory.facts import FactStore
from custom_components.azure_openai_memory.storage import CORRUPT_FILE_ISSUE
from custom_components.azure_openai_memory.summaries.store import SummaryStore
from custom_components.azure_openai_memory.timeseries.services import (
    async_register_timeseries_services,
)
from custom_components.azure_openai_memory.timeseries.store import TimeseriesStore

from .azure_stub import AzureStub
from .conftest import NO_TOOLS, converse, memory_of, speech

SERIES_INDEX = f"{DOMAIN}.timeseries"
KEY = "kudos_timeseries"


@pytest.fixture
def hass_storage() -> dict[str, Any]:
    """Real files instead of the test plugin's in-memory storage."""
    return {}


@pytest.fixture
def storage(hass: HomeAssistant, tmp_path: Path) -> Path:
    folder = tmp_path / ".storage"
    folder.mkdir(exist_ok=True)
    return folder


async def call(hass: HomeAssistant, service: str, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def fresh_memories(hass: HomeAssistant) -> Memories:
    """Memories read from disk again, as at a restart, with the services pointing at them."""
    memories = Memories(hass)
    await memories.async_load()
    hass.data[DATA_MEMORIES] = memories
    async_register_memory_services(hass, memories, hass.data[DATA_HISTORY])
    return memories


def our_issue(hass: HomeAssistant, key: str) -> ir.IssueEntry:
    issue = ir.async_get(hass).async_get_issue(DOMAIN, f"corrupt_{key}")
    assert issue is not None
    assert issue.translation_key == CORRUPT_FILE_ISSUE
    return issue


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    "unusable",
    [
        {"version": 99, "minor_version": 1, "key": STORAGE_KEY, "data": {"memories": []}},
        {"version": 1, "minor_version": 1, "key": STORAGE_KEY},
        {"version": 1, "minor_version": 1, "key": STORAGE_KEY, "data": ["not", "memories"]},
        {"version": 1, "minor_version": 1, "key": STORAGE_KEY, "data": {"settings": "x"}},
        [1, 2, 3],
    ],
    ids=["newer_version", "no_data", "a_list", "bad_settings", "not_an_object"],
)
async def test_unusable_memories_file_is_set_aside_and_the_rest_loads(
    hass: HomeAssistant,
    storage: Path,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    unusable: Any,
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await converse(hass, config_entry, "Hello before the crash", "c")
    await call(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[{"id": "k1", "timestamp": "2025-10-25T10:00:00Z"}],
    )
    await call(hass, "memory_save", content="The guest room is Anna's", type="household")
    assert await hass.config_entries.async_unload(config_entry.entry_id)
    await hass.data[DATA_TIMESERIES].async_close()
    await hass.data[DATA_MEMORIES].async_close()
    path = storage / STORAGE_KEY
    path.write_text(json.dumps(unusable))

    memories = await fresh_memories(hass)
    assert len(memories.facts) == 0
    (moved,) = storage.glob(f"{STORAGE_KEY}.corrupt.*")
    assert json.loads(moved.read_text()) == unusable  # kept, not deleted
    assert not path.exists()
    issue = our_issue(hass, STORAGE_KEY)
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["file"] == str(path)
    assert issue.translation_placeholders["moved_to"] == str(moved)

    # The other parts load as they were.
    series = TimeseriesStore(hass, SERIES_INDEX)
    await series.async_load()
    assert [s["key"] for s in await series.async_summaries()] == [KEY]
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    assert memory_of(config_entry).get_messages("c")[0].content == "Hello before the crash"
    # And memories work again from empty, written to a new file.
    saved = await call(hass, "memory_save", content="Bins go out on Tuesday", type="routine")
    assert saved["action"] == "created"
    await memories.async_close()
    assert json.loads(path.read_text())["data"]["memories"][0]["content"] == (
        "Bins go out on Tuesday"
    )


async def test_memories_file_that_is_not_json(
    hass: HomeAssistant, storage: Path, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    """HA's Store renames it and raises its own repair; memories start empty and work."""
    path = storage / STORAGE_KEY
    path.write_text('{"version": 1, "data": {"memories": [')
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert len(hass.data[DATA_MEMORIES].facts) == 0
    (moved,) = storage.glob(f"{STORAGE_KEY}.corrupt.*")
    assert moved.read_text() == '{"version": 1, "data": {"memories": ['
    assert any(
        issue_id.startswith(f"storage_corruption_{STORAGE_KEY}")
        for _domain, issue_id in ir.async_get(hass).issues
    )
    saved = await call(hass, "memory_save", content="Dinner is at seven", type="routine")
    assert saved["action"] == "created"


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_unusable_windows_file(
    hass: HomeAssistant, storage: Path, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    key = f"{DOMAIN}.windows.{config_entry.entry_id}"
    path = storage / key
    path.write_text(json.dumps({"version": 2, "key": key}))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == {"version": 2, "key": key}
    our_issue(hass, key)
    result = await converse(hass, config_entry, "Still there?", "c")
    assert speech(result) == "You said: Still there?"


async def test_unusable_series_files(hass: HomeAssistant, storage: Path) -> None:
    """An index that is a directory, and a series written by a newer version."""
    (storage / SERIES_INDEX).mkdir()
    series_key = f"{SERIES_INDEX}.{KEY}"
    (storage / series_key).write_text(
        json.dumps({"version": 99, "minor_version": 1, "key": series_key, "data": {}})
    )
    store = TimeseriesStore(hass, SERIES_INDEX)
    await store.async_load()
    assert await store.async_summaries() == []
    assert len(list(storage.glob(f"{SERIES_INDEX}.corrupt.*"))) == 1
    our_issue(hass, SERIES_INDEX)
    async with store.lock(KEY):
        series = await store.async_get(KEY, create=True)
        assert series is not None
        assert series.summary()["count"] == 0
    assert len(list(storage.glob(f"{series_key}.corrupt.*"))) == 1
    our_issue(hass, series_key)
    await store.async_close()


@pytest.mark.parametrize(
    "unusable",
    [
        {"summaries": "not a list"},
        {"summaries": [{"group_id": "kitchen"}]},
        {"profiles": [1, 2]},
    ],
)
async def test_unusable_summaries_file_is_set_aside(
    hass: HomeAssistant, storage: Path, unusable: dict[str, Any]
) -> None:
    """JSON of the right version but not summaries: kept aside, never overwritten."""
    key = f"{DOMAIN}.summaries"
    stored = {"version": 1, "minor_version": 1, "key": key, "data": unusable}
    (storage / key).write_text(json.dumps(stored))
    store = SummaryStore(hass, key)
    await store.async_load()
    assert store.book.groups() == []
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    assert not (storage / key).exists()
    our_issue(hass, key)
    await store.async_close()


# -- JSON of the right version, but another shape -----------------------------------------


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize("agents", [[], "oops", "agent: 1", "agent: windows"])
async def test_windows_file_of_another_shape_is_set_aside(
    hass: HomeAssistant,
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
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.LOADED
    (moved,) = storage.glob(f"{key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    our_issue(hass, key)
    result = await converse(hass, config_entry, "Still there?", "c")
    assert speech(result) == "You said: Still there?"
    assert [m.content for m in memory_of(config_entry).get_messages("c")] == [
        "Still there?",
        "You said: Still there?",
    ]


@pytest.mark.parametrize("entries", ["x", [1], ['{"no_id": 1}']], ids=["text", "number", "no_id"])
async def test_series_file_of_another_shape_is_set_aside(
    hass: HomeAssistant, storage: Path, entries: Any
) -> None:
    """Every call for the key works again at once (it raised an untranslated error)."""
    assert await async_setup_component(hass, DOMAIN, {})
    store = hass.data[DATA_TIMESERIES]
    await call(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[{"id": "k1", "timestamp": "2025-10-25T10:00:00Z"}],
    )
    await store.async_close()
    series_key = f"{SERIES_INDEX}.{KEY}"
    path = storage / series_key
    stored = json.loads(path.read_text())
    stored["data"]["entries"] = entries
    path.write_text(json.dumps(stored))

    store = TimeseriesStore(hass, SERIES_INDEX)
    await store.async_load()
    hass.data[DATA_TIMESERIES] = store
    async_register_timeseries_services(hass, store, hass.data[DATA_HISTORY])
    async with store.lock(KEY):
        series = await store.async_get(KEY)
        assert series is not None
        assert series.summary()["count"] == 0
    (moved,) = storage.glob(f"{series_key}.corrupt.*")
    assert json.loads(moved.read_text()) == stored
    our_issue(hass, series_key)
    merged = await call(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[{"id": "k2", "timestamp": "2025-10-26T10:00:00Z"}],
    )
    assert merged["added"] == 1
    await store.async_close()
    assert len(json.loads(path.read_text())["data"]["entries"]) == 1


async def test_unreadable_memory_records_keep_a_copy_of_the_file(
    hass: HomeAssistant, storage: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Skipped records would be gone after the next save: the whole file is copied first."""
    assert await async_setup_component(hass, DOMAIN, {})
    good = FactStore()
    kept = good.save("The guest room is Anna's", "household", ["person:anna"])
    data = good.as_dict()
    data["memories"].append({"id": "mem_broken", "content": "no type"})
    data["memories"].append("not a record")
    data["archived"] = [{"memory": 3}]
    stored = {"version": 1, "minor_version": 1, "key": STORAGE_KEY, "data": data}
    path = storage / STORAGE_KEY
    path.write_text(json.dumps(stored))

    memories = await fresh_memories(hass)
    assert [m.id for m in memories.facts] == [kept.memory.id]
    (copy,) = storage.glob(f"{STORAGE_KEY}.corrupt.*")
    assert json.loads(copy.read_text()) == stored
    assert json.loads(path.read_text()) == stored  # still the file in use
    assert "3 memory records could not be read and were left out" in caplog.text
    assert str(copy) in caplog.text
    saved = await call(hass, "memory_save", content="Bins go out on Tuesday", type="routine")
    assert saved["action"] == "created"
    await memories.async_close()
    assert len(json.loads(path.read_text())["data"]["memories"]) == 2


async def test_readable_memories_make_no_copy(hass: HomeAssistant, storage: Path) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    good = FactStore()
    good.save("The guest room is Anna's", "household", ["person:anna"])
    stored = {"version": 1, "minor_version": 1, "key": STORAGE_KEY, "data": good.as_dict()}
    (storage / STORAGE_KEY).write_text(json.dumps(stored))
    memories = await fresh_memories(hass)
    assert len(memories.facts) == 1
    assert list(storage.glob(f"{STORAGE_KEY}.corrupt.*")) == []
