"""Azure OpenAI Memory: an Assist conversation agent on Azure OpenAI that remembers."""

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.const import (
    CONF_API_KEY,
    EVENT_HOMEASSISTANT_FINAL_WRITE,
    EVENT_HOMEASSISTANT_STOP,
    Platform,
)
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.helpers.typing import ConfigType
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
import tiktoken

from .availability import ResourceHealth, async_clear_resolved_issues, async_remove_issues
from .compat import platforms
from .const import (
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_EMBEDDINGS_DEPLOYMENT,
    CONF_ENDPOINT,
    CONF_MAX_CONVERSATIONS,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    DOMAIN,
    LOGGER,
    RECOMMENDED_API_VERSION,
    RECOMMENDED_ARCHIVE_RETENTION_DAYS,
    RECOMMENDED_HIGH_CONFIDENCE_THRESHOLD,
    RECOMMENDED_MAX_MEMORIES_PER_TYPE,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_RELEVANCE_SCORE_THRESHOLD,
    RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    RECOMMENDED_TIMESERIES_KEEP_DAYS,
    RECOMMENDED_TIMESERIES_MAX_ENTRIES,
    SUBENTRY_AGENT,
)
from .llm import client as llm_client
from .llm.client import (
    ResourceSettings,
    SDKClient,
    async_check_resource,
    async_create_client,
)
from .llm.embeddings import Embedder
from .llm.errors import API_ERRORS, ErrorKind, classify_error
from .memories import DATA_MEMORIES, Memories
from .memory.facts import FactSettings
from .memory.timeseries import TimeseriesSettings
from .memory.tokens import (
    PUBLIC_ENCODINGS_URL,
    TokenCounter,
    cached_encoding,
    encoding_file_name,
    encoding_from_download,
    load_counter,
)
from .memory.window import (
    WINDOWS_VERSION,
    ConversationMemoryManager,
    MemorySettings,
    migrate_windows,
)
from .recording import DATA_HISTORY, HistoryRecorder
from .services import (
    DATA_TIMESERIES,
    async_register_memory_services,
    async_register_services,
    async_register_summary_services,
)
from .stats import TurnStatistics
from .storage import DebouncedStore, SummaryStore, TimeseriesStore
from .summarizing import DATA_SUMMARIES, SummaryKeeper, async_attach_writer
from .title import is_untouched_title, resource_title

PLATFORMS: list[Platform] = platforms(Platform.CONVERSATION, Platform.SENSOR)
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# An entry's options, and per subentry its type, title, unique id and data.
type SetUpFrom = tuple[dict[str, Any], dict[str, tuple[str, str, str | None, dict[str, Any]]]]
MAINTENANCE_INTERVAL = timedelta(minutes=10)
HISTORY_PURGE_INTERVAL = timedelta(days=1)
DATA_ENCODING_WARNED: HassKey[set[str]] = HassKey(f"{DOMAIN}_encoding_warned")
# Token encodings are fetched in the background, each try bounded; a failed try is
# repeated at the next maintenance run.
ENCODING_DOWNLOAD_BASE = PUBLIC_ENCODINGS_URL
ENCODING_DOWNLOAD_TIMEOUT = 120.0


@dataclass
class Runtime:
    """Everything one loaded entry owns; lives in entry.runtime_data."""

    settings: ResourceSettings
    client: SDKClient
    windows_store: DebouncedStore
    memories: dict[str, ConversationMemoryManager] = field(default_factory=dict)
    stats: TurnStatistics = field(default_factory=TurnStatistics)
    reported_health: frozenset[str] = frozenset()
    # What the entry was set up from, so an update that changes none of it (new key,
    # new title) does not reload a second time; see _async_entry_updated.
    set_up_from: SetUpFrom | None = None
    token_cache_dir: Path | None = None
    encoding_task: asyncio.Task[None] | None = None
    health: ResourceHealth = field(default_factory=ResourceHealth)


type AzureOpenAIMemoryConfigEntry = ConfigEntry[Runtime]


