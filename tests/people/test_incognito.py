"""Incognito: turns are answered, follow-ups work, and nothing outlives the conversation."""

from datetime import timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import ATTR_ENTITY_ID, STATE_OFF, STATE_ON, EntityCategory
from homeassistant.core import HomeAssistant, State
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import (
    Restart,
    agent_entity_id,
    call,
    converse,
    exception_text,
    stored,
    window_stats,
    windows_key,
)
from .conftest import switch_of

SECRET = "My bank PIN is 4711"


def state_of(hass: HomeAssistant, entity_id: str) -> State:
    state = hass.states.get(entity_id)
    assert state is not None
    return state


async def switch(hass: HomeAssistant, entity_id: str, on: bool) -> None:
    await hass.services.async_call(
        "switch", "turn_on" if on else "turn_off", {ATTR_ENTITY_ID: entity_id}, blocking=True
    )


def sent(azure: AzureStub) -> str:
    """Everything the last request carried."""
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    return json.dumps(body["messages"])


async def everything_recorded(hass: HomeAssistant) -> list[dict[str, Any]]:
    return list((await call(hass, "history_query", {"limit": 1000}))["events"])


async def stored_text(hass: HomeAssistant, hass_storage: dict[str, Any], key: str) -> str:
    return json.dumps(await stored(hass, hass_storage, key))


async def stored_conversations(
    hass: HomeAssistant, hass_storage: dict[str, Any], entry: MockConfigEntry
) -> list[str]:
    file = await stored(hass, hass_storage, windows_key(entry))
    assert file is not None
    (agent,) = file["data"]["agents"].values()
    return list(agent["conversations"])


