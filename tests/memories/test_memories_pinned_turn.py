"""A turn's <memories> block lists the pinned memories first."""

from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN

from ..azure_stub import AzureStub, Reply
from ..conftest import NO_TOOLS, converse


async def save(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, "memory_save", data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_the_turn_offers_pinned_memories_first(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    await save(
        hass,
        content="Anna prefers the bedroom at 19 degrees at night",
        type="preference",
        tags=["person:anna"],
    )
    await save(
        hass,
        content="Anna carries an EpiPen for her peanut allergy",
        type="context",
        tags=["person:anna"],
        pinned=True,
    )
    azure.queue(Reply(text="19 degrees."))
    await converse(hass, loaded_entry, "How warm does Anna like the bedroom at night?")
    (ask,) = azure.calls("/chat/completions")
    assert ask.body is not None
    data = next(
        m["content"]
        for m in ask.body["messages"]
        if m["role"] == "user" and "<memories" in str(m["content"])
    )
    pinned = data.index("Anna carries an EpiPen")
    closer = data.index("Anna prefers the bedroom at 19 degrees")
    assert pinned < closer
