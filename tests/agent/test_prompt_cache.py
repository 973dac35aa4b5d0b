"""Requests Azure can cache: a stable beginning, the prompt cache key, cached tokens counted."""

from datetime import timedelta
import re
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    API_MODE_CHAT,
    API_MODE_RESPONSES,
    CONF_API_MODE,
    CONF_DEPLOYMENT,
    CONF_PROMPT_CACHE_KEY,
    DOMAIN,
    SUBENTRY_AGENT,
)

from ..azure_stub import AzureStub
from ..conftest import LLM_ONLY, NO_TOOLS, assist_tool, converse, speech

CLOCK_TIME = re.compile(r"\d{2}:\d{2}")


def llm_calls(azure: AzureStub) -> list[Any]:
    return azure.calls("/chat/completions") + azure.calls("/responses")


def agent_subentry_id(entry: MockConfigEntry) -> str:
    (subentry_id,) = [
        sid for sid, sub in entry.subentries.items() if sub.subentry_type == SUBENTRY_AGENT
    ]
    return subentry_id


async def conversation_stats(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN,
        "conversation_stats",
        {"config_entry_id": entry.entry_id},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return dict(response)


def add_home(hass: HomeAssistant, count: int = 100) -> None:
    """Exposed lights enough for an Assist prompt of a few thousand tokens."""
    for i in range(count):
        hass.states.async_set(
            f"light.lamp_{i}", "off", {"friendly_name": f"Lamp number {i} in the hallway"}
        )


async def two_turns(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    start: str,
    gap: timedelta,
) -> None:
    """In Amsterdam, "Good afternoon" at start, then "What should I cook?" gap later."""
    await hass.config.async_set_time_zone("Europe/Amsterdam")
    freezer.move_to(start)
    await converse(hass, entry, "Good afternoon", "c")
    freezer.tick(gap)
    await converse(hass, entry, "What should I cook?", "c")


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_system_prompt_carries_no_clock_and_stays_byte_identical(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Two turns a minute apart send the very same prompt, without a time of day in it."""
    await two_turns(
        hass, loaded_entry, freezer, "2026-11-26 13:05:30+00:00", timedelta(minutes=1, seconds=7)
    )
    first, second = (call.body["messages"][0] for call in llm_calls(azure))
    assert first["role"] == second["role"] == "system"
    assert first["content"] == second["content"]
    assert "Current time is" not in first["content"]
    assert CLOCK_TIME.search(first["content"]) is None
    assert "2026-11-26" not in first["content"]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_clock_note_comes_after_the_history(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The time travels as a short note between the history and the question."""
    await two_turns(hass, loaded_entry, freezer, "2026-11-26 13:04:50+00:00", timedelta(seconds=40))
    second = llm_calls(azure)[1].body["messages"]
    assert [(m["role"], m["content"]) for m in second[1:]] == [
        ("user", "Good afternoon"),
        ("assistant", "You said: Good afternoon"),
        ("user", "Now: 14:05, Thursday 26 November 2026 (Home Assistant's clock)."),
        ("user", "What should I cook?"),
    ]
    # The note is not part of the conversation: the window keeps the exchange only.
    stats = await conversation_stats(hass, loaded_entry)
    (agent,) = stats["agents"].values()
    assert agent["conversations"]["c"]["message_count"] == 4


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_tools_are_sorted_by_name(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Assist's tools and the memory tools, in one order every turn: by name."""
    add_home(hass, 5)
    await converse(hass, loaded_entry, "How are the lamps?", "c")
    await converse(hass, loaded_entry, "And now?", "c")
    first, second = (call.body["tools"] for call in llm_calls(azure))
    names = [tool["function"]["name"] for tool in first]
    assert {assist_tool("HassTurnOn"), "recall", "remember"} <= set(names)
    assert names == sorted(names)
    assert second == first


@pytest.mark.parametrize("api_mode", [API_MODE_CHAT, API_MODE_RESPONSES])
@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_DEPLOYMENT: "gpt-5.6-mini"}])
async def test_prompt_cache_key_for_gpt_5_6_not_for_gpt_4o(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, api_mode: str
) -> None:
    """The key (one per agent) goes to the models documented to take it, and to no other."""
    azure.deployments |= {"gpt-5.6-mini", "gpt-4o"}
    subentry_id = agent_subentry_id(loaded_entry)
    subentry = loaded_entry.subentries[subentry_id]
    hass.config_entries.async_update_subentry(
        loaded_entry, subentry, data={**subentry.data, CONF_API_MODE: api_mode}
    )
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Hello", "a")
    await converse(hass, loaded_entry, "Hello again", "b")
    first, second = llm_calls(azure)
    assert first.body["prompt_cache_key"] == f"{DOMAIN}-{subentry_id}"
    assert second.body["prompt_cache_key"] == first.body["prompt_cache_key"]

    subentry = loaded_entry.subentries[subentry_id]
    hass.config_entries.async_update_subentry(
        loaded_entry, subentry, data={**subentry.data, CONF_DEPLOYMENT: "gpt-4o"}
    )
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Hello", "c")
    third = llm_calls(azure)[-1]
    assert third.body["model"] == "gpt-4o"
    assert "prompt_cache_key" not in third.body


