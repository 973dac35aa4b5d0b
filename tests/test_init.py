"""Set-up, unload, reload, and what a failing resource does to the entry."""

from typing import Any

from homeassistant.config_entries import SOURCE_REAUTH, ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers.httpx_client import get_async_client
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.llm import client as client_module
from custom_components.azure_openai_memory.llm.client import SDK_TAKES_HTTPX

from .azure_stub import AzureStub


async def test_setup_unload_reload(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The entry loads against the stand-in, unloads, and reloads."""
    assert loaded_entry.state is ConfigEntryState.LOADED
    runtime = loaded_entry.runtime_data
    assert runtime.settings.endpoint == azure.endpoint
    if SDK_TAKES_HTTPX:
        assert runtime.client._client is get_async_client(hass)
    assert len(azure.calls("/models")) == 1

    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert loaded_entry.state is ConfigEntryState.LOADED
    assert len(azure.calls("/models")) == 2

    assert await hass.config_entries.async_unload(loaded_entry.entry_id)
    assert loaded_entry.state is ConfigEntryState.NOT_LOADED


async def test_bad_key_starts_reauth(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A key that stopped working fails set-up with a reauth flow, and no key in the log."""
    azure.api_key = "rotated"
    assert not await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [flow["context"]["source"] for flow in flows] == [SOURCE_REAUTH]
    assert config_entry.reason is not None
    assert config_entry.data["api_key"] not in config_entry.reason


async def test_unreachable_resource_retries(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A resource that is down means 'retry later', not a broken entry."""
    await azure.stop()
    assert not await hass.config_entries.async_setup(config_entry.entry_id)
    assert config_entry.state is ConfigEntryState.SETUP_RETRY
    assert config_entry.reason is not None
    assert "cannot_connect" in config_entry.reason


async def test_removing_entry_deletes_its_windows(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, hass_storage: dict[str, Any]
) -> None:
    """Conversation windows go with the entry; nothing is left behind."""
    memory = next(iter(loaded_entry.runtime_data.memories.values()))
    memory.add_message("c", "user", "remember me")
    loaded_entry.runtime_data.windows_store.async_schedule_save()
    await hass.config_entries.async_unload(loaded_entry.entry_id)
    key = f"{DOMAIN}.windows.{loaded_entry.entry_id}"
    assert key in hass_storage
    await hass.config_entries.async_remove(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert key not in hass_storage


async def test_sdk_without_httpx_gets_its_own_client(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub, monkeypatch: Any
) -> None:
    """openai >= 3 cannot take HA's httpx client: the SDK builds its own, off the loop."""
    monkeypatch.setattr(client_module, "SDK_TAKES_HTTPX", False)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    client = config_entry.runtime_data.client
    assert client._client is not get_async_client(hass)
    assert len(azure.calls("/models")) == 1
    await hass.config_entries.async_unload(config_entry.entry_id)
