"""The statistics sensors: names a person reads, units, durations, what is enabled."""

from homeassistant.components.sensor import SensorDeviceClass, SensorStateClass
from homeassistant.const import EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN

from .azure_stub import AzureStub
from .conftest import NO_TOOLS, converse
from .devices import entry_device

WATCHED = {"turns", "errors", "tokens_in", "tokens_out", "cached_input_share", "latency_p50"}
HIDDEN = {
    "local_turns",
    "llm_turns",
    "early_timeouts",
    "latency_p95",
    "evicted_messages",
    "conversations",
}


def _entity_id(hass: HomeAssistant, entry: MockConfigEntry, key: str) -> str:
    entity_id = er.async_get(hass).async_get_entity_id("sensor", DOMAIN, f"{entry.entry_id}_{key}")
    assert entity_id is not None
    return entity_id


async def test_watched_sensors_enabled_the_rest_disabled(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Six of twelve are on from the start; the others wait in the entity settings."""
    registry = er.async_get(hass)
    sensors = [
        e
        for e in er.async_entries_for_config_entry(registry, loaded_entry.entry_id)
        if e.domain == "sensor"
    ]
    keys = {e.unique_id.removeprefix(f"{loaded_entry.entry_id}_") for e in sensors}
    assert keys == WATCHED | HIDDEN
    enabled = set()
    for entry in sensors:
        assert entry.entity_category is EntityCategory.DIAGNOSTIC
        key = entry.unique_id.removeprefix(f"{loaded_entry.entry_id}_")
        if entry.disabled_by is None:
            enabled.add(key)
        else:
            assert entry.disabled_by is er.RegistryEntryDisabler.INTEGRATION
    assert enabled == WATCHED


async def test_entity_ids_and_device_are_named_after_the_resource(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The device is the entry, titled "Azure OpenAI <resource>"; ids follow from it."""
    title = f"Azure OpenAI 127.0.0.1:{azure.port}"
    assert loaded_entry.title == title  # the fixture's host-name title was the old default
    device = entry_device(hass, loaded_entry.entry_id, loaded_entry.entry_id)
    assert device is not None
    assert device.name == title
    assert _entity_id(hass, loaded_entry, "turns") == (
        f"sensor.azure_openai_127_0_0_1_{azure.port}_turns"
    )
    assert _entity_id(hass, loaded_entry, "tokens_in") == (
        f"sensor.azure_openai_127_0_0_1_{azure.port}_tokens_in"
    )


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_counts_have_units_and_durations_are_milliseconds(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Counts say what they count and how they add up; latency is a duration in ms."""
    registry = er.async_get(hass)
    for key in HIDDEN:
        registry.async_update_entity(_entity_id(hass, loaded_entry, key), disabled_by=None)
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    await converse(hass, loaded_entry, "Tell me about bees", "a")
    await hass.async_block_till_done()
    expected = {
        "turns": ("turns", SensorStateClass.TOTAL_INCREASING, None),
        "errors": ("errors", SensorStateClass.TOTAL_INCREASING, None),
        "tokens_in": ("tokens", SensorStateClass.TOTAL_INCREASING, None),
        "tokens_out": ("tokens", SensorStateClass.TOTAL_INCREASING, None),
        "latency_p50": (
            UnitOfTime.MILLISECONDS,
            SensorStateClass.MEASUREMENT,
            SensorDeviceClass.DURATION,
        ),
    }
    for key, (unit, state_class, device_class) in expected.items():
        state = hass.states.get(_entity_id(hass, loaded_entry, key))
        assert state is not None, key
        assert state.attributes["unit_of_measurement"] == unit, key
        assert state.attributes["state_class"] == state_class, key
        assert state.attributes.get("device_class") == device_class, key
    turns = hass.states.get(_entity_id(hass, loaded_entry, "turns"))
    assert turns is not None
    assert turns.state == "1"
    for key in ("local_turns", "llm_turns", "early_timeouts", "evicted_messages", "conversations"):
        state = hass.states.get(_entity_id(hass, loaded_entry, key))
        assert state is not None, key
        assert state.attributes["unit_of_measurement"], key
        assert state.attributes["state_class"] is not None, key
    latency_p95 = hass.states.get(_entity_id(hass, loaded_entry, "latency_p95"))
    assert latency_p95 is not None
    assert latency_p95.attributes["device_class"] == SensorDeviceClass.DURATION
