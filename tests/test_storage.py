"""Windows on disk: bounded delayed saves, flush on stop, corrupt files, idle expiry."""

import asyncio
from datetime import UTC, timedelta
import json
import logging
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import CONF_LLM_HASS_API, EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import (
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_EARLY_TIMEOUT,
    CONF_MAX_CONVERSATIONS,
    DOMAIN,
    RECOMMENDED_AGENT,
)
from custom_components.azure_openai_memory.memory.timeseries import TimeSeries, format_time
from custom_components.azure_openai_memory.storage import DebouncedStore
from custom_components.azure_openai_memory.timeseries.store import TimeseriesStore
from custom_components.azure_openai_memory.window import async_maintain

from .azure_stub import AzureStub
from .conftest import converse

NO_TOOLS = {**RECOMMENDED_AGENT, CONF_LLM_HASS_API: None, CONF_EARLY_TIMEOUT: 0}
KEY = "kudos_givers_timeseries"


def merge_into(series: TimeSeries, first: int, last: int) -> None:
    """Entries first..last-1, a minute apart."""
    now = format_time(1761300000)
    entries = [{"id": f"e{i}", "timestamp": 1761300000 + 60 * i} for i in range(first, last)]
    series.merge(series.prepare(entries, "id", "timestamp", UTC, now), now)


