"""Files on disk: bounded delayed saves, flush on stop, corrupt files, idle expiry."""

from datetime import timedelta
import json
import logging
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import CoreState, HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import (
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_MAX_CONVERSATIONS,
    DOMAIN,
)

from .azure_stub import AzureStub
from .conftest import (
    CLOCK_NOTE,
    NO_TOOLS,
    Restart,
    agent_memory,
    ask_again_remembering,
    call,
    conversation_stats,
    converse,
    saves_fall_due,
    speech,
    window_stats,
)

KEY = "kudos_givers_timeseries"
SERIES = f"{DOMAIN}.timeseries"
MEMORIES = f"{DOMAIN}.memories"
T0 = 1761300000


def numbered(first: int, last: int) -> list[dict[str, Any]]:
    """Entries first..last-1, a minute apart."""
    return [{"id": f"e{i}", "timestamp": T0 + 60 * i} for i in range(first, last)]


class TestRealFiles:
    """Store on disk, not the in-memory stand-in of the test plugin."""

    @pytest.fixture
    def hass_storage(self) -> dict[str, Any]:
        """Real files instead of mocked storage."""
        return {}

    @pytest.fixture
    def storage(self, hass: HomeAssistant, tmp_path: Path) -> Path:
        """The .storage folder of this test's config directory."""
        hass.config.config_dir = str(tmp_path)
        (tmp_path / ".storage").mkdir(exist_ok=True)
        return Path(hass.config.path(".storage"))

    async def test_steady_changes_still_write_within_max_wait(
        self,
        hass: HomeAssistant,
        storage: Path,
        config_entry: MockConfigEntry,
        freezer: FrozenDateTimeFactory,
    ) -> None:
        """A merge every 5 s never lets the 10 s delay settle; the 30 s bound still writes."""
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        path = storage / f"{SERIES}.{KEY}"
        written: list[int] = []  # seconds after the first merge the file had appeared by
        for second in range(0, 40, 5):
            await call(
                hass, "timeseries_merge", {"key": KEY, "entries": numbered(second, second + 1)}
            )
            freezer.tick(timedelta(seconds=5))
            async_fire_time_changed(hass)
            await hass.async_block_till_done()
            if path.exists() and not written:
                written.append(second + 5)
                stored = json.loads(path.read_text())["data"]["entries"]
                assert len(stored) == second // 5 + 1  # every merge until the write
        assert written == [30]
        # Quiet at last: the rest is written one delay after the last merge.
        freezer.tick(timedelta(seconds=10))
        async_fire_time_changed(hass)
        await hass.async_block_till_done()
        assert len(json.loads(path.read_text())["data"]["entries"]) == 8

    @pytest.mark.parametrize("agent_options", [NO_TOOLS])
    async def test_stopping_writes_what_is_pending(
        self,
        hass: HomeAssistant,
        storage: Path,
        config_entry: MockConfigEntry,
        azure: AzureStub,
    ) -> None:
        """Home Assistant stopping writes every pending change, however long its delay."""
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        await converse(hass, config_entry, "Keep this", "c")
        await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(0, 1)})
        await call(hass, "memory_save", {"content": "Bins go out on Tuesday", "type": "routine"})
        files = [f"{DOMAIN}.windows.{config_entry.entry_id}", f"{SERIES}.{KEY}", SERIES, MEMORIES]
        assert [name for name in files if (storage / name).exists()] == []
        await hass.async_stop()
        assert [name for name in files if (storage / name).exists()] == files
        assert "Keep this" in (storage / files[0]).read_text()
        assert "Bins go out on Tuesday" in (storage / MEMORIES).read_text()

    async def test_a_change_after_the_final_write_is_written_at_once(
        self, hass: HomeAssistant, storage: Path, config_entry: MockConfigEntry
    ) -> None:
        """Work that ends during the stop, after Home Assistant's final write, is written
        then: a delayed write's timer would never fire any more."""
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        path = storage / f"{SERIES}.{KEY}"
        hass.set_state(CoreState.final_write)
        await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(0, 1)})
        await hass.async_block_till_done()
        assert len(json.loads(path.read_text())["data"]["entries"]) == 1
        hass.set_state(CoreState.running)

    @pytest.mark.parametrize("agent_options", [NO_TOOLS])
    async def test_corrupt_windows_file_is_kept_aside(
        self,
        hass: HomeAssistant,
        clock: FrozenDateTimeFactory,
        storage: Path,
        config_entry: MockConfigEntry,
        azure: AzureStub,
    ) -> None:
        """A corrupt file is renamed, a repair raised, and the agent works from empty."""
        path = storage / f"{DOMAIN}.windows.{config_entry.entry_id}"
        path.write_text("{not json")
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await hass.async_block_till_done()
        assert list(storage.glob("*.corrupt.*"))
        issues = ir.async_get(hass).issues
        assert any("storage_corruption" in issue_id for _, issue_id in issues)
        result = await converse(hass, config_entry, "Still there?", "c")
        assert speech(result) == "You said: Still there?"

        await hass.config_entries.async_unload(config_entry.entry_id)
        await hass.async_block_till_done()
        assert "Still there?" in path.read_text()
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await ask_again_remembering(hass, config_entry, azure)

    async def test_corrupt_timeseries_index_keeps_the_series(
        self,
        hass: HomeAssistant,
        storage: Path,
        config_entry: MockConfigEntry,
        restart: Restart,
    ) -> None:
        """A corrupt index is set aside and listing starts empty; a series file it named is
        still read by the next merge into that key, which lists it again."""
        assert await hass.config_entries.async_setup(config_entry.entry_id)
        await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(0, 5)})
        await hass.async_stop()
        index = storage / SERIES
        assert json.loads(index.read_text())["data"]["series"][KEY]["count"] == 5
        index.write_text("{not json")

        hass = await restart()
        assert list(storage.glob(f"{SERIES}.corrupt.*"))
        assert await call(hass, "timeseries_list") == {"keys": []}
        merged = await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(5, 7)})
        assert merged["total_count"] == 7
        (listed,) = (await call(hass, "timeseries_list"))["keys"]
        assert (listed["key"], listed["count"]) == (KEY, 7)


