"""The options form as a user fills it: the values it shows, in its sections, some changed."""

from typing import Any

from homeassistant.config_entries import ConfigFlowResult
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry


def shown(result: ConfigFlowResult) -> dict[str, dict[str, Any]]:
    """What each section of the form shows in its fields."""
    schema = result["data_schema"]
    assert schema is not None
    return {
        str(name): {
            str(key): (key.description or {}).get("suggested_value") for key in part.schema.schema
        }
        for name, part in schema.schema.items()
    }


def filled(result: ConfigFlowResult, **changes: Any) -> dict[str, dict[str, Any]]:
    """The form as submitted: every shown value, with these fields changed."""
    sections = shown(result)
    fields = {key for part in sections.values() for key in part}
    assert set(changes) <= fields, set(changes) - fields
    return {
        name: {
            key: changes.get(key, value)
            for key, value in part.items()
            if key in changes or value is not None
        }
        for name, part in sections.items()
    }


async def submit_options(
    hass: HomeAssistant, entry: MockConfigEntry, **changes: Any
) -> ConfigFlowResult:
    """Open the entry's options form and submit it with these fields changed."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], filled(result, **changes)
    )
    await hass.async_block_till_done()  # the entry's update (a reload) is done too
    return result