async def test_steady_changes_still_write_within_max_wait(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """A change every 30 ms never lets a 50 ms debounce settle; max_wait still writes."""
    snapshots = 0

    def snapshot() -> dict[str, Any]:
        nonlocal snapshots
        snapshots += 1
        return {"n": snapshots}

    store = DebouncedStore(hass, f"{DOMAIN}.test", snapshot, delay=0.05, max_wait=0.2)
    await store.async_load()
    for _ in range(20):
        store.async_schedule_save()
        await asyncio.sleep(0.03)
    assert snapshots >= 2
    await store.async_close()
    assert hass_storage[f"{DOMAIN}.test"]["data"] == {"n": snapshots}


async def test_final_write_flushes(hass: HomeAssistant, hass_storage: dict[str, Any]) -> None:
    """HA stopping writes what is pending, however long the delay."""
    store = DebouncedStore(hass, f"{DOMAIN}.test", lambda: {"kept": True}, delay=3600)
    await store.async_load()
    store.async_schedule_save()
    assert f"{DOMAIN}.test" not in hass_storage
    hass.bus.async_fire(EVENT_HOMEASSISTANT_FINAL_WRITE)
    await hass.async_block_till_done()
    assert hass_storage[f"{DOMAIN}.test"]["data"] == {"kept": True}


async def test_loading_again_listens_for_the_final_write_once(hass: HomeAssistant) -> None:
    """A time series loads again after every eviction; the stop listener is not repeated."""
    before = hass.bus.async_listeners().get(EVENT_HOMEASSISTANT_FINAL_WRITE, 0)
    store = DebouncedStore(hass, f"{DOMAIN}.test", dict)
    for _ in range(3):
        await store.async_load()
    assert hass.bus.async_listeners()[EVENT_HOMEASSISTANT_FINAL_WRITE] == before + 1
    await store.async_close()
    assert hass.bus.async_listeners().get(EVENT_HOMEASSISTANT_FINAL_WRITE, 0) == before


class TestRealFiles:
    """Store on disk, not the in-memory stand-in of the test plugin."""

    @pytest.fixture
    def hass_storage(self) -> dict[str, Any]:
        """Real files instead of mocked storage."""
        return {}

    @pytest.fixture
    def config_dir(self, hass: HomeAssistant, tmp_path: Path) -> Path:
        hass.config.config_dir = str(tmp_path)
        (tmp_path / ".storage").mkdir(exist_ok=True)
        return tmp_path

    @pytest.mark.parametrize("agent_options", [NO_TOOLS])
    async def test_corrupt_windows_file_is_kept_aside(
        self,
        hass: HomeAssistant,
        config_dir: Path,
        config_entry: MockConfigEntry,
        azure: AzureStub,
    ) -> None:
        """A corrupt file is renamed, a repair raised, and the agent works from empty."""
        path = config_dir / ".storage" / f"{DOMAIN}.windows.{config_entry.entry_id}"
        path.write_text("{not json")
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        assert list(config_dir.joinpath(".storage").glob("*.corrupt.*"))
        issues = ir.async_get(hass).issues
        assert any("storage_corruption" in issue_id for _, issue_id in issues)
        result = await converse(hass, config_entry, "Still there?", "c")
        assert result.response.speech["plain"]["speech"] == "You said: Still there?"

        await hass.config_entries.async_unload(config_entry.entry_id)
        await hass.async_block_till_done()
        assert "Still there?" in path.read_text()
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        memory = next(iter(config_entry.runtime_data.windows.values()))
        assert memory.get_messages("c")[0].content == "Still there?"

    async def test_corrupt_timeseries_index_keeps_the_series(
        self, hass: HomeAssistant, config_dir: Path
    ) -> None:
        """A corrupt index is set aside and listing starts empty; a series file it named is
        still read by the next merge into that key, which lists it again."""
        prefix = f"{DOMAIN}.timeseries"
        store = TimeseriesStore(hass, prefix, memory_budget=1)
        await store.async_load()
        async with store.lock(KEY):
            series = await store.async_get(KEY, create=True)
            assert series is not None
            merge_into(series, 0, 5)
            store.async_changed(KEY)
        await hass.async_block_till_done()
        assert store.loaded_keys() == []  # over budget: written, then forgotten
        await store.async_close()
        index = config_dir / ".storage" / prefix
        assert json.loads(index.read_text())["data"]["series"][KEY]["count"] == 5
        index.write_text("{not json")

        fresh = TimeseriesStore(hass, prefix)
        await fresh.async_load()
        assert list(config_dir.joinpath(".storage").glob(f"{prefix}.corrupt.*"))
        assert await fresh.async_summaries() == []
        async with fresh.lock(KEY):
            series = await fresh.async_get(KEY, create=True)
            assert series is not None
            merge_into(series, 5, 7)
            fresh.async_changed(KEY)
        (listed,) = await fresh.async_summaries()
        assert (listed["key"], listed["count"]) == (KEY, 7)
        await fresh.async_close()


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_idle_conversations_expire_and_health_warns_once(
    hass: HomeAssistant,
    setup_ha: None,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The periodic check forgets idle conversations and warns once per new problem."""
    hass.config_entries.async_update_entry(
        config_entry,
        options={
            **config_entry.options,
            CONF_CONVERSATION_IDLE_MINUTES: 0.002,
            CONF_MAX_CONVERSATIONS: 2,
        },
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await converse(hass, config_entry, "First conversation", "old")
    freezer.tick(timedelta(seconds=1))  # "old" is now idle longer than 0.12 s
    await converse(hass, config_entry, "Second conversation", "new")
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=11))
    await hass.async_block_till_done()
    memory = next(iter(config_entry.runtime_data.windows.values()))
    assert memory.get_all_conversations() == ["new"]

    memory.add_message("third", "user", "fills the cap")
    with caplog.at_level(logging.WARNING):
        async_maintain(config_entry.runtime_data)
        async_maintain(config_entry.runtime_data)
    assert caplog.text.count("reached the cap of 2") == 1


async def test_windows_of_version_1_lose_their_stored_prompt(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    azure: AzureStub,
    config_entry: MockConfigEntry,
) -> None:
    """Windows stored with the agent's prompt in them: the prompt goes, the talk stays."""
    (subentry_id,) = config_entry.subentries
    key = f"{DOMAIN}.windows.{config_entry.entry_id}"

    def message(role: str, content: str, tokens: int) -> dict[str, Any]:
        return {"role": role, "content": content, "timestamp": 1.0, "token_count": tokens}

    hass_storage[key] = {
        "version": 1,
        "key": key,
        "data": {
            "agents": {
                subentry_id: {
                    "conversations": {
                        "c": {
                            "max_tokens": 4000,
                            "preserve_system": True,
                            "last_activity": 1.0,
                            "evicted_count": 0,
                            "system": message("system", "A prompt of 6,300 tokens", 6300),
                            "groups": [
                                [message("user", "Hello", 5)],
                                [message("assistant", "Hi", 5)],
                            ],
                        }
                    }
                }
            }
        },
    }
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    memory = config_entry.runtime_data.windows[subentry_id]
    assert [(m.role, m.content) for m in memory.get_messages("c")] == [
        ("user", "Hello"),
        ("assistant", "Hi"),
    ]
    assert memory.get_stats("c")["current_tokens"] == 10
    config_entry.runtime_data.windows_store.async_schedule_save()
    await config_entry.runtime_data.windows_store.async_flush()
    assert hass_storage[key]["version"] == 2
    assert hass_storage[key]["data"]["agents"][subentry_id]["conversations"]["c"]["system"] is None
