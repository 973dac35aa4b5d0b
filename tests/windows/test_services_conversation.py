"""conversation_stats and conversation_reset, through the real service registry."""

from typing import Any

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.azure_openai_memory.const import DOMAIN

from ..azure_stub import AzureStub
from ..conftest import NO_TOOLS, conversation_stats, converse


async def conversations(hass: HomeAssistant, entry: MockConfigEntry) -> set[str]:
    """The live conversations of the entry's only agent."""
    (agent,) = (await conversation_stats(hass, entry))["agents"].values()
    return set(agent["conversations"])


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_stats_and_reset(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Stats report turns and windows; reset forgets one conversation, then all."""
    await converse(hass, loaded_entry, "Tell me about bees", "a")
    await converse(hass, loaded_entry, "Tell me about ants", "b")
    response = await hass.services.async_call(
        DOMAIN,
        "conversation_stats",
        {"config_entry_id": loaded_entry.entry_id},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert response["statistics"]["turns"] == 2
    assert response["statistics"]["tokens_in"] == 24
    (agent,) = response["agents"].values()
    assert set(agent["conversations"]) == {"a", "b"}
    assert agent["conversations"]["a"]["message_count"] == 2  # question and answer
    statistics = response["statistics"]
    assert statistics["last_prompt_tokens"] > 0
    assert statistics["last_request_tokens"] > statistics["last_prompt_tokens"]
    assert statistics["last_prompt_share"] == round(
        100 * statistics["last_prompt_tokens"] / statistics["last_request_tokens"], 1
    )
    assert statistics["requests_trimmed"] == 0
    assert agent["memory"]["conversations"] == 2

    one = await hass.services.async_call(
        DOMAIN,
        "conversation_stats",
        {"config_entry_id": loaded_entry.entry_id, "conversation_id": "b"},
        blocking=True,
        return_response=True,
    )
    assert set(next(iter(one["agents"].values()))["conversations"]) == {"b"}  # type: ignore[union-attr,call-overload]

    reset = await hass.services.async_call(
        DOMAIN,
        "conversation_reset",
        {"config_entry_id": loaded_entry.entry_id, "conversation_id": "a"},
        blocking=True,
        return_response=True,
    )
    assert reset == {"reset": 1}
    assert await conversations(hass, loaded_entry) == {"b"}
    reset = await hass.services.async_call(
        DOMAIN,
        "conversation_reset",
        {"config_entry_id": loaded_entry.entry_id},
        blocking=True,
        return_response=True,
    )
    assert reset == {"reset": 1}
    assert await conversations(hass, loaded_entry) == set()


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_reset_is_admin_only(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_read_only_user: MockUser,
) -> None:
    """A non-admin caller is refused and nothing is forgotten."""
    await converse(hass, loaded_entry, "precious", "keep")
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN,
            "conversation_reset",
            {"config_entry_id": loaded_entry.entry_id},
            blocking=True,
            context=Context(user_id=hass_read_only_user.id),
        )
    assert await conversations(hass, loaded_entry) == {"keep"}


async def test_bad_entry_is_a_validation_error(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    """Unknown or unloaded entries are named in a translated error."""
    for entry_id, key in (("nope", "unknown_entry"), (loaded_entry.entry_id, "entry_not_loaded")):
        if key == "entry_not_loaded":
            assert await hass.config_entries.async_unload(loaded_entry.entry_id)
        with pytest.raises(ServiceValidationError) as err:
            await hass.services.async_call(
                DOMAIN,
                "conversation_stats",
                {"config_entry_id": entry_id},
                blocking=True,
                return_response=True,
            )
        assert err.value.translation_key == key


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_sensors_follow_turns(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The diagnostic sensors show turns, tokens and latency (looked up, not guessed)."""
    registry = er.async_get(hass)
    for entry in er.async_entries_for_config_entry(registry, loaded_entry.entry_id):
        if entry.disabled_by is not None:
            registry.async_update_entity(entry.entity_id, disabled_by=None)
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Tell me about bees", "a")
    await hass.async_block_till_done()
    states: dict[str, Any] = {}
    for key in (
        "turns",
        "llm_turns",
        "local_turns",
        "tokens_in",
        "tokens_out",
        "conversations",
        "latency_p50",
    ):
        entity_id = registry.async_get_entity_id("sensor", DOMAIN, f"{loaded_entry.entry_id}_{key}")
        assert entity_id is not None
        state = hass.states.get(entity_id)
        assert state is not None
        states[key] = state.state
    assert states["turns"] == "1"
    assert states["llm_turns"] == "1"
    assert states["local_turns"] == "0"
    assert states["tokens_in"] == "12"
    assert states["tokens_out"] == "7"
    assert states["conversations"] == "1"
    assert float(states["latency_p50"]) > 0
