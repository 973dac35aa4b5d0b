"""The stand-in as scripts/develop runs it: memory and device control visible offline."""

import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import API_MODE_RESPONSES, CONF_API_MODE

from .azure_stub import AzureStub, Reply
from .azure_stub.server import develop_reply
from .conftest import ASSIST_CLOCK_NOTES, LLM_ONLY, NO_TOOLS, converse, speech
from .test_dev_config import load_demo_home

# The clock note in each request of an agent with the Assist API: one or none.
ASSIST = len(ASSIST_CLOCK_NOTES)


@pytest.fixture
def develop(azure: AzureStub) -> AzureStub:
    azure.responder = develop_reply
    return azure


async def busy_home(hass: HomeAssistant) -> None:
    """scripts/develop's demo home, and many lights whose names share words with its own."""
    await load_demo_home(hass)
    for i in range(150):
        hass.states.async_set(f"light.lamp_{i}", "off", {"friendly_name": f"Hallway lamp {i}"})
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})


def lights_on(hass: HomeAssistant) -> list[str]:
    return sorted(s.entity_id for s in hass.states.async_all("light") if s.state == "on")


@pytest.mark.parametrize(
    "agent_options", [LLM_ONLY, {**LLM_ONLY, CONF_API_MODE: API_MODE_RESPONSES}]
)
async def test_turns_on_the_light_the_user_names(
    hass: HomeAssistant, develop: AzureStub, loaded_entry: MockConfigEntry, agent_options: Any
) -> None:
    """The longest exposed name the user said is the tool's target, then memory shows."""
    await busy_home(hass)

    result = await converse(hass, loaded_entry, "Please turn on the kitchen light", "d")
    await hass.async_block_till_done()
    assert lights_on(hass) == ["light.kitchen_light"]
    assert speech(result) == f"Done: Kitchen light. (I see {3 + ASSIST} messages of context)"

    result = await converse(hass, loaded_entry, "Switch the Kitchen light off", "d")
    await hass.async_block_till_done()
    assert lights_on(hass) == []
    assert speech(result) == f"Done: Kitchen light. (I see {7 + ASSIST} messages of context)"

    result = await converse(hass, loaded_entry, "what did I just ask?", "d")
    assert (
        speech(result) == f"You said: what did I just ask? (I see {9 + ASSIST} messages of context)"
    )


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_without_tools_it_only_talks(
    hass: HomeAssistant, develop: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    await busy_home(hass)
    result = await converse(hass, loaded_entry, "turn on the kitchen light", "d")
    await hass.async_block_till_done()
    assert speech(result) == "You said: turn on the kitchen light (I see 2 messages of context)"
    assert lights_on(hass) == []


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_unknown_name_goes_to_home_assistant_as_said(
    hass: HomeAssistant, develop: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    """A name no entity has reaches the tool as said, and the failure is spoken."""
    await busy_home(hass)
    result = await converse(hass, loaded_entry, "turn on the garage door.", "d")
    await hass.async_block_till_done()
    assert lights_on(hass) == []
    assert (
        develop.calls("/chat/completions")[1].body["messages"][-2]["tool_calls"][0]["function"][
            "arguments"
        ]
        == '{"name": "garage door"}'
    )
    assert speech(result).startswith("Done: that did not work")


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_scripted_replies_still_win(
    hass: HomeAssistant, develop: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    develop.queue(Reply(text="Scripted."))
    assert speech(await converse(hass, loaded_entry, "turn on the kitchen light", "d")) == (
        "Scripted."
    )
    assert speech(await converse(hass, loaded_entry, "hello", "d")) == (
        f"You said: hello (I see {3 + ASSIST} messages of context)"
    )


async def test_summaries_are_written_by_the_stand_in_offline(
    hass: HomeAssistant, develop: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    """A request for JSON gets an object of the asked shape: today's summary is not extractive."""
    await converse(hass, loaded_entry, "The tomato seedlings need more light", "garden")
    answer = await hass.services.async_call(
        "azure_openai_memory",
        "summary_aggregate",
        {"day": dt_util.now().date().isoformat()},
        blocking=True,
        return_response=True,
    )
    assert answer == {"daily": 1, "weekly": 0, "monthly": 0, "pruned": 0, "eras": 0}
    got = await hass.services.async_call(
        "azure_openai_memory", "summary_get", {}, blocking=True, return_response=True
    )
    assert got is not None
    (daily,) = got["summaries"]
    assert daily["extractive"] is False
    assert "seedlings" in daily["topics"]
    asked = develop.calls("/chat/completions")[-1].body
    assert asked is not None
    assert asked["response_format"]["type"] == "json_schema"


# A schema with what structured outputs allow: a tuple of items, an integer enum, anyOf
# with null, and a $ref into $defs.
AWKWARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "level": {"type": "integer", "enum": [3, 5]},
        "note": {"anyOf": [{"type": "null"}, {"type": "string"}]},
        "room": {"$ref": "#/$defs/room"},
        "moods": {"type": "array", "items": {"type": "string", "enum": ["calm", "busy"]}},
    },
    "$defs": {
        "room": {"type": "object", "properties": {"floor": {"type": "integer", "enum": [2]}}}
    },
}


def test_awkward_schemas_are_filled_through_the_responses_api() -> None:
    """A Responses request asks through `text.format`; the answer follows the schema."""
    body = {
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "tomato seedlings need light, tomato seedlings"}],
        "text": {"format": {"type": "json_schema", "name": "out", "schema": AWKWARD_SCHEMA}},
    }
    reply = develop_reply(body)
    assert reply.text is not None
    assert json.loads(reply.text) == {
        "pair": ["tomato", "seedlings", "need", "light"],
        "level": 3,
        "note": "tomato seedlings need light, tomato seedlings",
        "room": {"floor": 2},
        "moods": ["calm"],
    }


def test_a_reference_cycle_ends() -> None:
    schema = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    body = {
        "model": "m",
        "input": "hi",
        "text": {"format": {"type": "json_schema", "schema": schema}},
    }
    reply = develop_reply(body)
    assert reply.text == '"hi"'
