"""A turn's series context reads the spoken range in the language the turn was asked in
(the pipeline's), not the home's: "gestern" in a German turn is yesterday in an English
home, and French "hier" is yesterday even where the home speaks German (there it means
"here")."""

from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN

from ..agent.test_spoken_ranges import carried, data_message, local, reading_id, readings
from ..azure_stub import AzureStub
from ..conftest import NO_TOOLS, say


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)


async def store_living_room(hass: HomeAssistant) -> None:
    """The living room's temperature every three hours, from 10 October until now."""
    moments = readings()
    await hass.services.async_call(
        DOMAIN,
        "timeseries_merge",
        {
            "key": "wohnzimmer_timeseries",
            "entries": [
                {"id": reading_id(m), "timestamp": m.isoformat(), "celsius": m.hour}
                for m in moments
            ],
            "window_start": moments[0].isoformat(),
            "window_end": local(26, 14, 5, 30).isoformat(),
        },
        blocking=True,
    )


# Yesterday's eight readings, newest first.
YESTERDAY = [f"t1125{hour:02d}" for hour in (21, 18, 15, 12, 9, 6, 3, 0)]


async def test_a_german_turn_in_an_english_home_gets_yesterday(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    await hass.config.async_update(language="en")
    await store_living_room(hass)
    await say(hass, loaded_entry, "Wie warm war es gestern im Wohnzimmer?", "c1", language="de")
    (call,) = azure.calls("/chat/completions")
    assert carried(data_message(call.body), "wohnzimmer_timeseries") == (8, YESTERDAY)
    # The same words in an English turn name no range: no stored data at all.
    await say(hass, loaded_entry, "Wie warm war es gestern im Wohnzimmer?", "c2", language="en")
    messages = azure.calls("/chat/completions")[1].body["messages"]
    assert not any("Reference data" in m["content"] for m in messages)


async def test_a_french_turn_in_a_german_home_reads_french(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """French "hier" is yesterday; read in the home's German it would be "here"."""
    await hass.config.async_update(language="de")
    await store_living_room(hass)
    await say(
        hass, loaded_entry, "Quelle température hier dans le wohnzimmer ?", "c1", language="fr"
    )
    (call,) = azure.calls("/chat/completions")
    assert carried(data_message(call.body), "wohnzimmer_timeseries") == (8, YESTERDAY)