def settings_from_entry_data(data: Mapping[str, Any]) -> ResourceSettings:
    """Read the resource settings from config entry (or flow) data."""
    return ResourceSettings(
        endpoint=data[CONF_ENDPOINT],
        api_key=data[CONF_API_KEY],
        api_style=data[CONF_API_STYLE],
        api_version=data.get(CONF_API_VERSION) or RECOMMENDED_API_VERSION,
    )


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Load the time series index and register the services."""
    timeseries = TimeseriesStore(
        hass,
        f"{DOMAIN}.timeseries",
        defaults=TimeseriesSettings(
            max_entries=RECOMMENDED_TIMESERIES_MAX_ENTRIES,
            keep_days=float(RECOMMENDED_TIMESERIES_KEEP_DAYS),
        ),
    )
    await timeseries.async_load()
    hass.data[DATA_TIMESERIES] = timeseries
    history = hass.data[DATA_HISTORY] = await HistoryRecorder.async_open(hass)

    async def _async_close_history(_event: Event) -> None:
        await history.async_close()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_FINAL_WRITE, _async_close_history)

    async def _async_purge_history(_now: Any = None) -> None:
        await history.async_purge(dt_util.utcnow().timestamp())

    async_track_time_interval(
        hass, _async_purge_history, HISTORY_PURGE_INTERVAL, cancel_on_shutdown=True
    )
    hass.async_create_background_task(_async_purge_history(), f"{DOMAIN} history purge")
    async_register_services(hass, timeseries, history)
    summaries = SummaryStore(hass, f"{DOMAIN}.summaries")
    await summaries.async_load()
    hass.data[DATA_SUMMARIES] = SummaryKeeper(hass, summaries, history)
    async_register_summary_services(hass, hass.data[DATA_SUMMARIES])
    memories = hass.data[DATA_MEMORIES] = Memories(hass, _fact_defaults())
    await memories.async_load()
    # Also now: a home restarted within every day would never reach the daily clean-up.
    memories.cleanup_archived()
    async_register_memory_services(hass, memories, history)

    @callback
    def _async_stop_summaries(_event: Event) -> None:
        hass.data[DATA_SUMMARIES].async_stop()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, _async_stop_summaries)

    async def _async_close_memories(_event: Event) -> None:
        await memories.async_close()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_FINAL_WRITE, _async_close_memories)

    @callback
    def _cleanup_archived(_now: Any) -> None:
        """Archived memories past "days archived memories are kept" go, once a day."""
        memories.cleanup_archived()

    async_track_time_interval(
        hass, _cleanup_archived, ARCHIVE_CLEANUP_INTERVAL, cancel_on_shutdown=True
    )
    return True


ARCHIVE_CLEANUP_INTERVAL = timedelta(days=1)


def _fact_defaults() -> FactSettings:
    """The seed's MEMORY_CONFIG, until the options flow stores the installation's own."""
    return FactSettings(
        archive_retention_days=RECOMMENDED_ARCHIVE_RETENTION_DAYS,
        high_confidence_threshold=RECOMMENDED_HIGH_CONFIDENCE_THRESHOLD,
        max_memories_per_type=RECOMMENDED_MAX_MEMORIES_PER_TYPE,
        relevance_score_threshold=RECOMMENDED_RELEVANCE_SCORE_THRESHOLD,
    )


@callback
def _async_use_embeddings(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """An entry that names an embeddings deployment ranks the installation's memories."""
    deployment = str(entry.options.get(CONF_EMBEDDINGS_DEPLOYMENT) or "").strip()
    if not deployment:
        return
    runtime = entry.runtime_data
    memories = hass.data[DATA_MEMORIES]
    identity = f"{runtime.settings.endpoint}|{deployment}"
    memories.async_use_embeddings(entry.entry_id, Embedder(runtime.client, deployment, identity))
    entry.async_on_unload(lambda: memories.async_use_embeddings(entry.entry_id, None))


