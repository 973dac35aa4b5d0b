"""The series_lookup tool refuses a time it cannot read as the services do: translated."""

import dataclasses
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import llm
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import HOUSEHOLD_API_ID

from ..conftest import call


async def lookup(hass: HomeAssistant, **args: Any) -> Any:
    """The tool called as an agent calls it (2025.4's context also carries the prompt)."""
    values: dict[str, Any] = {
        "platform": "tests",
        "context": Context(),
        "user_prompt": None,
        "language": "en",
        "assistant": conversation.DOMAIN,
        "device_id": None,
    }
    names = {field.name for field in dataclasses.fields(llm.LLMContext)}
    context = llm.LLMContext(**{k: v for k, v in values.items() if k in names})
    api = await llm.async_get_api(hass, HOUSEHOLD_API_ID, context)
    return await api.async_call_tool(llm.ToolInput("series_lookup", args))


@pytest.mark.parametrize("field", ["start_time", "end_time"])
async def test_series_lookup_refuses_what_is_not_a_time(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, field: str
) -> None:
    now = dt_util.utcnow()
    await call(
        hass,
        "timeseries_merge",
        {
            "key": "energy_prices",
            "entries": [{"id": "p1", "timestamp": now.isoformat(), "price": 0.25}],
            "window_start": now.isoformat(),
            "window_end": now.isoformat(),
        },
    )
    args = {"key": "energy_prices", "start_time": now.isoformat(), field: "yesterday"}
    with pytest.raises(ServiceValidationError) as err:
        await lookup(hass, **args)
    assert err.value.translation_key == "invalid_time"
    assert err.value.translation_placeholders == {"field": field, "value": "yesterday"}
