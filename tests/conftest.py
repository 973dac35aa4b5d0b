"""Fixtures: the real hass, the Azure stand-in over HTTP on 127.0.0.1, a configured entry."""

from collections.abc import AsyncIterator, Iterator
import os
from pathlib import Path
from typing import Any

from homeassistant import block_async_io
from homeassistant.components import conversation
from homeassistant.components.conversation import ConversationResult
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_EARLY_TIMEOUT,
    CONF_ENDPOINT,
    CONF_PREFER_LOCAL_INTENTS,
    DEFAULT_AGENT_NAME,
    DOMAIN,
    RECOMMENDED_AGENT,
    RECOMMENDED_OPTIONS,
    SUBENTRY_AGENT,
)

from .azure_stub import DEFAULT_KEY, AzureStub

pytest_plugins = ["pytest_homeassistant_custom_component"]

# Agents for tests of the LLM route: no local intents, no early answer; with or without tools.
LLM_ONLY = {**RECOMMENDED_AGENT, CONF_PREFER_LOCAL_INTENTS: False, CONF_EARLY_TIMEOUT: 0}
NO_TOOLS = {**LLM_ONLY, CONF_LLM_HASS_API: None}


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: None) -> None:
    """Load our integration from custom_components/."""


@pytest.fixture(autouse=True)
def detect_blocking_calls(disable_block_async_io: None) -> None:
    """Fail a test that blocks the event loop, as HA does at run time."""
    block_async_io.enable()


@pytest.fixture(autouse=True)
def no_azure_environment() -> Iterator[None]:
    """The SDK reads AZURE_OPENAI_* and OPENAI_* variables; keep them out of tests."""
    saved = {
        k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("AZURE_OPENAI", "OPENAI"))
    }
    yield
    os.environ.update(saved)


@pytest.fixture
async def azure(socket_enabled: None) -> AsyncIterator[AzureStub]:
    """The Azure OpenAI stand-in, serving on a free port of 127.0.0.1."""
    stub = AzureStub()
    await stub.start()
    yield stub
    await stub.stop()


def entry_data(stub: AzureStub, api_style: str = API_STYLE_V1) -> dict[str, Any]:
    """Entry data pointing at the stand-in."""
    data: dict[str, Any] = {
        CONF_ENDPOINT: stub.endpoint,
        CONF_API_KEY: DEFAULT_KEY,
        CONF_API_STYLE: api_style,
    }
    if api_style == API_STYLE_DEPLOYMENT:
        data[CONF_API_VERSION] = "2025-04-01-preview"
    return data


@pytest.fixture
def agent_options() -> dict[str, Any]:
    """The first agent's options; override in a test module to change them."""
    return dict(RECOMMENDED_AGENT)


@pytest.fixture
def api_style() -> str:
    """The API style of the test entry; parametrize to change it."""
    return API_STYLE_V1


@pytest.fixture
def config_entry(
    hass: HomeAssistant, azure: AzureStub, agent_options: dict[str, Any], api_style: str
) -> MockConfigEntry:
    """A config entry for the stand-in, with one agent subentry, added to hass."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="127.0.0.1",
        unique_id=azure.endpoint,
        data=entry_data(azure, api_style),
        options=dict(RECOMMENDED_OPTIONS),
        subentries_data=[
            {
                "subentry_type": SUBENTRY_AGENT,
                "data": agent_options,
                "title": DEFAULT_AGENT_NAME,
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    return entry


@pytest.fixture(autouse=True)
async def setup_ha(hass: HomeAssistant, tmp_path: Path) -> None:
    """The parts of HA an agent needs, set up before anything depending on conversation.

    Each test gets its own config directory: the history database, the token cache and any
    file a test writes stay in it (the plugin's default is one shared folder).
    """
    hass.config.config_dir = str(tmp_path)
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "conversation", {})


@pytest.fixture
async def loaded_entry(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry
) -> MockConfigEntry:
    """The entry, set up against the stand-in."""
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    return config_entry


def agent_entity_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """The conversation entity of the entry's first agent."""
    (subentry_id,) = [
        s for s in entry.subentries if entry.subentries[s].subentry_type == SUBENTRY_AGENT
    ][:1]
    entity_id = er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id


async def converse(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    text: str,
    conversation_id: str | None = None,
    device_id: str | None = None,
) -> ConversationResult:
    """One turn through Home Assistant's conversation API, as Assist makes it."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        Context(),
        language="en",
        agent_id=agent_entity_id(hass, entry),
        device_id=device_id,
    )


def memory_of(entry: MockConfigEntry) -> Any:
    """The windows of the entry's only agent."""
    (memory,) = entry.runtime_data.windows.values()
    return memory


def speech(result: ConversationResult) -> str:
    """What the agent said."""
    return str(result.response.speech["plain"]["speech"])