async def async_migrate_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """1.1 -> 1.2: the series settings move from the entry's options to the series' store.

    The series are the installation's; with several entries, the first one migrated
    gives its values, and the store keeps what it already had.
    """
    if entry.version > 1:
        return False  # written by a newer version of this integration
    if entry.minor_version < 2:
        options = dict(entry.options)
        old = {
            key: options.pop(key)
            for key in (CONF_TIMESERIES_MAX_ENTRIES, CONF_TIMESERIES_KEEP_DAYS)
            if key in options
        }
        store = hass.data[DATA_TIMESERIES]
        if old and not store.settings_stored:
            current = store.settings
            try:
                settings = TimeseriesSettings(
                    max_entries=int(old.get(CONF_TIMESERIES_MAX_ENTRIES, current.max_entries)),
                    keep_days=float(old.get(CONF_TIMESERIES_KEEP_DAYS, current.keep_days)),
                )
            except (TypeError, ValueError) as err:
                LOGGER.warning("Time series settings not carried over: %s", err)
            else:
                store.async_update_settings(settings)
        hass.config_entries.async_update_entry(entry, options=options, minor_version=2)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Connect to the resource and set up the agents."""
    settings = settings_from_entry_data(entry.data)
    client = await async_create_client(hass, settings)
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
        await async_release_client(client)
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
        version=WINDOWS_VERSION,
        migrate=migrate_windows,
    )
    stored = (await store.async_load()).get("agents", {})
    # JSON of another shape is set aside like an unreadable file, never fatal to the entry.
    unusable: str | None = None
    if not isinstance(stored, dict):
        unusable, stored = f"agents is {type(stored).__name__}, not an object", {}
    cache_dir = Path(hass.config.path(DOMAIN, "tiktoken"))
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_AGENT:
            continue
        # Local files only: the best counter at hand now, the exact one in the background.
        counter = await hass.async_add_executor_job(
            load_counter, subentry.data[CONF_DEPLOYMENT], cache_dir
        )
        memory = ConversationMemoryManager(counter, memory_settings(entry, subentry))
        try:
            memory.load(stored.get(subentry.subentry_id, {}))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            unusable = unusable or f"agent {subentry.subentry_id}: {err!r}"
            memory = ConversationMemoryManager(counter, memory_settings(entry, subentry))
        memories[subentry.subentry_id] = memory
    if unusable is not None:
        await store.async_set_aside(unusable)
        store.async_schedule_save()  # the agents that could be read, in a new file

    async_clear_resolved_issues(hass, entry)
    if is_untouched_title(entry.title, settings.endpoint) and entry.title != (
        title := resource_title(settings.endpoint)
    ):
        # Named after the resource before any device or entity id is made from it.
        hass.config_entries.async_update_entry(entry, title=title)
    entry.runtime_data = Runtime(
        settings,
        client,
        store,
        memories,
        set_up_from=_set_up_from(entry),
        token_cache_dir=cache_dir,
    )
    _async_use_embeddings(hass, entry)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_entry_updated))
    async_fetch_encodings(hass, entry)

    @callback
    def _maintain(_now: datetime) -> None:
        async_maintain(entry.runtime_data)
        async_fetch_encodings(hass, entry)

    entry.async_on_unload(async_track_time_interval(hass, _maintain, MAINTENANCE_INTERVAL))
    async_attach_writer(hass, entry)
    return True


def _set_up_from(entry: ConfigEntry) -> SetUpFrom:
    """The parts of an entry that set-up reads beyond its data: options and agents."""
    return (
        dict(entry.options),
        {
            sid: (sub.subentry_type, sub.title, sub.unique_id, dict(sub.data))
            for sid, sub in entry.subentries.items()
        },
    )


def memory_settings(entry: ConfigEntry, subentry: ConfigSubentry) -> MemorySettings:
    """An agent's window settings: its own size, the entry's retention."""
    options: dict[str, Any] = {**RECOMMENDED_OPTIONS, **entry.options}
    return MemorySettings(
        max_tokens=int(
            subentry.data.get(CONF_SLIDING_WINDOW_MAX_TOKENS, RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS)
        ),
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


@callback
def async_fetch_encodings(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Fetch, in the background, the exact token encodings the agents still lack.

    Set-up never waits for it: the agents count with what was at hand, and their
    counters switch when the encoding arrives. One fetch at a time per entry.
    """
    runtime = entry.runtime_data
    if runtime.encoding_task is not None and not runtime.encoding_task.done():
        return
    if all(memory.counter.exact for memory in runtime.memories.values()):
        return
    runtime.encoding_task = entry.async_create_background_task(
        hass, _async_fetch_encodings(hass, runtime), f"{DOMAIN} token encodings"
    )