@pytest.mark.parametrize(
    "agent_options", [{**NO_TOOLS, CONF_DEPLOYMENT: "gpt-4o", CONF_PROMPT_CACHE_KEY: "on"}]
)
async def test_prompt_cache_key_option_decides_over_the_name(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A deployment whose name says nothing of its model can still get (or lose) the key."""
    azure.deployments |= {"gpt-5.6-mini", "gpt-4o"}
    await converse(hass, loaded_entry, "Hello", "a")
    subentry = loaded_entry.subentries[agent_subentry_id(loaded_entry)]
    hass.config_entries.async_update_subentry(
        loaded_entry,
        subentry,
        data={**subentry.data, CONF_DEPLOYMENT: "gpt-5.6-mini", CONF_PROMPT_CACHE_KEY: "off"},
    )
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Hello", "b")
    forced_on, forced_off = llm_calls(azure)
    assert (forced_on.body["model"], forced_off.body["model"]) == ("gpt-4o", "gpt-5.6-mini")
    assert "prompt_cache_key" in forced_on.body
    assert "prompt_cache_key" not in forced_off.body


@pytest.mark.parametrize("api_mode", [API_MODE_CHAT, API_MODE_RESPONSES])
@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_DEPLOYMENT: "gpt-5.6-mini"}])
async def test_refused_prompt_cache_key_retries_without_it(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, api_mode: str
) -> None:
    """A 400 naming the key: the same request again without it, answered; later ones never
    carry it. No error is counted, the user hears the answer."""
    azure.deployments.add("gpt-5.6-mini")
    azure.unknown_arguments.add("prompt_cache_key")
    subentry = loaded_entry.subentries[agent_subentry_id(loaded_entry)]
    hass.config_entries.async_update_subentry(
        loaded_entry, subentry, data={**subentry.data, CONF_API_MODE: api_mode}
    )
    await hass.async_block_till_done()
    result = await converse(hass, loaded_entry, "Hello", "c")
    assert speech(result) == "You said: Hello"
    refused, answered = llm_calls(azure)
    assert "prompt_cache_key" in refused.body
    assert "prompt_cache_key" not in answered.body
    assert answered.body == {k: v for k, v in refused.body.items() if k != "prompt_cache_key"}

    result = await converse(hass, loaded_entry, "Hello again", "c")
    assert speech(result) == "You said: Hello again"
    (later,) = llm_calls(azure)[2:]
    assert "prompt_cache_key" not in later.body
    assert (await conversation_stats(hass, loaded_entry))["statistics"]["errors"] == {}


@pytest.mark.parametrize("api_mode", [API_MODE_CHAT, API_MODE_RESPONSES])
@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_cached_input_share_is_what_the_stand_in_reported(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
    api_mode: str,
) -> None:
    """Two long turns: the sensor shows the share of input tokens Azure read from its cache,
    and conversation_stats the totals and the last turn's figures."""
    add_home(hass)
    azure.prompt_caching = True
    subentry = loaded_entry.subentries[agent_subentry_id(loaded_entry)]
    hass.config_entries.async_update_subentry(
        loaded_entry, subentry, data={**subentry.data, CONF_API_MODE: api_mode}
    )
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Which lamps are on?", "c")
    freezer.tick(timedelta(seconds=5))
    await converse(hass, loaded_entry, "And in the hallway?", "c")
    await hass.async_block_till_done()
    first, second = (call.usage for call in llm_calls(azure))
    assert first is not None
    assert second is not None
    assert first[2] == 0
    assert second[2] >= 1024
    prompt = first[0] + second[0]
    cached = first[2] + second[2]

    entity_id = er.async_get(hass).async_get_entity_id(
        "sensor", DOMAIN, f"{loaded_entry.entry_id}_cached_input_share"
    )
    assert entity_id is not None
    state = hass.states.get(entity_id)
    assert state is not None
    assert float(state.state) == round(100 * cached / prompt, 1)
    assert state.attributes["unit_of_measurement"] == "%"

    statistics = (await conversation_stats(hass, loaded_entry))["statistics"]
    assert statistics["tokens_in"] == prompt
    assert statistics["tokens_in_cached"] == cached
    assert statistics["cached_input_share"] == round(100 * cached / prompt, 1)
    assert statistics["last_turn_tokens_in"] == second[0]
    assert statistics["last_turn_tokens_in_cached"] == second[2]
