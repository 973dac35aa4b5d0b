"""Memories: the home's durable facts — saved with deduplication, recalled by meaning.

One store for the installation, set up with the integration; ranked with the embeddings
of the entry whose options name an embeddings deployment.
"""

from datetime import timedelta
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.helpers.event import async_track_time_interval

from ..azure.client import request_options
from ..azure.embeddings import Embedder
from ..azure.supersede import SupersedeJudge
from ..const import (
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_EMBEDDINGS_DEPLOYMENT,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_MAX_PRIVATE_MEMORIES_PER_TYPE,
    CONF_RELEVANCE_SCORE_THRESHOLD,
    LOGGER,
    RECOMMENDED_ARCHIVE_RETENTION_DAYS,
    RECOMMENDED_HIGH_CONFIDENCE_THRESHOLD,
    RECOMMENDED_MAX_MEMORIES_PER_TYPE,
    RECOMMENDED_MAX_PRIVATE_MEMORIES_PER_TYPE,
    RECOMMENDED_RELEVANCE_SCORE_THRESHOLD,
    SUBENTRY_AGENT,
)
from ..data import DATA_MEMORIES, AzureOpenAIMemoryConfigEntry
from ..history.recorder import HistoryRecorder
from ..lib.memories import MemorySettings
from .services import async_register_memory_services
from .store import Memories
from .websocket import async_register_memory_commands

ARCHIVE_CLEANUP_INTERVAL = timedelta(days=1)


async def async_setup_memories(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """Start loading the memories (the set-up does not wait for it; the archive is
    cleaned once they are read, and daily), register the services."""
    memories = hass.data[DATA_MEMORIES] = Memories(hass, _defaults())
    memories.async_start_loading()
    async_register_memory_services(hass, memories, history)
    async_register_memory_commands(hass, memories, history)

    async def _async_close(_event: Event) -> None:
        await memories.async_close()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_FINAL_WRITE, _async_close)

    @callback
    def _cleanup_archived(_now: Any) -> None:
        """Archived memories past "days archived memories are kept" go, once a day."""
        if memories.loaded:
            memories.cleanup_archived()

    async_track_time_interval(
        hass, _cleanup_archived, ARCHIVE_CLEANUP_INTERVAL, cancel_on_shutdown=True
    )


SETTING_KEYS = (
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_MAX_PRIVATE_MEMORIES_PER_TYPE,
    CONF_RELEVANCE_SCORE_THRESHOLD,
)


def _defaults() -> MemorySettings:
    """The installation's settings until the options form hands over its own."""
    return MemorySettings(
        archive_retention_days=RECOMMENDED_ARCHIVE_RETENTION_DAYS,
        high_confidence_threshold=RECOMMENDED_HIGH_CONFIDENCE_THRESHOLD,
        max_memories_per_type=RECOMMENDED_MAX_MEMORIES_PER_TYPE,
        max_private_memories_per_type=RECOMMENDED_MAX_PRIVATE_MEMORIES_PER_TYPE,
        relevance_score_threshold=RECOMMENDED_RELEVANCE_SCORE_THRESHOLD,
    )


@callback
def async_apply_options(hass: HomeAssistant, options: dict[str, Any]) -> None:
    """The MEMORY_CONFIG an options form handed over in an entry's options goes to the store.

    Pops it from options: the memories' store is where it is kept, for every entry.
    """
    given = {key: options.pop(key) for key in SETTING_KEYS if key in options}
    if not given:
        return
    memories = hass.data[DATA_MEMORIES]
    # What is not given keeps the stored value: applied once the memories are read.
    memories.async_when_loaded(lambda: _carry_settings(memories, given))


@callback
def _carry_settings(memories: Memories, given: dict[str, Any]) -> None:
    current = memories.settings
    try:
        settings = MemorySettings(
            archive_retention_days=float(
                given.get(CONF_ARCHIVE_RETENTION_DAYS, current.archive_retention_days)
            ),
            high_confidence_threshold=int(
                given.get(CONF_HIGH_CONFIDENCE_THRESHOLD, current.high_confidence_threshold)
            ),
            max_memories_per_type=int(
                given.get(CONF_MAX_MEMORIES_PER_TYPE, current.max_memories_per_type)
            ),
            relevance_score_threshold=float(
                given.get(CONF_RELEVANCE_SCORE_THRESHOLD, current.relevance_score_threshold)
            ),
            max_private_memories_per_type=int(
                given.get(CONF_MAX_PRIVATE_MEMORIES_PER_TYPE, current.max_private_memories_per_type)
            ),
        )
    except (TypeError, ValueError) as err:
        LOGGER.warning("Memory settings not carried over: %s", err)
    else:
        memories.async_update_settings(settings)


@callback
def async_use_embeddings(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """An entry that names an embeddings deployment ranks the installation's memories, and
    its first agent's deployment judges whether a new memory replaces an older one."""
    deployment = str(entry.options.get(CONF_EMBEDDINGS_DEPLOYMENT) or "").strip()
    if not deployment:
        return
    runtime = entry.runtime_data
    memories = hass.data[DATA_MEMORIES]
    identity = f"{runtime.settings.endpoint}|{deployment}"
    agent = next(
        (sub for sub in entry.subentries.values() if sub.subentry_type == SUBENTRY_AGENT), None
    )
    judge = (
        SupersedeJudge(runtime.client, request_options(runtime.settings, agent.data))
        if agent is not None
        else None
    )
    embedder = Embedder(runtime.client, deployment, identity)
    # Which vectors are stored is known once the memories are read.
    memories.async_when_loaded(
        lambda: memories.async_use_embeddings(entry.entry_id, embedder, judge)
    )
    entry.async_on_unload(
        lambda: memories.async_when_loaded(
            lambda: memories.async_use_embeddings(entry.entry_id, None)
        )
    )
