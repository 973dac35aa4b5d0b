"""Azure OpenAI Memory: an Assist conversation agent on Azure OpenAI that remembers."""

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.const import CONF_API_KEY, Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.helpers.typing import ConfigType

from .const import (
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_ENDPOINT,
    CONF_MAX_CONVERSATIONS,
    CONF_PRESERVE_SYSTEM,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    DOMAIN,
    LOGGER,
    RECOMMENDED_API_VERSION,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_PRESERVE_SYSTEM,
    RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    SUBENTRY_AGENT,
)
from .llm.client import (
    ResourceSettings,
    SDKClient,
    async_check_resource,
    async_create_client,
)
from .llm.errors import API_ERRORS, ErrorKind, classify_error
from .memory.tokens import load_counter
from .memory.window import ConversationMemoryManager, MemorySettings
from .services import DATA_TIMESERIES, async_register_services
from .stats import TurnStatistics
from .storage import DebouncedStore, TimeseriesStore

PLATFORMS: list[Platform] = [Platform.CONVERSATION, Platform.SENSOR]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
MAINTENANCE_INTERVAL = timedelta(minutes=10)


@dataclass
class Runtime:
    """Everything one loaded entry owns; lives in entry.runtime_data."""

    settings: ResourceSettings
    client: SDKClient
    windows_store: DebouncedStore
    memories: dict[str, ConversationMemoryManager] = field(default_factory=dict)
    stats: TurnStatistics = field(default_factory=TurnStatistics)
    reported_health: frozenset[str] = frozenset()


type AzureOpenAIMemoryConfigEntry = ConfigEntry[Runtime]


def settings_from_entry_data(data: dict) -> ResourceSettings:  # type: ignore[type-arg]
    """Read the resource settings from config entry (or flow) data."""
    return ResourceSettings(
        endpoint=data[CONF_ENDPOINT],
        api_key=data[CONF_API_KEY],
        api_style=data[CONF_API_STYLE],
        api_version=data.get(CONF_API_VERSION) or RECOMMENDED_API_VERSION,
    )


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Load the time series index and register the services."""
    timeseries = TimeseriesStore(hass, f"{DOMAIN}.timeseries")
    await timeseries.async_load()
    hass.data[DATA_TIMESERIES] = timeseries
    async_register_services(hass, timeseries)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Connect to the resource and set up the agents."""
    settings = settings_from_entry_data(dict(entry.data))
    client = await async_create_client(hass, settings)
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
        kind = classify_error(err)
        if kind is ErrorKind.INVALID_AUTH:
            raise ConfigEntryAuthFailed(
                translation_domain=DOMAIN, translation_key="invalid_auth"
            ) from err
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="setup_failed",
            translation_placeholders={"reason": kind.value},
        ) from err

    memories: dict[str, ConversationMemoryManager] = {}
    store = DebouncedStore(
        hass,
        f"{DOMAIN}.windows.{entry.entry_id}",
        lambda: {"agents": {sid: m.as_dict() for sid, m in memories.items()}},
    )
    stored = (await store.async_load()).get("agents", {})
    cache_dir = Path(hass.config.path(DOMAIN, "tiktoken"))
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_AGENT:
            continue
        counter = await hass.async_add_executor_job(
            load_counter, subentry.data[CONF_DEPLOYMENT], cache_dir
        )
        memory = ConversationMemoryManager(counter, memory_settings(entry, subentry))
        memory.load(stored.get(subentry.subentry_id, {}))
        memories[subentry.subentry_id] = memory

    entry.runtime_data = Runtime(settings, client, store, memories)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_reload_on_update))

    @callback
    def _maintain(_now: Any) -> None:
        async_maintain(entry.runtime_data)

    entry.async_on_unload(async_track_time_interval(hass, _maintain, MAINTENANCE_INTERVAL))
    return True


def memory_settings(entry: ConfigEntry, subentry: ConfigSubentry) -> MemorySettings:
    """An agent's window settings: its own size, the entry's retention."""
    options: dict[str, Any] = {**RECOMMENDED_OPTIONS, **entry.options}
    return MemorySettings(
        max_tokens=int(
            subentry.data.get(CONF_SLIDING_WINDOW_MAX_TOKENS, RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS)
        ),
        preserve_system=subentry.data.get(CONF_PRESERVE_SYSTEM, RECOMMENDED_PRESERVE_SYSTEM),
        max_conversations=int(options[CONF_MAX_CONVERSATIONS]),
        idle_seconds=float(options[CONF_CONVERSATION_IDLE_MINUTES]) * 60,
        continuation_seconds=float(options[CONF_CONTINUATION_MINUTES]) * 60,
    )


@callback
def async_maintain(runtime: Runtime) -> None:
    """Expire idle conversations and warn (once per change) about memory health."""
    expired = sum(memory.expire_idle() for memory in runtime.memories.values())
    if expired:
        LOGGER.debug("Expired %d idle conversations", expired)
        runtime.windows_store.async_schedule_save()
    health = frozenset(w for m in runtime.memories.values() for w in m.health())
    for warning in health - runtime.reported_health:
        LOGGER.warning("Conversation memory: %s", warning)
    runtime.reported_health = health


async def async_unload_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Unload the agents; conversation windows are written first, to survive the reload."""
    await entry.runtime_data.windows_store.async_close()
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def async_remove_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """The entry is deleted: its conversation windows go with it."""
    await DebouncedStore(hass, f"{DOMAIN}.windows.{entry.entry_id}", dict).async_remove()


async def _async_reload_on_update(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Options, subentries or data changed: reload so every part sees them."""
    await hass.config_entries.async_reload(entry.entry_id)
