"""Service schemas and handlers: validate, call memory/, shape the response."""

from collections.abc import Callable, Coroutine
from datetime import date, datetime
import logging
import math
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers import config_validation as cv, entity_registry as er
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
import voluptuous as vol

from .const import DOMAIN
from .memories import Memories
from .memory.errors import InputError
from .memory.facts import ArchivedMemory, FactError, ForgetResult, Memory, SearchResult
from .memory.history import (
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryQuery,
    HistorySnapshot,
)
from .memory.summaries import PeriodType, SummaryError, validate_group, validate_period_type
from .memory.timeseries import (
    TimeSeries,
    TimeseriesError,
    format_time,
    parse_last,
    parse_time,
    validate_key,
)
from .recording import HistoryRecorder
from .storage import TimeseriesStore
from .summarizing import SummaryKeeper

if TYPE_CHECKING:
    from . import AzureOpenAIMemoryConfigEntry

_LOGGER = logging.getLogger(__name__)

# Time series belong to the installation, not to one Azure resource: automations
# call these services without naming an entry.
DATA_TIMESERIES: HassKey[TimeseriesStore] = HassKey(f"{DOMAIN}_timeseries")

ATTR_CONFIG_ENTRY = "config_entry_id"
ATTR_CONVERSATION_ID = "conversation_id"

SERVICE_CONVERSATION_STATS = "conversation_stats"
SERVICE_CONVERSATION_RESET = "conversation_reset"
SERVICE_TIMESERIES_MERGE = "timeseries_merge"
SERVICE_TIMESERIES_QUERY = "timeseries_query"
SERVICE_TIMESERIES_CLEANUP = "timeseries_cleanup"
SERVICE_TIMESERIES_LIST = "timeseries_list"
SERVICE_HISTORY_RECORD = "history_record"
SERVICE_HISTORY_QUERY = "history_query"
SERVICE_HISTORY_STATISTICS = "history_statistics"
SERVICE_HISTORY_SNAPSHOT = "history_snapshot"
SERVICE_HISTORY_EVENT_CHAIN = "history_event_chain"
SERVICE_HISTORY_PURGE = "history_purge"
# The conversations (most recent) whose statistics a snapshot keeps.
SNAPSHOT_CONVERSATIONS = 20
# Who recorded an event that an automation adds without saying.
DEFAULT_HISTORY_AGENT = "automation"

CONVERSATION_SCHEMA = vol.Schema(
    {
        vol.Required(ATTR_CONFIG_ENTRY): cv.string,
        vol.Optional(ATTR_CONVERSATION_ID): cv.string,
    }
)

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

# Event types, limits and ids are checked by memory.history, whose errors are translated.
HISTORY_RECORD_SCHEMA = vol.Schema(
    {
        vol.Required("event_type"): cv.string,
        vol.Required("event_data"): object,
        vol.Optional("agent_id", default=DEFAULT_HISTORY_AGENT): cv.string,
        vol.Optional("session_id"): cv.string,
        vol.Optional("parent_event_id"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [cv.string]),
        vol.Optional("metadata"): dict,
        vol.Optional("ref"): cv.string,
    }
)
HISTORY_QUERY_SCHEMA = vol.Schema(
    {
        vol.Optional("agent_id"): cv.string,
        vol.Optional("session_id"): cv.string,
        vol.Optional("event_type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [cv.string]),
        vol.Optional("start_time"): object,
        vol.Optional("end_time"): object,
        vol.Optional("limit", default=100): vol.Coerce(int),
        vol.Optional("offset", default=0): vol.Coerce(int),
        vol.Optional("ascending", default=False): cv.boolean,
    }
)
HISTORY_STATISTICS_SCHEMA = vol.Schema({vol.Optional("agent_id"): cv.string})
HISTORY_SNAPSHOT_SCHEMA = vol.Schema(
    {
        vol.Optional("agent_id"): cv.string,
        vol.Optional("snapshot_id"): cv.string,
        vol.Optional("description"): cv.string,
        vol.Optional("ref"): cv.string,
        vol.Optional("metadata"): dict,
        vol.Optional("limit", default=100): vol.Coerce(int),
    }
)
HISTORY_EVENT_CHAIN_SCHEMA = vol.Schema({vol.Required("event_id"): cv.string})
HISTORY_PURGE_SCHEMA = vol.Schema(
    {vol.Optional("keep_days"): vol.All(vol.Coerce(float), vol.Range(min=0))}
)

type Handler = Callable[[ServiceCall], Coroutine[Any, Any, ServiceResponse]]


def loaded_entry(hass: HomeAssistant, entry_id: str) -> "AzureOpenAIMemoryConfigEntry":
    """The loaded entry a call names, or a translated validation error."""
    entry = hass.config_entries.async_get_entry(entry_id)
    if entry is None or entry.domain != DOMAIN:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="unknown_entry",
            translation_placeholders={"entry_id": entry_id},
        )
    if entry.state is not ConfigEntryState.LOADED:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="entry_not_loaded",
            translation_placeholders={"entry_id": entry_id},
        )
    return entry


