"""Diagnostics download, with the key and the endpoint's host redacted."""

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from homeassistant.components.diagnostics import REDACTED, async_redact_data
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError

from .azure.client import SDK_TAKES_HTTPX
from .const import CONF_ENDPOINT
from .data import DATA_HISTORY, DATA_SERIES, AzureOpenAIMemoryConfigEntry


def _redact_endpoint(endpoint: str) -> str:
    """Keep scheme and path (they tell the API style); hide the resource name."""
    parts = urlsplit(endpoint)
    return urlunsplit((parts.scheme, REDACTED, parts.path, "", ""))


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry
) -> dict[str, Any]:
    """Return what helps a bug report, nothing that identifies the resource."""
    data = async_redact_data(dict(entry.data), {CONF_API_KEY})
    if CONF_ENDPOINT in data:
        data[CONF_ENDPOINT] = _redact_endpoint(data[CONF_ENDPOINT])
    return {
        "title": REDACTED,
        "data": data,
        "options": dict(entry.options),
        "agents": {
            subentry.subentry_id: {"title": subentry.title, "data": dict(subentry.data)}
            for subentry in entry.subentries.values()
        },
        "sdk_uses_ha_http_client": SDK_TAKES_HTTPX,
        "timeseries_settings": hass.data[DATA_SERIES].settings.as_dict(),
        "history": await _async_history_figures(hass),
        "state": entry.state.value,
        **_runtime_figures(entry),
    }


async def _async_history_figures(hass: HomeAssistant) -> dict[str, Any]:
    """The history database's size, event counts and schema; no event content."""
    recorder = hass.data[DATA_HISTORY]
    store = recorder.store
    try:
        stats = await recorder.async_run(store.get_statistics, None)
    except HomeAssistantError as err:
        return {"available": False, "error": str(err)}
    return {
        "available": True,
        "size_bytes": await recorder.async_run(store.size_bytes),
        "schema_version": store.schema_version,
        "total_events": stats.total_events,
        "events_by_type": stats.events_by_type,
        "total_snapshots": stats.total_snapshots,
        "unique_sessions": stats.unique_sessions,
        "dropped_events": store.dropped_events,
        "retention_days": await recorder.async_retention_days(),
    }


def _runtime_figures(entry: AzureOpenAIMemoryConfigEntry) -> dict[str, Any]:
    """Statistics and memory totals; no conversation content."""
    if entry.state is not ConfigEntryState.LOADED:
        return {}
    runtime = entry.runtime_data
    return {
        "statistics": runtime.stats.as_dict(),
        "memory": {
            sid: {**windows.totals(), "encoding_wanted": windows.counter.wanted}
            for sid, windows in runtime.windows.items()
        },
    }