async def test_the_final_write_listener_is_not_repeated(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    """Every file listens for Home Assistant's final write once: using a series again, or
    refusing merges into new keys, adds no listener."""
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    before = hass.bus.async_listeners().get(EVENT_HOMEASSISTANT_FINAL_WRITE, 0)
    await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(0, 1)})
    with_series = hass.bus.async_listeners()[EVENT_HOMEASSISTANT_FINAL_WRITE]
    assert with_series == before + 1  # the series' own file
    for n in range(3):
        await call(hass, "timeseries_merge", {"key": KEY, "entries": numbered(n, n + 1)})
        await call(hass, "timeseries_query", {"key": KEY, "last": "1 day"})
    for n in range(3):
        with pytest.raises(ServiceValidationError) as err:
            await call(hass, "timeseries_merge", {"key": f"refused_{n}_timeseries", "entries": "x"})
        assert err.value.translation_key == "entries_not_list"
    await hass.async_block_till_done()
    assert hass.bus.async_listeners()[EVENT_HOMEASSISTANT_FINAL_WRITE] == with_series


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
    (agent,) = (await conversation_stats(hass, config_entry))["agents"].values()
    assert list(agent["conversations"]) == ["new"]

    await converse(hass, config_entry, "fills the cap", "third")
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=11))
            await hass.async_block_till_done()
    assert caplog.text.count("reached the cap of 2") == 1
    assert (await agent_memory(hass, config_entry))["conversations"] == 2


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_windows_of_version_1_lose_their_stored_prompt(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    azure: AzureStub,
    config_entry: MockConfigEntry,
) -> None:
    """Windows stored with the agent's prompt in them: the prompt goes, the talk stays."""
    (subentry_id,) = config_entry.subentries
    key = f"{DOMAIN}.windows.{config_entry.entry_id}"

    # Talked a minute ago: the turn below continues it without a note about a pause.
    recent = dt_util.utcnow().timestamp() - 60

    def message(role: str, content: str, tokens: int) -> dict[str, Any]:
        return {"role": role, "content": content, "timestamp": recent, "token_count": tokens}

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
                            "last_activity": recent,
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
    stats = await window_stats(hass, config_entry, "c")
    assert stats is not None
    assert (stats["message_count"], stats["current_tokens"]) == (2, 10)
    await converse(hass, config_entry, "Still there?", "c")
    sent = azure.calls("/chat/completions")[-1].body["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "Hello"),
        ("assistant", "Hi"),
        ("user", CLOCK_NOTE),
        ("user", "Still there?"),
    ]
    assert "6,300" not in sent[0]["content"]
    await saves_fall_due(hass)
    assert hass_storage[key]["version"] == 2
    assert hass_storage[key]["data"]["agents"][subentry_id]["conversations"]["c"]["system"] is None
