"""The time-series services: merge, query, cleanup (administrators), list."""

from typing import Any

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.helpers import config_validation as cv
from homeassistant.util import dt as dt_util
import voluptuous as vol

from ..history.recorder import HistoryRecorder, record_service_call
from ..lib.series.store import Series, SeriesError, since, validate_key
from ..lib.times import format_time, parse_time
from ..people.refusals import translated
from ..services import ServiceSpec, async_register
from .store import SeriesStore

SERVICE_TIMESERIES_MERGE = "timeseries_merge"
SERVICE_TIMESERIES_QUERY = "timeseries_query"
SERVICE_TIMESERIES_CLEANUP = "timeseries_cleanup"
SERVICE_TIMESERIES_LIST = "timeseries_list"

TIMESERIES_MERGE_SCHEMA = vol.Schema(
    {
        vol.Required("key"): cv.string,
        vol.Required("entries"): object,
        vol.Optional("id_field", default="id"): cv.string,
        vol.Optional("timestamp_field", default="timestamp"): cv.string,
        vol.Optional("window_start"): object,
        vol.Optional("window_end"): object,
        vol.Optional("max_entries"): vol.All(vol.Coerce(int), vol.Range(min=1, max=1_000_000)),
    }
)
TIMESERIES_QUERY_SCHEMA = vol.Schema(
    {
        vol.Required("key"): cv.string,
        vol.Optional("start_time"): object,
        vol.Optional("end_time"): object,
        vol.Optional("last"): cv.string,
    }
)
TIMESERIES_CLEANUP_SCHEMA = vol.Schema(
    {
        vol.Required("key"): cv.string,
        vol.Optional("keep_days"): vol.All(vol.Coerce(float), vol.Range(min=0, min_included=False)),
    }
)


def _fetched_window(data: dict[str, Any]) -> tuple[float, float] | None:
    """The fetched window a merge names, if any; both ends or none."""
    if "window_start" not in data and "window_end" not in data:
        return None
    if "window_start" not in data or "window_end" not in data:
        raise SeriesError("window_incomplete")
    tz = dt_util.get_default_time_zone()
    start = parse_time(data["window_start"], tz, "window_start")
    end = parse_time(data["window_end"], tz, "window_end")
    if start > end:
        raise SeriesError("start_after_end")
    return start, end


def query_range(data: dict[str, Any], now: float) -> tuple[float, float]:
    """start_time/end_time, or last; end defaults to now (timeseries_query, series_lookup)."""
    tz = dt_util.get_default_time_zone()
    if "last" in data:
        if "start_time" in data:
            raise SeriesError("range_conflict")
        end = parse_time(data["end_time"], tz, "end_time") if "end_time" in data else now
        return since(end, data["last"]), end
    if "start_time" not in data:
        raise SeriesError("range_required")
    start = parse_time(data["start_time"], tz, "start_time")
    end = parse_time(data["end_time"], tz, "end_time") if "end_time" in data else now
    return start, end


async def _async_series_merge(store: SeriesStore, call: ServiceCall) -> ServiceResponse:
    """Merge under the key's lock; the cap is the series' own, else the installation's."""
    data = call.data
    try:
        key = validate_key(data["key"])
        window = _fetched_window(dict(data))
        async with store.lock(key):
            series = await store.async_get(key, create=True)
            assert series is not None
            now = format_time(dt_util.utcnow().timestamp())
            fields = (data["id_field"], data["timestamp_field"])
            prepared = series.prepare(
                data["entries"], *fields, dt_util.get_default_time_zone(), now
            )
            if "max_entries" in data:
                series.max_entries = data["max_entries"]  # kept: this series' own cap
            result = series.merge(prepared, now, window, fields, store.settings.max_entries)
            store.async_changed(key)
    except SeriesError as err:
        raise translated(err) from err
    return {"success": True, **result}


async def _async_series(store: SeriesStore, key: str) -> Series:
    """The series of an existing key; call under the key's lock, so it stays loaded."""
    series = await store.async_get(key)
    if series is None:
        raise SeriesError("unknown_series", key=key)
    return series


async def _async_series_query(store: SeriesStore, call: ServiceCall) -> ServiceResponse:
    try:
        key = validate_key(call.data["key"])
        async with store.lock(key):
            series = await _async_series(store, key)
            start, end = query_range(dict(call.data), dt_util.utcnow().timestamp())
            result = series.query(start, end)
    except SeriesError as err:
        raise translated(err) from err
    return {"success": True, **result}


async def _async_series_cleanup(store: SeriesStore, call: ServiceCall) -> ServiceResponse:
    """Without keep_days, the installation's setting: the series are the home's."""
    keep_days = float(call.data.get("keep_days", store.settings.keep_days))
    try:
        key = validate_key(call.data["key"])
        async with store.lock(key):
            series = await _async_series(store, key)
            covered = series.covered
            result = series.cleanup(keep_days, dt_util.utcnow().timestamp())
            if result["removed"] or series.covered != covered:
                store.async_changed(key)
    except SeriesError as err:
        raise translated(err) from err
    return {"success": True, **result}


async def _async_series_list(store: SeriesStore) -> ServiceResponse:
    """From the index: listing loads no series."""
    summaries: list[Any] = await store.async_summaries()
    return {"keys": summaries}


def async_register_series_services(
    hass: HomeAssistant, store: SeriesStore, history: HistoryRecorder
) -> None:
    """Register the series services; those that change a series are recorded."""

    async def merge(call: ServiceCall) -> ServiceResponse:
        result = await _async_series_merge(store, call)
        record_service_call(history, call, {"key": call.data["key"], **(result or {})})
        return result

    async def query(call: ServiceCall) -> ServiceResponse:
        return await _async_series_query(store, call)

    async def cleanup(call: ServiceCall) -> ServiceResponse:
        result = await _async_series_cleanup(store, call)
        record_service_call(history, call, {"key": call.data["key"], **(result or {})})
        return result

    async def listing(call: ServiceCall) -> ServiceResponse:
        return await _async_series_list(store)

    async_register(
        hass,
        (
            ServiceSpec(
                SERVICE_TIMESERIES_MERGE, merge, TIMESERIES_MERGE_SCHEMA, SupportsResponse.OPTIONAL
            ),
            ServiceSpec(
                SERVICE_TIMESERIES_QUERY, query, TIMESERIES_QUERY_SCHEMA, SupportsResponse.ONLY
            ),
            ServiceSpec(
                SERVICE_TIMESERIES_CLEANUP,
                cleanup,
                TIMESERIES_CLEANUP_SCHEMA,
                SupportsResponse.OPTIONAL,
                admin=True,
            ),
            ServiceSpec(SERVICE_TIMESERIES_LIST, listing, vol.Schema({}), SupportsResponse.ONLY),
        ),
    )
