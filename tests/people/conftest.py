"""People's tests talk to an agent without Home Assistant's tools: what a person may
remember, recall and read goes through our own tools and services only."""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN, SUBENTRY_AGENT

from ..conftest import NO_TOOLS


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)


def switch_of(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """The entity id of the incognito switch of the entry's agent."""
    (subentry_id,) = [
        sid for sid, sub in entry.subentries.items() if sub.subentry_type == SUBENTRY_AGENT
    ]
    entity_id = er.async_get(hass).async_get_entity_id("switch", DOMAIN, f"{subentry_id}_incognito")
    assert entity_id is not None
    return entity_id
