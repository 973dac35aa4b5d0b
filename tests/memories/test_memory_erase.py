"""Erasing memories erases their copies in the history; archived ones expire daily."""

from datetime import timedelta
import json
import time
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import DOMAIN

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import (
    MEMORIES_KEY,
    NO_TOOLS,
    Restart,
    converse,
    family,
    history_schema_version,
    memories_file,
    memory_record,
    stored_memories,
)

ANNA = {
    "content": "Anna's PIN is 4711",
    "type": "context",
    "tags": ["person:anna"],
    "scope": "household",
}
BEN = {
    "content": "Ben likes coffee",
    "type": "preference",
    "tags": ["person:ben"],
    "scope": "household",
}


call = family("memory")


async def stored_events(hass: HomeAssistant) -> list[tuple[str, str, str]]:
    """(agent, type, data as JSON) of every event in the history, oldest first."""
    response = await hass.services.async_call(
        DOMAIN,
        "history_query",
        {"limit": 10_000, "ascending": True},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    events: Any = response["events"]
    return [
        (event["agent_id"], event["event_type"], json.dumps(event["event_data"]))
        for event in events
    ]


def mentioning(
    events: list[tuple[str, str, str]],
    *texts: str,
    kinds: tuple[str, ...] = ("tool_use", "state_change"),
) -> list[tuple[str, str, str]]:
    """Events of these types whose data holds any of texts."""
    return [e for e in events if e[1] in kinds and any(json.dumps(t)[1:-1] in e[2] for t in texts)]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_erase_deletes_the_history_events_that_carried_the_memories(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    azure.queue(
        Reply(tool_calls=[ToolCall("remember", ANNA)]),
        Reply(text="Noted."),
        Reply(tool_calls=[ToolCall("remember", BEN)]),
        Reply(text="Noted."),
        Reply(tool_calls=[ToolCall("recall", {"query": "Anna PIN"})]),
        Reply(text="It is 4711."),
    )
    await converse(hass, loaded_entry, "Remember Anna's PIN is 4711", "c1")
    await converse(hass, loaded_entry, "Remember Ben likes coffee", "c1")
    await converse(hass, loaded_entry, "What is Anna's PIN?", "c2")
    older = await call(hass, "save", content="Anna's bike code is 1234", type="context",
                       tags=["person:anna", "topic:bike"])  # fmt: skip
    found = await call(hass, "search", tags=["person:anna"], limit=50)
    ids = [m["id"] for m in found["memories"]]
    assert older["memory"]["id"] in ids
    assert len(ids) == 2
    before = await stored_events(hass)
    assert len(mentioning(before, "4711", *ids)) == 3  # remember, recall, memory_save
    assert len(mentioning(before, "Ben likes coffee")) == 1

    erased = await call(hass, "forget", tag="person:anna", erase=True)
    assert sorted(erased["erased"]) == sorted(ids)
    assert erased["history_events_erased"] == 3

    after = await stored_events(hass)
    assert mentioning(after, "4711", "1234", *ids) == []
    # The conversation as it was said (question and answer) is the user's words, kept
    # like the windows until the history's retention or a purge.
    said = mentioning(after, "4711", kinds=("communication",))
    assert said == mentioning(before, "4711", kinds=("communication",))
    assert len(said) == 2
    # What was not erased stays, and the erasure itself is recorded without naming them.
    assert len(mentioning(after, "Ben likes coffee")) == 1
    (record,) = [e for e in after if e[0] == f"{DOMAIN}.memory_forget"]
    assert json.loads(record[2]) == {"erased": 2, "erase": True}
    assert len(after) == len(before) - 3 + 1


async def archived_and_kept(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Ids of the archived memories and of those in use, as stored."""
    stored = await stored_memories(hass, hass_storage)
    return [a["id"] for a in stored["archived"]], [m["id"] for m in stored["memories"]]


async def test_archived_memories_past_the_retention_go_daily(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
) -> None:
    saved = await call(hass, "save", content="The old router is in the attic", type="household")
    kept = await call(hass, "save", content="Bins go out on Tuesday", type="routine")
    await call(hass, "forget", memory_id=saved["memory"]["id"])
    archived = [saved["memory"]["id"]]
    assert await archived_and_kept(hass, hass_storage) == (archived, [kept["memory"]["id"]])

    freezer.tick(timedelta(days=89))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert await archived_and_kept(hass, hass_storage) == (archived, [kept["memory"]["id"]])

    freezer.tick(timedelta(days=2))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert await archived_and_kept(hass, hass_storage) == ([], [kept["memory"]["id"]])


async def test_erase_keeps_other_events_that_share_a_word(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    """An automation's "Annabel opened the garage" is not a copy of a memory about Anna."""
    saved = await call(hass, "save", content="Anna", type="context", tags=["person:anna"])
    await hass.services.async_call(
        DOMAIN,
        "history_record",
        {
            "agent_id": "automation.garage",
            "event_type": "state_change",
            "event_data": {"note": "Annabel opened the garage"},
        },
        blocking=True,
        return_response=True,
    )
    before = await stored_events(hass)
    garage = [e for e in before if e[0] == "automation.garage"]
    assert len(garage) == 1
    erased = await call(hass, "forget", tag="person:anna", erase=True)
    assert erased["erased"] == [saved["memory"]["id"]]
    assert erased["history_events_erased"] == 1  # memory_save's event
    after = await stored_events(hass)
    assert [e for e in after if e[0] == "automation.garage"] == garage
    assert mentioning(after, saved["memory"]["id"]) == []


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_erase_finds_the_recall_of_quoted_content(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The recall result holds the memory escaped twice; its ids find it all the same."""
    secret = {
        "content": 'Anna\'s PIN is "4711"',
        "type": "context",
        "tags": ["person:anna"],
        "scope": "household",
    }
    azure.queue(
        Reply(tool_calls=[ToolCall("remember", secret)]),
        Reply(text="Noted."),
        Reply(tool_calls=[ToolCall("recall", {"query": "Anna PIN"})]),
        Reply(text="ok"),
    )
    await converse(hass, loaded_entry, "Remember it", "c1")
    await converse(hass, loaded_entry, "What is Anna's PIN?", "c2")
    before = await stored_events(hass)
    tools = [e for e in before if e[1] == "tool_use" and "4711" in e[2]]
    assert [json.loads(e[2])["tool"] for e in tools] == ["remember", "recall"]
    erased = await call(hass, "forget", tag="person:anna", erase=True)
    assert erased["history_events_erased"] == 2
    after = await stored_events(hass)
    assert [e for e in after if e[1] == "tool_use" and "4711" in e[2]] == []


async def test_erase_with_the_history_unavailable_reports_none(
    hass: HomeAssistant, azure: AzureStub, config_entry: MockConfigEntry, caplog: Any
) -> None:
    """A history that cannot open may still hold copies: not "0 events erased"."""
    history_schema_version(hass, 99)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, "history_unavailable") is not None
    with pytest.raises(HomeAssistantError) as unavailable:
        await hass.services.async_call(
            DOMAIN, "history_statistics", {}, blocking=True, return_response=True
        )
    assert unavailable.value.translation_key == "history_unavailable"
    saved = await call(hass, "save", **ANNA)
    erased = await call(hass, "forget", tag="person:anna", erase=True)
    assert erased["erased"] == [saved["memory"]["id"]]
    assert erased["history_events_erased"] is None
    assert "erased memories may remain" in caplog.text
    assert (await call(hass, "search", limit=50))["memories"] == []


async def test_erase_with_the_history_closed_reports_none(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    restart: Restart,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A history closed under the service (Home Assistant shutting down) is not a crash."""
    saved = await call(hass, "save", **ANNA)
    await hass.async_block_till_done(wait_background_tasks=True)  # the summaries' catch-up
    await hass.async_stop()  # the history closes with the final write
    erased = await call(hass, "forget", tag="person:anna", erase=True)
    assert erased["erased"] == [saved["memory"]["id"]]
    assert erased["history_events_erased"] is None
    assert "Erased memories may remain in the agent history" in caplog.text
    # Open again, after a restart: the saved event still names the memory, untouched.
    hass = await restart()
    assert len(mentioning(await stored_events(hass), saved["memory"]["id"])) == 1


async def test_archived_memories_past_the_retention_go_at_start(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """A home restarted every night never reaches the daily clean-up: start-up cleans too."""
    day = 86_400.0
    now = time.time()

    def archived(record: dict[str, Any], days_ago: float) -> dict[str, Any]:
        return {
            "id": record["id"],
            "original_content": record["content"],
            "superseded_by": None,
            "archived_at": now - days_ago * day,
            "reason": "Forgotten on request",
            "memory": record,
        }

    stale = memory_record(1, "The old router is in the attic", at=now - 120 * day)
    recent = memory_record(2, "Bins go out on Monday", "routine", at=now - 20 * day)
    kept = memory_record(3, "Bins go out on Tuesday", at=now - 20 * day)
    hass_storage[MEMORIES_KEY] = memories_file([kept], [archived(stale, 91), archived(recent, 10)])
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    stored = await stored_memories(hass, hass_storage)
    assert [a["id"] for a in stored["archived"]] == [recent["id"]]
    assert [m["id"] for m in stored["memories"]] == [kept["id"]]