async def test_the_switch_is_off_until_turned_on_and_its_turning_on_is_recorded(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    entity_id = switch_of(hass, loaded_entry)
    assert entity_id == "switch.azure_openai_agent_incognito"
    state = state_of(hass, entity_id)
    assert (state.state, state.name) == (STATE_OFF, "Azure OpenAI agent Incognito")
    registered = er.async_get(hass).async_get(entity_id)
    assert registered is not None
    assert registered.entity_category is EntityCategory.CONFIG  # not exposed to Assist
    await switch(hass, entity_id, True)
    assert state_of(hass, entity_id).state == STATE_ON
    await switch(hass, entity_id, True)  # already on: not recorded again
    (event,) = await everything_recorded(hass)
    assert (event["agent_id"], event["event_type"], event["tags"]) == (
        agent_entity_id(hass, loaded_entry),
        "state_change",
        ["incognito"],
    )
    assert event["event_data"] == {"incognito": True, "minutes": None}


async def test_an_incognito_turn_leaves_nothing_after_the_conversation(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """Answered, followed up, then gone: no history event (but the one of turning it on),
    no memory, no window on disk, no summary; the next normal turn does not see it."""
    await converse(hass, loaded_entry, "Good morning", "c")
    entity_id = switch_of(hass, loaded_entry)
    await switch(hass, entity_id, True)
    azure.queue(
        Reply(tool_calls=[ToolCall("remember", {"content": SECRET, "type": "context"})]),
        Reply(text="I will keep that to myself."),
    )
    await converse(hass, loaded_entry, SECRET, "c")
    # The remember tool refused, and said so to the model.
    tool_result = json.loads(sent(azure))[-1]
    assert tool_result["role"] == "tool"
    assert json.loads(tool_result["content"])["saved"] is False
    # A follow-up in the conversation sees what was said.
    await converse(hass, loaded_entry, "What is my PIN?", "c")
    assert SECRET in sent(azure)

    windows = await stored_text(hass, hass_storage, windows_key(loaded_entry))
    assert "Good morning" in windows
    assert SECRET not in windows
    assert (await call(hass, "memory_search", {"limit": 50}))["memories"] == []
    recorded = await everything_recorded(hass)
    assert SECRET not in json.dumps(recorded)
    assert [e["tags"] for e in recorded if e["event_type"] == "state_change"] == [["incognito"]]
    assert len(recorded) == 3 + 1  # the morning's turn, and turning incognito on
    await call(hass, "summary_aggregate", {"day": dt_util.now().date().isoformat()})
    assert SECRET not in json.dumps(await call(hass, "summary_get", {"limit": 100}))

    # Off: the conversation is back to what it was before.
    await switch(hass, entity_id, False)
    stats = await window_stats(hass, loaded_entry, "c")
    assert stats is not None
    assert stats["message_count"] == 2
    await converse(hass, loaded_entry, "And now?", "c")
    assert "Good morning" in sent(azure)
    assert SECRET not in sent(azure)
    windows = await stored_text(hass, hass_storage, windows_key(loaded_entry))
    assert "And now?" in windows
    assert SECRET not in windows
    assert SECRET not in json.dumps(await everything_recorded(hass))


async def test_a_conversation_begun_incognito_is_dropped_when_it_idles(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """Still on, but the conversation is over after the continuation time: its window goes."""
    await switch(hass, switch_of(hass, loaded_entry), True)
    await converse(hass, loaded_entry, SECRET, "c", device_id="kitchen")
    assert await window_stats(hass, loaded_entry, "c") is not None
    assert await stored_conversations(hass, hass_storage, loaded_entry) == []
    freezer.tick(timedelta(minutes=31))  # the continuation time, and a minute
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=11))
    await hass.async_block_till_done()
    assert await window_stats(hass, loaded_entry, "c") is None
    # The same satellite a while later: a new conversation, without the secret.
    await converse(hass, loaded_entry, "Hello again", "d", device_id="kitchen")
    assert SECRET not in sent(azure)


async def test_incognito_for_some_minutes_ends_by_itself(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    entity_id = switch_of(hass, loaded_entry)
    agent = agent_entity_id(hass, loaded_entry)
    answer = await call(hass, "incognito", {"entity_id": agent, "minutes": 15})
    until = (dt_util.utcnow() + timedelta(minutes=15)).isoformat()
    assert answer == {"agent": agent, "until": until}
    state = state_of(hass, entity_id)
    assert (state.state, state.attributes["until"]) == (STATE_ON, until)
    (event,) = await everything_recorded(hass)
    assert event["event_data"] == {"incognito": True, "minutes": 15}
    await converse(hass, loaded_entry, SECRET, "c")
    freezer.tick(timedelta(minutes=15))
    async_fire_time_changed(hass, dt_util.utcnow())
    await hass.async_block_till_done()
    state = state_of(hass, entity_id)
    assert (state.state, state.attributes["until"]) == (STATE_OFF, None)
    assert await window_stats(hass, loaded_entry, "c") is None
    # The switch itself names the agent too.
    await call(hass, "incognito", {"entity_id": entity_id, "minutes": 1})
    assert state_of(hass, entity_id).state == STATE_ON


async def test_incognito_needs_one_of_our_agents(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    with pytest.raises(ServiceValidationError) as refused:
        await call(hass, "incognito", {"entity_id": "switch.garden", "minutes": 5})
    assert refused.value.translation_key == "incognito_unknown_agent"
    assert str(refused.value) == exception_text(
        "incognito_unknown_agent", entity_id="switch.garden"
    ).rstrip(".")
    assert await everything_recorded(hass) == []


async def test_a_restart_turns_incognito_off_and_keeps_nothing_of_it(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
    restart: Restart,
) -> None:
    await converse(hass, loaded_entry, "Good morning", "c")
    await switch(hass, switch_of(hass, loaded_entry), True)
    await converse(hass, loaded_entry, SECRET, "c")
    new = await restart()
    assert state_of(new, "switch.azure_openai_agent_incognito").state == STATE_OFF
    windows = await stored_text(new, hass_storage, windows_key(loaded_entry))
    assert "Good morning" in windows
    assert SECRET not in windows
    await converse(new, loaded_entry, "Where were we?", "c")
    assert "Good morning" in sent(azure)
    assert SECRET not in sent(azure)
