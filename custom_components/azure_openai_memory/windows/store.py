"""Each entry's conversation windows: their settings, their Store file (one per entry,
surviving reloads and restarts) and their upkeep (idle conversations expire)."""

from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.core import (
    HomeAssistant,
    callback,
)

from ..const import (
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_MAX_CONVERSATIONS,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    LOGGER,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    SUBENTRY_AGENT,
)
from ..data import Runtime
from ..lib.tokens import load_counter
from ..lib.windows.window import (
    WINDOWS_VERSION,
    ConversationMemoryManager,
    WindowSettings,
    migrate_windows,
)
from ..people.identity import rekey_people
from ..storage import DebouncedStore
from .files import windows_store_key


def window_settings(entry: ConfigEntry, subentry: ConfigSubentry) -> WindowSettings:
    """An agent's window settings: its own size, the entry's retention."""
    options: dict[str, Any] = {**RECOMMENDED_OPTIONS, **entry.options}
    return WindowSettings(
        max_tokens=int(
            subentry.data.get(CONF_SLIDING_WINDOW_MAX_TOKENS, RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS)
        ),
        max_conversations=int(options[CONF_MAX_CONVERSATIONS]),
        idle_seconds=float(options[CONF_CONVERSATION_IDLE_MINUTES]) * 60,
        continuation_seconds=float(options[CONF_CONTINUATION_MINUTES]) * 60,
    )


async def async_load_windows(
    hass: HomeAssistant, entry: ConfigEntry, cache_dir: Path
) -> tuple[DebouncedStore, dict[str, ConversationMemoryManager]]:
    """Every agent's windows as stored; what cannot be read is set aside, never fatal.

    Each agent counts tokens with the best encoding at hand locally now; the exact one is
    fetched in the background (encodings.py).
    """
    windows: dict[str, ConversationMemoryManager] = {}
    store = DebouncedStore(
        hass,
        windows_store_key(entry.entry_id),
        lambda: {"agents": {sid: w.as_dict() for sid, w in windows.items()}},
        version=WINDOWS_VERSION,
        migrate=migrate_windows,
    )
    stored = (await store.async_load()).get("agents", {})
    # JSON of another shape is set aside like an unreadable file, never fatal to the entry.
    unusable: str | None = None
    if not isinstance(stored, dict):
        unusable, stored = f"agents is {type(stored).__name__}, not an object", {}
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_AGENT:
            continue
        counter = await hass.async_add_executor_job(
            load_counter, subentry.data[CONF_DEPLOYMENT], cache_dir
        )
        agent = ConversationMemoryManager(counter, window_settings(entry, subentry))
        try:
            agent.load(stored.get(subentry.subentry_id, {}))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            unusable = unusable or f"agent {subentry.subentry_id}: {err!r}"
            agent = ConversationMemoryManager(counter, window_settings(entry, subentry))
        windows[subentry.subentry_id] = agent
    if unusable is not None:
        await store.async_set_aside(unusable)
        store.async_schedule_save()  # the agents that could be read, in a new file
    # People are keyed by their own id: keys stored before are renamed (identity.py).
    if rekey_people(hass, lambda keys: sum(a.rename_people(keys) for a in windows.values())):
        store.async_schedule_save()
    return store, windows


async def async_remove_windows(hass: HomeAssistant, entry_id: str) -> None:
    """The entry is deleted: its windows file goes with it."""
    await DebouncedStore(hass, windows_store_key(entry_id), dict).async_remove()


@callback
def async_maintain(runtime: Runtime) -> None:
    """Expire idle conversations and warn (once per change) about the windows' health."""
    expired = sum(agent.expire_idle() for agent in runtime.windows.values())
    # An incognito conversation idle for the continuation time is over: what it added goes.
    for agent in runtime.windows.values():
        agent.end_incognito(agent.settings.continuation_seconds)
    if expired:
        LOGGER.debug("Expired %d idle conversations", expired)
        runtime.windows_store.async_schedule_save()
    health = frozenset(w for agent in runtime.windows.values() for w in agent.health())
    for warning in health - runtime.reported_health:
        LOGGER.warning("Conversation windows: %s", warning)
    runtime.reported_health = health
