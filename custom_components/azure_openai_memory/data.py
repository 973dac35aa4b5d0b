"""What the integration keeps while it runs: one entry's runtime, and the home's stores.

An entry (one Azure resource) owns its client, its agents' conversation windows and their
statistics: `entry.runtime_data`. What belongs to the home — time series, memories,
history, summaries — is installation-wide: set up once, kept in `hass.data` under the
typed keys below, and used by every entry and by services that name no entry. Code outside
the package (tests, scripts) reaches a store through its accessor (`memories_of`, ...), never
through a key.
"""

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.util.hass_dict import HassKey

from .agent.stats import TurnStatistics
from .azure.availability import ResourceHealth
from .azure.client import ResourceSettings, SDKClient
from .const import CONF_API_STYLE, CONF_API_VERSION, CONF_ENDPOINT, DOMAIN, RECOMMENDED_API_VERSION
from .lib.windows.window import ConversationMemoryManager
from .storage import DebouncedStore

if TYPE_CHECKING:
    from .history.recorder import HistoryRecorder
    from .memories.store import Memories
    from .people.incognito import Incognito
    from .series.store import SeriesStore
    from .summaries.keeper import SummaryKeeper

DATA_SERIES: HassKey["SeriesStore"] = HassKey(f"{DOMAIN}_timeseries")
DATA_HISTORY: HassKey["HistoryRecorder"] = HassKey(f"{DOMAIN}_history")
DATA_MEMORIES: HassKey["Memories"] = HassKey(f"{DOMAIN}_memories")
DATA_SUMMARIES: HassKey["SummaryKeeper"] = HassKey(f"{DOMAIN}_summaries")
# Takes the household memory's LLM API back out of Home Assistant (see household.py).
DATA_HOUSEHOLD_API: HassKey[Callable[[], None]] = HassKey(f"{DOMAIN}_household_api")
# Token encodings already warned about in this Home Assistant run.
DATA_ENCODING_WARNED: HassKey[set[str]] = HassKey(f"{DOMAIN}_encoding_warned")


def memories_of(hass: HomeAssistant) -> "Memories":
    """The home's memories store: the one way in from outside the package."""
    return hass.data[DATA_MEMORIES]


def history_of(hass: HomeAssistant) -> "HistoryRecorder":
    """The home's history recorder: the one way in from outside the package."""
    return hass.data[DATA_HISTORY]


def series_of(hass: HomeAssistant) -> "SeriesStore":
    """The home's time series store: the one way in from outside the package."""
    return hass.data[DATA_SERIES]


# An entry's options, and per subentry its type, title, unique id and data.
type SetUpFrom = tuple[
    dict[str, Any], dict[str, Any], dict[str, tuple[str, str, str | None, dict[str, Any]]]
]


@dataclass
class Runtime:
    """Everything one loaded entry owns; lives in entry.runtime_data."""

    settings: ResourceSettings
    client: SDKClient
    windows_store: DebouncedStore
    # Each agent's (subentry id's) conversation windows.
    windows: dict[str, ConversationMemoryManager] = field(default_factory=dict)
    stats: TurnStatistics = field(default_factory=TurnStatistics)
    reported_health: frozenset[str] = frozenset()
    # What the entry was set up from, so an update that changes none of it (new key,
    # new title) does not reload a second time.
    set_up_from: SetUpFrom | None = None
    token_cache_dir: Path | None = None
    encoding_task: asyncio.Task[None] | None = None
    health: ResourceHealth = field(default_factory=ResourceHealth)
    # Each agent's (subentry id's) incognito switch; kept in memory only.
    incognito: dict[str, "Incognito"] = field(default_factory=dict)


type AzureOpenAIMemoryConfigEntry = ConfigEntry[Runtime]


def settings_from_entry_data(data: Mapping[str, Any]) -> ResourceSettings:
    """Read the resource settings from config entry (or flow) data."""
    return ResourceSettings(
        endpoint=data[CONF_ENDPOINT],
        api_key=data[CONF_API_KEY],
        api_style=data[CONF_API_STYLE],
        api_version=data.get(CONF_API_VERSION) or RECOMMENDED_API_VERSION,
    )


def set_up_from(entry: ConfigEntry) -> SetUpFrom:
    """The parts of an entry that set-up reads: its data, options and agents."""
    return (
        dict(entry.data),
        dict(entry.options),
        {
            sid: (sub.subentry_type, sub.title, sub.unique_id, dict(sub.data))
            for sid, sub in entry.subentries.items()
        },
    )


def agent_names(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> dict[str, str]:
    """Subentry id -> the agent's entity id (or title when it has none), loaded agents only."""
    registry = er.async_get(hass)
    return {
        sid: registry.async_get_entity_id("conversation", DOMAIN, sid) or sub.title
        for sid, sub in entry.subentries.items()
        if sid in entry.runtime_data.windows
    }