def admin_only(hass: HomeAssistant, handler: Handler) -> Handler:
    """Destructive services: refuse callers who are not administrators."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        if call.context.user_id:
            user = await hass.auth.async_get_user(call.context.user_id)
            if user is None or not user.is_admin:
                raise Unauthorized(context=call.context)
        return await handler(call)

    return checked


def _agent_names(hass: HomeAssistant, entry: "AzureOpenAIMemoryConfigEntry") -> dict[str, str]:
    """Subentry id -> the agent's entity id (or title when it has none)."""
    registry = er.async_get(hass)
    return {
        sid: registry.async_get_entity_id("conversation", DOMAIN, sid) or sub.title
        for sid, sub in entry.subentries.items()
        if sid in entry.runtime_data.memories
    }


async def _async_conversation_stats(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    agents: dict[str, Any] = {}
    for sid, name in _agent_names(hass, entry).items():
        memory = runtime.memories[sid]
        ids = [conversation_id] if conversation_id else memory.get_all_conversations()
        agents[name] = {
            "memory": memory.totals(),
            "conversations": {
                cid: stats for cid in ids if (stats := memory.get_stats(cid)) is not None
            },
        }
    return {"statistics": runtime.stats.as_dict(), "agents": agents}


async def _async_conversation_reset(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    removed = sum(memory.reset(conversation_id) for memory in runtime.memories.values())
    if removed:
        runtime.windows_store.async_schedule_save()
    return {"reset": removed}


def _invalid(err: InputError) -> ServiceValidationError:
    """Bad input from memory/, as a translated error."""
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key=err.key,
        translation_placeholders=err.placeholders,
    )


def _window(data: dict[str, Any]) -> tuple[float, float] | None:
    """The fetched window a merge names, if any; both ends or none."""
    if "window_start" not in data and "window_end" not in data:
        return None
    if "window_start" not in data or "window_end" not in data:
        raise TimeseriesError("window_incomplete")
    tz = dt_util.get_default_time_zone()
    start = parse_time(data["window_start"], tz, "window_start")
    end = parse_time(data["window_end"], tz, "window_end")
    if start > end:
        raise TimeseriesError("start_after_end")
    return start, end


def _query_range(data: dict[str, Any], now: float) -> tuple[float, float]:
    """start_time/end_time, or last; end defaults to now."""
    tz = dt_util.get_default_time_zone()
    if "last" in data:
        if "start_time" in data:
            raise TimeseriesError("range_conflict")
        end = parse_time(data["end_time"], tz, "end_time") if "end_time" in data else now
        return end - parse_last(data["last"]), end
    if "start_time" not in data:
        raise TimeseriesError("range_required")
    start = parse_time(data["start_time"], tz, "start_time")
    end = parse_time(data["end_time"], tz, "end_time") if "end_time" in data else now
    return start, end


def _record_service(recorder: HistoryRecorder, call: ServiceCall, data: dict[str, Any]) -> None:
    """A service call that changed state, in the history (who: the service; session: the call)."""
    recorder.record(
        f"{DOMAIN}.{call.service}",
        HistoryEventType.STATE_CHANGE,
        data,
        session_id=call.context.id,
        tags=("service",),
    )


async def _async_timeseries_merge(store: TimeseriesStore, call: ServiceCall) -> ServiceResponse:
    """Merge under the key's lock; the cap is the series' own, else the installation's."""
    data = call.data
    try:
        key = validate_key(data["key"])
        window = _window(dict(data))
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
    except TimeseriesError as err:
        raise _invalid(err) from err
    return {"success": True, **result}


async def _async_series(store: TimeseriesStore, key: str) -> TimeSeries:
    """The series of an existing key; call under the key's lock, so it stays loaded."""
    series = await store.async_get(key)
    if series is None:
        raise TimeseriesError("unknown_series", key=key)
    return series


async def _async_timeseries_query(store: TimeseriesStore, call: ServiceCall) -> ServiceResponse:
    try:
        key = validate_key(call.data["key"])
        async with store.lock(key):
            series = await _async_series(store, key)
            start, end = _query_range(dict(call.data), dt_util.utcnow().timestamp())
            result = series.query(start, end)
    except TimeseriesError as err:
        raise _invalid(err) from err
    return {"success": True, **result}


async def _async_timeseries_cleanup(store: TimeseriesStore, call: ServiceCall) -> ServiceResponse:
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
    except TimeseriesError as err:
        raise _invalid(err) from err
    return {"success": True, **result}


async def _async_timeseries_list(store: TimeseriesStore) -> ServiceResponse:
    """From the index: listing loads no series."""
    summaries: list[Any] = await store.async_summaries()
    return {"keys": summaries}


def async_register_services(
    hass: HomeAssistant, timeseries: TimeseriesStore, history: HistoryRecorder
) -> None:
    """Register every service of the integration; those that change state are recorded."""

    async def ts_merge(call: ServiceCall) -> ServiceResponse:
        result = await _async_timeseries_merge(timeseries, call)
        _record_service(history, call, {"key": call.data["key"], **(result or {})})
        return result

    async def ts_query(call: ServiceCall) -> ServiceResponse:
        return await _async_timeseries_query(timeseries, call)

    async def ts_cleanup(call: ServiceCall) -> ServiceResponse:
        result = await _async_timeseries_cleanup(timeseries, call)
        _record_service(history, call, {"key": call.data["key"], **(result or {})})
        return result

    async def ts_list(call: ServiceCall) -> ServiceResponse:
        return await _async_timeseries_list(timeseries)

    for name, handler, schema, support in (
        (SERVICE_TIMESERIES_MERGE, ts_merge, TIMESERIES_MERGE_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_TIMESERIES_QUERY, ts_query, TIMESERIES_QUERY_SCHEMA, SupportsResponse.ONLY),
        (
            SERVICE_TIMESERIES_CLEANUP,
            admin_only(hass, ts_cleanup),
            TIMESERIES_CLEANUP_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
        (SERVICE_TIMESERIES_LIST, ts_list, vol.Schema({}), SupportsResponse.ONLY),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=support
        )

    async def stats(call: ServiceCall) -> ServiceResponse:
        return await _async_conversation_stats(hass, call)

    async def reset(call: ServiceCall) -> ServiceResponse:
        result = await _async_conversation_reset(hass, call)
        _record_service(history, call, {**call.data, **(result or {})})
        return result

    hass.services.async_register(
        DOMAIN,
        SERVICE_CONVERSATION_STATS,
        stats,
        schema=CONVERSATION_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_CONVERSATION_RESET,
        admin_only(hass, reset),
        schema=CONVERSATION_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_history_services(hass, history)


# Times a person could mean: years 1 to 9999.
_EARLIEST, _LATEST = -62_135_596_800.0, 253_402_300_799.0


def _history_time(data: dict[str, Any], name: str) -> float | None:
    if name not in data:
        return None
    moment = parse_time(data[name], dt_util.get_default_time_zone(), name)
    if not _EARLIEST <= moment <= _LATEST:
        raise TimeseriesError("invalid_time", field=name, value=data[name])
    return moment


def _agent_state(hass: HomeAssistant, agent_id: str) -> dict[str, Any] | None:
    """One of our agents, by entity id: its options and its windows' statistics."""
    for entry in hass.config_entries.async_loaded_entries(DOMAIN):
        for sid, name in _agent_names(hass, entry).items():
            if name != agent_id:
                continue
            memory = entry.runtime_data.memories[sid]
            recent = memory.get_all_conversations()[-SNAPSHOT_CONVERSATIONS:]
            return {
                # The prompt can be long and says nothing of the agent's state: left out.
                "options": {k: v for k, v in entry.subentries[sid].data.items() if k != "prompt"},
                "memory": memory.totals(),
                "conversations": {cid: memory.get_stats(cid) for cid in recent},
                "statistics": entry.runtime_data.stats.as_dict(),
            }
    return None


async def _async_history_record(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    data = call.data
    try:
        event = AgentHistoryEvent.new(
            data["agent_id"],
            data["event_type"],
            data["event_data"],
            session_id=data.get("session_id"),
            parent_event_id=data.get("parent_event_id"),
            tags=tuple(data["tags"]),
            metadata=data.get("metadata"),
            ref=data.get("ref"),
        )
    except HistoryError as err:
        raise _invalid(err) from err
    try:
        await recorder.async_run(recorder.store.record_event, event)
    except HistoryError as err:  # a parent that was never recorded
        raise _invalid(err) from err
    recorder.async_announce(event)
    return {"event": event.as_dict()}


async def _async_history_query(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    data = dict(call.data)
    try:
        query = HistoryQuery(
            agent_id=data.get("agent_id"),
            session_id=data.get("session_id"),
            event_type=data.get("event_type"),
            tags=tuple(data["tags"]),
            start_time=_history_time(data, "start_time"),
            end_time=_history_time(data, "end_time"),
            limit=data["limit"],
            offset=data["offset"],
            ascending=data["ascending"],
        )
    except (TimeseriesError, HistoryError) as err:
        raise _invalid(err) from err
    events, total = await recorder.async_run(recorder.store.query_events, query)
    return {"events": [event.as_dict() for event in events], "total": total}


async def _async_history_statistics(
    recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    stats = await recorder.async_run(recorder.store.get_statistics, call.data.get("agent_id"))
    return stats.as_dict()


async def _async_history_snapshot(
    hass: HomeAssistant, recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    data = call.data
    store = recorder.store
    if snapshot_id := data.get("snapshot_id"):
        stored = await recorder.async_run(store.get_snapshot, snapshot_id)
        if stored is None:
            raise _invalid(HistoryError("unknown_snapshot", snapshot_id=snapshot_id))
        return {"snapshot": stored.as_dict()}
    agent_id = data.get("agent_id")
    if not agent_id:
        raise _invalid(HistoryError("snapshot_needs_agent"))
    try:
        query = HistoryQuery(agent_id=agent_id, limit=data["limit"])
    except HistoryError as err:
        raise _invalid(err) from err
    events, _total = await recorder.async_run(store.query_events, query)
    snapshot = HistorySnapshot(
        snapshot_id=str(uuid4()),
        agent_id=agent_id,
        timestamp=dt_util.utcnow().timestamp(),
        events=tuple(reversed(events)),  # the newest `limit`, oldest first as stored
        ref=data.get("ref"),
        description=data.get("description"),
        metadata=data.get("metadata"),
        agent_state=_agent_state(hass, agent_id),
    )
    try:
        await recorder.async_run(store.create_snapshot, snapshot)
    except HistoryError as err:
        raise _invalid(err) from err
    return {"snapshot": snapshot.as_dict()}


async def _async_history_event_chain(
    recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    try:
        chain = await recorder.async_run(recorder.store.get_event_chain, call.data["event_id"])
    except HistoryError as err:
        raise _invalid(err) from err
    return {"events": [event.as_dict() for event in chain]}


async def _async_history_purge(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    deleted, cutoff = await recorder.async_delete_older_than(
        call.data.get("keep_days"), dt_util.utcnow().timestamp()
    )
    return {"deleted": deleted, "cutoff": format_time(cutoff)}


def async_register_history_services(hass: HomeAssistant, recorder: HistoryRecorder) -> None:
    """The history services: record, query, statistics, snapshot, chain, purge (admin)."""

    def bound(
        handler: Callable[[HistoryRecorder, ServiceCall], Coroutine[Any, Any, ServiceResponse]],
    ) -> Handler:
        async def call_handler(call: ServiceCall) -> ServiceResponse:
            return await handler(recorder, call)

        return call_handler

    async def snapshot(call: ServiceCall) -> ServiceResponse:
        return await _async_history_snapshot(hass, recorder, call)

    for name, handler, schema, support in (
        (
            SERVICE_HISTORY_RECORD,
            bound(_async_history_record),
            HISTORY_RECORD_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
        (
            SERVICE_HISTORY_QUERY,
            bound(_async_history_query),
            HISTORY_QUERY_SCHEMA,
            SupportsResponse.ONLY,
        ),
        (
            SERVICE_HISTORY_STATISTICS,
            bound(_async_history_statistics),
            HISTORY_STATISTICS_SCHEMA,
            SupportsResponse.ONLY,
        ),
        (SERVICE_HISTORY_SNAPSHOT, snapshot, HISTORY_SNAPSHOT_SCHEMA, SupportsResponse.OPTIONAL),
        (
            SERVICE_HISTORY_EVENT_CHAIN,
            bound(_async_history_event_chain),
            HISTORY_EVENT_CHAIN_SCHEMA,
            SupportsResponse.ONLY,
        ),
        (
            SERVICE_HISTORY_PURGE,
            admin_only(hass, bound(_async_history_purge)),
            HISTORY_PURGE_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=support
        )


# -- Summaries -----------------------------------------------------------------------------

SERVICE_SUMMARY_AGGREGATE = "summary_aggregate"
SERVICE_SUMMARY_GET = "summary_get"
SERVICE_SUMMARY_GROUPS = "summary_groups"
SUMMARY_MAX_LIMIT = 1000
# Group ids, period types, limits and days are checked in the handlers, whose errors are
# translated: a schema error would not say which value was wrong in the user's words.
SUMMARY_AGGREGATE_SCHEMA = vol.Schema({vol.Optional("day"): object})
SUMMARY_GET_SCHEMA = vol.Schema(
    {
        vol.Optional("group"): object,
        vol.Optional("period_type"): object,
        vol.Optional("limit", default=10): object,
        vol.Optional("start"): object,
        vol.Optional("end"): object,
    }
)
SUMMARY_GROUPS_SCHEMA = vol.Schema({})


def _summary_day(value: Any, field: str) -> date:
    """A calendar day: a date, or its ISO text."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise SummaryError("invalid_day", field=field, value=value)


async def _async_summary_aggregate(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    day = None
    if "day" in call.data:
        day = _summary_day(call.data["day"], "day")
        if day > dt_util.now().date():
            raise SummaryError("day_in_future", day=day.isoformat())
    counts = await keeper.async_run(day)
    return dict(counts)


async def _async_summary_get(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    data = call.data
    book = keeper.store.book
    limit = data["limit"]
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int | float)
        or not math.isfinite(limit)
        or not limit == int(limit)
    ):
        raise SummaryError("summary_limit_out_of_range", value=limit, max=SUMMARY_MAX_LIMIT)
    if not 1 <= int(limit) <= SUMMARY_MAX_LIMIT:
        raise SummaryError("summary_limit_out_of_range", value=limit, max=SUMMARY_MAX_LIMIT)
    types: list[PeriodType] = list(PeriodType)
    if "period_type" in data:
        types = [validate_period_type(data["period_type"])]
    groups = book.groups()
    if "group" in data:
        group = validate_group(data["group"])
        if group not in groups:
            raise SummaryError("unknown_group", group=group)
        groups = [group]
    start = _summary_day(data["start"], "start").isoformat() if "start" in data else None
    end = _summary_day(data["end"], "end").isoformat() if "end" in data else None
    if start is not None and end is not None and end < start:
        raise SummaryError("summary_end_before_start", start=start, end=end)
    found = [
        summary
        for group in groups
        for kind in types
        for summary in book.of(group, kind)
        if (start is None or summary.period_end >= start)
        and (end is None or summary.period_start <= end)
    ]
    found.sort(key=lambda s: (s.period_end, s.period_start), reverse=True)
    shown: list[Any] = [s.as_dict() for s in found[: int(limit)]]
    for summary in shown:
        del summary["aggregated_into"]
        del summary["rewrite_pending"]
    return {"summaries": shown}


async def _async_summary_groups(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    book = keeper.store.book
    groups: list[Any] = []
    for group in book.groups():
        counts = {kind.value: len(book.of(group, kind)) for kind in PeriodType}
        groups.append({**book.profile(group).as_dict(), "counts": counts})
    return {"groups": groups, "group_mode": keeper.group_mode}


def async_register_summary_services(hass: HomeAssistant, keeper: SummaryKeeper) -> None:
    """The summary services; a bad value is a translated error and nothing is written."""

    def bound(
        handler: Callable[[SummaryKeeper, ServiceCall], Coroutine[Any, Any, ServiceResponse]],
    ) -> Handler:
        async def call_handler(call: ServiceCall) -> ServiceResponse:
            try:
                return await handler(keeper, call)
            except SummaryError as err:
                raise _invalid(err) from err

        return call_handler

    for name, handler, schema, support in (
        (
            SERVICE_SUMMARY_AGGREGATE,
            bound(_async_summary_aggregate),
            SUMMARY_AGGREGATE_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
        (SERVICE_SUMMARY_GET, bound(_async_summary_get), SUMMARY_GET_SCHEMA, SupportsResponse.ONLY),
        (
            SERVICE_SUMMARY_GROUPS,
            bound(_async_summary_groups),
            SUMMARY_GROUPS_SCHEMA,
            SupportsResponse.ONLY,
        ),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=support
        )


# -- memories (seed 002): the home's durable facts --------------------------

SERVICE_MEMORY_SAVE = "memory_save"
SERVICE_MEMORY_SEARCH = "memory_search"
SERVICE_MEMORY_PATTERNS = "memory_patterns"
SERVICE_MEMORY_FORGET = "memory_forget"
SERVICE_MEMORY_CLEANUP_ARCHIVED = "memory_cleanup_archived"

# Content, types, tags, confidence, source and limit are checked by memory.facts, whose
# errors are translated; the schemas take what a YAML script may send.
MEMORY_SAVE_SCHEMA = vol.Schema(
    {
        vol.Required("content"): object,
        vol.Required("type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [object]),
        vol.Optional("confidence"): cv.string,
        vol.Optional("source", default="manual"): cv.string,
        vol.Optional("source_reference"): cv.string,
    }
)
MEMORY_SEARCH_SCHEMA = vol.Schema(
    {
        vol.Optional("query"): cv.string,
        vol.Optional("type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [object]),
        vol.Optional("limit", default=10): vol.Coerce(int),
        vol.Optional("include_archived", default=False): cv.boolean,
    }
)
MEMORY_FORGET_SCHEMA = vol.Schema(
    {
        vol.Optional("memory_id"): cv.string,
        vol.Optional("tag"): object,
        vol.Optional("erase", default=False): cv.boolean,
    }
)
MEMORY_CLEANUP_SCHEMA = vol.Schema(
    {vol.Optional("retention_days"): vol.All(vol.Coerce(float), vol.Range(min=0))}
)


def memory_response(memory: Memory) -> dict[str, Any]:
    """A memory as the services and tools report it: times in ISO 8601."""
    return {
        **memory.as_dict(),
        "created_at": format_time(memory.created_at),
        "updated_at": format_time(memory.updated_at),
    }


def archived_response(archived: ArchivedMemory) -> dict[str, Any]:
    """An archived memory: the seed's fields, and what it was."""
    return {
        "id": archived.id,
        "original_content": archived.original_content,
        "superseded_by": archived.superseded_by,
        "archived_at": format_time(archived.archived_at),
        "reason": archived.reason,
        "type": archived.memory.type.value,
        "tags": list(archived.memory.tags),
    }


async def async_memory_save(
    memories: Memories, data: dict[str, Any], source: str | None = None
) -> dict[str, Any]:
    """memory_save, and the agent's remember tool (source: conversation)."""
    try:
        result = await memories.async_save(
            data["content"],
            data["type"],
            data.get("tags", ()),
            confidence=data.get("confidence"),
            source=source or data.get("source", "manual"),
            source_reference=data.get("source_reference"),
        )
    except FactError as err:
        raise _invalid(err) from err
    return {
        "action": result.action.value,
        "memory": memory_response(result.memory),
        "archived": archived_response(result.archived) if result.archived else None,
        "evicted": [archived_response(one) for one in result.evicted],
    }


async def async_search_memories(memories: Memories, data: dict[str, Any]) -> SearchResult:
    """What memory_search and the agent's recall tool find; translated errors."""
    try:
        return await memories.async_search(
            data.get("query"),
            memory_type=data.get("type"),
            tags=data.get("tags") or None,
            limit=int(data.get("limit", 10)),
            include_archived=bool(data.get("include_archived", False)),
        )
    except FactError as err:
        raise _invalid(err) from err


async def async_memory_search(memories: Memories, data: dict[str, Any]) -> dict[str, Any]:
    """memory_search's response."""
    result = await async_search_memories(memories, data)
    return {
        "memories": [{**memory_response(m), "score": score} for m, score in result.memories],
        "ranker": result.ranker,
    }


async def _async_memory_forget(
    memories: Memories, call: ServiceCall, history: HistoryRecorder
) -> dict[str, Any]:
    data = call.data
    if ("memory_id" in data) == ("tag" in data):
        raise _invalid(FactError("memory_forget_one"))
    try:
        result = memories.forget(data.get("memory_id"), data.get("tag"), erase=data["erase"])
    except FactError as err:
        raise _invalid(err) from err
    response: dict[str, Any] = {
        "archived": [archived_response(one) for one in result.archived],
        "erased": result.erased,
    }
    if data["erase"]:
        response["history_events_erased"] = await _async_erase_history(history, result)
    return response


async def _async_erase_history(history: HistoryRecorder, result: ForgetResult) -> int | None:
    """The history's copies of erased memories go too; None when the history cannot be
    reached (the memories are erased all the same; logged, for the user to act on)."""
    if not history.available:
        # Events recorded before it became unreadable may hold them: say so, not 0.
        _LOGGER.error("The agent history is unavailable: erased memories may remain in it")
        return None
    try:
        return await history.async_erase_memories(result.erased)
    except (HomeAssistantError, RuntimeError) as err:
        _LOGGER.error("Erased memories may remain in the agent history: %s", err)
        return None


async def _async_memory_cleanup(memories: Memories, call: ServiceCall) -> dict[str, Any]:
    deleted = memories.cleanup_archived(call.data.get("retention_days"))
    return {"deleted": len(deleted), "ids": deleted}


def async_register_memory_services(
    hass: HomeAssistant, memories: Memories, history: HistoryRecorder
) -> None:
    """memory_save, _search, _patterns; _forget and _cleanup_archived for administrators."""

    async def save(call: ServiceCall) -> ServiceResponse:
        result = await async_memory_save(memories, dict(call.data))
        _record_service(history, call, {"action": result["action"], "id": result["memory"]["id"]})
        return result

    async def search(call: ServiceCall) -> ServiceResponse:
        return await async_memory_search(memories, dict(call.data))

    async def patterns(call: ServiceCall) -> ServiceResponse:
        return {"patterns": [insight.as_dict() for insight in memories.facts.patterns()]}

    async def forget(call: ServiceCall) -> ServiceResponse:
        result = await _async_memory_forget(memories, call, history)
        if call.data["erase"]:
            # The record of an erasure names no erased memory: only how many went.
            _record_service(history, call, {"erased": len(result["erased"]), "erase": True})
        else:
            ids = [one["id"] for one in result["archived"]]
            _record_service(history, call, {"ids": ids, "erase": False})
        return result

    async def cleanup(call: ServiceCall) -> ServiceResponse:
        result = await _async_memory_cleanup(memories, call)
        _record_service(history, call, dict(result))
        return result

    for name, handler, schema, support in (
        (SERVICE_MEMORY_SAVE, save, MEMORY_SAVE_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_MEMORY_SEARCH, search, MEMORY_SEARCH_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_MEMORY_PATTERNS, patterns, vol.Schema({}), SupportsResponse.ONLY),
        (
            SERVICE_MEMORY_FORGET,
            admin_only(hass, forget),
            MEMORY_FORGET_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
        (
            SERVICE_MEMORY_CLEANUP_ARCHIVED,
            admin_only(hass, cleanup),
            MEMORY_CLEANUP_SCHEMA,
            SupportsResponse.OPTIONAL,
        ),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=support
        )