async def _async_fetch_encodings(hass: HomeAssistant, runtime: Runtime) -> None:
    wanting: dict[str, list[TokenCounter]] = {}
    for memory in runtime.memories.values():
        if not memory.counter.exact:
            wanting.setdefault(memory.counter.wanted, []).append(memory.counter)
    for name, counters in wanting.items():
        try:
            encoding = await _async_load_encoding(hass, name, runtime.token_cache_dir)
        except Exception as err:  # offline, blocked, a wrong file: try again later
            # Warned once per Home Assistant run and encoding, not again at every reload.
            warned = hass.data.setdefault(DATA_ENCODING_WARNED, set())
            log = LOGGER.debug if name in warned else LOGGER.warning
            warned.add(name)
            log(
                "Token encoding %s could not be downloaded (%s); counting with %s, "
                "which is not exact, and trying again every %d minutes",
                name,
                str(err) or type(err).__name__,
                counters[0].name,
                MAINTENANCE_INTERVAL.total_seconds() // 60,
            )
            continue
        for counter in counters:
            counter.upgrade(encoding)
        LOGGER.debug("Counting tokens with %s from now on", encoding.name)


async def _async_load_encoding(
    hass: HomeAssistant, name: str, cache_dir: Path | None
) -> tiktoken.Encoding:
    """The exact encoding: cached by another entry meanwhile, else downloaded (bounded)."""
    if (
        encoding := await hass.async_add_executor_job(cached_encoding, name, cache_dir)
    ) is not None:
        return encoding
    if (file_name := encoding_file_name(name)) is None:
        raise ValueError(f"no download known for {name}")
    async with asyncio.timeout(ENCODING_DOWNLOAD_TIMEOUT):
        response = await get_async_client(hass).get(ENCODING_DOWNLOAD_BASE + file_name)
        response.raise_for_status()
    return await hass.async_add_executor_job(
        encoding_from_download, name, response.content, cache_dir
    )


async def async_unload_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Unload the agents, then write their windows (which survive the reload).

    The store closes only once the platforms are gone: an entry whose platforms refused
    to unload stays loaded, and keeps saving.
    """
    if not await hass.config_entries.async_unload_platforms(entry, PLATFORMS):
        return False
    await entry.runtime_data.windows_store.async_close()
    await async_release_client(entry.runtime_data.client)
    return True


async def async_release_client(client: SDKClient) -> None:
    """Close the connections of an SDK client built with its own HTTP client.

    HA's shared client (what the SDK gets while it takes httpx) is never closed here.
    """
    if not llm_client.SDK_TAKES_HTTPX:
        await client.close()


async def async_remove_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """The entry is deleted: its conversation windows go with it."""
    async_remove_issues(hass, entry)
    await DebouncedStore(hass, f"{DOMAIN}.windows.{entry.entry_id}", dict).async_remove()


async def _async_entry_updated(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Options or agents changed (their flows do not reload): reload so every part sees them.

    Reauthenticate and reconfigure change the data and reload the entry themselves
    (async_update_reload_and_abort, which also works while set-up has failed); reloading
    here too would set the entry up twice.
    """
    if _set_up_from(entry) != entry.runtime_data.set_up_from:
        await hass.config_entries.async_reload(entry.entry_id)
